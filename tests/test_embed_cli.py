"""The embedding queue as users meet it: a crawl that leaves vectors to `docsbot embed`, `docsbot embed` killed
and resumed, what `docsbot status` and search say meanwhile, and the read-only commands with a role that may only
SELECT. Real processes, a real HTTP server and a real PostgreSQL + pgvector."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import uuid

import anyio
import psycopg
import pytest
from psycopg import sql

from tests.conftest import ROOT, docsbot_env
from tests.docsite import DocSiteServer
from tests.test_crawl import last_run
from tests.test_faults import fault_site, wait_for
from tests.test_mcp import answer, error, stdio_session


def cli(env, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "docsbot.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def crawl(env, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "docs"]
    for arg in args:
        cmd += ["-a", arg]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def waiting(db) -> int:
    return db.execute("SELECT count(*) FROM documents WHERE embedding IS NULL").fetchone()[0]


def test_a_crawl_that_leaves_its_vectors_to_docsbot_embed_is_searchable_at_once_and_embed_completes_it(
    database_url, db, tmp_path
):
    env = docsbot_env(database_url, tmp_path, DOCSBOT_CRAWL_EMBED_WORKERS="0")
    with DocSiteServer(fault_site(6)) as server:
        result = crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0")
    assert result.returncode == 4, result.stderr[-3000:]  # every page stored, vectors pending
    chunks = db.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert waiting(db) == chunks > 0
    assert "still wait for a vector (DOCSBOT_CRAWL_EMBED_WORKERS=0)" in result.stderr
    assert "vectors " + str(chunks) + " waiting" in result.stderr  # the summary line
    assert db.execute("SELECT outcome FROM crawl_runs").fetchone()[0] == "vectors_pending"

    # searchable by its text already: lexical and symbol signals, no vector at all
    found = cli(env, "search", "Paragraph 1 of page 4", "--json", "-k", "1")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout.splitlines()[0])["url"].endswith("/docs/p4.html")
    assert "explanation" not in json.loads(found.stdout.splitlines()[0])  # only when asked for
    # --explain: why, from its ranks: no vector list yet, BM25 over chunks
    explained = cli(env, "search", "Paragraph 1 of page 4", "--explain", "-k", "1")
    assert explained.returncode == 0, explained.stderr
    assert re.search(r"ranks: vector_chunks -, vector_definitions -, bm25_chunks \d+,", explained.stdout)
    assert re.search(
        r"^   w_lex=1 \[best chunk\]: \+0\.\d+ = 1/\(rrf_k 30 \+ \d+\), bm25_chunks$", explained.stdout, re.M
    )
    why = json.loads(cli(env, "search", "Paragraph 1 of page 4", "--json", "--explain", "-k", "1").stdout)
    assert why["explanation"]["lists"]["vector_chunks"] is None and why["explanation"]["lists"]["bm25_chunks"]

    # `docsbot search ... | head`: a reader that leaves early gets no traceback, and the exit status says SIGPIPE
    piped = subprocess.Popen(
        [sys.executable, "-m", "docsbot.cli", "search", "Paragraph", "-k", "5"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    piped.stdout.close()
    assert piped.wait(timeout=120) == 141 and "Traceback" not in piped.stderr.read()
    piped.stderr.close()

    status = cli(env, "status")
    assert status.returncode == 0
    assert f"{chunks} chunks, 0 with a vector" in status.stdout
    assert f"vectors: 0 done, {chunks} waiting (no worker is embedding" in status.stdout
    assert "vectors_pending (" in status.stdout

    embedded = cli(env, "embed", "--library", "testdocs")
    assert embedded.returncode == 0, embedded.stderr[-3000:]
    assert f"embedded {chunks} texts, {chunks} chunks given a vector" in embedded.stdout
    assert "0 chunks still wait" in embedded.stdout
    assert waiting(db) == 0
    assert f"{chunks} chunks, {chunks} with a vector" in cli(env, "status").stdout
    again = cli(env, "embed")
    assert again.returncode == 0 and "nothing to embed" in again.stdout


def test_docsbot_embed_builds_the_graph_beside_the_last_tenth_of_the_vectors(database_url, db, tmp_path):
    """As a crawl's run does: the version's HNSW graph is built once 90% of the vectors that waited are in, while
    the model still embeds the rest (0.3 s a text, claims of 2: the last tenth takes over a second), not after the
    last one."""
    env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="tests.embedders.SlowEmbedder",
                      SLOW_EMBEDDER_SECONDS_PER_TEXT="0.3", DOCSBOT_EMBED_CLAIM="2",
                      DOCSBOT_CRAWL_EMBED_WORKERS="0")  # fmt: skip
    with DocSiteServer(fault_site(12)) as server:
        result = crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0")
    assert result.returncode == 4, result.stderr[-3000:]  # every page stored, vectors pending
    chunks = waiting(db)
    assert chunks >= 30
    graphs = "SELECT count(*) FROM pg_indexes WHERE indexname ~ '^documents_embedding_v[0-9]+_hnsw_idx$'"
    assert db.execute(graphs).fetchone()[0] == 0

    embedded = cli(env, "embed", "--progress", "0.1")
    assert embedded.returncode == 0, embedded.stderr[-3000:]
    assert f"{chunks} chunks given a vector" in embedded.stdout
    lines = embedded.stderr.splitlines()
    built = next(i for i, line in enumerate(lines) if "vector indexes: 1 version graph(s) built" in line)
    still = [line for line in lines[built + 1 :] if "vectors of" in line and ", 0 waiting" not in line]
    assert still, embedded.stderr[-3000:]  # progress lines after the build: vectors were still waiting
    assert db.execute(graphs).fetchone()[0] == 1 and waiting(db) == 0


def test_docsbot_embed_killed_mid_backfill_loses_nothing_and_embeds_no_text_twice(database_url, db, tmp_path):
    """The issue's target: SIGKILL during the vector backfill, then `docsbot embed`: 0 chunks without a vector, 0
    texts embedded twice. Counted: the embedder logs the key of every text it embeds."""
    env = docsbot_env(database_url, tmp_path, DOCSBOT_CRAWL_EMBED_WORKERS="0")
    with DocSiteServer(fault_site(30)) as server:
        assert crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0").returncode == 4
    total = waiting(db)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    slow = {
        "DOCSBOT_EMBEDDER": "tests.embedders.LoggingEmbedder",
        "EMBED_LOG": str(first_log),
        "SLOW_EMBEDDER_SECONDS_PER_TEXT": "0.05",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "docsbot.cli", "embed", "--claim", "16"],
        cwd=ROOT,
        env={**env, **slow},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: total - waiting(db) >= 32, timeout=120)  # two claims committed, a third in flight
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    committed = {row[0] for row in db.execute("SELECT embed_hash FROM documents WHERE embedding IS NOT NULL")}
    assert 32 <= len(committed) < total
    resumed = cli({**env, **slow, "EMBED_LOG": str(second_log), "SLOW_EMBEDDER_SECONDS_PER_TEXT": "0"}, "embed")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert waiting(db) == 0
    second = second_log.read_text().split()
    assert not committed & set(second)  # a text whose vector was committed is never embedded again
    assert len(second) == len(set(second)) == total - len(committed)  # and each of the others once


@pytest.fixture
def reader_url(database_url, pg_server_url):
    """The test database through a role that may only SELECT (and whose transactions are read-only)."""
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(sql.Identifier(role)))
    head, _, query = database_url.partition("?")
    yield head.replace("postgresql://postgres:", f"postgresql://{role}:") + (f"?{query}" if query else ""), role
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_read_only_commands_work_with_a_select_only_role_and_a_schema_behind_names_the_command(
    database_url, db, tmp_path, reader_url
):
    url, role = reader_url
    env = docsbot_env(database_url, tmp_path)
    with DocSiteServer(fault_site(4)) as server:
        assert crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0").returncode == 0
    db.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(role)))
    reader = docsbot_env(url, tmp_path)
    found = cli(reader, "search", "Paragraph 2 of page 3", "--json", "-k", "1")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout.splitlines()[0])["url"].endswith("/docs/p3.html")
    status = cli(reader, "status")
    assert status.returncode == 0 and "testdocs@1.0" in status.stdout, status.stderr
    refused = cli(reader, "delete", "--library", "testdocs")  # a write: the role's refusal is one clear line
    assert refused.returncode == 2 and "Traceback" not in refused.stderr

    async def mcp_reads() -> None:  # the MCP server's read tools, as the same role
        async with stdio_session(reader, tmp_path / "mcp.log") as session:
            (lib,) = answer(await session.call_tool("list_libraries", {}))["libraries"]
            assert (lib["library"], lib["pages"], lib["vectors_waiting"]) == ("testdocs", 5, 0)
            hits = answer(await session.call_tool("search_docs", {"query": "Paragraph 2 of page 3", "limit": 1}))
            assert hits["results"][0]["url"].endswith("/docs/p3.html")
            page = answer(await session.call_tool("get_page", {"url": hits["results"][0]["url"]}))
            assert "Paragraph 2 of page 3" in page["markdown"]

    anyio.run(mcp_reads)

    # A database migrated by an older docsbot (before the embedding queue): readers say what to run, and do not
    # run it; `docsbot db migrate`, as the owner, brings it up to date.
    def older_schema() -> None:
        db.execute("DELETE FROM schema_migrations WHERE version = '0013'")
        db.execute("DROP TABLE embed_workers")
        db.execute("DROP INDEX documents_unembedded_idx")
        db.execute("ALTER TABLE documents ALTER COLUMN embedding SET NOT NULL")

    async def mcp_write() -> None:  # a write through MCP needs the schema the role may not apply: said as such
        args = ("--allow-refresh", "--allow-private-networks")
        async with stdio_session(reader, tmp_path / "mcp-write.log", *args) as session:
            older_schema()  # under the running server
            text = error(await session.call_tool("index_library", {"url": "http://127.0.0.1:9/docs/", "library": "x"}))
            assert "may not change the schema" in text and "try again" not in text, text

    anyio.run(mcp_write)
    behind = cli(reader, "status")
    assert behind.returncode == 2
    assert "(migration 0013 is not applied): run `docsbot db migrate`" in behind.stderr
    assert cli(reader, "search", "page").returncode == 2
    migrated = cli(env, "db", "migrate")
    assert migrated.returncode == 0 and "applied migrations 0013" in migrated.stdout
    db.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(role)))
    assert cli(reader, "status").returncode == 0
    assert cli(env, "db", "migrate").stdout.strip() == "the database schema is up to date"
    assert last_run(db)["new"] == 5
