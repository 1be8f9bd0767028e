"""The docs spider end to end, for behaviours tests/test_crawl.py and tests/test_refresh_rules.py do not cover:
410, max_pages truncation and orphans, a model that fails, sitemap indexes and gzipped sitemaps, robots.txt
fetched once, and URLs requested the way the site links them (a deleted directory index is deleted)."""

from __future__ import annotations

import gzip

from tests.docsite import Page, html_page
from tests.test_crawl import DOC_PAGES, chunks, index, last_run, pages, refresh


def test_410_gone_deletes_the_page_and_its_chunks(crawl, docsite, db):
    index(crawl, docsite)
    api_id = pages(db)["/docs/api.html"]["id"]
    docsite.site.failing["/docs/api.html"] = 410
    refresh(crawl)
    assert "/docs/api.html" not in pages(db)
    assert db.execute("SELECT count(*) FROM documents WHERE page_id = %s", (api_id,)).fetchone()[0] == 0
    assert last_run(db)["deleted"] == 1


def test_max_pages_truncation_stores_what_it_reached_and_prunes_no_orphan(crawl, docsite, db):
    index(crawl, docsite, prune="orphans")
    assert set(pages(db)) == DOC_PAGES
    result = refresh(crawl, max_pages="2")
    assert result.returncode == 0
    # three stored pages were not requested: with the crawl cut short nobody can tell they are orphans
    assert set(pages(db)) == DOC_PAGES
    run = last_run(db)
    assert run["unchanged"] == 2 and "orphans" not in run and run.get("deleted", 0) == 0
    assert len([h for h in docsite.site.hits if h.path != "/robots.txt" and h.status == 304]) == 2


def test_a_model_that_cannot_load_stops_a_full_index_before_its_first_request(crawl, docsite, db):
    result = crawl(
        url=f"{docsite.url}/docs/index.html",
        library="testdocs",
        version="1.0",
        embedder="tests.embedders.BrokenEmbedder",
    )
    assert result.returncode == 1
    assert "cannot load embedding model 'test/broken-384': model.onnx is truncated" in result.stderr
    assert "Traceback" not in result.stderr
    assert docsite.site.hits == []  # not even robots.txt
    assert pages(db) == {}
    run = last_run(db)
    assert run["finish_reason"] == "embedding_model_error" and run["exit_code"] == 1
    assert db.execute("SELECT outcome FROM crawl_runs").fetchone()[0] == "failed"


def test_a_model_that_fails_mid_run_leaves_the_pages_searchable_and_their_vectors_pending(crawl, docsite, db):
    index(crawl, docsite)
    docsite.site.put("/docs/api.html", html_page("API reference", "<p>A new text nobody embedded yet.</p>"))
    result = crawl(library="testdocs", version="1.0", mode="refresh", embedder="tests.embedders.FailingEmbedder")
    assert result.returncode == 4, result.stderr[-3000:]  # every page stored; vectors pending
    assert "CUDA out of memory" in result.stderr and "docsbot embed" in result.stderr
    assert "A new text nobody embedded yet." in "\n".join(c for _, c in chunks(db)["/docs/api.html"])
    waiting = db.execute("SELECT count(*) FROM documents WHERE embedding IS NULL").fetchone()[0]
    run = last_run(db)
    assert waiting >= 1 and run["vectors_waiting"] == waiting and run["modified"] == 1
    (outcome, reason) = db.execute("SELECT outcome, outcome_reason FROM crawl_runs ORDER BY id DESC").fetchone()
    assert outcome == "vectors_pending" and "CUDA out of memory" in reason
    assert refresh(crawl).returncode == 0  # the next run's worker takes them
    assert db.execute("SELECT count(*) FROM documents WHERE embedding IS NULL").fetchone()[0] == 0


def _sitemap(urls: list[str]) -> str:
    entries = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'


def test_a_sitemap_index_and_a_gzipped_sitemap_are_followed(crawl, docsite, db):
    site = docsite.site
    site.put("/docs/plain.html", html_page("Plain", "<p>Listed in a plain sitemap.</p>"))
    site.put("/docs/zipped.html", html_page("Zipped", "<p>Listed in a gzipped sitemap.</p>"))
    site.put("/docs/sitemap-plain.xml", _sitemap([f"{docsite.url}/docs/plain.html"]), "application/xml")
    site.pages["/docs/sitemap-zipped.xml.gz"] = Page(
        gzip.compress(_sitemap([f"{docsite.url}/docs/zipped.html"]).encode()), '"gz"', "Mon, 01 Jan 2024 00:00:00 GMT",
        "application/gzip",
    )  # fmt: skip
    site.put(
        "/docs/sitemap.xml",
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{docsite.url}/docs/sitemap-plain.xml</loc></sitemap>"
        f"<sitemap><loc>{docsite.url}/docs/sitemap-zipped.xml.gz</loc></sitemap></sitemapindex>",
        "application/xml",
    )
    index(crawl, docsite, sitemap=f"{docsite.url}/docs/sitemap.xml")
    assert set(pages(db)) == DOC_PAGES | {"/docs/plain.html", "/docs/zipped.html"}
    assert "Listed in a gzipped sitemap." in "".join(c for _, c in chunks(db)["/docs/zipped.html"])

    # a refresh revalidates the sitemaps as it does pages: all 304, the pages they list still seeded
    sitemaps = ("/docs/sitemap.xml", "/docs/sitemap-plain.xml", "/docs/sitemap-zipped.xml.gz")
    site.hits.clear()
    refresh(crawl, sitemap=f"{docsite.url}/docs/sitemap.xml", prune="orphans")
    assert {h.path: (h.status, h.if_none_match) for h in site.hits if h.path in sitemaps} == {
        path: (304, site.pages[path].etag) for path in sitemaps
    }
    assert {h.status for h in site.hits if h.path.endswith(".html")} == {304}
    assert set(pages(db)) == DOC_PAGES | {"/docs/plain.html", "/docs/zipped.html"}  # not orphans
    assert last_run(db)["sitemap/unchanged"] == 3

    # one sitemap changes: only it is downloaded, and the page it adds is indexed
    site.put("/docs/more.html", html_page("More", "<p>Added to the plain sitemap.</p>"))
    site.put(
        "/docs/sitemap-plain.xml",
        _sitemap([f"{docsite.url}/docs/plain.html", f"{docsite.url}/docs/more.html"]),
        "application/xml",
    )
    site.hits.clear()
    refresh(crawl, sitemap=f"{docsite.url}/docs/sitemap.xml")
    assert [(h.path, h.status) for h in site.hits if h.path in sitemaps and h.status == 200] == [
        ("/docs/sitemap-plain.xml", 200)
    ]
    assert "/docs/more.html" in pages(db)


def test_robots_txt_is_fetched_once_per_run_and_its_sitemaps_are_used(crawl, docsite, db):
    site = docsite.site
    site.put(
        "/robots.txt", f"User-agent: *\nDisallow: /docs/private/\nSitemap: {docsite.url}/sitemap.xml\n", "text/plain"
    )
    site.put("/sitemap.xml", _sitemap([f"{docsite.url}/docs/unlinked.html"]), "application/xml")
    site.put("/docs/unlinked.html", html_page("Unlinked", "<p>Only the sitemap knows me.</p>"))
    index(crawl, docsite)
    assert "/docs/unlinked.html" in pages(db)
    assert len(site.hits_for("/robots.txt")) == 1
    site.hits.clear()
    refresh(crawl)
    assert len(site.hits_for("/robots.txt")) == 1


def test_a_deleted_directory_index_is_deleted_and_no_url_is_invented(crawl, docsite, db):
    site = docsite.site
    site.put("/docs/sub/index.html", html_page("Sub", "<p>A directory index page.</p>", ["../index.html"]))
    site.put(
        "/docs/index.html",
        html_page("Welcome", "<p>Home.</p>", ["guide.html", "api.html", "sub/index.html", "sub/"]),
    )
    index(crawl, docsite)
    stored = db.execute("SELECT url FROM pages WHERE url LIKE '%%/sub/%%'").fetchall()
    assert [url for (url,) in stored] == [f"{docsite.url}/docs/sub/index.html"]  # linked twice, stored once
    site.delete("/docs/sub/index.html")
    site.hits.clear()
    refresh(crawl)
    assert not db.execute("SELECT count(*) FROM pages WHERE url LIKE '%%/sub/%%'").fetchone()[0]
    assert site.statuses()["/docs/sub/index.html"] == [404]
    # the server's view: DocSite records a request for "/docs/sub/" as "/docs/sub/index.html"; only one came
    assert len(site.hits_for("/docs/sub/index.html")) == 1


def test_a_root_that_redirects_costs_a_304_at_its_target(crawl, docsite, db):
    # A root that redirects to the real start page (as "/" → "/en/stable/", or a meta-refresh index.html): the
    # redirect hop carries the target's own stored validators (never the redirecting URL's), so an unchanged
    # refresh downloads no page body at all.
    site = docsite.site
    start = docsite.site.pages["/docs/index.html"]
    site.pages["/docs/start.html"] = start
    site.redirects["/docs/index.html"] = (301, f"{docsite.url}/docs/start.html")
    index(crawl, docsite)
    assert "/docs/start.html" in pages(db) and "/docs/index.html" not in pages(db)
    site.hits.clear()
    refresh(crawl)
    start_hits = site.hits_for("/docs/start.html")
    assert start_hits and all(h.status == 304 and h.if_none_match == start.etag for h in start_hits)
    assert all(h.status in (301, 304) for h in site.hits if h.path != "/robots.txt")
    run = last_run(db)
    assert run.get("modified", 0) == 0 and run.get("unchanged/same_content", 0) == 0
    assert set(pages(db)) >= {"/docs/start.html", "/docs/guide.html", "/docs/api.html"}  # links still followed


def test_a_403_keeps_the_page_unless_the_site_says_403_means_gone(crawl, docsite, db):
    # nginx without directory listings: the site links "sub", which redirects to "sub/"; once sub/index.html is
    # deleted, "sub/" answers 403. By default (RFC 9110: only 404/410 are definitive) the page is kept and the run
    # counts a failure; DOCSBOT_GONE_STATUSES=403,404,410 tells docsbot that this site's 403 means gone.
    site = docsite.site
    site.put("/docs/sub/index.html", html_page("Sub", "<p>A directory index page.</p>", ["../guide.html"]))
    site.redirects["/docs/sub"] = (301, f"{docsite.url}/docs/sub/")
    site.put("/docs/index.html", html_page("Welcome", "<p>Home.</p>", ["guide.html", "api.html", "sub"]))
    index(crawl, docsite)
    assert "/docs/sub/index.html" in pages(db)  # stored under the redirect's final URL, ".../sub/"
    del site.pages["/docs/sub/index.html"]
    site.failing["/docs/sub/index.html"] = 403  # the test server maps "sub/" to "sub/index.html"
    refresh(crawl, expect=3)  # kept, and counted failed: the run is incomplete
    assert "/docs/sub/index.html" in pages(db)
    assert last_run(db)["failed/fetch"] >= 1
    refresh(crawl, settings={"DOCSBOT_GONE_STATUSES": "403,404,410"})
    assert "/docs/sub/index.html" not in pages(db)
    assert last_run(db)["deleted"] == 1
