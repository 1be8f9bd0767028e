"""The fault matrix: docsbot against real parts that misbehave (issue 11, "lose no page under load or faults").

Every test names the fault it injects and what it proves. Real parts only: `scrapy crawl docs` as a process, the
HTTP server of tests/docsite.py, PostgreSQL + pgvector (the shared embedded server, or a private one where the test
stops and restarts the database). Faults that tests/test_refresh_rules.py already covers are not repeated here:
5xx/429 on refresh (test_server_errors_keep_the_page_exactly_as_it_was), a timeout on refresh, malformed HTML,
Latin-1 pages, non-HTML and oversized pages (test_non_html_and_oversized_pages_are_skipped_with_a_reason), SIGKILL
in the middle of a refresh, and SIGTERM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from docsbot import db as dbmod
from tests.conftest import ROOT, _with_database

MIGRATE = """
import sys, time
from pathlib import Path
from docsbot import db
go = Path(sys.argv[2])
(go.parent / f"ready-{go.name}-{__import__('os').getpid()}").touch()
while not go.exists():
    time.sleep(0.002)
with db.connect(sys.argv[1], autocommit=True) as conn:
    print(",".join(db.migrate(conn)))
"""


def test_six_processes_migrating_one_new_database_all_succeed(pg_server_url, tmp_path):
    """Proves: migrate() is safe when several processes (Scrapyd nodes, parallel crawls) start on a new database
    at the same moment: every process succeeds, and each migration is applied exactly once. Before the fix,
    `CREATE TABLE IF NOT EXISTS schema_migrations` ran outside the advisory lock and most processes failed with
    UniqueViolation."""
    expected = [version for version, _ in dbmod._migrations()]
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
