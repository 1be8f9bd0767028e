"""`docsbot serve`: the web pages (and /mcp beside them) as a process, against a site indexed by the real pipeline,
read over HTTP and in a real browser (headless Debian Chromium driven by Playwright, checked with axe-core)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import httpx2
import pytest

from docsbot.web import excerpt, highlight, render_markdown, render_snippet
from tests.conftest import docsbot_env
from tests.docsite import html_page
from tests.servers import ServerProcess
from tests.test_mcp import answer, http_session

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("DOCSBOT_CHROMIUM", "/usr/bin/chromium")
# Where the docs site's screenshots come from: `make screenshots` (DOCSBOT_SCREENSHOTS=docs/screenshots, -m browser)
SCREENSHOTS = os.environ.get("DOCSBOT_SCREENSHOTS")
AUTH = {"Authorization": "Bearer tok"}  # a server that allows writes has a token (DOCSBOT_MCP_TOKEN=tok here)


class Serve(ServerProcess):
    """`docsbot serve --http ...` as a process; ``url`` (no trailing slash) once it has announced its address; its log
    must hold no traceback when it stops."""

    def __init__(self, env: dict[str, str], log: Path, *args: str, http: str = "127.0.0.1:0") -> None:
        command = [sys.executable, "-m", "docsbot.cli", "serve", "--http", http, *args]
        super().__init__(command, env, log, r"docsbot serve: serving (http://\S+)/ \(MCP at", no_traceback=True)


@pytest.fixture
def indexed(crawl, docsite):
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    return docsite


@pytest.fixture
def serve(database_url, tmp_path) -> Iterator[callable]:
    servers: list[Serve] = []

    def start(*args: str, **env: str) -> Serve:
        server = Serve(docsbot_env(database_url, tmp_path, **env), tmp_path / f"serve{len(servers)}.log", *args)
        servers.append(server)
        server.wait_ready()
        return server

    yield start
    for server in servers:
        server.stop()


def get(url: str, **kwargs) -> httpx2.Response:
    return httpx2.get(url, timeout=60, follow_redirects=False, **kwargs)


# --- pure parts ---------------------------------------------------------------------------------------------------


def test_highlight_marks_whole_query_words_and_escapes_the_rest():
    html = str(highlight("Use asyncio.gather() <b>to</b> gather; gathering is not.", "gather asyncio.gather"))
    assert html == ("Use <mark>asyncio.gather</mark>() &lt;b&gt;to&lt;/b&gt; <mark>gather</mark>; gathering is not.")
    assert str(highlight("a <tag>", "")) == "a &lt;tag&gt;"


def test_excerpt_is_one_plain_line_cut_at_a_word():
    text = excerpt("## Install\n\n```python\npip install x\n```\n\nUse **bold** and `code`.", width=30)
    assert text == "Install pip install x Use …"  # the fence and its language go
    assert excerpt("short") == "short"


def test_markdown_is_rendered_with_html_escaped_and_section_ids():
    html = str(
        render_markdown("# T\n\n## One\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |", ["one"])
    )
    assert '<h2 id="one">One</h2>' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<table>" in html and "<td>1</td>" in html


def test_a_page_views_code_is_highlighted_and_its_raw_html_still_escaped():
    markdown = (
        '# T\n\n```python\nif x < 1:\n    print("<b>hi</b>")\n```\n\n```nosuchlanguage\n<i>plain</i>\n```\n\n'
        "<script>alert(1)</script>\n\nText <img src=x onerror=alert(2)> here.\n"
    )
    html = str(render_markdown(markdown, []))
    assert '<pre><code class="language-python"><span class="hl-k">if</span>' in html
    assert '<span class="hl-s2">"&lt;b&gt;hi&lt;/b&gt;"</span>' in html  # the code's text escaped inside its span
    assert '<code class="language-nosuchlanguage">&lt;i&gt;plain&lt;/i&gt;' in html  # a language Pygments lacks: plain
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html and "<b>" not in html and "<i>" not in html
    assert 'style="' not in html  # classes only: the pages' CSP forbids inline styles


# Stored Markdown as html-to-markdown writes it, with what a hostile page could put in it
SNIPPET_MARKDOWN = """Call *coro* with `asyncio.gather` (a \\ path); <b>gather</b> them all.

```python
result = await asyncio.gather(a, b)  # gather both
```

| name | gather |
|---|---|
| `x` | 1 |

<script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3)) ![pic](javascript:alert(4))
"""


def test_a_snippet_is_rendered_as_the_docs_are_with_the_query_marked_in_text_only():
    html = str(render_snippet("## Gathering\n\n" + SNIPPET_MARKDOWN, "gather"))
    assert html.startswith('<p class="heading">Gathering</p>') and "<h2" not in html
    assert "<em>coro</em>" in html and "*coro*" not in html
    assert "<code>asyncio.<mark>gather</mark></code>" in html  # inline code set as code, its word marked
    assert "(a \\ path)" in html  # Markdown's escaped backslash shown as one
    assert '<pre><code class="language-python">' in html and '<span class="hl-k">await</span>' in html
    assert "<mark>" not in html.split("<pre>")[1].split("</pre>")[0]  # never inside Pygments' markup
    assert "<th><mark>gather</mark></th>" in html and "<td><code>x</code></td>" in html
    assert "&lt;b&gt;<mark>gather</mark>&lt;/b&gt;" in html  # raw HTML is text, its words still marked
    # nothing of the page's own HTML or script reaches the page: tags escaped, javascript: links dropped
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert 'href="javascript' not in html and "&lt;script&gt;" in html
    assert str(render_snippet("see [x](javascript:alert(1))", "x")).count("<a") == 0


def test_a_snippet_is_cut_between_blocks_and_a_long_code_block_is_closed():
    markdown = "First *para*.\n\n- one\n- two\n\n" + "Second para. " * 80
    html = str(render_snippet(markdown, "", width=100))
    assert html.count("<ul>") == html.count("</ul>") == 1 and "Second" not in html
    long_code = "```python\n" + "x = 1\n" * 200 + "```\n\nafter"
    html = str(render_snippet(long_code, "", width=100))
    assert html.startswith("<pre><code") and html.rstrip().endswith("</code></pre>") and "after" not in html
    assert 5 < html.count("hl-mi") < 20  # the first lines only
    assert str(render_snippet("```nosuchlanguage\n<b>x</b>\n```", "")) == (
        '<pre><code class="language-nosuchlanguage">&lt;b&gt;x&lt;/b&gt;\n</code></pre>\n'
    )


class _Index:
    """What the app reads of the service before a page asks it anything: no database behind it."""

    settings: dict[str, str] = {}

    def __init__(self, allow_writes: bool) -> None:
        self.allow_writes = allow_writes


def test_a_form_over_the_limit_is_refused_413_declared_or_streamed_and_mcp_keeps_its_own_limit():
    """Starlette's limit on the routes that take a form (``max_body_size``): a body declared larger is answered 413
    unread, a streamed one as soon as it passes the limit; a smaller one reaches the form. A write form is checked
    after access (an anonymous caller is refused before its body is read), and ``/mcp`` keeps the SDK's larger
    limit (an MCP message may be far larger than a form)."""
    from starlette.testclient import TestClient

    from docsbot.mcp.server import build_server
    from docsbot.web.app import MAX_FORM_BYTES, build_app

    index = _Index(allow_writes=True)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    over = b"token=" + b"x" * MAX_FORM_BYTES
    with TestClient(build_app(index, build_server(index), "tok", "127.0.0.1"), base_url="http://127.0.0.1:8765") as c:
        assert c.post("/login", content=over, headers=form).status_code == 413
        assert c.post("/login", content=iter([over[:1000], over[1000:]]), headers=form).status_code == 413
        assert c.post("/login", content=b"token=wrong", headers=form).status_code == 401  # read: a wrong token
        bearer = {**form, "Authorization": "Bearer tok"}
        assert c.post("/libraries/refresh", content=over, headers=bearer).status_code == 413
        assert c.post("/libraries/refresh", content=over, headers=form).status_code == 401
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "x" * MAX_FORM_BYTES, "version": "1"}}}  # fmt: skip
        mcp = c.post("/mcp", json=initialize, headers={"Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 200, mcp.text
    read_only = _Index(allow_writes=False)
    with TestClient(build_app(read_only, None, None, "127.0.0.1"), base_url="http://127.0.0.1") as c:
        assert c.post("/libraries/remove", content=over, headers=form).status_code == 413
        assert c.post("/libraries/remove", content=b"library=x", headers=form).status_code == 403


# --- over HTTP ----------------------------------------------------------------------------------------------------


def test_pages_and_their_json_twins_answer_from_the_index(indexed, serve, db):
    server = serve()
    base = server.url

    # search: the URL holds the query; results grouped per page, marked, with deep links
    page = get(f"{base}/", params={"q": "coroutine task object"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert re.fullmatch(r"app;dur=\d+\.\d", page.headers["server-timing"])
    assert 'value="coroutine task object"' in page.text
    assert "API reference" in page.text and "<mark>task</mark>" in page.text.lower()
    twin = get(f"{base}/search.json", params={"q": "coroutine task object"}).json()
    assert twin["results"][0]["title"] == "API reference"
    assert len({r["url"] for r in twin["results"]}) == len(twin["results"])
    for r in twin["results"]:
        assert f'href="{r["deep_link"]}"' in page.text  # every result's deep link, as the service gives it
    scoped = get(f"{base}/search.json", params={"q": "install", "library": "testdocs", "version": "1.0"}).json()
    assert scoped["results"][0]["url"].endswith("/docs/guide.html")
    why = get(f"{base}/search.json", params={"q": "coroutine task object", "explain": "1"}).json()
    assert [r["url"] for r in why["results"]] == [r["url"] for r in twin["results"]]
    assert all(r["explanation"]["lists"] and r["explanation"] is not None for r in why["results"])
    assert all(r["explanation"] is None for r in twin["results"])  # only when asked for

    # libraries: the counts of the database
    pages, chunks = db.execute("SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM documents)").fetchone()
    libraries = get(f"{base}/libraries.json").json()["libraries"]
    assert [(v["library"], v["version"], v["pages"], v["chunks"]) for v in libraries] == [
        ("testdocs", "1.0", pages, chunks)
    ]
    html = get(f"{base}/libraries").text
    assert "testdocs@1.0" in html and f">{chunks}<" in html
    assert "Refresh" not in html  # read-only: no actions

    # a run: its counts
    run_id = libraries[0]["last_run"]["crawl_run_id"]
    run = get(f"{base}/runs/{run_id}.json").json()
    assert (run["state"], run["outcome"], run["counts"]["new"]) == ("finished", "complete", pages)
    assert f">{pages}<" in get(f"{base}/runs/{run_id}").text

    # a page: its Markdown rendered, its sections, when it was checked; a section alone
    guide = f"{indexed.url}/docs/guide.html"
    whole = get(f"{base}/page", params={"url": guide})
    assert whole.status_code == 200
    assert "<h2" in whole.text and "Install" in whole.text and "Configure" in whole.text
    # its code coloured as a search snippet's is: Pygments' classes on the fenced python3 block's words
    assert '<pre><code class="language-python3"><span class="hl-kn">import</span>' in whole.text
    assert '<span class="hl-nn">testdocs</span>' in whole.text
    stored = db.execute("SELECT markdown FROM pages WHERE url = %s", (guide,)).fetchone()[0]
    data = get(f"{base}/page.json", params={"url": guide}).json()
    assert data["markdown"] == stored and data["last_checked_at"]
    section = get(f"{base}/page.json", params={"url": guide, "section": "Configure"}).json()
    assert section["markdown"].startswith("## Configure") and "Install" not in section["markdown"]


def test_bad_input_gets_a_page_that_says_so_with_its_status(indexed, serve):
    server = serve()
    base = server.url
    unknown = get(f"{base}/", params={"q": "install", "library": "django"})
    assert unknown.status_code == 404
    assert "django is not indexed; indexed: testdocs@1.0" in unknown.text
    assert get(f"{base}/search.json", params={"q": "install", "library": "django"}).json()["status"] == 404
    too_long = get(f"{base}/search.json", params={"q": "x" * 2001})
    assert too_long.status_code == 400 and "at most 2000" in too_long.json()["error"]
    assert get(f"{base}/search.json").status_code == 400  # no query
    missing = get(f"{base}/page", params={"url": f"{indexed.url}/docs/nowhere.html"})
    assert missing.status_code == 404 and "is not stored in testdocs@1.0" in missing.text
    assert get(f"{base}/page", params={"url": "not a url"}).status_code == 400
    assert (
        get(f"{base}/page", params={"url": f"{indexed.url}/docs/guide.html", "section": "nowhere"}).status_code == 404
    )
    assert get(f"{base}/runs/123456").status_code == 404
    assert get(f"{base}/no/such/page").status_code == 404
    # writes are off: a POST is refused and nothing is removed
    refused = httpx2.post(f"{base}/libraries/remove", data={"library": "testdocs", "version": "1.0"}, timeout=30)
    assert refused.status_code == 403
    assert get(f"{base}/libraries.json").json()["libraries"]
    # DNS rebinding: on loopback, a Host that is not a loopback name is refused
    assert get(f"{base}/", headers={"Host": "evil.example"}).status_code == 421
    for body in (unknown.text, missing.text):
        assert "Traceback" not in body


def test_writes_need_the_switch_and_the_form_token(indexed, serve, db):
    server = serve("--allow-writes", DOCSBOT_MCP_TOKEN="tok")
    base = server.url
    html = get(f"{base}/libraries", headers=AUTH).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    form = {"library": "testdocs", "version": "1.0"}
    forged = httpx2.post(f"{base}/libraries/remove", data={**form, "csrf": "guess"}, headers=AUTH, timeout=30)
    assert forged.status_code == 403
    evil = {**AUTH, "Origin": "http://evil.example"}
    cross_site = httpx2.post(f"{base}/libraries/remove", data={**form, "csrf": csrf}, headers=evil, timeout=30)
    assert cross_site.status_code == 403
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5
    removed = httpx2.post(f"{base}/libraries/remove", data={**form, "csrf": csrf}, headers=AUTH, timeout=30)
    assert removed.status_code == 303 and removed.headers["location"] == "/libraries?removed=testdocs%401.0"
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 0
    assert "removed testdocs@1.0" in get(f"{base}/libraries?removed=testdocs%401.0", headers=AUTH).text


def test_the_index_form_starts_a_crawl_with_its_scope_and_patterns(docsite, serve, db):
    """The libraries page's index form (writes allowed) takes the spider's scope keys: a bad pattern is a 400 naming
    it, and a good form starts the crawl, whose stored pages and shown scope follow what the form said."""
    server = serve("--allow-writes", "--allow-network", "127.0.0.1", DOCSBOT_MCP_TOKEN="tok")
    base = server.url
    html = get(f"{base}/libraries", headers=AUTH).text
    assert 'action="/libraries/index"' in html and 'name="exclude"' in html
    csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    root = f"{docsite.url}/docs/index.html"
    bad = httpx2.post(
        f"{base}/libraries/index", data={"csrf": csrf, "url": root, "exclude": "/(/"}, headers=AUTH, timeout=30
    )
    assert bad.status_code == 400 and "exclude: &#39;/(/&#39; is not a regular expression" in bad.text, bad.text
    form = {"csrf": csrf, "url": root, "library": "scoped", "scope": "host", "exclude": "*/deep.html, /outside.html"}
    started = httpx2.post(f"{base}/libraries/index", data=form, headers=AUTH, timeout=30)
    assert started.status_code == 303 and started.headers["location"].startswith("/runs/run-"), started.text
    for _ in range(600):
        if db.execute("SELECT count(*) FROM crawl_runs WHERE finished_at IS NOT NULL").fetchone()[0]:
            break
        time.sleep(0.2)
    urls = {row[0].removeprefix(docsite.url) for row in db.execute("SELECT url FROM pages")}
    assert urls == {"/docs/index.html", "/docs/guide.html", "/docs/api.html", "/docs/flaky.html"}
    shown = get(f"{base}/libraries", headers=AUTH).text
    assert f"scope: host {docsite.url.removeprefix('http://')}, exclude */deep.html /outside.html" in shown
    assert httpx2.post(f"{base}/libraries/rename", data={"csrf": csrf}, headers=AUTH, timeout=30).status_code == 404


def test_off_loopback_every_page_needs_the_token_or_a_signed_in_session(indexed, database_url, tmp_path):
    env = docsbot_env(database_url, tmp_path)
    env.pop("DOCSBOT_MCP_TOKEN", None)
    refused = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "serve", "--http", "0.0.0.0:0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "without a token: set DOCSBOT_MCP_TOKEN" in refused.stderr

    env = docsbot_env(database_url, tmp_path, DOCSBOT_MCP_TOKEN="s3cret")
    server = Serve(env, tmp_path / "token.log", http="0.0.0.0:0")
    try:
        base = server.wait_ready().replace("0.0.0.0", "127.0.0.1")
        assert get(f"{base}/libraries.json").status_code == 401
        to_login = get(f"{base}/libraries", headers={"Accept": "text/html"})
        assert to_login.status_code == 303 and to_login.headers["location"] == "/login?next=/libraries"
        assert get(f"{base}/libraries.json", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        with httpx2.Client(base_url=base, timeout=30) as browser:
            wrong = browser.post("/login", data={"token": "nope", "next": "/libraries"})
            assert wrong.status_code == 401 and "not this server" in wrong.text
            signed_in = browser.post("/login", data={"token": "s3cret", "next": "/libraries"})
            assert signed_in.status_code == 303 and signed_in.headers["location"] == "/libraries"
            assert browser.get("/libraries", headers={"Accept": "text/html"}).status_code == 200
            assert "testdocs@1.0" in browser.get("/libraries").text
            browser.get("/logout")
            assert browser.get("/libraries.json").status_code == 401
        # the MCP transport beside the pages: the SDK's bearer check
        assert (
            httpx2.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30).status_code
            == 401
        )

        async def mcp() -> None:
            async with http_session(f"{base}/mcp", token="s3cret") as session:
                found = answer(await session.call_tool("search_docs", {"query": "install"}))
                assert found["results"][0]["url"].endswith("/docs/guide.html")

        anyio.run(mcp)
    finally:
        server.stop()
    assert "s3cret" not in server.log.read_text()


# --- in a browser -------------------------------------------------------------------------------------------------


@pytest.fixture
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: `make chromium` (apt-get install chromium) or set DOCSBOT_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield chromium
        chromium.close()


def accessible(page) -> None:
    """axe-core finds no serious or critical violation (labels, contrast, landmarks, names of controls)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    serious = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not serious, [(v["id"], v["help"], [n["target"] for n in v["nodes"]][:3]) for v in serious]


def shot(page, name: str) -> None:
    """The docs site's picture of ``page`` (``make screenshots``): its first 1280x800 pixels, as a reader's window
    shows it, into ``$DOCSBOT_SCREENSHOTS/NAME.png``."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        size = page.viewport_size
        page.set_viewport_size({"width": 1280, "height": 800})
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"))
        page.set_viewport_size(size)


def test_browser_search_follow_a_deep_link_refresh_and_follow_the_run(indexed, serve, browser, db):
    server = serve("--allow-writes", DOCSBOT_MCP_TOKEN="tok")
    page = browser.new_page(viewport={"width": 1100, "height": 800}, extra_http_headers=AUTH)
    try:
        # search, keyboard first: the box has focus, Enter submits, the URL holds the query
        page.goto(f"{server.url}/")
        page.wait_for_function("document.activeElement && document.activeElement.id === 'q'", timeout=10_000)
        accessible(page)
        page.keyboard.type("install the library")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"\?q=install\+the\+library"))
        results = page.locator("ol.results > li")
        assert results.count() >= 1
        first = results.nth(0)
        assert "Guide" in first.locator(".result-title").inner_text()
        assert first.locator("mark").count() >= 1
        accessible(page)
        shot(page, "search")
        # "/" brings focus back to the box from anywhere on the page
        page.locator("body").click()
        page.keyboard.press("/")
        page.wait_for_function("document.activeElement && document.activeElement.id === 'q'", timeout=10_000)

        # the result's deep link opens the stored page at its section; the page's own link leads to the site
        first.locator(".result-title").click()
        page.wait_for_url(re.compile(r"/page\?url="))
        assert page.locator("article.doc").inner_text().strip()
        assert page.get_by_text("Last checked").count() == 1
        accessible(page)
        shot(page, "page")
        site_link = page.locator("p.meta a[rel=noreferrer]")
        href = site_link.get_attribute("href")
        assert href.startswith(f"{indexed.url}/docs/guide.html")
        site_link.click()
        page.wait_for_url(re.compile(re.escape(f"{indexed.url}/docs/guide.html")))
        assert "Install the library with pip." in page.content()

        # libraries: refresh the version, then follow the run until it ends
        page.goto(f"{server.url}/libraries")
        accessible(page)
        shot(page, "libraries")
        page.get_by_role("button", name="Refresh testdocs@1.0").click()
        page.wait_for_url(re.compile(r"/runs/run-"))
        page.locator("#run[data-live=no]").wait_for(timeout=120_000)  # no string eval: the pages' CSP forbids it
        assert "finished: complete" in page.locator("#state").inner_text()
        counts = dict(line.split("\t") for line in page.locator("#counts").inner_text().splitlines())
        assert counts == {
            "unchanged": "5",
            "modified": "0",
            "new": "0",
            "deleted": "0",
            "failed": "0",
            "chunks embedded": "0",
        }
        accessible(page)
        shot(page, "run")
        runs = db.execute("SELECT mode, outcome FROM crawl_runs ORDER BY id").fetchall()
        assert runs == [("full", "complete"), ("refresh", "complete")]
    finally:
        page.close()


def test_a_deep_link_to_a_definition_answers_the_definition_inside_its_section(crawl, docsite, serve):
    """A result's deep link often names a definition (a Sphinx signature's id), not a heading: the page answers from
    the definition to the end of the section that holds it, under that section's heading path."""
    docsite.site.put(
        "/docs/api.html",
        html_page(
            "API reference",
            "<h2 id='tasks'>Tasks</h2>"
            '<dl class="py function"><dt class="sig" id="testdocs.create_task"><span class="sig-name">create_task'
            "</span></dt><dd><p>Schedule a coroutine.</p></dd></dl>"
            '<dl class="py function"><dt class="sig" id="testdocs.gather"><span class="sig-name">gather</span></dt>'
            "<dd><p>Run awaitables concurrently.</p></dd></dl>"
            "<h2 id='streams'>Streams</h2><p>Read and write bytes.</p>",
            ["index.html"],
        ),
    )
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0")
    assert result.returncode == 0, result.stderr[-2000:]
    base = serve().url
    api = f"{docsite.url}/docs/api.html"
    page = get(f"{base}/page.json", params={"url": f"{api}#testdocs.gather"}).json()
    assert page["heading_path"] == ["API reference", "Tasks"]
    assert page["markdown"].startswith("gather") and "Run awaitables concurrently." in page["markdown"]
    assert "Schedule a coroutine" not in page["markdown"] and "Read and write bytes" not in page["markdown"]
    whole = get(f"{base}/page.json", params={"url": api}).json()
    assert [(s["heading"], s["anchor"]) for s in whole["sections"]] == [("Tasks", "tasks"), ("Streams", "streams")]
    html = get(f"{base}/page", params={"url": api}).text
    assert '<h2 id="tasks">' in html and '<h2 id="streams">' in html


def test_llms_txt_for_every_indexed_version_current_after_a_refresh(indexed, serve, crawl):
    """/llms.txt lists the indexed versions; each has an llms.txt (llmstxt.org: H1, summary, link lists) and an
    llms-full.txt with every page's Markdown, read from the index at each request."""
    base = serve().url
    root = get(f"{base}/llms.txt")
    assert root.status_code == 200 and root.headers["content-type"].startswith("text/plain")
    assert "- [testdocs@1.0](/docs/testdocs@1.0/llms.txt)" in root.text
    listing = get(f"{base}/docs/testdocs@1.0/llms.txt").text
    assert listing.startswith("# testdocs@1.0\n\n> Documentation of testdocs@1.0 from ")
    assert f"- [API reference]({indexed.url}/docs/api.html)" in listing and "\n## Docs\n" in listing
    assert "/docs/testdocs@1.0/llms-full.txt" in listing
    full = get(f"{base}/docs/testdocs@1.0/llms-full.txt").text
    assert f"# Guide\n\nSource: {indexed.url}/docs/guide.html\n\n" in full and "Install the library with pip." in full
    assert get(f"{base}/docs/nope@1.0/llms.txt").status_code == 404
    assert get(f"{base}/docs/testdocs@1.0%00/llms-full.txt").status_code == 400  # not the database's error
    indexed.site.put("/docs/guide.html", html_page("Guide", "<h2>Install</h2><p>Install it with uv now.</p>"))
    assert crawl(library="testdocs", version="1.0", mode="refresh").returncode == 0
    full = get(f"{base}/docs/testdocs@1.0/llms-full.txt").text
    assert "Install it with uv now." in full and "Install the library with pip." not in full
    assert get(f"{base}/docs/testdocs@latest/llms.txt").text.startswith("# testdocs@1.0")


RICH_BODY = (
    "<h2>Gathering</h2><p>Call <em>coro</em> with <code>asyncio.gather</code> to gather them; a C:\\path.</p>"
    '<div class="highlight-python"><div class="highlight"><pre>result = await asyncio.gather(a, b)</pre></div></div>'
    "<table><tr><th>name</th><th>gather</th></tr><tr><td><code>x</code></td><td>1</td></tr></table>"
    "<p>&lt;script&gt;window.owned = 1&lt;/script&gt; &lt;img src=x onerror=window.owned=2&gt; "
    '<a href="javascript:window.owned=3">click to gather</a> the end.</p>'
)


def test_browser_snippets_render_as_docs_every_page_keeps_a_clean_console_and_the_run_shows_its_vectors(
    docsite, crawl, serve, browser, db
):
    """A result's snippet in Chromium: emphasis, inline code, a highlighted code block and a table as elements, the
    page's own HTML and script as text; no page logs a console error (the favicon is there); the run page's vectors
    are the database's (a crawl that leaves its vectors to `docsbot embed`)."""
    docsite.site.put("/rich/index.html", html_page("Rich", RICH_BODY))
    result = crawl(url=f"{docsite.url}/rich/index.html", library="rich", env={"DOCSBOT_CRAWL_EMBED_WORKERS": "0"})
    assert result.returncode == 4, result.stderr[-3000:]  # pages stored, vectors pending
    run_id = db.execute("SELECT max(id) FROM crawl_runs").fetchone()[0]
    done, waiting = db.execute("SELECT count(embedding), count(*) - count(embedding) FROM documents").fetchone()
    assert waiting > 0 and done == 0
    server = serve()
    search = get(f"{server.url}/search.json", params={"q": "gather"}).json()["results"][0]
    assert "*coro*" in search["content"] and "<em>coro</em>" in search["snippet_html"]
    assert get(f"{server.url}/favicon.ico").headers["content-type"] == "image/svg+xml"

    page = browser.new_page(viewport={"width": 1100, "height": 800})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
    page.on("dialog", lambda d: (errors.append(f"dialog {d.message}"), d.dismiss()))
    try:
        page.goto(f"{server.url}/?q=gather")
        snippet = page.locator("ol.results > li .snippet").first
        assert snippet.locator("em").inner_text() == "coro"
        assert snippet.locator("p code").first.inner_text() == "asyncio.gather"
        assert "await" in snippet.locator("pre code .hl-k").all_inner_texts()  # highlighted as Python
        assert snippet.locator("table th").all_inner_texts() == ["name", "gather"]
        assert snippet.locator("table td code").inner_text() == "x"
        text = snippet.inner_text()
        assert "*coro*" not in text and "`" not in text and "| ---" not in text and "C:\\path" in text
        assert "<script>window.owned = 1</script>" in text  # the page's own markup is shown, never run
        assert snippet.locator("script, img, [onerror]").count() == 0
        assert snippet.locator("a[href^=javascript]").count() == 0
        assert snippet.locator("mark").count() >= 3  # in text, table and inline code
        assert page.evaluate("window.owned") is None
        accessible(page)
        shot(page, "search-snippets")

        page.goto(f"{server.url}/runs/{run_id}")
        vectors = page.locator("#vectors")
        assert (vectors.get_attribute("data-done"), vectors.get_attribute("data-waiting")) == (str(done), str(waiting))
        assert vectors.inner_text().startswith(f"{done:,} done, {waiting:,} waiting")
        assert page.locator("#run").get_attribute("data-live") == "no"  # no worker: nothing to follow
        # a worker's heartbeat (what `docsbot embed` writes): the page follows it until the worker ends
        model = db.execute("SELECT embedding_model FROM versions").fetchone()[0]
        worker = db.execute(
            "INSERT INTO embed_workers (model, host, pid, rate) VALUES (%s, 'elsewhere', 1, 2.5) RETURNING id", [model]
        ).fetchone()[0]
        page.reload()
        assert page.locator("#run").get_attribute("data-live") == "yes"
        assert "2.5 chunks/s" in vectors.inner_text() and "(1 worker embedding)" in vectors.inner_text()
        accessible(page)
        shot(page, "run-vectors")
        db.execute("UPDATE embed_workers SET finished_at = now() WHERE id = %s", [worker])
        page.locator("#run[data-live=no]").wait_for(timeout=20_000)  # the script saw it on the JSON twin
        assert "no worker is embedding" in vectors.inner_text()

        page.goto(f"{server.url}/libraries")
        assert f"{waiting:,} waiting" in page.locator("[data-vectors]").inner_text()
        pages = (
            "/libraries",
            "/changes?library=rich&version=",
            f"/page?url={docsite.url}/rich/index.html",
            "/",
            "/nosuchpage",
        )
        for path in pages:
            page.goto(f"{server.url}{path}")
            page.wait_for_load_state("networkidle")
            if path.startswith("/changes"):
                shot(page, "changes")
        assert errors == [
            f"{server.url}/nosuchpage: Failed to load resource: the server responded with a status of 404 (Not Found)"
        ]
    finally:
        page.close()
