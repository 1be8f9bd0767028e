"""Property-based (hypothesis): whatever a caller sends, docsbot's server answers with a status it means, never a 500
or a traceback, and in bounded time.

Generated query strings, form bodies and headers go to every page and JSON twin of ``docsbot serve``'s app;
generated arguments go to every MCP tool (writes allowed, so the write tools' checks are exercised too; the crawls
they would start are recorded, not run), and generated JSON-RPC bodies to the ``/mcp`` endpoint. All in one process
against a real index (a site crawled by ``scrapy crawl docs`` into a real PostgreSQL), so that tens of thousands of
requests take minutes. ``DOCSBOT_FUZZ_REQUESTS`` (default 10,000) is the total; the count is printed.
"""

from __future__ import annotations

import json
import os
import re
import string
import time
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from starlette.testclient import TestClient

from docsbot.config import ProjectSettings
from docsbot.mcp.server import build_server
from docsbot.service import DocsIndex
from docsbot.web import build_app
from tests.embedders import HashingEmbedder

TOTAL = int(os.environ.get("DOCSBOT_FUZZ_REQUESTS", "10000"))
SLOWEST_ANSWER = 30.0  # seconds: an answer slower than this is a stall, whatever the machine is doing
TOKEN = "fuzz-token"
_PATH = string.ascii_letters + string.digits + string.punctuation  # what an HTTP client lets into a path

PAGES = ["/", "/search.json", "/libraries", "/libraries.json", "/page", "/page.json", "/changes", "/changes.json",
         "/changes.atom", "/login", "/logout", "/static/docsbot.js", "/static/../settings.py", "/runs/1",
         "/runs/1.json", "/runs/run-x.json", "/nowhere", "/libraries/refresh", "/libraries/remove"]  # fmt: skip
KEYS = ["q", "library", "version", "limit", "url", "section", "since", "run", "next", "removed", "diffs", "all",
        "csrf", "token"]  # fmt: skip

# Text that looks like what the parameters take, and text that does not: NUL, controls, huge numbers, URLs to
# internal addresses, markup, path tricks.
_tricky = st.sampled_from([
    "", " ", "\0", "a\0b", "\x01", "é", "😀", "9" * 30, "-1", "0", "1", "50", "51", "1e400", "NaN",
    "99999999999999d", "7d", "0d", "2026-11-20", "0001-01-01", "9999-12-31T23:59:59+14:00", "yesterday",
    "testdocs", "testdocs@1.0", "latest", "1.x", "#install", "install", "'; DROP TABLE pages; --",
    "<script>alert(1)</script>", "x'+alert(1)+'", "http://127.0.0.1/", "http://169.254.169.254/latest/",
    "http://[::1]:80/", "javascript:alert(1)", "//evil.example", "/\\evil.example", "../../etc/passwd",
    "%00", "%ff%fe", "a" * 3000,
])  # fmt: skip
_text = st.one_of(_tricky, st.text(max_size=60), st.text(alphabet=string.printable, max_size=200))
_query = st.dictionaries(st.sampled_from(KEYS), _text, max_size=5)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | _text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)


@pytest.fixture
def app_and_index(crawl, docsite, database_url, tmp_path):
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    conf = ProjectSettings("docsbot.settings", {"DOCSBOT_DATA_DIR": str(tmp_path / "data")})
    index = DocsIndex(conf, database_url, HashingEmbedder(), allow_writes=True)
    launched: list[str] = []

    def start(launch: Any) -> str:  # the crawl a write tool would start, recorded instead of run
        launched.append(launch.run_id)
        return f"recorded {launch.mode} of {launch.version.library}"

    index.launcher.start = start
    index.open(warm_up=False)
    server = build_server(index)
    app = build_app(index, server, TOKEN, "127.0.0.1")
    try:
        yield app, server, index, f"{docsite.url}/docs/guide.html"
    finally:
        index.close()


def test_no_request_is_answered_with_a_500_a_traceback_or_a_stall(app_and_index, capsys):
    app, server, _, guide = app_and_index
    # Values a page takes, so that a generated request gets past its first check and reaches the deeper ones; each
    # request takes some of them and generated values for some keys.
    valid = {"q": "install the library", "library": "testdocs", "version": "1.0", "url": guide,
             "section": "install", "since": "7d", "run": "1", "limit": "5", "next": "/libraries"}  # fmt: skip
    _mixed = st.builds(
        lambda keys, generated: {**{k: valid[k] for k in keys}, **generated},
        st.sets(st.sampled_from(sorted(valid))),
        _query,
    )
    counts = {"web": 0, "mcp_tools": 0, "mcp_jsonrpc": 0}
    slowest = [0.0]
    web_share, tool_share = int(TOTAL * 0.7), int(TOTAL * 0.2)
    jsonrpc_share = TOTAL - web_share - tool_share
    common = {"deadline": None, "database": None, "suppress_health_check": list(HealthCheck)}

    def timed(fn: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        out = fn(*args, **kwargs)
        took = time.perf_counter() - started
        slowest[0] = max(slowest[0], took)
        assert took < SLOWEST_ANSWER, (took, args, kwargs)
        return out

    with TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False) as client:
        signed_in = client.post("/login", data={"token": TOKEN}, follow_redirects=False)
        assert signed_in.status_code == 303
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/libraries").text).group(1)

        @settings(max_examples=web_share, **common)
        @given(
            path=st.sampled_from(PAGES) | st.text(alphabet=_PATH, max_size=30).map(lambda p: "/" + p.lstrip("/")),
            method=st.sampled_from(["GET", "GET", "POST", "HEAD", "PUT"]),
            query=_mixed,
            form=_mixed,
            raw=st.none() | st.binary(max_size=300),
            auth=st.sampled_from([None, TOKEN, "wrong", "é", ""]),
            origin=st.sampled_from([None, "null", "http://evil.example", "http://127.0.0.1:8765"]),
            with_csrf=st.booleans(),
            accept=st.sampled_from(["text/html", "application/json", "*/*"]),
        )
        def web(path, method, query, form, raw, auth, origin, with_csrf, accept):  # noqa: ANN001, ANN202
            headers: dict[str, Any] = {"Accept": accept}
            if auth is not None:
                headers["Authorization"] = f"Bearer {auth}".encode()  # bytes: a client may send any
            if origin is not None:
                headers["Origin"] = origin
            if with_csrf and form.get("library") not in ("testdocs",):
                form = {**form, "csrf": csrf}
            kwargs: dict[str, Any] = {"params": query, "headers": headers}
            if method in ("POST", "PUT"):
                if raw is not None:
                    kwargs["content"] = raw
                    headers["Content-Type"] = "application/x-www-form-urlencoded"
                else:
                    kwargs["data"] = form
            response = timed(client.request, method, path, follow_redirects=False, **kwargs)
            counts["web"] += 1
            assert response.status_code < 500, (response.status_code, method, path, query, response.text[:500])
            assert "Traceback" not in response.text

        web()

        with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(server)) as mcp:
            tools = {t.name: t for t in portal.call(mcp.list_tools).tools}
            names = sorted(tools)

            def argument_for(tool: str) -> st.SearchStrategy[dict[str, Any]]:
                params = sorted(tools[tool].input_schema.get("properties", {}))
                return st.dictionaries(st.sampled_from([*params, "extra"]), _json | _text, max_size=len(params) + 1)

            @settings(max_examples=tool_share, **common)
            @given(data=st.data(), tool=st.sampled_from(names))
            def tool_calls(data, tool):  # noqa: ANN001, ANN202
                arguments = data.draw(argument_for(tool))
                if tool == "remove_library" and arguments.get("library") == "testdocs":
                    arguments["library"] = "not-testdocs"
                result = timed(portal.call, mcp.call_tool, tool, arguments)
                counts["mcp_tools"] += 1
                text = " ".join(getattr(c, "text", "") for c in result.content)
                # the SDK's answer to an exception a tool did not expect: its name and nothing else
                assert text.strip() != f"Error executing tool {tool}", (tool, arguments)
                assert "Traceback" not in text

            tool_calls()

        @settings(max_examples=jsonrpc_share, **common)
        @given(
            body=st.one_of(
                st.binary(max_size=200),
                _json.map(lambda v: json.dumps(v).encode()),
                st.fixed_dictionaries(
                    {
                        "jsonrpc": st.just("2.0"),
                        "id": _json,
                        "method": st.sampled_from(["tools/call", "tools/list", "initialize", "ping", "x"]),
                        "params": _json,
                    }  # fmt: skip
                ).map(lambda v: json.dumps(v).encode()),
            ),
            accept=st.sampled_from(["application/json, text/event-stream", "application/json", "*/*"]),
        )
        def jsonrpc(body, accept):  # noqa: ANN001, ANN202
            headers = {"Content-Type": "application/json", "Accept": accept, "Authorization": f"Bearer {TOKEN}"}
            response = timed(client.post, "/mcp", content=body, headers=headers)
            counts["mcp_jsonrpc"] += 1
            assert response.status_code < 500, (response.status_code, body[:300], response.text[:300])
            assert "Traceback" not in response.text

        jsonrpc()

    total = sum(counts.values())
    with capsys.disabled():
        print(f"\nfuzz: {total} requests ({counts}), 0 answered 500, slowest answer {slowest[0]:.2f} s")
    assert total >= TOTAL
