"""JavaScript-rendered docs through scrapy-playwright and Debian's Chromium (installed by `make test`).

The test site's pages are empty shells: a script fetches each page's text and writes it into the main content,
as single-page documentation apps do. Only a browser ever requests the script, so the server's log tells
exactly how many renders a run cost.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import BY_DESIGN
from tests.docsite import DocSite, DocSiteServer, html_page
from tests.test_crawl import chunks, last_run, pages

APP_JS = """
fetch(document.body.dataset.content)
  .then((r) => r.text())
  .then((html) => { document.getElementById("app").innerHTML = html; });
"""


def js_page(title: str, content: str, links: list[str] = ()) -> str:
    """A shell whose main content is written by app.js from ``content`` (a path the script fetches)."""
    page = html_page(title, '<div id="app"><p>Loading…</p></div>', links)
    return page.replace("<body>", f'<body data-content="{content}">').replace(
        "</body>", '<script src="/docs/app.js"></script></body>'
    )


def build_js_site() -> DocSite:
    site = DocSite()
    site.put("/docs/app.js", APP_JS, "text/javascript")
    site.put("/docs/index.html", js_page("Welcome", "/content/index.frag", ["tutorial.html", "static.html"]))
    site.put("/content/index.frag", "<h2>Overview</h2><p>The quokka library hops between event loops.</p>")
    site.put("/docs/tutorial.html", js_page("Tutorial", "/content/tutorial.frag", ["index.html"]))
    site.put("/content/tutorial.frag", "<h2>First steps</h2><p>Feed the wallaby a coroutine.</p>")
    site.put("/docs/static.html", html_page("Static", "<p>Plain HTML needs no browser.</p>", ["index.html"]))
    return site


@pytest.fixture
def jssite():
    with DocSiteServer(build_js_site()) as server:
        yield server


def renders(site: DocSite) -> int:
    """Browser renders of the script pages (only a browser runs app.js)."""
    return len(site.hits_for("/docs/app.js"))


def text_of(db) -> str:
    return "\n".join(content for page in chunks(db).values() for _, content in page)


def run(crawl, expect: int = 0, **args):
    result = crawl(library="jsdocs", **args)
    assert result.returncode == expect, result.stderr[-3000:]
    return result


def test_without_rendering_the_script_written_content_is_missing(crawl, jssite, db):
    run(crawl, url=f"{jssite.url}/docs/index.html")
    assert set(pages(db)) == {"/docs/index.html", "/docs/tutorial.html", "/docs/static.html"}
    text = text_of(db)
    assert "quokka" not in text and "wallaby" not in text
    assert "Plain HTML needs no browser." in text
    assert renders(jssite.site) == 0


def test_render_js_indexes_what_the_browser_shows_and_an_unchanged_refresh_renders_nothing(crawl, jssite, db):
    site = jssite.site
    run(crawl, url=f"{jssite.url}/docs/index.html", render="js")
    text = text_of(db)
    assert "The quokka library hops between event loops." in text
    assert "Feed the wallaby a coroutine." in text
    assert renders(site) == 2  # the two script pages, once each
    assert last_run(db)["rendered"] == 3  # render=js renders every page, static.html included
    stored = pages(db)
    assert stored["/docs/index.html"]["etag"] == site.pages["/docs/index.html"].etag  # the document's validators

    site.hits.clear()
    run(crawl, version="", mode="refresh")  # render=js is reused from the index
    assert renders(site) == 0
    for path in ("/docs/index.html", "/docs/tutorial.html", "/docs/static.html"):
        [hit] = site.hits_for(path)
        assert (hit.status, hit.if_none_match) == (304, site.pages[path].etag)
    assert "rendered" not in last_run(db)
    assert pages(db) == stored
    assert "quokka" in text_of(db)


def test_a_changed_page_is_revalidated_over_http_then_rendered_once(crawl, jssite, db):
    site = jssite.site
    run(crawl, url=f"{jssite.url}/docs/index.html", render="js")
    site.put("/docs/tutorial.html", js_page("Tutorial", "/content/tutorial-v2.frag", ["index.html"]))
    site.put("/content/tutorial-v2.frag", "<h2>First steps</h2><p>Feed the wombat a task group.</p>")
    site.hits.clear()

    run(crawl, mode="refresh")

    # The plain conditional request saw the change (200); then exactly one render, without validators.
    assert [(h.status, h.if_none_match is not None) for h in site.hits_for("/docs/tutorial.html")] == [
        (200, True),
        (200, False),
    ]
    assert renders(site) == 1
    text = text_of(db)
    assert "Feed the wombat a task group." in text and "wallaby" not in text
    assert pages(db)["/docs/tutorial.html"]["etag"] == site.pages["/docs/tutorial.html"].etag
    run_stats = last_run(db)
    assert (run_stats["rendered"], run_stats["modified"], run_stats["unchanged"]) == (1, 1, 2)


def test_a_render_that_times_out_keeps_the_stored_page(crawl, jssite, db):
    site = jssite.site
    run(crawl, url=f"{jssite.url}/docs/index.html", render="js")
    before = chunks(db)
    site.put("/docs/tutorial.html", js_page("Tutorial", "/content/slow.frag", ["index.html"]))
    site.put("/content/slow.frag", "<p>Too late.</p>")
    site.slow["/content/slow.frag"] = 4  # the page never settles within the render timeout

    run(crawl, expect=3, mode="refresh", env={"DOCSBOT_RENDER_TIMEOUT_MS": "1500"})  # kept, counted: incomplete

    assert chunks(db) == before
    assert last_run(db)["failed/fetch"] == 1


def test_render_urls_setting_renders_only_matching_pages(crawl, jssite, db):
    run(crawl, url=f"{jssite.url}/docs/index.html", env={"DOCSBOT_RENDER_URLS": r"/tutorial\.html$"})
    text = text_of(db)
    assert "wallaby" in text and "quokka" not in text
    assert renders(jssite.site) == 1


def test_missing_browser_is_a_clear_error_and_touches_nothing(crawl, jssite, db):
    run(crawl, url=f"{jssite.url}/docs/index.html")
    before = chunks(db)
    jssite.site.hits.clear()
    result = crawl(library="jsdocs", mode="refresh", render="js", env={"DOCSBOT_CHROMIUM": "/nonexistent/chromium"})
    assert result.returncode != 0
    assert "rendering needs Chromium at /nonexistent/chromium" in result.stderr
    assert jssite.site.hits == []
    assert chunks(db) == before


@pytest.mark.skipif(os.geteuid() != 0, reason=BY_DESIGN + "the unprivileged launcher is for a crawler running as root")
def test_as_root_chromium_runs_unprivileged_with_its_sandbox(tmp_path):
    """Chromium refuses its sandbox to root; docsbot starts it as an unprivileged user instead of --no-sandbox."""
    from docsbot.render import launch_options

    browser = os.environ.get("DOCSBOT_CHROMIUM", "/usr/bin/chromium")
    if not os.access(browser, os.X_OK):
        pytest.skip(f"no Chromium at {browser}: `make chromium`")
    options = launch_options(browser, root=True)
    assert options["executable_path"].endswith("/docsbot/bin/chromium-unprivileged")
    assert "--no-sandbox" not in options["args"]
    profile = tmp_path / "profile"
    profile.mkdir(mode=0o700)  # as Playwright makes it: root's
    page = "data:text/html,<p id=x>rendered</p><script>document.getElementById('x').textContent+='!'</script>"
    result = subprocess.run(
        [options["executable_path"], *options["args"], "--headless", f"--user-data-dir={profile}", "--dump-dom", page],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "rendered!" in result.stdout, result.stderr[-2000:]
    assert profile.stat().st_uid != 0  # handed to the unprivileged user the browser ran as


def test_the_browser_given_with_s_is_the_one_checked_and_launched(crawl, jssite, db):
    """``-s DOCSBOT_CHROMIUM=PATH`` names the browser of this crawl, whatever the environment says (the settings
    module once made the launch options, and the check before a crawl, of the environment's value alone)."""
    browser = os.environ.get("DOCSBOT_CHROMIUM", "/usr/bin/chromium")  # a browser that works, in the environment
    env = {"DOCSBOT_CHROMIUM": browser}
    result = crawl(url=f"{jssite.url}/docs/index.html", library="jsdocs", render="js", env=env,
                   settings={"DOCSBOT_CHROMIUM": "/nonexistent/chromium"})  # fmt: skip
    assert result.returncode == 1, result.stderr[-3000:]
    assert "rendering needs Chromium at /nonexistent/chromium" in result.stderr
    assert jssite.site.hits == []
    run(crawl, url=f"{jssite.url}/docs/index.html", render="js", env={"DOCSBOT_CHROMIUM": "/nonexistent/chromium"},
        settings={"DOCSBOT_CHROMIUM": browser})  # fmt: skip
    assert "wallaby" in text_of(db) and renders(jssite.site) == 2
