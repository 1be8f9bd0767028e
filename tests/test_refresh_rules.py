"""Refresh on servers and sites that misbehave (issue: refresh that stays correct and does no work twice).

Each test drives a real local HTTP server into one situation and asserts on PostgreSQL rows and on the
requests the server received.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from psycopg import sql

from tests.conftest import ROOT
from tests.docsite import html_page
from tests.test_crawl import DOC_PAGES, chunks, index, last_run, pages, refresh


@pytest.mark.parametrize("validators", ["weak", "last_modified"])
def test_weak_etags_and_last_modified_alone_revalidate(crawl, docsite, db, validators):
    site = docsite.site
    site.validators = validators
    index(crawl, docsite)
    site.hits.clear()
    refresh(crawl)
    hits = [h for h in site.hits if h.path != "/robots.txt"]
    assert {h.status for h in hits} == {304}
    if validators == "weak":
        assert all(h.if_none_match.startswith('W/"') for h in hits)  # sent back as it came
    else:
        assert all(h.if_none_match is None and h.if_modified_since for h in hits)
    assert last_run(db)["unchanged"] == 5


@pytest.mark.parametrize("validators", ["none", "rotating"])
def test_same_content_without_usable_validators_costs_no_chunk_work(crawl, docsite, db, validators):
    site = docsite.site
    site.validators = validators
    index(crawl, docsite)
    before = chunks(db)
    refresh(crawl)
    assert chunks(db) == before  # same chunk ids: nothing deleted or inserted
    run = last_run(db)
    assert run["unchanged/same_content"] == 5
    assert run.get("chunks_embedded", 0) == 0 and run.get("chunks_written", 0) == 0
    if validators == "rotating":  # the new validators are stored, so the next request can be conditional
        stored = {p: v["etag"] for p, v in pages(db).items()}
        assert all(e.startswith('"rot-') for e in stored.values())


def test_a_changed_footer_timestamp_is_not_a_change(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    before = chunks(db)
    for path in DOC_PAGES:
        html = site.pages[path].body.decode().replace("Built with a test generator", "Built 2026-11-22 10:00")
        site.put(path, html)  # new ETag and Last-Modified, same main content
    refresh(crawl)
    assert chunks(db) == before
    run = last_run(db)
    assert run["unchanged/same_content"] == 5 and run.get("chunks_embedded", 0) == 0


def test_one_paragraph_edit_on_a_long_page_embeds_about_one_chunk(crawl, docsite, db):
    site = docsite.site
    sections = "".join(
        f"<h2>Section {i}</h2><p>" + " ".join(f"topic{i} detail{j}" for j in range(60)) + "</p>" for i in range(12)
    )
    site.put("/docs/api.html", html_page("API reference", sections, ["index.html"]))
    index(crawl, docsite)
    before = chunks(db)["/docs/api.html"]
    assert len(before) >= 10

    site.put(
        "/docs/api.html", html_page("API reference", sections.replace("topic7 detail3 ", "EDITED "), ["index.html"])
    )
    refresh(crawl)

    after = chunks(db)["/docs/api.html"]
    changed = [text for _, text in after if text not in {t for _, t in before}]
    assert 1 <= len(changed) <= 2 and "EDITED" in changed[0]  # the edit may move one chunk boundary
    run = last_run(db)
    assert run["modified"] == 1
    assert run["chunks_embedded"] == len(changed)  # only chunks whose text changed are embedded
    assert run["chunks_reused"] == len(after) - len(changed)
    vectors = db.execute(
        "SELECT count(DISTINCT embed_hash) FROM documents d JOIN pages p ON p.id = d.page_id "
        "WHERE p.url LIKE '%%/api.html'"
    ).fetchone()[0]
    assert vectors == len(after)


@pytest.mark.parametrize("html_kept", [True, False], ids=["html-stored", "html-not-stored"])
def test_pages_extracted_by_an_older_version_are_extracted_again_and_stored_reusing_vectors(
    crawl, docsite, db, html_kept
):
    """An upgrade that changes extraction (docsbot.content.extract.EXTRACTOR_VERSION) reaches stored pages without a
    full re-index: the next refresh stores what the new extraction gives (here: the navigation share it did not
    record), reusing every vector, and the refresh after that is all 304 again. A page whose HTML is stored is
    revalidated as usual and its 304 extracted again from that HTML (nothing downloaded); one stored before
    docsbot kept the HTML (html NULL) is fetched once without validators."""
    import zlib

    from docsbot.content.extract import EXTRACTOR_VERSION

    site = docsite.site
    index(crawl, docsite)
    before = chunks(db)
    stored_html = db.execute("SELECT html, html_encoding FROM pages WHERE url LIKE '%%/guide.html'").fetchone()
    assert zlib.decompress(stored_html[0]) == site.pages["/docs/guide.html"].body and stored_html[1] == "utf-8"
    db.execute("UPDATE pages SET extractor_version = %s WHERE url LIKE '%%/guide.html'", (EXTRACTOR_VERSION - 1,))
    db.execute("UPDATE pages SET link_share = NULL WHERE url LIKE '%%/guide.html'")
    if not html_kept:
        db.execute("UPDATE pages SET html = NULL, html_encoding = NULL WHERE url LIKE '%%/guide.html'")
    site.hits.clear()
    result = refresh(crawl)
    # the run's summary line says why a page of an unchanged site is "modified"
    assert ("1 modified (1 re-extracted from stored HTML, not downloaded)" in result.stderr) == html_kept
    hits = {h.path: h for h in site.hits if h.path.endswith(".html")}
    if html_kept:
        assert hits["/docs/guide.html"].status == 304 and hits["/docs/guide.html"].if_none_match is not None
        assert {h.status for h in hits.values()} == {304}  # nothing downloaded
    else:
        assert hits["/docs/guide.html"].status == 200 and hits["/docs/guide.html"].if_none_match is None
        assert {h.status for path, h in hits.items() if path != "/docs/guide.html"} == {304}
    versions = dict(db.execute("SELECT url, extractor_version FROM pages").fetchall())
    assert set(versions.values()) == {EXTRACTOR_VERSION}
    guide = db.execute("SELECT link_share FROM pages WHERE url LIKE '%%/guide.html'").fetchone()[0]
    assert guide is not None  # written again by the store pipeline
    run = last_run(db)
    assert run.get("chunks_embedded", 0) == 0 and run["chunks_reused"] == len(before["/docs/guide.html"])
    assert run["modified"] == 1 and run["unchanged"] == len(before) - 1  # each page counted once
    assert run.get("reextracted", 0) == (1 if html_kept else 0)
    assert {p: [t for _, t in c] for p, c in chunks(db).items()} == {p: [t for _, t in c] for p, c in before.items()}
    assert db.execute("SELECT html IS NOT NULL FROM pages WHERE url LIKE '%%/guide.html'").fetchone()[0]

    site.hits.clear()
    refresh(crawl)
    assert {h.status for h in site.hits if h.path.endswith(".html")} == {304}


def test_a_stored_page_that_redirects_moves_to_the_new_url(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    before = pages(db)
    site.pages["/docs/tutorial.html"] = site.pages.pop("/docs/guide.html")
    site.redirects["/docs/guide.html"] = (301, "/docs/tutorial.html")
    site.hits.clear()
    refresh(crawl)
    after = pages(db)
    assert "/docs/guide.html" not in after
    assert after["/docs/tutorial.html"]["id"] == before["/docs/guide.html"]["id"]  # moved, no twin
    assert after["/docs/tutorial.html"]["depth"] == before["/docs/guide.html"]["depth"]
    # the old URL's validators were not sent to the new URL
    tutorial = site.hits_for("/docs/tutorial.html")
    assert tutorial and all(h.if_none_match is None for h in tutorial)
    assert last_run(db).get("chunks_embedded", 0) == 0  # same content: the chunks kept their vectors


def test_a_redirect_to_an_already_stored_page_removes_the_old_row(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    site.redirects["/docs/deep.html"] = (301, "/docs/api.html")
    refresh(crawl)
    after = pages(db)
    assert "/docs/deep.html" not in after and "/docs/api.html" in after
    assert db.execute("SELECT count(*) FROM pages WHERE url LIKE '%%/api.html'").fetchone()[0] == 1


def test_a_link_that_redirects_to_a_page_requested_already_is_not_followed_again(crawl, docsite, db):
    """Docusaurus links /Guides/Testing, the server redirects to /Guides/Testing/: a refresh requests the stored
    page as a seed and then again at the end of every such link's redirect, counting it twice (119 requests and
    79 "unchanged" for Fastify's 41 pages). Each page is requested once and counted once; the page stays linked
    (a refresh that prunes orphans keeps it)."""
    site = docsite.site
    site.put("/docs/reference/index.html", html_page("Reference", "<p>Every option.</p>", ["../index.html"]))
    site.redirects["/docs/reference"] = (301, "/docs/reference/")
    site.put("/docs/index.html", html_page("Welcome", "<p>Home.</p>", ["guide.html", "api.html", "reference"]))
    index(crawl, docsite)
    stored = pages(db)
    assert "/docs/reference/index.html" in stored and "/docs/reference" not in stored
    site.hits.clear()
    refresh(crawl, prune="orphans")
    assert [h.status for h in site.hits_for("/docs/reference/") + site.hits_for("/docs/reference/index.html")] == [304]
    assert [h.status for h in site.hits_for("/docs/reference")] == [301]
    run = last_run(db)
    assert run["unchanged"] == len(stored) and run.get("deleted", 0) == 0
    assert run["skipped/requested_already"] == 1
    assert pages(db).keys() == stored.keys()


def test_a_redirect_out_of_scope_removes_the_page_without_fetching_outside(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    site.redirects["/docs/deep.html"] = (302, "/outside.html")
    site.hits.clear()
    refresh(crawl)
    assert "/docs/deep.html" not in pages(db)
    assert site.hits_for("/outside.html") == []


def test_canonical_link_decides_the_stored_url_of_duplicate_paths(crawl, docsite, db):
    site = docsite.site
    body = html_page("API reference", "<p>Same page, two paths.</p>", ["index.html"])
    canonical = body.replace("<head>", f'<head><link rel="canonical" href="{docsite.url}/docs/api.html">')
    site.put("/docs/api.html", canonical)
    site.put("/docs/api/index.html", canonical)
    site.put(
        "/docs/index.html",
        html_page("Welcome", "<p>Home.</p>", ["guide.html", "api.html", "api/index.html"]),
    )
    index(crawl, docsite)
    stored = pages(db)
    assert "/docs/api.html" in stored and "/docs/api/index.html" not in stored


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_keep_the_page_exactly_as_it_was(crawl, docsite, db, status):
    site = docsite.site
    index(crawl, docsite)
    before = pages(db), chunks(db)
    site.failing["/docs/api.html"] = status
    site.delete("/docs/deep.html")  # a real deletion in the same run still happens
    site.hits.clear()
    refresh(crawl, expect=3)  # the page is kept, and counted: the run is incomplete
    after_pages, after_chunks = pages(db), chunks(db)
    assert after_pages["/docs/api.html"] == before[0]["/docs/api.html"]
    assert after_chunks["/docs/api.html"] == before[1]["/docs/api.html"]
    assert "/docs/deep.html" not in after_pages
    assert len(site.hits_for("/docs/api.html")) == 3  # Scrapy's retries: RETRY_TIMES=2
    run = last_run(db)
    assert run["failed"] == run["failed/fetch"] == 1 and run["deleted"] == 1


def test_a_timeout_keeps_the_page(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    before = pages(db)["/docs/api.html"], chunks(db)["/docs/api.html"]
    site.slow["/docs/api.html"] = 3
    result = crawl(library="testdocs", version="1.0", mode="refresh", settings={"DOWNLOAD_TIMEOUT": "1"})
    assert result.returncode == 3
    assert (pages(db)["/docs/api.html"], chunks(db)["/docs/api.html"]) == before
    assert last_run(db)["failed/fetch"] == 1


def test_a_dead_root_aborts_the_refresh_and_deletes_nothing(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    before = pages(db), chunks(db)
    site.failing["/docs/index.html"] = 500
    site.delete("/docs/deep.html")
    result = crawl(library="testdocs", version="1.0", mode="refresh")
    assert result.returncode == 1  # cron and `make refresh` see the failure
    assert "the root URL" in result.stderr and "nothing is deleted" in result.stderr
    assert (pages(db), chunks(db)) == before
    assert last_run(db)["finish_reason"] == "root_failed"


def test_mass_deletion_is_refused_unless_allowed(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    for path in ("/docs/api.html", "/docs/deep.html", "/docs/flaky.html"):
        site.delete(path)
    result = refresh(crawl)
    assert "allow_mass_delete=1" in result.stderr
    assert set(pages(db)) == DOC_PAGES  # 3 of 5 is more than 25%: nothing deleted
    assert last_run(db)["deletion_refused"] == 3

    refresh(crawl, allow_mass_delete="1")
    assert set(pages(db)) == {"/docs/index.html", "/docs/guide.html"}
    assert last_run(db)["deleted"] == 3


def test_orphans_are_reported_and_pruned_on_request(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    site.put(  # the guide no longer links deep.html; the page itself still answers
        "/docs/guide.html", html_page("Guide", "<p>Install the library with pip.</p>", ["index.html", "flaky.html"])
    )
    refresh(crawl)
    assert "/docs/deep.html" in pages(db)
    assert last_run(db)["orphans"] == 1
    refresh(crawl, prune="orphans")
    assert "/docs/deep.html" not in pages(db)
    assert last_run(db)["deleted"] == 1


def test_pages_reached_through_unchanged_pages_are_not_orphans(crawl, docsite, db):
    index(crawl, docsite)
    refresh(crawl, prune="orphans")  # everything 304: the stored links carry reachability
    assert set(pages(db)) == DOC_PAGES
    assert last_run(db)["orphans"] == 0
    seen = db.execute("SELECT count(*) FROM pages WHERE last_seen_run = (SELECT max(id) FROM crawl_runs)")
    assert seen.fetchone()[0] == 5


def test_min_recheck_skips_recently_checked_pages(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    refresh(crawl)  # marks every page as checked now
    site.hits.clear()
    refresh(crawl, min_recheck="1h")
    assert set(site.statuses()) == {"/docs/index.html"}  # only the root, always checked
    assert last_run(db)["skipped/recently_checked"] == 4
    assert set(pages(db)) == DOC_PAGES


def test_sitemap_urls_are_seeds(crawl, docsite, db):
    site = docsite.site
    site.put("/docs/unlinked.html", html_page("Unlinked", "<p>Only the sitemap knows me.</p>"))
    site.put(
        "/docs/sitemap.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{docsite.url}/docs/unlinked.html</loc><lastmod>2001-01-01</lastmod></url>"
        f"<url><loc>{docsite.url}/outside.html</loc></url></urlset>",
        "application/xml",
    )
    index(crawl, docsite, sitemap=f"{docsite.url}/docs/sitemap.xml")
    assert set(pages(db)) == DOC_PAGES | {"/docs/unlinked.html"}


def test_the_sitemap_robots_txt_names_is_used(crawl, docsite, db):
    site = docsite.site
    site.put("/docs/unlinked.html", html_page("Unlinked", "<p>Only the sitemap knows me.</p>"))
    site.put("/robots.txt", f"User-agent: *\nAllow: /\nSitemap: {docsite.url}/sitemap.xml\n", "text/plain")
    site.put(
        "/sitemap.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{docsite.url}/docs/unlinked.html</loc></url></urlset>",
        "application/xml",
    )
    index(crawl, docsite)
    assert "/docs/unlinked.html" in pages(db)
    site.hits.clear()
    index(crawl, docsite, sitemap="none")
    assert site.hits_for("/sitemap.xml") == []


def test_non_html_and_oversized_pages_are_skipped_with_a_reason(crawl, docsite, db):
    site = docsite.site
    site.put("/docs/manual.pdf", "%PDF-1.4 not really", "application/pdf")
    site.put("/docs/changes", "plain text, not a page", "text/plain")
    site.put("/docs/huge.html", html_page("Huge", "<p>" + "x" * 200_000 + "</p>"))
    site.put("/docs/empty.html", "")
    latin1 = html_page("Café", "<p>Crème brûlée.</p>").replace("—", "-")
    site.put("/docs/latin1.html", latin1, "text/html; charset=iso-8859-1", "latin-1")
    site.put("/docs/broken.html", "<html><body><div role=main><h1>Broken<p>Unclosed <b>tags <table><tr><td>cell")
    site.put(
        "/docs/index.html",
        html_page(
            "Welcome",
            "<p>Home.</p>",
            ["manual.pdf", "changes", "huge.html", "empty.html", "latin1.html", "broken.html", "guide.html"],
        ),
    )
    result = crawl(
        url=f"{docsite.url}/docs/index.html",
        library="testdocs",
        version="1.0",
        env={"DOCSBOT_MAX_PAGE_BYTES": "100000"},
    )
    assert result.returncode == 3, result.stderr[-2000:]  # the oversized page is not stored: incomplete
    stored = pages(db)
    assert not {"/docs/manual.pdf", "/docs/changes", "/docs/huge.html", "/docs/empty.html"} & set(stored)
    # a link to a file type Scrapy's link extractors ignore (scrapy.linkextractors.IGNORED_EXTENSIONS) is not fetched
    assert "/docs/manual.pdf" not in site.statuses()
    assert "Crème brûlée." in "".join(c for _, c in chunks(db)["/docs/latin1.html"])
    broken = "".join(c for _, c in chunks(db)["/docs/broken.html"])  # malformed HTML is still indexed
    assert "# Broken" in broken and "Unclosed" in broken and "cell" in broken
    run = last_run(db)
    assert run["skipped/not_html"] == 1 and run["skipped/unparseable"] == 1 and run["failed/fetch"] == 1


def test_robots_txt_disallow_keeps_the_page(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    before = pages(db)
    site.put("/robots.txt", "User-agent: *\nDisallow: /docs/api.html\nDisallow: /docs/flaky.html\n", "text/plain")
    # Every seeded request waits for robots.txt. (Scrapy 2.19's middleware let all waiters but the first through
    # unchecked; docsbot.downloadermiddlewares.robotstxt.RobotsTxtMiddleware fixes that.)
    site.slow["/robots.txt"] = 1
    site.hits.clear()
    refresh(crawl, expect=0)  # kept as they were, not refreshed: the site's rule, not a failure
    assert pages(db) == before
    assert site.hits_for("/docs/api.html") == [] and site.hits_for("/docs/flaky.html") == []
    run = last_run(db)
    assert (run["skipped/robots"], run.get("failed", 0)) == (2, 0)
    assert sorted(run["skipped_pages"]["robots"]) == [f"{docsite.url}/docs/api.html", f"{docsite.url}/docs/flaky.html"]


def test_pages_the_sites_rules_keep_from_us_are_skipped_and_the_run_is_complete(crawl, docsite, db):
    """A robots.txt that disallows a linked page and a link to a directory the server forbids (nginx's 403 without
    autoindex), as real documentation sites have: every other page stored, exit 0 on the index and on every
    refresh, both pages listed as skipped. A stored page that starts answering 403 is kept and counted failed."""
    site = docsite.site
    site.put("/robots.txt", "User-agent: *\nDisallow: /docs/deep.html\n", "text/plain")
    site.put("/docs/index.html", html_page("Welcome", "<p>Docs.</p>", ["guide.html", "api.html", "downloads/"]))
    site.failing["/docs/downloads/index.html"] = 403
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "skipped by the site's rules (forbidden 1, robots 1)" in result.stderr
    run = last_run(db)
    assert (run["skipped/robots"], run["skipped/forbidden"], run.get("failed", 0)) == (1, 1, 0)
    assert run["skipped_pages"] == {"robots": [f"{docsite.url}/docs/deep.html"],
                                    "forbidden": [f"{docsite.url}/docs/downloads/"]}  # fmt: skip
    assert site.hits_for("/docs/deep.html") == []
    assert crawl(library="testdocs", mode="refresh").returncode == 0  # and every refresh after it
    assert db.execute("SELECT outcome FROM crawl_runs ORDER BY id").fetchall() == [("complete",), ("complete",)]
    site.failing["/docs/guide.html"] = 403  # a stored page refused now: kept, failed, the next run tries again
    refreshed = crawl(library="testdocs", mode="refresh")
    assert refreshed.returncode == 3 and last_run(db)["failed/fetch"] == 1
    assert "/docs/guide.html" in pages(db)


def test_the_database_password_never_shows(crawl, docsite, db, database_url):
    # A real role with a real password (the test server trusts local connections, so the password is not what
    # lets it in; what is tested is that it appears nowhere). It owns the database, so the crawl can migrate it;
    # pgvector is not a trusted extension, so the superuser creates it first.
    role, password = f"docsbot_{uuid.uuid4().hex[:8]}", f"s3cr3t-{uuid.uuid4().hex[:8]}"
    db.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))
    try:
        db.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(db.info.dbname), sql.Identifier(role))
        )
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        scheme, rest = database_url.split("://", 1)
        authority, slash, tail = rest.partition("/")
        with_password = f"{scheme}://{role}:{password}@{authority.rpartition('@')[2]}{slash}{tail}"
        result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", env={"DATABASE_URL": with_password})
        assert result.returncode == 0, result.stderr[-2000:]
        assert db.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'pages'").fetchone()[0] == role
        assert password not in result.stdout + result.stderr
        assert password not in str(db.execute("SELECT stats FROM crawl_runs").fetchall())
        assert "TelnetConsole" not in result.stderr and "RemoteControl" not in result.stderr
    finally:
        db.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(sql.Identifier(role)))
        db.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        db.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_a_killed_crawl_leaves_every_page_whole_and_the_next_refresh_completes(crawl, docsite, db, database_url):
    site = docsite.site
    for i in range(40):
        site.put(f"/docs/p{i}.html", html_page(f"Page {i}", f"<p>First text of page {i}.</p>"))
        site.slow[f"/docs/p{i}.html"] = 0.05
    site.put("/docs/index.html", html_page("Welcome", "<p>Home.</p>", [f"p{i}.html" for i in range(40)]))
    index(crawl, docsite)
    for i in range(40):
        site.put(f"/docs/p{i}.html", html_page(f"Page {i}", f"<p>Second text of page {i}.</p>"))
        site.slow[f"/docs/p{i}.html"] = 0.3

    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DOCSBOT_EMBEDDER": "tests.embedders.HashingEmbedder",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "docs",
            "-a",
            "library=testdocs",
            "-a",
            "version=1.0",
            "-a",
            "mode=refresh",
            "-s",
            "CONCURRENT_REQUESTS_PER_DOMAIN=2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = db.execute("SELECT count(*) FROM documents WHERE content LIKE '%%Second text%%'").fetchone()[0]
        if done >= 5:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    rows = db.execute(
        "SELECT p.url, p.etag, string_agg(d.content, '|') FROM pages p JOIN documents d ON d.page_id = p.id "
        "WHERE p.url LIKE '%%/p%%' GROUP BY p.url, p.etag"
    ).fetchall()
    assert len(rows) == 40  # every page still has its chunks
    updated = 0
    for url, etag, text in rows:
        path = "/" + url.split("/", 3)[3]
        if "Second text" in text:  # fully updated: new text with the new validators
            assert etag == site.pages[path].etag and "First text" not in text
            updated += 1
        else:  # as it was: old text, old validators
            assert etag != site.pages[path].etag
    assert 0 < updated < 40

    for i in range(40):
        site.slow[f"/docs/p{i}.html"] = 0
    refresh(crawl)
    texts = "".join(t for _, t in sum(chunks(db).values(), []))
    assert all(f"Second text of page {i}." in texts for i in range(40))


def test_a_stopped_crawl_deletes_nothing_and_exits_non_zero(crawl, docsite, db, database_url):
    # Scrapyd's cancel.json and Ctrl-C stop a crawl gracefully (close reason "shutdown"): the pages it reached
    # are updated whole, the 404 it saw is not applied (the run did not complete), and the exit code says so.
    site = docsite.site
    for i in range(30):
        site.put(f"/docs/p{i}.html", html_page(f"Page {i}", f"<p>First text of page {i}.</p>"))
    site.put(
        "/docs/index.html", html_page("Welcome", "<p>Home.</p>", ["deep.html"] + [f"p{i}.html" for i in range(30)])
    )
    index(crawl, docsite)
    before = set(pages(db))
    site.delete("/docs/deep.html")
    for i in range(30):
        site.put(f"/docs/p{i}.html", html_page(f"Page {i}", f"<p>Second text of page {i}.</p>"))
        site.slow[f"/docs/p{i}.html"] = 1.0  # 15 s of crawl at 2 at a time: the stop lands long before its end
    site.hits.clear()

    env = {**os.environ, "DATABASE_URL": database_url, "DOCSBOT_EMBEDDER": "tests.embedders.HashingEmbedder"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "library=testdocs", "-a", "version=1.0"]
        + ["-a", "mode=refresh", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2", "-s", "LOG_LEVEL=DEBUG"],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Stop the crawl once the gone page has passed the item pipelines (docsbot's log formatter logs "Scraped URL").
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "Scraped http" in line and line.rstrip().endswith("/docs/deep.html"):
            break
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=120)
    stderr = "".join(seen) + rest

    assert proc.returncode == 1, stderr[-2000:]
    assert site.statuses()["/docs/deep.html"][-1] == 404
    assert set(pages(db)) == before  # deep.html kept until a complete run
    run = last_run(db)
    assert run["finish_reason"] == "shutdown"
    assert run["gone"] == 1  # the run did see the 404
    assert db.execute("SELECT count(*) FROM documents WHERE content LIKE '%%Second text%%'").fetchone()[0] < 30


def test_robots_txt_crawl_delay_spaces_the_requests_to_its_host(crawl, docsite, db):
    """Scrapy reads no Crawl-delay; docsbot's robots.txt middleware gives the host's slot one request at a time,
    that many seconds apart, for every page request after robots.txt."""
    site = docsite.site
    site.put("/robots.txt", "User-agent: *\nCrawl-delay: 0.5\n", "text/plain")
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "robots.txt asks for a Crawl-delay of 0.5 s" in result.stderr
    times = sorted(h.at for h in site.hits if h.path != "/robots.txt")
    assert len(times) == 5
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) >= 0.45  # without it: all within ~0.1 s
    assert last_run(db)["crawl_delay"] == 0.5
