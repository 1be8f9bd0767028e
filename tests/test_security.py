"""Safe to put in front of a team: no crawl of internal addresses on a caller's behalf, no script from
crawled or caller-given text, no request that crashes or stalls the server. Each test reproduces one finding of
the security review against real processes (``docsbot mcp``, ``docsbot serve``, ``scrapy crawl``), real HTTP
servers on loopback addresses and a real browser; ``test_web_fuzz`` is the property-based part."""

from __future__ import annotations

import gc
import json
import os
import random
import re
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import httpx2
import pytest

from docsbot import store
from docsbot.network import BlockedAddress, NetworkPolicy, check_url
from docsbot.project_settings import ProjectSettings
from tests.conftest import build_site, docsbot_env
from tests.docsite import DocSiteServer, html_page
from tests.test_mcp import HttpServer, answer, error, stdio_session
from tests.test_web import AUTH, CHROMIUM, Serve, browser, get  # noqa: F401 - the browser fixture

if TYPE_CHECKING:
    import psycopg

ROOT = Path(__file__).resolve().parent.parent


# --- the network policy -------------------------------------------------------------------------------------------


def test_the_policy_refuses_every_kind_of_internal_address_and_allows_what_the_operator_names():
    public = NetworkPolicy.public()
    for address in ("127.0.0.1", "127.3.4.5", "10.1.2.3", "172.16.0.9", "192.168.1.1", "169.254.169.254",
                    "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "fe80::1", "fd00::5", "::ffff:127.0.0.1",
                    "::ffff:169.254.169.254", "240.0.0.1"):  # fmt: skip
        assert public.refusal(address) is not None, address
    assert public.refusal("8.8.8.8") is None and public.refusal("2606:4700::1111") is None
    assert "link-local" in public.refusal("169.254.169.254")
    allowed = NetworkPolicy.public("10.0.0.0/8, 127.0.0.1 docs.internal")
    assert allowed.refusal("10.9.9.9") is None and allowed.refusal("127.0.0.1") is None
    assert allowed.refusal("127.0.0.2") is not None
    assert allowed.refusal("192.168.0.1", "Docs.Internal.") is None  # a named host, whatever it resolves to
    assert NetworkPolicy.public("*").refusal("127.0.0.1") is None
    with pytest.raises(ValueError, match="neither a network"):
        NetworkPolicy.public("10.0.0.0/33")
    with pytest.raises(BlockedAddress, match=r"localhost resolves to .*, which is not a public address"):
        check_url("http://localhost:8080/docs/", public)
    with pytest.raises(BlockedAddress, match=r"169\.254\.169\.254 is not a public address \(a link-local address\)"):
        check_url("http://169.254.169.254/latest/meta-data/", public)


# --- SSRF: a crawl started from the network -----------------------------------------------------------------------


def test_a_crawl_with_network_public_connects_to_no_private_address_not_even_through_a_redirect(crawl, db):
    """The guard sits where connections are made (Scrapy's resolver), so it holds for the root, for pages, and for
    a hop that leaves the allowed addresses: robots.txt, which Scrapy fetches and redirects without a scope check."""
    with DocSiteServer(build_site()) as site, DocSiteServer(build_site(), host="127.0.0.2") as internal:
        root = f"{site.url}/docs/index.html"
        refused = crawl(url=root, library="t", network="public")
        assert refused.returncode == 1, refused.stderr[-2000:]
        assert "not connecting to 127.0.0.1: 127.0.0.1 is a loopback address" in refused.stderr
        assert site.site.hits == []  # not one request reached the server
        assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 0

        site.site.redirects["/robots.txt"] = (302, f"{internal.url}/robots.txt")
        allowed = crawl(url=root, library="t", network="public", env={"DOCSBOT_ALLOWED_NETWORKS": "127.0.0.1/32"})
        assert allowed.returncode == 0, allowed.stderr[-2000:]
        assert internal.site.hits == []  # the redirect to 127.0.0.2 was never followed
        assert "not connecting to 127.0.0.2: 127.0.0.2 is a loopback address" in allowed.stderr
        stored = db.execute("SELECT settings->>'network' FROM versions").fetchone()[0]
        assert stored == "public"  # and every refresh of this version stays public
        refresh = crawl(library="t", mode="refresh")
        assert refresh.returncode == 1 and "127.0.0.1 is a loopback address" in refresh.stderr
        assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5  # a refused refresh deletes nothing


def test_a_crawl_with_network_public_refuses_to_render_or_to_run_without_the_guarded_resolver(crawl, docsite, db):
    root = f"{docsite.url}/docs/index.html"
    rendered = crawl(url=root, network="public", render="js", env={"DOCSBOT_ALLOWED_NETWORKS": "*"})
    assert rendered.returncode == 1 and "-a network=public renders nothing" in rendered.stderr
    other = crawl(
        url=root, network="public", settings={"TWISTED_DNS_RESOLVER": "scrapy.resolver.CachingHostnameResolver"}
    )
    assert other.returncode == 1 and "needs TWISTED_DNS_RESOLVER = docsbot.resolver.GuardedResolver" in other.stderr
    assert docsite.site.hits == []
    assert db.execute("SELECT to_regclass('versions') IS NULL").fetchone()[0]  # the setup rolled back


def test_index_library_over_mcp_reaches_only_public_addresses_unless_the_server_allows_more(database_url, db, tmp_path):
    env = docsbot_env(database_url, tmp_path, DOCSBOT_MCP_TOKEN="server-secret")
    with DocSiteServer(build_site()) as site:
        site.site.slow = {"/docs/deep.html": 3.0, "/docs/flaky.html": 3.0}
        root = f"{site.url}/docs/index.html"

        async def refused() -> None:
            async with stdio_session(env, tmp_path / "mcp.log", "--allow-refresh") as session:
                text = error(await session.call_tool("index_library", {"url": root, "library": "internal"}))
                assert "127.0.0.1 is not a public address (a loopback address)" in text
                metadata = "http://169.254.169.254/latest/meta-data/"
                assert "a link-local address" in error(await session.call_tool("index_library", {"url": metadata}))
                creds = error(await session.call_tool("index_library", {"url": "http://u:p@8.8.8.8/docs/"}))
                assert "user name or password" in creds
                over = error(await session.call_tool("index_library", {"url": root, "max_pages": 10**9}))
                assert "max_pages must be between 1 and 10000" in over

        anyio.run(refused)
        assert site.site.hits == []
        assert db.execute("SELECT to_regclass('versions') IS NULL").fetchone()[0]  # nothing was written

        async def allowed() -> None:
            args = ("--allow-refresh", "--allow-network", "127.0.0.1")
            async with stdio_session(env, tmp_path / "mcp2.log", *args) as session:
                started = answer(await session.call_tool("index_library", {"url": root, "library": "lib"}))
                assert "at most 10000 pages, 20 links deep" in started["message"]
                pid = int(re.search(r"process (\d+)", started["message"]).group(1))
                child_env = _environ(pid)
                assert "DOCSBOT_MCP_TOKEN" not in child_env  # the server's secret stays with the server
                assert child_env["DOCSBOT_ALLOWED_NETWORKS"] == "127.0.0.1"
                for _ in range(600):
                    run = answer(await session.call_tool("get_run", {"run_id": started["run_id"]}))
                    if run["state"] not in ("starting", "running"):
                        break
                    await anyio.sleep(0.2)
                assert (run["state"], run["outcome"]) == ("finished", "complete"), run

        anyio.run(allowed)
    settings, run_args = db.execute("SELECT settings, run_args FROM versions").fetchone()
    assert (settings["network"], settings["max_pages"], settings["max_depth"]) == ("public", 10000, 20)
    assert run_args["args"] == {"network": "public", "max_pages": "10000", "max_depth": "20"}  # scheduled runs too


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode("utf-8", "replace").split("\0") if "=" in item)


# --- seed files stay on the site's host ---------------------------------------------------------------------------


def test_sitemap_index_entries_and_seed_file_redirects_never_leave_the_sites_host(crawl, db):
    with DocSiteServer(build_site()) as site, DocSiteServer(build_site(), host="127.0.0.2") as other:
        site.site.put("/robots.txt", f"User-agent: *\nSitemap: {site.url}/sitemap_index.xml\n", "text/plain")
        site.site.put(
            "/sitemap_index.xml",
            '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<sitemap><loc>{site.url}/sitemap1.xml</loc></sitemap>"
            f"<sitemap><loc>{other.url}/sitemap.xml</loc></sitemap>"  # another host: never requested
            f"<sitemap><loc>{site.url.replace('127.0.0.1', 'localhost')}/sitemap.xml</loc></sitemap>"
            "</sitemapindex>",
            "application/xml",
        )
        site.site.redirects["/sitemap1.xml"] = (302, f"{other.url}/sitemap1.xml")  # a hop off the host
        site.site.redirects["/llms.txt"] = (302, f"{other.url}/llms.txt")
        site.site.redirects["/docs/llms.txt"] = (301, f"{other.url}/docs/llms.txt")
        result = crawl(url=f"{site.url}/docs/index.html", library="t", env={"DOCSBOT_LLMS_TXT": "1"})
        assert result.returncode == 0, result.stderr[-2000:]
        assert other.site.hits == []
        assert [h.path for h in site.site.hits if h.path.startswith("/sitemap")] == [
            "/sitemap_index.xml",
            "/sitemap1.xml",
        ]
        assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5


# --- stored XSS ---------------------------------------------------------------------------------------------------


def test_a_library_name_is_text_in_the_remove_dialog_never_script(
    crawl,
    docsite,
    serve_writes,
    browser,  # noqa: F811
    database_url,  # noqa: F811
):
    """The review's library name ``x');alert(document.domain);//`` broke out of an inline ``onsubmit``; this one
    (``'+alert(…)+'``) runs before the confirm even opens. Now the dialog's text comes from a data attribute."""
    name = "x'+alert(document.domain)+'"  # no longer a name: stored as a database from before holds it
    result = crawl(url=f"{docsite.url}/docs/index.html", library="victim", version="1")
    assert result.returncode == 0, result.stderr[-2000:]
    with store.connect(database_url) as conn:
        conn.execute("UPDATE libraries SET name = %s", (name,))
        conn.commit()
    server = serve_writes()
    page = browser.new_page(extra_http_headers=AUTH)
    dialogs: list[tuple[str, str]] = []
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    def answer_dialog(dialog) -> None:  # noqa: ANN001 - playwright's Dialog
        dialogs.append((dialog.type, dialog.message))
        dialog.dismiss()

    page.on("dialog", answer_dialog)
    try:
        page.goto(f"{server.url}/libraries")
        page.get_by_role("button", name=f"Remove {name}@1").click()
        page.wait_for_timeout(500)
        assert dialogs == [("confirm", f"Remove {name}@1 and all of its pages?")]
        assert not [e for e in errors if "Content Security Policy" in e], errors  # nothing inline was blocked
    finally:
        page.close()
    assert get(f"{server.url}/libraries.json", headers=AUTH).json()["libraries"][0]["library"] == name  # kept


@pytest.fixture
def serve_writes(database_url, tmp_path):
    servers: list[Serve] = []

    def start(*args: str, http: str = "127.0.0.1:0", **env: str) -> Serve:
        env.setdefault("DOCSBOT_MCP_TOKEN", "tok")  # writes over HTTP need a token
        server = Serve(
            docsbot_env(database_url, tmp_path, **env), tmp_path / f"serve{len(servers)}.log", "--allow-writes",
            *args, http=http,
        )  # fmt: skip
        servers.append(server)
        server.wait_ready()
        return server

    yield start
    for server in servers:
        server.stop()


def test_every_page_carries_the_security_headers_and_no_inline_script(crawl, docsite, serve_writes):
    docsite.site.put(
        "/docs/guide.html",
        html_page(
            "Guide",
            # Markdown written as text on the page is stored as it stands (the extraction drops <img> itself)
            "<h2>Diagram</h2><p>![the pipeline](http://127.0.0.2:9/pixel.png)</p><p>[click](javascript:alert(1))</p>",
            ["index.html"],
        ),
    )
    assert crawl(url=f"{docsite.url}/docs/index.html", library="t", version="1").returncode == 0
    server = serve_writes(DOCSBOT_MCP_TOKEN="tok")
    auth = {"Authorization": "Bearer tok"}
    for path in ("/", "/?q=guide", "/libraries", f"/page?url={docsite.url}/docs/guide.html", "/nowhere", "/login"):
        response = get(f"{server.url}{path}", headers=auth)
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY" and response.headers["referrer-policy"] == "same-origin"
        assert not re.search(r"<script(?![^>]*\bsrc=)", response.text), path  # every script is a file
        assert not re.search(r"\son[a-z]+\s*=", response.text), path  # no inline handler
        assert " style=" not in response.text, path
    page = get(f"{server.url}/page", params={"url": f"{docsite.url}/docs/guide.html"}, headers=auth).text
    article = page[page.index('<article class="doc">') :]
    assert "<img" not in article and 'href="http://127.0.0.2:9/pixel.png"' in article  # a link, not loaded
    assert 'href="javascript:' not in article
    assert get(f"{server.url}/static/docsbot.js").headers["content-type"].startswith("text/javascript")


# --- the embedded PostgreSQL's socket -----------------------------------------------------------------------------


def test_the_embedded_server_refuses_a_data_directory_whose_socket_would_be_shared(tmp_path):
    data = Path("/tmp") / ("d" * 60) / ("e" * 40)  # the socket's path would be over 107 bytes
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCSBOT_DATA_DIR": str(data), "DOCSBOT_PG_IDLE_TIMEOUT": "0"}
    env.pop("DATABASE_URL", None)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "docsbot.cli", "status"], env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 2, result.stderr
        assert "too long for the embedded PostgreSQL's Unix socket" in result.stderr
        assert "Traceback" not in result.stderr
        assert not (data / "pgdata" / "postmaster.pid").exists()  # nothing was started
    finally:
        subprocess.run(["rm", "-rf", str(data.parent)], check=False)


# --- DNS rebinding on any loopback address ------------------------------------------------------------------------


def test_a_server_on_127_0_0_2_answers_only_to_loopback_names(database_url, tmp_path, serve_writes):
    server = HttpServer(docsbot_env(database_url, tmp_path), tmp_path / "mcp.log", "--http", "127.0.0.2:0")
    try:
        url = server.wait_ready()
        port = url.split(":")[2].split("/")[0]
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        rebound = {**accept, "Host": f"evil.example:{port}", "Origin": "http://evil.example"}
        foreign = httpx2.post(url, json=body, timeout=30, headers=rebound)
        assert foreign.status_code in (403, 421), foreign.text
        own = httpx2.post(url, json=body, timeout=30, headers=accept)
        assert own.status_code == 200, own.text
    finally:
        server.stop()
    pages = serve_writes(http="127.0.0.2:0")
    assert get(f"{pages.url}/libraries.json", headers=AUTH).status_code == 200  # its own name (refused before: 421)
    assert get(f"{pages.url}/libraries.json", headers={**AUTH, "Host": "evil.example"}).status_code == 421


# --- denial of service --------------------------------------------------------------------------------------------


def _big_page(conn: psycopg.Connection, version_id: int, url: str, headings: int) -> None:
    lines, anchors, offset = ["# Big"], [], len("# Big") + 2
    for i in range(headings):
        line = f"## Heading {i}"
        if i % 3 == 0:
            anchors.append([offset, f"h{i}"])
        lines.append(line)
        offset += len(line) + 2
    conn.execute(
        "INSERT INTO pages (version_id, url, title, depth, markdown, anchors) VALUES (%s, %s, 'Big', 0, %s, %s)",
        (version_id, url, "\n\n".join(lines), json.dumps(anchors)),
    )


def test_a_page_of_20000_headings_costs_linear_time_to_view(database_url, tmp_path):
    """A page's view used to cost headings × anchors (a 20,000-heading page with 6,667 anchors: seconds of CPU).
    Measured as a ratio in one run: ten times the headings must cost about ten times the time, not a hundred."""
    from docsbot.service import DocsIndex
    from docsbot.web import render_markdown

    with store.connect(database_url) as conn:
        store.migrate(conn)
        version = store.upsert_version(conn, "big", "", "http://h/", {})
        _big_page(conn, version.id, "http://h/small.html", 2_000)
        _big_page(conn, version.id, "http://h/big.html", 20_000)
        conn.commit()
    settings = ProjectSettings("docsbot.settings", {"DOCSBOT_DATA_DIR": str(tmp_path)})
    with DocsIndex(settings, database_url) as index:

        def view(url: str) -> float:
            best = float("inf")
            for _ in range(3):
                gc.collect()
                started = time.perf_counter()
                page = index.page(url)
                render_markdown(page.markdown, [s.anchor for s in page.sections])
                index.page(url, "h15000" if "big" in url else "h1500")
                best = min(best, time.perf_counter() - started)
            return best

        small, big = view("http://h/small.html"), view("http://h/big.html")
        sections = index.page("http://h/big.html").sections
        from starlette.testclient import TestClient

        from docsbot.web import build_app

        with TestClient(build_app(index, None, None, "127.0.0.1"), base_url="http://127.0.0.1") as client:
            shown = client.get("/page", params={"url": "http://h/big.html"})
        assert shown.status_code == 200 and "about the first 262,144 are shown here" in shown.text
    assert len(sections) == 20_000 and sections[3].anchor == "h3"
    print(f"page view: 2,000 headings {small * 1000:.0f} ms, 20,000 headings {big * 1000:.0f} ms ({big / small:.1f}x)")
    assert big / small < 30, (small, big)


def test_forms_are_bounded_and_bad_input_is_a_4xx_naming_the_parameter(crawl, docsite, serve_writes):
    assert crawl(url=f"{docsite.url}/docs/index.html", library="t", version="1").returncode == 0
    server = serve_writes(DOCSBOT_MCP_TOKEN="tok")
    base, auth = server.url, {"Authorization": "Bearer tok"}
    huge = httpx2.post(f"{base}/login", content=b"token=" + b"x" * 20_000_000, timeout=60,
                       headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert huge.status_code == 413
    csrf = httpx2.post(f"{base}/libraries/remove", data={"csrf": "é", "library": "t", "version": "1"},
                       headers=auth, timeout=30)  # fmt: skip
    assert csrf.status_code == 403
    since = get(f"{base}/changes.json", params={"library": "t", "since": "99999999999999d"}, headers=auth)
    assert since.status_code == 400 and "since=" in since.json()["error"]
    bad_since = get(f"{base}/changes.json", params={"library": "t", "since": "yesterday"}, headers=auth)
    assert bad_since.status_code == 400 and "since=" in bad_since.json()["error"]  # was reported as a run= error
    run = get(f"{base}/changes.json", params={"library": "t", "run": "9" * 30}, headers=auth)
    assert run.status_code == 400 and "run=" in run.json()["error"]
    assert get(f"{base}/runs/{'9' * 30}.json", headers=auth).status_code == 404
    nul = get(f"{base}/search.json", params={"q": "install", "library": "t\0x"}, headers=auth)
    assert nul.status_code == 400 and "library holds a NUL character" in nul.json()["error"]
    page = get(f"{base}/page.json", params={"url": f"{docsite.url}/docs/\0"}, headers=auth)
    assert page.status_code == 400 and "url holds a NUL character" in page.json()["error"]


def test_sessions_are_secure_behind_https_and_end_when_their_owner_signs_out(serve_writes):
    server = serve_writes(DOCSBOT_MCP_TOKEN="tok")
    plain = httpx2.post(f"{server.url}/login", data={"token": "tok"}, timeout=30)
    assert plain.status_code == 303 and "secure" not in plain.headers["set-cookie"].lower()
    # behind a reverse proxy on this machine that terminates TLS (uvicorn trusts 127.0.0.1's X-Forwarded-Proto)
    tls = httpx2.post(f"{server.url}/login", data={"token": "tok"}, headers={"X-Forwarded-Proto": "https"}, timeout=30)
    assert tls.status_code == 303 and "; secure" in tls.headers["set-cookie"].lower()
    assert "httponly" in tls.headers["set-cookie"].lower() and "samesite=strict" in tls.headers["set-cookie"].lower()
    cookie = plain.cookies["docsbot_session"]
    copy = {"Cookie": f"docsbot_session={cookie}"}
    assert get(f"{server.url}/libraries.json", headers=copy).status_code == 200
    get(f"{server.url}/logout", headers=copy)
    assert get(f"{server.url}/libraries.json", headers=copy).status_code == 401  # a copied cookie stops working


def test_a_heading_with_a_control_character_is_stored_not_a_failed_run(crawl, docsite, db):
    docsite.site.put(
        "/docs/index.html",
        html_page("Welcome", '<h2 id="a&#1;b">Get&#1;ting started</h2><p>Read&#x1F; the guide.</p>', ["guide.html"]),
    )
    result = crawl(url=f"{docsite.url}/docs/index.html", library="t")
    assert result.returncode == 0, result.stderr[-2000:]
    markdown = db.execute("SELECT markdown FROM pages WHERE url LIKE '%index.html'").fetchone()[0]
    assert "## Getting started" in markdown and "Read the guide." in markdown


def test_a_name_too_long_for_an_index_is_stored_as_text_and_costs_linear_time(crawl, docsite, db):
    # A word shaped like an identifier (camelCase) of 3,000 random letters, whose posting term would exceed
    # PostgreSQL's B-tree limit (2,704 bytes) and fail the page's transaction; and a dotted name of 4,000 parts,
    # whose every suffix was a term: 4,000 terms of up to 24 KB, quadratic in its length.
    rng = random.Random(7)
    word = "aB" + "".join(rng.choice(string.ascii_letters) for _ in range(3000))
    dotted = ".".join(f"part{i}" for i in range(4000))
    docsite.site.put(
        "/docs/index.html",
        html_page(
            "Welcome",
            f"<h2>Blob</h2><pre>{word}</pre><p>Short prose about getsizeof.</p>"
            f'<dl class="py function"><dt id="{dotted}"><code>{dotted}</code></dt><dd><p>Deep name.</p></dd></dl>',
            ["guide.html"],
        ),
    )
    result = crawl(url=f"{docsite.url}/docs/index.html", library="t")
    assert result.returncode == 0, result.stderr[-2000:]
    assert db.execute("SELECT count(*) FROM pages WHERE url LIKE '%%/docs/index.html'").fetchone()[0] == 1
    longest, terms = db.execute(
        "SELECT max(length(po.term)) FILTER (WHERE left(po.term, 1) = '='), count(*) FROM postings po"
        " JOIN pages p ON p.id = po.page_id WHERE p.url LIKE '%%/docs/index.html'"
    ).fetchone()
    assert longest <= 257 and terms < 200  # names of at most 256 characters become identifier terms
    assert db.execute("SELECT count(*) FROM postings WHERE term = 'getsizeof'").fetchone()[0] == 1  # the rest is
    assert db.execute("SELECT count(*) FROM symbols WHERE length(name) > 256").fetchone()[0] == 0


def test_export_names_its_file_inside_the_working_directory_whatever_the_library_is_called(crawl, docsite, tmp_path,
                                                                                            database_url):  # fmt: skip
    assert crawl(url=f"{docsite.url}/docs/index.html", library="victim", version="1").returncode == 0
    with store.connect(database_url) as conn:  # a name from before names were checked
        conn.execute("UPDATE libraries SET name = '../../escape'")
        conn.commit()
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "export", "../../escape@1"],
        cwd=work, env=docsbot_env(database_url, tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [p.name for p in work.iterdir()] == ["escape-1-llms-full.txt"]
    assert not list(tmp_path.parent.glob("escape*"))


def test_libraries_never_show_a_root_urls_credentials(database_url, tmp_path):
    from docsbot.service import DocsIndex

    with store.connect(database_url) as conn:
        store.migrate(conn)
        store.upsert_version(conn, "secret", "", "http://user:hunter2@docs.example/", {})
        conn.commit()
    settings = ProjectSettings("docsbot.settings", {"DOCSBOT_DATA_DIR": str(tmp_path)})
    with DocsIndex(settings, database_url) as index:
        listed = index.libraries()
    assert [v.root_url for v in listed.libraries] == ["http://docs.example/"]
    assert "hunter2" not in listed.model_dump_json()
