"""End-to-end: `scrapy crawl docs` in a real process, a real HTTP server, a real PostgreSQL + pgvector.

Uses the hashing test embedder (tests/embedders.py); tests/test_model.py runs the real model.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from urllib.parse import urlsplit

import psycopg

from tests.conftest import ROOT
from tests.docsite import html_page

DOC_PAGES = {"/docs/index.html", "/docs/guide.html", "/docs/api.html", "/docs/deep.html", "/docs/flaky.html"}


def server_path(url: str) -> str:
    """The test server's path of a stored URL (docsbot stores ".../index.html" as ".../")."""
    path = "/" + url.split("/", 3)[3]
    return path + "index.html" if path.endswith("/") else path


def pages(db) -> dict[str, dict]:
    rows = db.execute(
        "SELECT url, id, depth, etag, last_modified, title, content_hash, updated_at FROM pages ORDER BY url"
    ).fetchall()
    keys = ["id", "depth", "etag", "last_modified", "title", "hash", "updated_at"]
    return {server_path(r[0]): dict(zip(keys, r[1:], strict=True)) for r in rows}


def chunks(db) -> dict[str, list[tuple[int, str]]]:
    rows = db.execute(
        "SELECT p.url, d.id, d.content FROM documents d JOIN pages p ON p.id = d.page_id ORDER BY p.url, d.sort_order"
    ).fetchall()
    out: dict[str, list[tuple[int, str]]] = {}
    for url, doc_id, content in rows:
        out.setdefault(server_path(url), []).append((doc_id, content))
    return out


def last_run(db) -> dict:
    mode, stats, finished = db.execute(
        "SELECT mode, stats, finished_at FROM crawl_runs ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert finished is not None
    return {"mode": mode, **stats}


def index(crawl, docsite, expect: int = 0, **extra):
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0", **extra)
    assert result.returncode == expect, result.stderr[-3000:]
    return result


def refresh(crawl, expect: int = 0, **extra):
    result = crawl(library="testdocs", version="1.0", mode="refresh", **extra)
    assert result.returncode == expect, result.stderr[-3000:]
    return result


def test_full_index_stores_pages_chunks_validators_and_depths(crawl, docsite, db):
    index(crawl, docsite)

    stored = pages(db)
    assert set(stored) == DOC_PAGES  # outside the path prefix and other hosts are not followed
    assert {p: v["depth"] for p, v in stored.items()} == {
        "/docs/index.html": 0,
        "/docs/guide.html": 1,
        "/docs/api.html": 1,
        "/docs/deep.html": 2,
        "/docs/flaky.html": 2,
    }
    for path, page in stored.items():
        served = docsite.site.pages[path]
        assert (page["etag"], page["last_modified"]) == (served.etag, served.last_modified)
    assert stored["/docs/api.html"]["title"] == "API reference"

    texts = {path: "\n".join(c for _, c in cs) for path, cs in chunks(db).items()}
    assert set(texts) == DOC_PAGES
    assert "Returns the task object." in texts["/docs/api.html"]
    assert "```python3\nimport testdocs\ntestdocs.run()\n```" in texts["/docs/guide.html"]
    assert "Built with a test generator" not in "".join(texts.values())  # footer chrome dropped
    headings = db.execute(
        "SELECT d.metadata->'heading_path' FROM documents d JOIN pages p ON p.id = d.page_id "
        "WHERE p.url LIKE '%%/api.html'"
    ).fetchall()
    assert ["API reference"] in [h[0][:1] for h in headings]
    assert db.execute("SELECT count(*) FROM documents WHERE vector_dims(embedding) <> 384").fetchone()[0] == 0

    run = last_run(db)
    assert run["mode"] == "full"
    assert run["new"] == 5
    assert run["chunks_embedded"] == sum(len(cs) for cs in chunks(db).values())
    assert docsite.site.statuses()["/docs/index.html"] == [200]


def test_unchanged_refresh_answers_304_everywhere_and_writes_nothing(crawl, docsite, db):
    index(crawl, docsite)
    before_pages, before_chunks = pages(db), chunks(db)
    docsite.site.hits.clear()

    refresh(crawl)

    hits = [h for h in docsite.site.hits if h.path != "/robots.txt"]
    assert sorted(h.path for h in hits) == sorted(DOC_PAGES)  # each page once, the root included
    assert all(h.status == 304 for h in hits)
    for h in hits:
        assert h.if_none_match == docsite.site.pages[h.path].etag
        assert h.if_modified_since == docsite.site.pages[h.path].last_modified
    assert pages(db) == before_pages  # updated_at included: not one row was written
    assert chunks(db) == before_chunks  # same chunk ids and texts
    run = last_run(db)
    assert (run["mode"], run["unchanged"], run.get("chunks_embedded", 0)) == ("refresh", 5, 0)


def test_refresh_applies_modified_deleted_new_and_failed_pages(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    before_pages, before_chunks = pages(db), chunks(db)

    site.put(  # modified, and now links to a new page
        "/docs/api.html",
        html_page(
            "API reference",
            "<h2>create_task</h2><p>Wrap a coroutine into a Task and schedule it.</p>",
            ["index.html", "new.html"],
        ),
    )
    site.put("/docs/new.html", html_page("New page", "<p>Added in this release.</p>"))
    site.delete("/docs/deep.html")
    site.failing["/docs/guide.html"] = 500
    site.hits.clear()

    # a page that could not be fetched makes the run incomplete: exit code 3, and one line says what
    result = refresh(crawl, expect=3)
    assert "1 page not stored (fetch 1): kept as they were, the next refresh fetches them again (exit code 3)" in (
        result.stderr
    )

    after_pages, after_chunks = pages(db), chunks(db)
    assert set(after_pages) == DOC_PAGES - {"/docs/deep.html"} | {"/docs/new.html"}
    # deleted: row and chunks gone
    assert "/docs/deep.html" not in after_chunks
    assert (
        db.execute(
            "SELECT count(*) FROM documents WHERE page_id = %s", (before_pages["/docs/deep.html"]["id"],)
        ).fetchone()[0]
        == 0
    )
    # modified: chunks replaced with the new text, page keeps its id and depth, validators updated
    api_text = "\n".join(c for _, c in after_chunks["/docs/api.html"])
    assert "Wrap a coroutine into a Task" in api_text and "Returns the task object." not in api_text
    assert after_pages["/docs/api.html"]["id"] == before_pages["/docs/api.html"]["id"]
    assert after_pages["/docs/api.html"]["depth"] == 1
    assert after_pages["/docs/api.html"]["etag"] == site.pages["/docs/api.html"].etag
    # new: parent's depth + 1
    assert after_pages["/docs/new.html"]["depth"] == 2
    assert "Added in this release." in "\n".join(c for _, c in after_chunks["/docs/new.html"])
    # failed with 500 (after retries): exactly as it was
    assert after_pages["/docs/guide.html"] == before_pages["/docs/guide.html"]
    assert after_chunks["/docs/guide.html"] == before_chunks["/docs/guide.html"]
    # unchanged: untouched
    assert after_chunks["/docs/index.html"] == before_chunks["/docs/index.html"]
    assert after_pages["/docs/flaky.html"] == before_pages["/docs/flaky.html"]
    # the root once; the 500 page retried by Scrapy; its stored links still followed (deep → 404, flaky → 304)
    statuses = site.statuses()
    assert statuses["/docs/index.html"] == [304]
    assert set(statuses["/docs/guide.html"]) == {500}
    assert statuses["/docs/deep.html"] == [404]
    assert statuses["/docs/flaky.html"] == [304]

    run = last_run(db)
    assert (run["modified"], run["new"], run["deleted"], run["failed"], run["unchanged"]) == (1, 1, 1, 1, 2)
    assert run["failed/fetch"] == 1 and run["exit_code"] == 3
    assert db.execute("SELECT outcome FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()[0] == "incomplete"


def test_page_reachable_only_through_an_unchanged_page_is_found(crawl, docsite, db):
    site = docsite.site
    site.failing["/docs/flaky.html"] = 503  # down during the index: not stored (the run is incomplete: exit 3)
    index(crawl, docsite, expect=3)
    assert "/docs/flaky.html" not in pages(db)

    del site.failing["/docs/flaky.html"]  # back up; guide.html, its only referrer, is unchanged (304)
    refresh(crawl)

    stored = pages(db)
    assert stored["/docs/flaky.html"]["depth"] == stored["/docs/guide.html"]["depth"] + 1
    assert site.statuses()["/docs/guide.html"][-1] == 304


def test_stored_depth_is_kept_when_a_page_is_reached_by_a_shorter_path(crawl, docsite, db):
    site = docsite.site
    index(crawl, docsite)
    assert pages(db)["/docs/deep.html"]["depth"] == 2
    site.put(  # the root now links deep.html directly: parent depth + 1 would be 1
        "/docs/index.html",
        html_page("Welcome", "<p>Test Docs, now with a shortcut.</p>", ["guide.html", "api.html", "deep.html"]),
    )
    refresh(crawl)
    assert pages(db)["/docs/deep.html"]["depth"] == 2


def test_max_depth_limits_the_index_and_is_reused_by_refresh(crawl, docsite, db):
    index(crawl, docsite, max_depth="1")
    assert set(pages(db)) == {"/docs/index.html", "/docs/guide.html", "/docs/api.html"}
    docsite.site.hits.clear()
    refresh(crawl)
    assert set(docsite.site.statuses()) == {"/docs/index.html", "/docs/guide.html", "/docs/api.html"}


def test_refresh_of_an_unknown_library_fails_and_touches_nothing(crawl, docsite, db):
    index(crawl, docsite)
    before = pages(db), chunks(db)
    result = crawl(library="nosuchlib", mode="refresh")
    assert result.returncode != 0
    assert "nothing to refresh" in result.stderr and "testdocs@1.0" in result.stderr
    assert "Traceback" not in result.stderr  # the message is the whole story
    assert (pages(db), chunks(db)) == before
    assert db.execute("SELECT count(*) FROM crawl_runs").fetchone()[0] == 1


def test_one_run_per_version_at_a_time_and_other_versions_in_parallel(crawl, docsite, db, database_url):
    index(crawl, docsite)
    before = pages(db), chunks(db)
    [version_id] = db.execute("SELECT id FROM versions WHERE name = '1.0'").fetchone()
    with psycopg.connect(database_url, autocommit=True) as other_run:  # what a running crawl of 1.0 holds
        assert other_run.execute("SELECT pg_try_advisory_lock(4242002, %s)", (version_id,)).fetchone()[0]
        docsite.site.hits.clear()
        for args in ({"mode": "refresh"}, {"url": f"{docsite.url}/docs/index.html"}):
            result = crawl(library="testdocs", version="1.0", **args)
            assert result.returncode != 0
            assert "another run of testdocs@1.0 is in progress" in result.stderr, result.stderr[-2000:]
        assert docsite.site.hits == []
        assert (pages(db), chunks(db)) == before
        assert db.execute("SELECT count(*) FROM crawl_runs").fetchone()[0] == 1
        # Another version of the same library is not held up.
        result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="2.0")
        assert result.returncode == 0, result.stderr[-3000:]
    refresh(crawl)  # the lock went with the other run's session
    assert last_run(db)["unchanged"] == 5


def test_bad_spider_arguments_fail_before_any_write(crawl, db):
    for args in ({"url": "not a url"}, {"url": "ftp://example.org/"}, {"url": "http://x.test/", "max_depth": "two"}):
        result = crawl(**args)
        assert result.returncode != 0, args
        assert "-a " in result.stderr, result.stderr[-2000:]
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
    tables = db.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'pages'").fetchone()[0]
    assert tables == 0 or db.execute("SELECT count(*) FROM pages").fetchone()[0] == 0


def test_a_projects_own_components_sit_beside_docsbots_and_one_switched_off_stops_the_crawl_before_any_request(
    crawl, docsite, db
):
    """docsbot's add-on (docsbot.addon) adds its components to a project's own ITEM_PIPELINES / EXTENSIONS / ...
    (a settings file, -s) instead of being replaced by them; one of docsbot's that a project switches off (None),
    puts out of order, or an ADDONS setting without the add-on, stops the crawl with one line before it requests or
    writes anything."""
    for settings, named in (
        ({"ITEM_PIPELINES": json.dumps({"docsbot.pipelines.store.StorePipeline": None})},
         "docsbot.pipelines.store.StorePipeline is switched off in ITEM_PIPELINES"),
        ({"EXTENSIONS": json.dumps({"docsbot.extensions.run.IndexRun": None})},
         "docsbot.extensions.run.IndexRun is switched off in EXTENSIONS"),
        ({"ITEM_PIPELINES": json.dumps({"docsbot.pipelines.chunk.ChunkPipeline": 600})}, "ITEM_PIPELINES must run"),
        ({"ADDONS": json.dumps({})}, "the docsbot add-on is not enabled"),
    ):  # fmt: skip
        result = crawl(url=f"{docsite.url}/docs/index.html", settings=settings)
        assert result.returncode == 1, result.stderr[-2000:]
        assert named in result.stderr, result.stderr[-2000:]
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert docsite.site.hits == []
    tables = db.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'pages'").fetchone()[0]
    assert tables == 0 or db.execute("SELECT count(*) FROM versions").fetchone()[0] == 0
    # A project's own extension and pipeline only (what replaced docsbot's whole dicts before the add-on): docsbot's
    # are added beside them, and the crawl stores as usual with the project's components running too.
    own = {
        "EXTENSIONS": json.dumps({"scrapy.extensions.closespider.CloseSpider": 0}),
        "ITEM_PIPELINES": json.dumps({"tests.extensions.CountingPipeline": 900}),
        "CLOSESPIDER_PAGECOUNT": "100",
    }
    result = crawl(url=f"{docsite.url}/docs/index.html", settings=own)
    assert result.returncode == 0, result.stderr[-2000:]
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5
    assert "tests.extensions.CountingPipeline: 5 items" in result.stderr
    enabled = (
        "docsbot.extensions.run.IndexRun",
        "scrapy.extensions.closespider.CloseSpider",
        "docsbot.pipelines.store.StorePipeline",
    )
    assert all(component in result.stderr for component in enabled)  # Scrapy's "Enabled extensions..." lists


def test_settings_come_from_the_environment_and_a_malformed_one_is_named(crawl, docsite, db):
    # How Scrapyd nodes and Scrapy Cloud pass configuration: environment variables, read by docsbot.settings.
    result = crawl(url=f"{docsite.url}/docs/index.html", env={"DOCSBOT_CONCURRENT_REQUESTS": "3"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'CONCURRENT_REQUESTS': 3" in result.stderr
    pages = db.execute("SELECT count(*) FROM pages").fetchone()[0]
    assert pages > 0

    # A malformed value, from the environment or -s, is one line naming it; the crawl requests and writes nothing.
    hits = len(docsite.site.hits)
    for given in ({"env": {"DOCSBOT_CONCURRENT_REQUESTS": "many"}}, {"settings": {"DOCSBOT_DB_RETRIES": "-1"}}):
        result = crawl(url=f"{docsite.url}/docs/index.html", library="other", **given)
        assert result.returncode == 1, result.stderr[-2000:]
        named = "DOCSBOT_CONCURRENT_REQUESTS='many' is not valid" if "env" in given else "DOCSBOT_DB_RETRIES='-1'"
        assert named in result.stderr, result.stderr[-2000:]
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert len(docsite.site.hits) == hits
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == pages
    assert db.execute("SELECT count(*) FROM libraries WHERE name = 'other'").fetchone()[0] == 0
    # The docsbot command says the same before it touches the database.
    status = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "status"], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "DOCSBOT_KEEP_HTML": "maybe", "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"},
    )  # fmt: skip
    assert status.returncode == 2 and status.stdout == ""
    assert status.stderr.strip().splitlines() == [
        "docsbot: DOCSBOT_KEEP_HTML='maybe' is not valid: input should be a valid boolean, unable to interpret input "
        "(1/0, true/false, yes/no, on/off)"
    ]


def test_an_unreachable_database_is_one_clear_line_and_exit_code_1(crawl):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = crawl(
        url="http://127.0.0.1:9/docs/", env={"DATABASE_URL": f"postgresql://docsbot:s3cret@127.0.0.1:{port}/x"}
    )
    assert result.returncode == 1
    assert f"cannot connect to postgresql://docsbot:***@127.0.0.1:{port}/x" in result.stderr
    assert "s3cret" not in result.stderr and "Traceback" not in result.stderr


def test_run_is_recorded_with_counts(crawl, docsite, db):
    index(crawl, docsite)
    refresh(crawl)
    runs = db.execute("SELECT mode, stats FROM crawl_runs ORDER BY id").fetchall()
    assert [m for m, _ in runs] == ["full", "refresh"]
    full, again = runs[0][1], runs[1][1]
    assert full["responses_by_status"]["200"] >= 5 and full["bytes_downloaded"] > 0
    assert again["responses_by_status"]["304"] == 5
    assert json.dumps(again).count("password") == 0


def test_a_full_index_of_an_indexed_site_counts_only_pages_with_new_text_as_modified(crawl, docsite, db):
    """A second full index re-chunks every page (no validators sent), but only a page whose text changed is
    "modified": the others are counted unchanged, in the run's counts and its summary line."""
    index(crawl, docsite)
    docsite.site.put("/docs/api.html", html_page("API reference", "<h2>gather</h2><p>Run awaitables at once.</p>"))
    result = index(crawl, docsite)
    run = last_run(db)
    counts = (run["mode"], run.get("new", 0), run.get("modified", 0), run.get("unchanged", 0))
    assert counts == ("full", 0, 1, 4), run
    assert ": 4 unchanged, 1 modified, 0 new" in result.stderr, result.stderr[-2000:]


def test_docsbot_status_and_delete(crawl, docsite, db, database_url):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    index(crawl, docsite)
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "docsbot.cli", *args], env=env, capture_output=True, text=True)

    status = cli("status")
    assert status.returncode == 0
    assert "testdocs@1.0" in status.stdout and "5 pages" in status.stdout and "full" in status.stdout
    # the crawl built the version's own HNSW graph (docsbot.store.vector_index), and status says so
    assert "vector search: its own HNSW graph (" in status.stdout, status.stdout
    graphs = "SELECT count(*) FROM pg_indexes WHERE indexname ~ '^documents_embedding_v[0-9]+_hnsw_idx$'"
    assert db.execute(graphs).fetchone()[0] == 1
    assert cli("delete", "--library", "testdocs", "--version", "2.0").returncode == 1
    deleted = cli("delete", "--library", "testdocs", "--version", "1.0")
    assert deleted.returncode == 0 and "5 pages" in deleted.stdout
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
    assert db.execute(graphs).fetchone()[0] == 0  # its graph went with it
    assert cli("status").returncode == 1


def test_chunk_tokens_caps_the_chunk_size(crawl, docsite, db):
    """Proves: DOCSBOT_CHUNK_TOKENS makes smaller chunks than the model's room (the hashing embedder sizes by
    characters / 4), and only for the run that sets it."""
    index(crawl, docsite)
    default = [len(c) for (c,) in db.execute("SELECT content FROM documents").fetchall()]
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="2.0",
                   settings={"DOCSBOT_CHUNK_TOKENS": "20"})  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    small = [
        len(c)
        for (c,) in db.execute(
            "SELECT d.content FROM documents d JOIN pages p ON p.id = d.page_id JOIN versions v ON v.id = p.version_id"
            " WHERE v.name = '2.0'"
        ).fetchall()
    ]
    assert max(default) > 80 and max(small) <= 80  # 20 tokens × 4 characters
    assert len(small) > len(default)


def test_a_page_only_llms_txt_lists_is_indexed_and_a_missing_llms_txt_costs_one_request(crawl, docsite, db):
    """llms.txt (https://llmstxt.org) seeds the crawl like a sitemap: its in-scope Markdown links are requested
    (and count as reachable); links out of scope are not; a site without one answers a 404 and nothing else."""
    site = docsite.site
    site.put("/docs/hidden.html", html_page("Hidden", "<p>Only llms.txt links this page.</p>"))
    site.put(
        "/docs/llms.txt",
        "# Test Docs\n\n> What matters.\n\n## Docs\n\n- [Hidden](hidden.html): a page no page links\n"
        "- [Elsewhere](https://elsewhere.example/x.html)\n",
        "text/plain; charset=utf-8",
    )
    index(crawl, docsite, env={"DOCSBOT_LLMS_TXT": "1"})
    assert "/docs/hidden.html" in pages(db)
    assert last_run(db)["llms_txt/links"] == 2
    assert [h.status for h in site.hits if h.path.endswith("llms.txt")] == [200, 404]  # the docs' and the host's
    assert not any("elsewhere" in h.path for h in site.hits)
    refresh(crawl, env={"DOCSBOT_LLMS_TXT": "1"}, prune="orphans")
    assert "/docs/hidden.html" in pages(db)  # still reachable through llms.txt: not an orphan


def test_pages_only_doxygens_menu_links_are_indexed_and_stay_reachable(crawl, docsite, db):
    """Doxygen draws its menu from menudata.js with JavaScript: no <a href> in any page links files.html or the
    member indexes. The menu beside the root is read once per run and its pages seeded, so they are indexed and a
    refresh that prunes orphans keeps them, even when every page answers 304."""
    site = docsite.site
    site.put("/docs/files.html", html_page("File List", "<p>Here is a list of all documented files.</p>"))
    site.put(
        "/docs/menudata.js",
        'var menudata={children:[\n{text:"Main Page",url:"index.html"},\n{text:"Files",url:"files.html",'
        'children:[\n{text:"Elsewhere",url:"https://elsewhere.example/x.html"}]},\n{text:"Members",url:"members.html"}]}\n',
        "application/javascript",
    )
    site.put("/docs/members.html", html_page("Members", "<p>All documented members.</p>"))
    site.failing["/docs/members.html"] = 503  # only the menu links it, and it is down during the index
    index(crawl, docsite, expect=3, env={"DOCSBOT_DOXYGEN_MENU": "1"})
    assert "/docs/files.html" in pages(db) and "/docs/members.html" not in pages(db)
    assert last_run(db)["doxygen_menu/links"] == 4
    assert not any("elsewhere" in h.path for h in site.hits)
    menu = site.pages["/docs/menudata.js"]
    stored = db.execute("SELECT kind, etag, last_modified, links FROM seed_files").fetchall()
    assert [row[:3] for row in stored] == [("pages", menu.etag, menu.last_modified)]
    assert sorted(urlsplit(u).path for u in stored[0][3]) == [
        "/docs/files.html",
        "/docs/index.html",
        "/docs/members.html",
        "/x.html",
    ]

    # the menu is revalidated like a page: its 304 seeds the crawl from the stored links, so the page it alone
    # links is requested although nothing was downloaded that names it
    del site.failing["/docs/members.html"]
    site.hits.clear()
    refresh(crawl, env={"DOCSBOT_DOXYGEN_MENU": "1"}, prune="orphans")
    assert [(h.status, h.if_none_match) for h in site.hits_for("/docs/menudata.js")] == [(304, menu.etag)]
    assert "/docs/files.html" in pages(db)  # still reachable through the menu: not an orphan
    assert "/docs/members.html" in pages(db)
    run = last_run(db)
    assert run["doxygen_menu/unchanged"] == 1 and run["new"] == 1 and run["unchanged"] == len(pages(db)) - 1
    site.hits.clear()
    refresh(crawl, env={"DOCSBOT_DOXYGEN_MENU": "1"}, prune="orphans")
    assert {h.status for h in site.hits if not h.path.endswith("robots.txt")} == {304}  # nothing downloaded

    # a new menu (a page added to it) is downloaded and its links stored in place of the old ones
    site.put("/docs/classes.html", html_page("Classes", "<p>The documented classes.</p>"))
    site.put("/docs/menudata.js", 'var menudata={children:[{text:"Classes",url:"classes.html"}]}', "text/javascript")
    refresh(crawl, env={"DOCSBOT_DOXYGEN_MENU": "1"})
    assert "/docs/classes.html" in pages(db)
    assert [urlsplit(u).path for (u,) in db.execute("SELECT unnest(links) FROM seed_files")] == ["/docs/classes.html"]
    site.hits.clear()
    refresh(crawl)  # without the menu (the tests' default), a site without one: nothing else changes
    assert [h.path for h in site.hits if "menudata" in h.path] == []
