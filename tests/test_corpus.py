"""A slice of each generator's real documentation (bench/matrix.py's corpora: Debian documentation packages and
sites built from the npm registry), indexed and refreshed by `scrapy crawl docs` as a process. `make matrix` runs
the whole trees; this keeps every generator's pages in the test suite at a cost of seconds each.

A corpus whose package is not installed is skipped with the apt-get command that installs it; a built site that
is not built yet, with the command that builds it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from bench.matrix import CORPORA, MKDOCS_RECIPE, SITES, Corpus, built_site, installed, site_of
from tests.conftest import ROOT
from tests.test_crawl import last_run

SLICE = 30  # pages requested at most per corpus


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve(tmp_path):
    """Serve a directory with bench/static_server.py (ETag, Last-Modified, 304s, dir/ → dir/index.html)."""
    procs = []

    def start(directory) -> str:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "bench/static_server.py"), str(directory), str(port), str(tmp_path / "log")]
        )
        procs.append(proc)
        url = f"http://127.0.0.1:{port}/"
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        return url

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait()


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda c: c.name)
def test_a_slice_of_each_generators_docs_is_stored_with_chunks_and_refreshes_with_304s(
    corpus: Corpus, crawl, db, serve
):
    """Proves, per generator (Sphinx, AsciiDoc XHTML, DocBook XSL, gi-docgen, Javadoc, rustdoc, mdBook): the first
    pages reached from the root of the real docs are all stored with chunks (none skipped as unparseable), and an
    unchanged refresh costs one 304 per stored page it checks."""
    if corpus.recipe == MKDOCS_RECIPE:  # docsbot's own documentation site, built from this checkout (seconds)
        directory, manuals = built_site(corpus.recipe), ["index.html"]
    elif corpus.recipe:  # a site built from the npm registry (minutes): tested once `make matrix` has built it
        directory, manuals = SITES / corpus.recipe / "site", ["index.html"]
        if not (directory / "index.html").exists():
            pytest.skip(f"{corpus.name} is not built (scripts/build_js_docs.sh {corpus.recipe})")
    elif not installed(corpus.package):
        pytest.skip(f"{corpus.package} is not installed (apt-get install {corpus.package})")
    else:
        directory, manuals = site_of(corpus.package)
    root = serve(directory) + (corpus.entry or manuals[0])  # a package with several manuals: the first one
    result = crawl(url=root, library=corpus.name, max_pages=str(SLICE))
    assert result.returncode == 0, result.stderr[-3000:]
    run = last_run(db)
    rows = db.execute(
        "SELECT p.url, count(d.id) FROM pages p LEFT JOIN documents d ON d.page_id = p.id GROUP BY p.url"
    ).fetchall()
    without_chunks = [url for url, n in rows if n == 0]
    assert len(rows) >= SLICE * 2 // 3, (len(rows), run)
    assert without_chunks == [], without_chunks
    assert run.get("skipped/unparseable", 0) == 0 and run.get("failed", 0) == 0, run

    result = crawl(library=corpus.name, mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    run = last_run(db)
    # Every stored page the refresh requested answered 304 and cost nothing. (Which 30 pages a max_pages run
    # reaches depends on request order, which differs between index and refresh: a refresh may trade a few
    # stored pages for new ones, so the sets are not compared here; `make matrix` compares whole trees.)
    assert run.get("modified", 0) == 0 and run.get("failed", 0) == 0, run
    assert run["unchanged"] >= SLICE // 2 and run["responses_by_status"].get("304", 0) == run["unchanged"], run


def test_the_matrix_link_walk_counts_html_pages_in_scope_once(docsite):
    """Proves: bench/matrix.py's independent walk (the "reachable" column) follows links within the root's
    directory only, counts each HTML page once (``dir/`` and ``dir/index.html`` are one file) and tells other
    outcomes apart."""
    from bench.matrix import link_walk

    site = docsite.site
    site.put("/docs/sub/index.html", "<html><body><a href='../api.html'>api</a><a href='./'>self</a></body></html>")
    site.put("/docs/notes.txt", "plain text", "text/plain")
    site.put(
        "/docs/deep.html",
        "<html><body><a href='sub/'>sub</a><a href='sub/index.html'>sub</a><a href='notes.txt'>notes</a>"
        "<a href='gone.html'>gone</a><a href='deep.html#x'>me</a><a href='jump.html'>jump</a></body></html>",
    )
    # A meta refresh (the JDK docs' root) is a redirect, as for browsers and Scrapy: its target is the page.
    site.put(
        "/docs/jump.html", '<html><head><meta http-equiv="Refresh" content="0; url=\'moved/x.html\'"></head></html>'
    )
    site.put("/docs/moved/x.html", "<html><body><p>here</p></body></html>")
    pages, other = link_walk(f"{docsite.url}/docs/index.html")
    assert pages == {
        "index.html", "guide.html", "api.html", "deep.html", "flaky.html", "sub/index.html", "moved/x.html",
    }  # fmt: skip
    assert other == {"text/plain": 1, "HTTP 404": 1, "meta refresh": 1}
    # The release never deletes the page the root leads to (the JDK docs' api/index.html: the site would be gone).
    from bench.matrix import entry_file

    assert entry_file(f"{docsite.url}/docs/jump.html", "/docs/") == "moved/x.html"
    assert entry_file(f"{docsite.url}/docs/index.html", "/docs/") == "index.html"
