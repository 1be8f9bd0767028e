"""What agents are told through a real MCP client (the SDK's ClientSession over stdio, `docsbot mcp` as a process) on
an index the tests build with `scrapy crawl docs`: versions without pages marked and refused with what to do, unknown
names answered with the nearest indexed ones, get_docs' whole reply within max_tokens (counted as the client receives
it, by the tokenizer the tool names) with its top match always in it, freshness after a full index and a refresh, and
one line for every bad argument."""

from __future__ import annotations

import json
from typing import Any

import anyio
import psycopg
import pytest

from docsbot.service.docs import TokenCounter
from docsbot.service.runs import iso
from docsbot.store.locks import RUN_LOCK
from tests.conftest import docsbot_env
from tests.docsite import html_page
from tests.test_docs import model_tokenizer
from tests.test_mcp import answer, error, index, stdio_session

TOKENIZED = "tests.embedders.TokenizedHashingEmbedder"  # the hashing test model, counting with the real tokenizer


def reply_tokens(result: Any) -> int:
    """The tokens of a tool's reply as the client received it: its text content and its structured content (as
    compact JSON, the way the JSON-RPC message carries it), by the provisioned model's tokenizer."""
    count = TokenCounter(model_tokenizer())
    text = sum(count(block.text) for block in result.content)
    return text + count(json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False))


def one_line(result: Any, *words: str) -> str:
    """The error text of ``result``: a tool error, one line, no validation report or traceback, naming ``words``."""
    text = error(result)
    assert "\n" not in text and "validation error" not in text and "errors.pydantic.dev" not in text, text
    for word in words:
        assert word in text, (word, text)
    return text


def long_site(docsite) -> None:
    """A library whose best section for "quokka scheduler" is long (prose, then a long code example), and a second
    page that mentions the topic briefly."""
    prose = " ".join(f"The quokka scheduler step {k} keeps every queue fair." for k in range(60))
    code = "\n".join(f"scheduler.add(task_{k}, priority={k})" for k in range(120))
    docsite.site.put(
        "/long/index.html",
        html_page(
            "Scheduler reference",
            f"<h2 id='quokka'>Quokka scheduler</h2><p>{prose}</p><pre>{code}</pre>",
            ["other.html"],
        ),  # fmt: skip
    )
    docsite.site.put("/long/other.html", html_page("Other", "<p>A word on the quokka scheduler elsewhere.</p>"))
    docsite.site.put("/empty/index.txt", "not HTML: nothing to store", "text/plain")


def test_versions_without_pages_are_marked_refused_and_ranked_below(crawl, docsite, db, database_url, tmp_path):
    """indexing (a run holds the version's lock), empty (its run stored no page), failed (its root failed),
    not_indexed (declared, never run): marked by list_libraries and resolve_library, ranked below the versions with
    pages, and an error in get_docs and search_docs saying which state and what to do; `latest` and no version
    pick the newest version with pages."""
    from docsbot import store

    index(crawl, docsite)
    long_site(docsite)
    assert crawl(url=f"{docsite.url}/missing/index.html", library="testdocs", version="3.0").returncode != 0
    assert crawl(url=f"{docsite.url}/empty/index.txt", library="testdocs-js").returncode != 0
    with psycopg.connect(database_url, autocommit=True) as conn:
        indexing = store.upsert_version(conn, "testdocs", "2.0", f"{docsite.url}/v2/index.html", {})
        store.upsert_version(conn, "neverlib", "", f"{docsite.url}/never/", {})
    env = docsbot_env(database_url, tmp_path)

    async def main() -> None:
        async with stdio_session(env, tmp_path / "states.log") as session:
            with psycopg.connect(database_url, autocommit=True) as holder:  # a run of testdocs@2.0 in progress
                holder.execute("SELECT pg_advisory_lock(%s, %s)", (RUN_LOCK, indexing.id))
                listed = answer(await session.call_tool("list_libraries", {}))["libraries"]
                states = {(v["library"], v["version"]): (v["status"], v["status_reason"]) for v in listed}
                assert states[("testdocs", "1.0")] == ("ready", None)
                assert states[("testdocs", "2.0")] == ("indexing", "a run of it is in progress")
                assert states[("testdocs", "3.0")][0] == "failed" and "root_failed" in states[("testdocs", "3.0")][1]
                assert states[("testdocs-js", "")][0] == "empty"
                assert "stored no page" in states[("testdocs-js", "")][1]
                assert states[("neverlib", "")] == ("not_indexed", "declared, never indexed")

                found = answer(await session.call_tool("resolve_library", {"name": "testdocs"}))["candidates"]
                assert [c["library"] for c in found] == ["testdocs", "testdocs-js"] and found[0]["score"] == 1.0
                assert found[1]["score"] < 0.5  # its name's score (a close spelling), halved: it has no pages
                versions = [(v["version"], v["status"]) for v in found[0]["versions"]]
                assert versions == [("1.0", "ready"), ("3.0", "failed"), ("2.0", "indexing")]  # pages first
                # the exact name of a library without pages ranks below a close one that answers
                found = answer(await session.call_tool("resolve_library", {"name": "testdocs-js"}))["candidates"]
                assert [(c["library"], c["score"]) for c in found][1] == ("testdocs-js", 0.5)  # 1.0, halved
                assert found[0]["library"] == "testdocs" and found[0]["score"] > 0.5

                message = one_line(
                    await session.call_tool("get_docs", {"library": "testdocs", "version": "2.0", "topic": "task"}),
                    "testdocs@2.0 has no pages (being indexed: a run of it is in progress)",
                    "try again when the run ends",
                    "versions with pages: testdocs@1.0",
                )
                assert message.startswith("Error executing tool get_docs: ")
                one_line(
                    await session.call_tool("get_docs", {"library": "testdocs", "version": "3.0"}),
                    "testdocs@3.0 has no pages (failed: its last run failed (",
                    "once the site answers",
                )
                one_line(
                    await session.call_tool("get_docs", {"library": "testdocs-js", "topic": "task"}),
                    "testdocs-js has no pages (empty: its last run stored no page (",
                    "check its root URL",
                )
                one_line(await session.call_tool("get_docs", {"library": "neverlib"}), "neverlib has no pages (not "
                         "indexed yet: declared, never indexed); index it first")  # fmt: skip
                one_line(
                    await session.call_tool("search_docs", {"query": "task", "library": "testdocs-js"}),
                    "testdocs-js has no pages (empty",
                )
                one_line(
                    await session.call_tool("search_docs", {"query": "task", "library": "testdocs", "version": "2.0"}),
                    "testdocs@2.0 has no pages (being indexed",
                )
                one_line(
                    await session.call_tool(
                        "diff_versions", {"library": "testdocs", "old_version": "1.0", "new_version": "3.0"}
                    ),
                    "testdocs@3.0 has no pages (failed",
                )
                # no version, or a loose one: the newest version with pages, not the newer ones without
                for version in (None, "latest"):
                    args = {"library": "testdocs", "topic": "coroutine task object"} | ({"version": version} if version
                                                                                          else {})  # fmt: skip
                    docs = answer(await session.call_tool("get_docs", args))
                    assert docs["version"] == "1.0" and docs["sections"][0]["title"] == "API reference"
                # a search of the library answers from its versions with pages
                hits = answer(await session.call_tool("search_docs", {"query": "task", "library": "testdocs"}))
                assert hits["results"] and {h["version"] for h in hits["results"]} == {"1.0"}
            # the run lock released, no run recorded: declared, never indexed
            listed = answer(await session.call_tool("list_libraries", {}))["libraries"]
            assert {(v["library"], v["version"]): v["status"] for v in listed}[("testdocs", "2.0")] == "not_indexed"

    anyio.run(main)


def test_unknown_names_and_bad_arguments_get_one_line_each(crawl, docsite, db, database_url, tmp_path):
    """Every tool that takes a library or version names the nearest indexed ones for an unknown one; every bad
    argument is one line naming the argument, what it takes and what it got, a tool error (is_error), the server
    serving on."""
    index(crawl, docsite)
    env = docsbot_env(database_url, tmp_path)

    async def main() -> None:
        async with stdio_session(env, tmp_path / "errors.log", "--allow-refresh") as session:
            near = "is not indexed; did you mean testdocs? indexed: testdocs@1.0"
            for tool, args in [
                ("search_docs", {"query": "task", "library": "testdoc"}),
                ("get_docs", {"library": "test-docs2"}),
                ("get_changes", {"library": "testdcs"}),
                ("diff_versions", {"library": "testdoc", "old_version": "1.0", "new_version": "1.0"}),
                ("refresh_library", {"library": "testdoc"}),
                ("remove_library", {"library": "testdoc"}),
                ("list_runs", {"library": "testdoc"}),
            ]:
                one_line(await session.call_tool(tool, args), near)
            version = "testdocs@1.1 is not indexed; did you mean testdocs@1.0?"
            for tool, args in [
                ("search_docs", {"query": "task", "library": "testdocs", "version": "1.1"}),
                ("get_docs", {"library": "testdocs", "version": "1.1"}),
                ("get_changes", {"library": "testdocs", "version": "1.1"}),
                ("diff_versions", {"library": "testdocs", "old_version": "1.0", "new_version": "1.1"}),
                ("refresh_library", {"library": "testdocs", "version": "1.1"}),
                ("remove_library", {"library": "testdocs", "version": "1.1"}),
                ("list_runs", {"library": "testdocs", "version": "1.1"}),
            ]:
                one_line(await session.call_tool(tool, args), version)
            # nothing close: what is indexed, without a guess
            text = one_line(await session.call_tool("get_docs", {"library": "numpy"}), "numpy is not indexed; indexed")
            assert "did you mean" not in text

            for tool, args, expected in [
                ("search_docs", {"query": "x", "limit": 0}, "limit: a whole number from 1 to 50, got 0"),
                ("search_docs", {"query": "x", "limit": "many"}, "limit: a whole number from 1 to 50, got 'many'"),
                ("search_docs", {"limit": 3}, "query: required, a text of 1 to 2000 characters"),
                ("search_docs", {"query": "x" * 2001}, "query: a text of 1 to 2000 characters, got 2001 characters"),
                (
                    "search_docs",
                    {"query": "x", "kind": "blog"},
                    "kind: one of 'docs', 'changelog', 'index', 'example', or null, got 'blog'",
                ),  # fmt: skip
                (
                    "get_docs",
                    {"library": "testdocs", "max_tokens": 50},
                    "max_tokens: a whole number from 300 to 100000, got 50",
                ),  # fmt: skip
                ("get_docs", {"library": "testdocs", "max_tokens": 10**6}, "max_tokens: a whole number from 300"),
                ("get_docs", {}, "library: required, a text of 1 to 200 characters"),
                ("get_page", {"url": ""}, "url: a text of 1 to 2048 characters, got ''"),
                (
                    "get_page",
                    {"url": "https://x/", "section": 7},
                    "section: a text of at most 200 characters, or null, got 7",
                ),  # fmt: skip
                ("resolve_library", {"name": ""}, "name: a text of 1 to 200 characters, got ''"),
                ("get_changes", {"library": "testdocs", "diffs": "maybe"}, "diffs: true or false, got 'maybe'"),
                ("diff_versions", {"library": "testdocs", "old_version": "1.0"}, "new_version: required, a text"),
                ("list_runs", {"limit": 500}, "limit: a whole number from 1 to 200, got 500"),
                ("get_run", {"run_id": ""}, "run_id: a text of 1 to 64 characters, got ''"),
                (
                    "index_library",
                    {"url": "https://example.org/", "max_pages": 0},
                    "max_pages: a whole number of at least 1, or null, got 0",
                ),  # fmt: skip
            ]:
                text = one_line(await session.call_tool(tool, args), expected)
                assert text.startswith(f"Error executing tool {tool}: "), text
            # two bad arguments: both named, on the one line
            one_line(await session.call_tool("search_docs", {"query": "", "limit": 99}), "query: ", "; limit: ")
            # and the server is still serving
            assert answer(await session.call_tool("search_docs", {"query": "install"}))["results"]

    anyio.run(main)


def test_get_docs_whole_reply_fits_max_tokens_with_the_top_match(crawl, docsite, db, database_url, tmp_path):
    """The reply as the client receives it (text and structured content) counted by the provisioned model's
    tokenizer (what the server counts with, as the tool's description says): at most max_tokens, equal to the
    tokens it states (or just over, where the count's own digits cannot state themselves), and always holding the
    top match: whole at a large budget, cut inside its block at a small one."""
    long_site(docsite)
    result = crawl(url=f"{docsite.url}/long/index.html", library="longdocs", version="1")
    assert result.returncode == 0, result.stderr[-3000:]
    env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER=TOKENIZED)

    async def main() -> None:
        async with stdio_session(env, tmp_path / "budget.log") as session:
            tool = {t.name: t for t in (await session.list_tools()).tools}["get_docs"]
            assert "counted with the tokenizer of the server's embedding model" in tool.description
            assert tool.input_schema["properties"]["max_tokens"]["minimum"] == 300
            top, firsts = None, {}
            for budget in (100_000, 5000, 1000, 500, 300):
                args = {"library": "longdocs", "topic": "quokka scheduler", "max_tokens": budget}
                result = await session.call_tool("get_docs", args)
                docs = answer(result)
                sent = reply_tokens(result)
                assert sent <= docs["tokens"] <= min(budget, sent + 2), (budget, sent, docs["tokens"])
                first = firsts[budget] = docs["sections"][0]
                top = top or first["deep_link"]
                assert first["deep_link"] == top and first["title"] == "Scheduler reference", budget
                assert result.content[0].text.startswith("# longdocs@1\n\n## Scheduler reference")
                assert "quokka" in first["content"] and first["content"].count("```") in (0, 2), budget
            # whole at a large budget (its prose and its whole code example); at the smallest, cut inside a block
            assert "## Quokka scheduler" in firsts[100_000]["content"] and "task_119" in firsts[100_000]["content"]
            assert firsts[300]["content"].endswith("…") and len(firsts[300]["content"]) < len(firsts[5000]["content"])
            # the overview (no topic) within the budget too
            result = await session.call_tool("get_docs", {"library": "longdocs", "max_tokens": 400})
            assert reply_tokens(result) <= answer(result)["tokens"] <= 400
            assert answer(result)["sections"][0]["url"] == f"{docsite.url}/long/index.html"
            # below the floor: one line naming the argument and its range
            one_line(await session.call_tool("get_docs", {"library": "longdocs", "max_tokens": 50}),
                     "max_tokens: a whole number from 300 to 100000, got 50")  # fmt: skip
            # a topic so long that the reply's own fields take the budget: said, not answered over it
            one_line(
                await session.call_tool(
                    "get_docs", {"library": "longdocs", "topic": "quokka " * 250, "max_tokens": 300}
                ),  # fmt: skip
                "max_tokens: 300 cannot hold the reply's own fields",
            )

    anyio.run(main)


@pytest.mark.parametrize("mode", ["full", "refresh"])
def test_freshness_is_filled_after_every_finished_run(mode, crawl, docsite, db, database_url, tmp_path):
    """After a full index, and again after a refresh that changed a page: a version's last_refreshed (the end of
    that run), last_checked and last_changed, and a result's and a page's last_checked_at, as the database has
    them; never null after a finished run."""
    index(crawl, docsite)
    if mode == "refresh":
        docsite.site.put("/docs/deep.html", html_page("Deep dive", "<p>The scheduler now uses a wombat heap.</p>"))
        result = crawl(library="testdocs", version="1.0", mode="refresh")
        assert result.returncode == 0, result.stderr[-3000:]
    finished, run_mode = db.execute("SELECT finished_at, mode FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()
    assert run_mode == mode
    checked, changed = db.execute("SELECT max(last_checked_at), max(content_changed_at) FROM pages").fetchone()
    assert finished is not None and checked is not None and changed is not None
    env = docsbot_env(database_url, tmp_path)

    async def main() -> None:
        async with stdio_session(env, tmp_path / "fresh.log") as session:
            (version,) = answer(await session.call_tool("list_libraries", {}))["libraries"]
            assert (version["last_refreshed"], version["last_checked"], version["last_changed"]) == (
                iso(finished),
                iso(checked),
                iso(changed),
            )
            (candidate,) = answer(await session.call_tool("resolve_library", {"name": "testdocs"}))["candidates"]
            (listed,) = candidate["versions"]
            assert (listed["last_refreshed"], listed["last_checked"], listed["last_changed"]) == (
                iso(finished),
                iso(checked),
                iso(changed),
            )
            query = "wombat heap" if mode == "refresh" else "event loop scheduler"
            hit = answer(await session.call_tool("search_docs", {"query": query, "limit": 1}))["results"][0]
            assert hit["url"].endswith("/docs/deep.html") and hit["last_checked_at"] and hit["changed_at"]
            page = answer(await session.call_tool("get_page", {"url": hit["url"]}))
            assert page["last_checked_at"] == hit["last_checked_at"] and page["changed_at"] == hit["changed_at"]
            if mode == "refresh":  # the refresh found the page changed: its change is the run's, not the index's
                first_run_end = db.execute("SELECT min(finished_at) FROM crawl_runs").fetchone()[0]
                assert hit["changed_at"] >= iso(first_run_end) and version["last_refreshed"] > iso(first_run_end)

    anyio.run(main)
