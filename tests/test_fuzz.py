"""Property-based (hypothesis): whatever a caller sends, docsbot's server answers with a status it means, never a 500
or a traceback, and in bounded time.

Generated query strings, form bodies and headers go to every page and JSON twin of ``docsbot serve``'s app, from
many client addresses (so that the failed-token limit answers 429 only now and then); generated arguments go to every
MCP tool (writes allowed, so the write tools' checks are exercised too; the crawls they would start are recorded, not
run), generated calls of the write tools go to ``/mcp`` over HTTP in a session, with the token, a wrong one or none,
and generated JSON-RPC bodies to the ``/mcp`` endpoint. Library and version names include control characters
(an ANSI escape, a newline), format characters (a right-to-left override), HTML and path tricks (``a/../b``). All in
one process
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

from docsbot.mcp.server import build_server
from docsbot.project_settings import ProjectSettings
from docsbot.service import DocsIndex
from docsbot.web import build_app
from tests.embedders import HashingEmbedder

TOTAL = int(os.environ.get("DOCSBOT_FUZZ_REQUESTS", "10000"))
SLOWEST_ANSWER = 30.0  # seconds: an answer slower than this is a stall, whatever the machine is doing
TOKEN = "fuzz-token"
_PATH = string.ascii_letters + string.digits + string.punctuation  # what an HTTP client lets into a path

PAGES = ["/", "/search.json", "/libraries", "/libraries.json", "/page", "/page.json", "/changes", "/changes.json",
         "/changes.atom", "/login", "/logout", "/static/docsbot.js", "/static/../settings.py", "/runs/1",
         "/runs/1.json", "/runs/run-x.json", "/nowhere", "/libraries/refresh", "/libraries/remove",
         "/docs/a%2F..%2Fb/llms.txt", "/docs/%1B%5B31m@1/llms-full.txt", "/docs/%E2%80%AEx/llms.txt",
         "/changes.atom?library=%1B%5B31m"]  # fmt: skip
KEYS = ["q", "library", "version", "limit", "url", "section", "since", "run", "next", "removed", "diffs", "all",
        "csrf", "token"]  # fmt: skip

# Library and version names a hostile caller gives: control and format characters, markup, path tricks.
NAMES = ["\x1b[31mred\x1b[0m", "a\nb", "a\rforged: line", "\u202eevil", "lib\u2066x\u2069", "zero\u200bwidth",
         "<b>x</b>", "<script>alert(1)</script>", "a/../b", "../..", "a\\b", "testdocs\x1b", "1.0\u202e"]  # fmt: skip
# Text that looks like what the parameters take, and text that does not: NUL, controls, huge numbers, URLs to
# internal addresses, markup, path tricks.
_tricky = st.sampled_from([
    "", " ", "\0", "a\0b", "\x01", "é", "😀", "9" * 30, "-1", "0", "1", "50", "51", "1e400", "NaN",
    "99999999999999d", "7d", "0d", "2026-11-20", "0001-01-01", "9999-12-31T23:59:59+14:00", "yesterday",
    "testdocs", "testdocs@1.0", "latest", "1.x", "#install", "install", "'; DROP TABLE pages; --",
    "<script>alert(1)</script>", "x'+alert(1)+'", "http://127.0.0.1/", "http://169.254.169.254/latest/",
    "http://[::1]:80/", "javascript:alert(1)", "//evil.example", "/\\evil.example", "../../etc/passwd",
    "%00", "%ff%fe", "a" * 3000,
    *NAMES,
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
    server = build_server(index, TOKEN)
    app = _from_addresses(build_app(index, server, TOKEN, "127.0.0.1"))
    try:
        yield app, server, index, f"{docsite.url}/docs/guide.html"
    finally:
        index.close()


def _from_addresses(app: Any) -> Any:
    """``app``, seeing each request come from the address its ``X-Fuzz-Client`` header names (Starlette's test
    client has one address; the server counts failed token checks per address)."""

    async def shim(scope: Any, receive: Any, send: Any) -> None:
        given = dict(scope.get("headers") or []).get(b"x-fuzz-client") if scope["type"] == "http" else None
        await app({**scope, "client": (given.decode(), 1)} if given else scope, receive, send)

    return shim


# About one request in ten from one address (which the failed-token limit holds off most of the time), the others
# each from an address of its own (true random: hypothesis' own choices repeat small values, sharing an address).
_address = st.randoms(use_true_random=True).map(
    lambda r: "10.9.9.9" if r.random() < 0.1 else "10." + ".".join(str(r.getrandbits(8)) for _ in range(3))
)


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
    counts = {"web": 0, "mcp_tools": 0, "mcp_writes": 0, "mcp_jsonrpc": 0}
    slowest = [0.0]
    web_share, tool_share, writes_share = int(TOTAL * 0.65), int(TOTAL * 0.17), int(TOTAL * 0.08)
    jsonrpc_share = TOTAL - web_share - tool_share - writes_share
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
            address=_address,
        )
        def web(path, method, query, form, raw, auth, origin, with_csrf, accept, address):  # noqa: ANN001, ANN202
            headers: dict[str, Any] = {"Accept": accept, "X-Fuzz-Client": address}
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

        # the write tools over HTTP, in a session opened with the token: with it, with a wrong one, with none
        auth = {"Authorization": f"Bearer {TOKEN}"}
        accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        opened = client.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}},
            headers={**accept, **auth})  # fmt: skip
        assert opened.status_code == 200, opened.text
        session = {**accept, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
        client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**session, **auth})
        _name = st.one_of(st.sampled_from(NAMES), _text)
        _write_arguments = st.fixed_dictionaries(
            {},
            optional={"library": _name, "version": _name, "url": st.sampled_from([guide, *NAMES]) | _text,
                      "refresh": st.sampled_from(["1s", "59m", "1h", "1d", "0"]) | _text,
                      "max_pages": st.integers(-1, 10**6), "run_id": _name},
        )  # fmt: skip

        served: dict[str, int] = {}  # per tool: calls with the token answered with the tool's result

        @settings(max_examples=writes_share, **common)
        @given(
            tool=st.sampled_from(["index_library", "refresh_library", "remove_library", "cancel_run", "get_run"]),
            arguments=_write_arguments,
            given_token=st.sampled_from([TOKEN, TOKEN, TOKEN, None, "wrong"]),
            address=_address,
        )
        def mcp_writes(tool, arguments, given_token, address):  # noqa: ANN001, ANN202
            if tool == "remove_library" and arguments.get("library") == "testdocs":
                arguments = {**arguments, "library": "not-testdocs"}
            headers = {**session, "X-Fuzz-Client": address}
            if given_token is not None:
                headers["Authorization"] = f"Bearer {given_token}"
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
            response = timed(client.post, "/mcp", json=body, headers=headers)
            counts["mcp_writes"] += 1
            assert response.status_code < 500, (response.status_code, body, response.text[:300])
            assert "Traceback" not in response.text
            if given_token != TOKEN:
                assert response.status_code in (401, 429), (response.status_code, given_token, response.text[:300])
            elif response.status_code == 200 and '"result"' in response.text:
                served[tool] = served.get(tool, 0) + 1

        mcp_writes()
        assert served, "no generated write call reached a tool"

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
        print(f"write calls over HTTP that reached their tool: {served}")
    assert total >= TOTAL
