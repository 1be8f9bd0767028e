"""`docsbot mcp` driven by the MCP SDK's own client, over stdio and Streamable HTTP, against a site indexed with
the real pipeline (`scrapy crawl docs`, hashing test embedder) in a real PostgreSQL + pgvector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import psycopg
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from docsbot.mcp.transport import parse_http_address
from docsbot.service.sections import find_heading, page_headings, section_markdown, slugify
from tests.conftest import docsbot_env
from tests.docsite import html_page
from tests.servers import ServerProcess
from tests.test_deploy import scrapyd  # noqa: F401 - the fixture

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

ROOT = Path(__file__).resolve().parent.parent
READ_TOOLS = {
    "search_docs", "list_libraries", "get_page", "get_changes", "diff_versions", "resolve_library", "get_docs"
}  # fmt: skip
REAL_EMBEDDER = "docsbot.embedding.models.FastEmbedEmbedder"


@asynccontextmanager
async def stdio_session(env: dict[str, str], errlog: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "docsbot.cli", "mcp", *args], env=env, cwd=str(ROOT)
    )
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


class HttpServer(ServerProcess):
    """`docsbot mcp --http ...` as a process; ``url`` once it has announced its address."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        command = [sys.executable, "-m", "docsbot.cli", "mcp", *args]
        super().__init__(command, {**os.environ, **env}, log, r"(?m)^docsbot mcp: serving (\S+)")

    def wait_ready(self, timeout: float = 60) -> str:
        self.url = super().wait_ready(timeout).replace("0.0.0.0", "127.0.0.1")
        return self.url


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as client,  # as the SDK's default
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    assert result.structured_content is not None
    return result.structured_content


def error(result: Any) -> str:
    assert result.is_error, result
    text = result.content[0].text
    assert "Traceback" not in text
    return text


async def _collect(into: list[Any], call: Any) -> None:
    into.append(await call)


def index(crawl, docsite) -> None:
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0")
    assert result.returncode == 0, result.stderr[-3000:]


# --- pure parts ---------------------------------------------------------------------------------------------------


def test_http_address_and_sections():
    assert parse_http_address("8080") == ("127.0.0.1", 8080)
    assert parse_http_address("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_http_address("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ValueError):
        parse_http_address("host:port")
    markdown = (
        "# Guide\n\nIntro.\n\n## Install\n\npip\n\n### Extras\n\nmore\n\n## Configure\n\n```\n# not a heading\n```"
    )
    headings = page_headings(markdown)
    assert [(h.level, h.text, h.path) for h in headings] == [
        (1, "Guide", ("Guide",)),
        (2, "Install", ("Guide", "Install")),
        (3, "Extras", ("Guide", "Install", "Extras")),
        (2, "Configure", ("Guide", "Configure")),
    ]
    assert slugify("Getting started!") == "getting-started"
    install = find_heading(headings, "install", None)
    assert section_markdown(markdown, headings, install) == "## Install\n\npip\n\n### Extras\n\nmore"
    # an anchor recorded on chunks names the heading by its path, whatever its slug
    assert find_heading(headings, "config-section-id", ["Guide", "Configure"]) == 3
    assert find_heading(headings, "nowhere", None) is None


def test_bad_arguments_are_one_line_naming_each_argument_and_what_it_takes():
    """What the server answers for arguments that fail a tool's input schema, from pydantic's own error and the
    schema the tool lists (its type, range, length or choices), instead of pydantic's report."""
    from typing import Annotated, Literal

    from pydantic import BaseModel, Field, ValidationError

    from docsbot.mcp.arguments import bad_arguments

    class Arguments(BaseModel):
        query: Annotated[str, Field(min_length=1, max_length=2000)]
        limit: Annotated[int, Field(ge=1, le=50)] = 5
        kind: Literal["docs", "changelog"] | None = None
        diffs: bool = False

    schema = Arguments.model_json_schema()
    for arguments, expected in [
        ({"limit": 0}, "query: required, a text of 1 to 2000 characters; limit: a whole number from 1 to 50, got 0"),
        ({"query": "x" * 3000}, "query: a text of 1 to 2000 characters, got 3000 characters"),
        ({"query": "x", "kind": "blog"}, "kind: one of 'docs', 'changelog', or null, got 'blog'"),
        (
            {"query": "x", "diffs": "maybe", "limit": "many"},
            "limit: a whole number from 1 to 50, got 'many'; diffs: true or false, got 'maybe'",
        ),  # fmt: skip
    ]:
        with pytest.raises(ValidationError) as caught:
            Arguments.model_validate(arguments)
        assert bad_arguments(caught.value, schema) == expected


def test_the_token_is_a_declared_setting_kept_out_of_the_settings_repr(monkeypatch):
    """DOCSBOT_MCP_TOKEN is declared in the settings model (the server reads it through the project's settings, the
    environment as before); the model's repr, which a log line might print, does not show it."""
    from docsbot.config import DocsbotSettings

    monkeypatch.setenv("DOCSBOT_MCP_TOKEN", "s3cret-token")
    settings = DocsbotSettings()
    assert settings.DOCSBOT_MCP_TOKEN == "s3cret-token" and "s3cret-token" not in repr(settings)
    assert DocsbotSettings.model_fields["DOCSBOT_MCP_TOKEN"].default == ""  # what the settings reference shows


# --- stdio, read-only ---------------------------------------------------------------------------------------------


def test_stdio_tools_answer_from_the_database_and_reject_bad_calls(crawl, docsite, db, database_url, tmp_path):
    index(crawl, docsite)
    env = docsbot_env(database_url, tmp_path)

    async def main() -> None:
        async with stdio_session(env, tmp_path / "stdio.log") as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS  # read-only: no refresh tools
            schema = tools["search_docs"].input_schema
            assert schema["required"] == ["query"]
            assert schema["properties"]["limit"]["minimum"] == 1
            assert schema["properties"]["limit"]["maximum"] == 50
            assert set(tools["get_page"].input_schema["properties"]) == {"url", "section"}
            assert tools["search_docs"].output_schema is not None
            assert tools["get_page"].annotations.read_only_hint

            # search_docs: page-level results, each checked against the stored chunks
            found = answer(await session.call_tool("search_docs", {"query": "coroutine task object", "limit": 3}))
            results = found["results"]
            assert results and len(results) <= 3
            assert results[0]["title"] == "API reference"
            assert len({r["url"] for r in results}) == len(results)  # one result per page
            for r in results:
                stored = db.execute(
                    "SELECT count(*) FROM documents d JOIN pages p ON p.id = d.page_id "
                    "WHERE p.url = %s AND d.content = %s AND p.title = %s",
                    (r["url"], r["content"], r["title"]),
                ).fetchone()[0]
                assert stored == 1, r
                assert (r["library"], r["version"]) == ("testdocs", "1.0")
            assert all(r["explanation"] is None for r in results)  # only when asked for
            why = answer(await session.call_tool("search_docs", {"query": "coroutine task object", "limit": 3,
                                                                 "explain": True}))  # fmt: skip
            assert [r["url"] for r in why["results"]] == [r["url"] for r in results]
            for r in why["results"]:
                assert set(r["explanation"]["lists"]) == {"vector_chunks", "vector_definitions", "bm25_chunks",
                                                          "bm25_pages", "symbols"}  # fmt: skip
                assert r["explanation"]["score"] == pytest.approx(r["score"], abs=1e-5)
                assert {"w_vec", "w_lex"} & {f["knob"] for f in r["explanation"]["factors"]}
            scoped = answer(await session.call_tool("search_docs", {"query": "install", "library": "testdocs"}))
            assert scoped["results"][0]["url"].endswith("/docs/guide.html")

            # list_libraries: counts and last run as stored
            libraries = answer(await session.call_tool("list_libraries", {}))["libraries"]
            (lib,) = libraries
            pages, chunks = db.execute(
                "SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM documents)"
            ).fetchone()
            run_id, stats = db.execute("SELECT id, stats FROM crawl_runs").fetchone()
            assert (lib["library"], lib["version"], lib["pages"], lib["chunks"]) == ("testdocs", "1.0", pages, chunks)
            assert lib["root_url"] == f"{docsite.url}/docs/index.html"
            assert lib["refreshing"] is False
            assert lib["last_run"]["crawl_run_id"] == run_id
            assert lib["last_run"]["state"] == "finished"
            assert lib["last_run"]["outcome"] == "complete" and lib["last_run"]["outcome_reason"] is None
            assert lib["last_run"]["counts"]["new"] == stats["new"] == pages
            assert (lib["vectors"], lib["vectors_waiting"], lib["embedding"]) == (chunks, 0, None)

            # get_page: the stored Markdown, whole or one section
            guide = f"{docsite.url}/docs/guide.html"
            page = answer(await session.call_tool("get_page", {"url": guide}))
            stored_md = db.execute("SELECT markdown FROM pages WHERE url = %s", (guide,)).fetchone()[0]
            assert page["markdown"] == stored_md and page["source"] == "page"
            assert "import testdocs" in stored_md and "TOML" in stored_md
            assert [s["anchor"] for s in page["sections"]] == ["install", "configure"]
            section = answer(await session.call_tool("get_page", {"url": guide, "section": "configure"}))
            assert section["markdown"] == "## Configure\n\nConfiguration lives in a TOML file."
            assert section["heading_path"] == ["Guide", "Configure"]
            deep = answer(await session.call_tool("get_page", {"url": guide + "#install"}))
            assert deep["markdown"].startswith("## Install") and "testdocs.run()" in deep["markdown"]
            assert "Configure" not in deep["markdown"]
            # the directory URL and its index.html are one page
            home = answer(await session.call_tool("get_page", {"url": f"{docsite.url}/docs/index.html"}))
            assert home["title"] == "Welcome"

            # a section named by the anchor the crawl recorded on its chunks (metadata->>'anchor')
            db.execute(
                'UPDATE documents SET metadata = metadata || \'{"anchor": "guide-top"}\' '
                "WHERE page_id = (SELECT id FROM pages WHERE url = %s)",
                (guide,),
            )
            top = answer(await session.call_tool("get_page", {"url": guide, "section": "guide-top"}))
            assert top["heading_path"] == ["Guide"] and top["markdown"] == stored_md
            # a page stored before pages kept their Markdown: its chunks, joined
            db.execute("UPDATE pages SET markdown = NULL WHERE url = %s", (guide,))
            old = answer(await session.call_tool("get_page", {"url": guide}))
            contents = [
                r[0]
                for r in db.execute(
                    "SELECT content FROM documents d JOIN pages p ON p.id = d.page_id WHERE p.url = %s "
                    "ORDER BY sort_order",
                    (guide,),
                )
            ]
            assert old["source"] == "chunks" and old["markdown"] == "\n\n".join(contents)

            # bad calls: tool errors with a clear message; the server keeps serving
            for args, expected in [
                ({"query": "x", "limit": 0}, "limit: a whole number from 1 to 50, got 0"),
                ({"query": "x", "limit": 51}, "limit: a whole number from 1 to 50, got 51"),
                ({"query": ""}, "query: a text of 1 to 2000 characters, got ''"),
                ({"query": "   "}, "the query is empty"),
                ({"query": "x" * 2001}, "got 2001 characters"),
                ({"limit": 3}, "query"),
                ({"query": "task", "library": "nosuchlib"}, "nosuchlib is not indexed; indexed: testdocs@1.0"),
                ({"query": "task", "library": "testdocs", "version": "9"}, "indexed: testdocs@1.0"),
            ]:
                assert expected in error(await session.call_tool("search_docs", args)), args
            for args, expected in [
                ({"url": "ftp://example.org/x"}, "not an absolute http(s) URL"),
                ({"url": "https://elsewhere.example/x.html"}, "not in any indexed version; indexed: testdocs@1.0"),
                ({"url": f"{docsite.url}/docs/private/secret.html"}, "is not stored in testdocs@1.0"),
                ({"url": guide, "section": "nowhere"}, "no section 'nowhere'"),
                ({"url": "x" * 3000}, "url: a text of 1 to 2048 characters, got 3000 characters"),
            ]:
                assert expected in error(await session.call_tool("get_page", args)), args
            for tool in ("refresh_library", "get_run"):
                message = error(await session.call_tool(tool, {"library": "testdocs", "run_id": "1"}))
                assert message.startswith(f"{tool} is disabled: this server is read-only"), message

            # calls run side by side: a search answers while another call waits on a locked table
            with psycopg.connect(database_url) as blocker:
                blocker.execute("LOCK TABLE crawl_runs IN ACCESS EXCLUSIVE MODE")
                waiting: list[Any] = []
                async with anyio.create_task_group() as tg:
                    tg.start_soon(lambda: _collect(waiting, session.call_tool("list_libraries", {})))
                    with anyio.fail_after(30):  # until the server's list_libraries waits on the lock
                        while not db.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]:
                            await anyio.sleep(0.02)
                    with anyio.fail_after(5):
                        answer(await session.call_tool("search_docs", {"query": "install"}))
                    assert not waiting  # still blocked
                    blocker.commit()
            assert answer(waiting[0])["libraries"][0]["library"] == "testdocs"

            # the database drops every connection (as in a restart): the pool reconnects and answers as before
            # (compared with a search made now: the section test above gave a chunk an anchor)
            before = answer(await session.call_tool("search_docs", {"query": "coroutine task object", "limit": 3}))
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            again = answer(await session.call_tool("search_docs", {"query": "coroutine task object", "limit": 3}))
            assert again["results"] == before["results"]
            assert [r["url"] for r in again["results"]] == [r["url"] for r in results]

    anyio.run(main)

    # the latency script of the benchmark works against this index
    bench = subprocess.run(
        [sys.executable, "bench/mcp_latency.py", "-n", "5", "--warmup", "1", "--library", "testdocs"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bench.returncode == 0, bench.stderr[-3000:]
    report = json.loads(bench.stdout)
    assert report["calls"] == 5 and 0 < report["p50_ms"] <= report["p95_ms"] <= report["max_ms"]


# --- Streamable HTTP, refresh allowed ------------------------------------------------------------------------------


def test_http_concurrent_search_refresh_and_get_run(crawl, docsite, db, database_url, tmp_path):
    index(crawl, docsite)
    env = docsbot_env(database_url, tmp_path, DOCSBOT_MCP_TOKEN="tok")  # writes over HTTP need one, loopback too
    server = HttpServer(env, tmp_path / "http.log", "--http", "0", "--allow-refresh")
    try:
        url = server.wait_ready()
        assert url.startswith("http://127.0.0.1:")

        async def main() -> None:
            async with http_session(url, token="tok") as session:
                tools = {t.name: t for t in (await session.list_tools()).tools}
                writes = {"refresh_library", "get_run", "index_library", "remove_library", "list_runs", "cancel_run"}
                assert set(tools) == READ_TOOLS | writes
                assert tools["refresh_library"].input_schema["required"] == ["library"]

                # 20 concurrent searches, all answered, each as a single call would be
                single = answer(await session.call_tool("search_docs", {"query": "event loop scheduler"}))
                answers: list[dict] = []

                async def one() -> None:
                    answers.append(answer(await session.call_tool("search_docs", {"query": "event loop scheduler"})))

                async with anyio.create_task_group() as tg:
                    for _ in range(20):
                        tg.start_soon(one)

                # (pages tied on a rank may come in either order: compare what does not depend on ties)
                def shape(found: dict) -> tuple:
                    hits = found["results"]
                    return hits[0], {h["url"] for h in hits}, sorted(h["score"] for h in hits)

                assert len(answers) == 20
                differing = [shape(a) for a in answers if shape(a) != shape(single)]
                assert not differing, (differing[0], shape(single))
                assert single["results"][0]["title"] == "Deep dive"

            # a client that goes away while its calls wait on the database does not hurt the server
            with psycopg.connect(database_url) as blocker:
                blocker.execute("LOCK TABLE documents IN ACCESS EXCLUSIVE MODE")
                async with http_session(url, token="tok") as session:
                    with anyio.move_on_after(1.5) as waited:
                        async with anyio.create_task_group() as tg:
                            for _ in range(3):
                                tg.start_soon(session.call_tool, "search_docs", {"query": "gather results"})
                    assert waited.cancelled_caught  # the calls were still blocked when the client left
            # (the lock is released here)

            async with http_session(url, token="tok") as session:
                # another process holds the version's run lock: reported, nothing started
                version_id = db.execute("SELECT id FROM versions").fetchone()[0]
                with psycopg.connect(database_url, autocommit=True) as other:
                    other.execute("SELECT pg_advisory_lock(4242002, %s)", (version_id,))
                    busy = answer(await session.call_tool("refresh_library", {"library": "testdocs"}))
                    assert busy["started"] is False and "another run of testdocs@1.0 is in progress" in busy["message"]
                    (lib,) = answer(await session.call_tool("list_libraries", {}))["libraries"]
                    assert lib["refreshing"] is True
                assert db.execute("SELECT count(*) FROM crawl_runs").fetchone()[0] == 1

                # change a page on the site, refresh, poll the run, find the new text
                docsite.site.put(
                    "/docs/deep.html", html_page("Deep dive", "<p>The scheduler now uses a quokka heap.</p>")
                )
                started = answer(await session.call_tool("refresh_library", {"library": "testdocs"}))
                assert started["started"] is True and started["backend"] == "local"
                assert (started["library"], started["version"]) == ("testdocs", "1.0")
                run_id = started["run_id"]
                twice = answer(await session.call_tool("refresh_library", {"library": "testdocs", "version": "1.0"}))
                assert twice["started"] is False and twice["run_id"] == run_id
                states = []
                deadline = time.monotonic() + 90
                while time.monotonic() < deadline:
                    run = answer(await session.call_tool("get_run", {"run_id": run_id}))
                    states.append(run["state"])
                    if run["state"] not in ("starting", "running"):
                        break
                    await anyio.sleep(0.3)
                assert run["state"] == "finished", run
                assert states[0] in ("starting", "running")
                row = db.execute("SELECT id, mode, stats FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()
                assert run["crawl_run_id"] == row[0] and row[1] == "refresh"
                assert run["counts"]["modified"] == row[2]["modified"] == 1
                assert run["counts"]["unchanged"] == row[2]["unchanged"] >= 3
                assert answer(await session.call_tool("get_run", {"run_id": str(row[0])}))["state"] == "finished"
                found = answer(await session.call_tool("search_docs", {"query": "quokka heap", "limit": 1}))
                assert "quokka heap" in found["results"][0]["content"]
                page = answer(await session.call_tool("get_page", {"url": found["results"][0]["url"]}))
                assert "quokka heap" in page["markdown"]

                # bad refresh calls
                assert "nosuchlib is not indexed" in error(
                    await session.call_tool("refresh_library", {"library": "nosuchlib"})
                )
                assert "no run 'mcp-nope'" in error(await session.call_tool("get_run", {"run_id": "mcp-nope"}))

        anyio.run(main)
        assert server.process.poll() is None, server.log.read_text()[-3000:]
    finally:
        server.stop()
    assert server.process.returncode == 0
    assert "Traceback" not in server.log.read_text(), server.log.read_text()[-3000:]


# --- HTTP safety ---------------------------------------------------------------------------------------------------


def test_non_loopback_bind_needs_a_token(database_url, tmp_path):
    env = docsbot_env(database_url, tmp_path)
    env.pop("DOCSBOT_MCP_TOKEN", None)
    refused = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "mcp", "--http", "0.0.0.0:0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "refusing to serve on 0.0.0.0 without a token: set DOCSBOT_MCP_TOKEN" in refused.stderr
    assert "Traceback" not in refused.stderr

    server = HttpServer(
        docsbot_env(database_url, tmp_path, DOCSBOT_MCP_TOKEN="s3cret-token"),
        tmp_path / "tok.log",
        "--http",
        "0.0.0.0:0",
    )
    try:
        url = server.wait_ready()

        async def main() -> None:
            async with httpx2.AsyncClient() as client:
                for headers in ({}, {"Authorization": "Bearer wrong"}):
                    response = await client.post(
                        url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers
                    )
                    assert response.status_code == 401
                    assert response.headers["www-authenticate"].startswith("Bearer")
            async with http_session(url, token="s3cret-token") as session:
                assert answer(await session.call_tool("list_libraries", {})) == {"libraries": []}

        anyio.run(main)
    finally:
        server.stop()
    assert server.process.returncode == 0
    assert "s3cret-token" not in server.log.read_text()
    assert "Traceback" not in server.log.read_text(), server.log.read_text()[-3000:]


def test_refresh_tools_listed_only_when_allowed_and_json_schema_is_stable(database_url, tmp_path):
    """The tool names and argument names are the interface (docs/reference/mcp-tools.md)."""

    async def main() -> dict[str, Any]:
        async with stdio_session(docsbot_env(database_url, tmp_path), tmp_path / "s.log", "--allow-refresh") as s:
            return {t.name: sorted(t.input_schema["properties"]) for t in (await s.list_tools()).tools}

    assert anyio.run(main) == {
        "search_docs": ["explain", "kind", "library", "limit", "query", "version"],
        "list_libraries": [],
        "resolve_library": ["name"],
        "get_docs": ["library", "max_tokens", "topic", "version"],
        "get_page": ["section", "url"],
        "get_changes": ["diffs", "library", "since", "version"],
        "diff_versions": ["library", "new_version", "old_version"],
        "refresh_library": ["library", "version"],
        "get_run": ["run_id"],
        "index_library": [
            "exclude",
            "include",
            "library",
            "max_depth",
            "max_pages",
            "refresh",
            "scope",
            "url",
            "version",
        ],
        "remove_library": ["library", "version"],
        "list_runs": ["library", "limit", "version"],
        "cancel_run": ["run_id"],
    }


# --- Scrapyd -------------------------------------------------------------------------------------------------------


@pytest.mark.model
def test_refresh_is_scheduled_on_scrapyd_when_scrapyd_url_is_set(scrapyd, crawl, docsite, db, database_url, tmp_path):  # noqa: F811
    """With SCRAPYD_URL, refresh_library schedules the docs spider on Scrapyd (the egg scrapyd-deploy built) and
    get_run follows the job to its crawl_runs row. The real model: a Scrapyd job only has what the egg carries."""
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0", embedder=REAL_EMBEDDER)
    assert result.returncode == 0, result.stderr[-3000:]
    scrapyd.deploy()
    docsite.site.hits.clear()
    env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER=REAL_EMBEDDER, SCRAPYD_URL=scrapyd.url)

    async def main() -> dict:
        async with stdio_session(env, tmp_path / "scrapyd-mcp.log", "--allow-refresh") as session:
            started = answer(await session.call_tool("refresh_library", {"library": "testdocs"}))
            assert started["backend"] == "scrapyd" and started["started"] is True
            jobs = scrapyd.get("listjobs.json", project="docsbot")
            assert started["scrapyd_job"] in {
                j["id"] for state in ("pending", "running", "finished") for j in jobs[state]
            }
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                run = answer(await session.call_tool("get_run", {"run_id": started["run_id"]}))
                if run["state"] not in ("starting", "running"):
                    return run
                await anyio.sleep(0.5)
            raise AssertionError(f"the Scrapyd job did not finish: {run}")

    run = anyio.run(main)
    assert run["state"] == "finished", run
    assert run["counts"]["unchanged"] == 5 and run["counts"]["modified"] == 0
    assert {h.status for h in docsite.site.hits if h.path.endswith(".html")} == {304}
    assert db.execute("SELECT mode FROM crawl_runs WHERE id = %s", (run["crawl_run_id"],)).fetchone() == ("refresh",)


def test_resolve_library_and_get_docs_answer_what_an_agent_asks(crawl, docsite, db, database_url, tmp_path):
    """An agent's way in: the indexed name for the one it knows, then the docs of a topic within a token budget
    (the best section first, whole, with its deep link), or the version's overview; a budget too small for a
    section gets none of it rather than more than asked."""
    index(crawl, docsite)
    env = docsbot_env(database_url, tmp_path)

    async def main() -> None:
        async with stdio_session(env, tmp_path / "stdio.log") as session:
            found = answer(await session.call_tool("resolve_library", {"name": "Test_Docs"}))
            (candidate,) = found["candidates"]
            assert (candidate["library"], candidate["score"]) == ("testdocs", 1.0)
            assert [(v["version"], v["pages"]) for v in candidate["versions"]] == [("1.0", 5)]
            assert answer(await session.call_tool("resolve_library", {"name": "numpy"}))["candidates"] == []

            docs = answer(await session.call_tool("get_docs", {"library": "testdocs", "topic": "coroutine task object",
                                                               "max_tokens": 300}))  # fmt: skip
            assert (docs["version"], docs["max_tokens"]) == ("1.0", 300)
            first = docs["sections"][0]
            assert first["title"] == "API reference" and "Schedule a coroutine" in first["content"]
            assert first["deep_link"].startswith(f"{docsite.url}/docs/api.html")
            assert sum(s["tokens"] for s in docs["sections"]) < docs["tokens"] <= 300  # the whole reply counted
            assert len({s["deep_link"] for s in docs["sections"]}) == len(docs["sections"])

            overview = answer(await session.call_tool("get_docs", {"library": "testdocs", "version": "latest"}))
            assert overview["topic"] is None and overview["sections"][0]["url"] == f"{docsite.url}/docs/index.html"
            assert "Test Docs explain the library" in overview["sections"][0]["content"]

            tight = answer(await session.call_tool("get_docs", {"library": "testdocs", "topic": "install with pip",
                                                                "max_tokens": 300}))  # fmt: skip
            assert tight["tokens"] <= 300 and tight["sections"]
            examples = answer(await session.call_tool("search_docs", {"query": "install the library and run it",
                                                                      "kind": "example"}))["results"]  # fmt: skip
            assert [r["url"] for r in examples] == [f"{docsite.url}/docs/guide.html"]  # the one page with code
            assert "```" in examples[0]["content"] and "testdocs.run()" in examples[0]["content"]
            assert "not indexed" in error(await session.call_tool("get_docs", {"library": "nope"}))
            assert "max_tokens" in error(await session.call_tool("get_docs", {"library": "testdocs", "max_tokens": 10}))

    anyio.run(main)
