"""Safe on a machine shared with other users and against a hostile caller: the serving findings of the second security
review, each reproduced (against ``docsbot serve`` / ``docsbot mcp --http`` as processes, or their ASGI app in this
process where no database is needed): writes need a token, MCP sessions are bounded, ``index_library`` is bounded,
sessions of the web pages tell nothing about the token and ``/login`` is rate limited, every response carries the
security headers, and an unknown prompt is an error without a traceback."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from starlette.testclient import TestClient

from bench.mcp_sessions import HEADERS as MCP_ACCEPT
from bench.mcp_sessions import INITIALIZE
from docsbot.mcp.server import build_server
from docsbot.project_settings import ProjectSettings
from docsbot.service import DocsIndex
from docsbot.web import build_app
from tests.conftest import docsbot_env
from tests.test_mcp import HttpServer, answer, error, http_session
from tests.test_web import Serve, get

ROOT = Path(__file__).resolve().parent.parent
HEADERS = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


def secured(response: Any) -> bool:
    return all(name in response.headers for name in HEADERS) and response.headers["x-frame-options"] == "DENY"


# --- writes need a token ------------------------------------------------------------------------------------------


def test_writes_over_http_need_a_token_on_loopback_too(crawl, docsite, db, database_url, tmp_path):
    """The review's finding: with ``--allow-writes`` on 127.0.0.1 and no token, any user of the machine removed a
    version. Such a server no longer starts; with a token, a caller without it removes nothing."""
    assert crawl(url=f"{docsite.url}/docs/index.html", library="t", version="1").returncode == 0
    env = docsbot_env(database_url, tmp_path)
    env.pop("DOCSBOT_MCP_TOKEN", None)
    for command in (["serve", "--http", "127.0.0.1:0", "--allow-writes"], ["mcp", "--http", "0", "--allow-refresh"]):
        refused = subprocess.run([sys.executable, "-m", "docsbot.cli", *command], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
        assert refused.returncode == 2, refused.stderr[-2000:]
        line = refused.stderr.strip()
        assert "\n" not in line and "over HTTP without a token, on loopback too" in line, line
        assert "set DOCSBOT_MCP_TOKEN=" in line
    read_only = Serve(env, tmp_path / "read-only.log")  # reading stays open on loopback
    try:
        assert get(f"{read_only.wait_ready()}/libraries.json").status_code == 200
    finally:
        read_only.stop()

    server = Serve({**env, "DOCSBOT_MCP_TOKEN": "s3cret"}, tmp_path / "serve.log", "--allow-writes")
    try:
        base = server.wait_ready()
        remove = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "remove_library", "arguments": {"library": "t"}}}  # fmt: skip
        for auth in ({}, {"Authorization": "Bearer guess"}):
            assert httpx2.post(f"{base}/mcp", json=remove, headers={**MCP_ACCEPT, **auth}).status_code == 401
            form = httpx2.post(f"{base}/libraries/remove", data={"library": "t"}, headers=auth, timeout=30)
            assert form.status_code == 401
        assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5

        async def owner() -> None:  # the token's holder can
            async with http_session(f"{base}/mcp", token="s3cret") as session:
                assert answer(await session.call_tool("remove_library", {"library": "t"}))["removed"]

        anyio.run(owner)
    finally:
        server.stop()
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 0


# --- bounded MCP sessions -----------------------------------------------------------------------------------------


def _client(address: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=address), timeout=30)


async def _open(client: httpx2.AsyncClient, url: str) -> httpx2.Response:
    return await client.post(url, json=INITIALIZE, headers=MCP_ACCEPT)


async def _alive(client: httpx2.AsyncClient, url: str, sid: str) -> int:
    """The status a session's next request gets (404: the server closed it)."""
    headers = {**MCP_ACCEPT, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
    return (await client.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers)).status_code


def test_mcp_sessions_are_capped_per_client_and_in_total_the_least_recently_used_idle_closed_first(
    database_url, tmp_path
):
    """The review's finding: 10,000 ``initialize`` requests held every new client off (503) for 30 minutes. Here each
    client address keeps at most 2 sessions and the server 4; one more closes the least recently used idle session
    (its client's own first); a session with a request in flight (an open event stream) is never closed, and when
    every one that could make room is busy the new one is refused with 429 (this client's) or 503 (the server's)."""
    env = docsbot_env(database_url, tmp_path, DOCSBOT_MCP_MAX_SESSIONS="4", DOCSBOT_MCP_SESSIONS_PER_CLIENT="2")
    server = HttpServer(env, tmp_path / "mcp.log", "--http", "127.0.0.1:0")
    try:
        url = server.wait_ready()

        async def main() -> None:
            async with AsyncExitStack() as stack:
                a, b, c, d = [await stack.enter_async_context(_client(f"127.0.0.{i}")) for i in (2, 3, 4, 5)]

                async def opened(client: httpx2.AsyncClient) -> str:
                    response = await _open(client, url)
                    assert response.status_code == 200 and secured(response), response.text
                    return response.headers["mcp-session-id"]

                a1, a2 = await opened(a), await opened(a)
                a3 = await opened(a)  # a's third: its least recently used idle session goes
                assert [await _alive(a, url, s) for s in (a1, a2, a3)] == [404, 200, 200]

                # a2 and a3 busy (an open event stream each): a may open no other
                async def hold(client: httpx2.AsyncClient, sid: str, ready: anyio.Event, done: anyio.Event) -> None:
                    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": sid,
                               "Mcp-Protocol-Version": "2025-06-18"}  # fmt: skip
                    async with client.stream("GET", url, headers=headers) as stream:
                        assert stream.status_code == 200
                        ready.set()
                        await done.wait()

                done = anyio.Event()
                async with anyio.create_task_group() as tg:
                    for sid in (a2, a3):
                        ready = anyio.Event()
                        tg.start_soon(hold, a, sid, ready, done)
                        await ready.wait()
                    refused = await _open(a, url)
                    assert refused.status_code == 429 and refused.headers["retry-after"] and secured(refused)
                    assert "Too many open sessions" in refused.json()["error"]["message"]

                    b1 = await opened(b)
                    b2 = await opened(b)  # the server's 4: a2, a3 (busy), b1, b2
                    c1 = await opened(c)  # one more: the least recently used idle one of any client, b1, goes
                    assert [await _alive(b, url, s) for s in (b1, b2)] == [404, 200]
                    for client, sid in ((b, b2), (c, c1)):
                        ready = anyio.Event()
                        tg.start_soon(hold, client, sid, ready, done)
                        await ready.wait()
                    full = await _open(d, url)  # every session busy: the server's cap
                    assert full.status_code == 503 and full.headers["retry-after"] and secured(full)
                    done.set()
                for _ in range(100):  # the streams ended: room again, once the server has seen them close
                    again = await _open(d, url)
                    if again.status_code != 503:
                        break
                    await anyio.sleep(0.1)
                assert again.status_code == 200, again.text

        anyio.run(main)
    finally:
        server.stop()
    log = server.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    assert log.count("closed the least recently used idle MCP session") >= 3


def test_memory_stays_flat_under_a_flood_of_initialize_requests(database_url, tmp_path):
    """``bench/mcp_sessions.py`` (BENCHMARKS.md runs it with 10,000): a few hundred ``initialize`` requests from 5
    addresses, none closing its session, against a server of 16 sessions; every one is answered, a client never
    seen before still gets a session, and the server does not grow by what it was sent."""
    env = docsbot_env(database_url, tmp_path, DOCSBOT_MCP_MAX_SESSIONS="16")
    bench = subprocess.run(
        [sys.executable, "bench/mcp_sessions.py", "-n", "600", "--warmup", "50", "--clients", "5"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-3000:]
    report = json.loads(bench.stdout)
    assert report["statuses"] == {"200": 600} and report["newcomer"] == 200
    assert report["growth_mb"] < 20, report


# --- bounded work from index_library ------------------------------------------------------------------------------


@pytest.fixture
def writer(database_url, docsite, tmp_path):
    """An MCP client of a server allowed to write (in this process, on a real database); the crawls its tools would
    start are recorded, not run. The network limits are small: 100 pages a crawl, 3 versions and 250 pages in all."""
    conf = ProjectSettings(
        "docsbot.settings",
        {"DOCSBOT_DATA_DIR": str(tmp_path / "data"), "DOCSBOT_NETWORK_MAX_PAGES": 100, "DOCSBOT_HOST_CONCURRENCY": 64,
         "DOCSBOT_NETWORK_MAX_VERSIONS": 3, "DOCSBOT_NETWORK_MAX_TOTAL_PAGES": 250},
    )  # fmt: skip
    index = DocsIndex(conf, database_url, None, allow_writes=True, allowed_networks="127.0.0.1")
    index.launcher.start = lambda launch: f"recorded {launch.mode} of {launch.version.library}"
    index.open(warm_up=False)
    try:
        yield build_server(index), docsite.url
    finally:
        index.close()


def test_index_library_has_a_floor_on_the_refresh_interval_and_bounds_on_versions_and_pages(writer, db):
    server, site = writer

    async def main() -> None:
        async with Client(server) as mcp:

            async def index(**arguments: Any) -> Any:
                return await mcp.call_tool("index_library", arguments)

            root = f"{site}/docs/index.html"
            for every in ("1s", "59m"):  # the review's 1s: refreshed five times by one `docsbot sync --due`
                assert f"refresh must be at least 1h on this server, got '{every}'" in error(
                    await index(url=root, library="a", refresh=every)
                )
            assert answer(await index(url=root, library="a", refresh="1h"))["started"]
            # one version per root URL (and scope), under whatever name
            for name, version in (("b", ""), ("a", "2")):
                text = error(await index(url=root, library=name, version=version))
                assert text.endswith(f"{root} is already indexed as a: search or refresh that one"), text
            assert answer(await index(url=f"{site}/docs/guide.html", library="b"))["started"]
            # pages: 200 of 250 requested; 100 more would pass it
            text = error(await index(url=f"{site}/docs/api.html", library="c"))
            assert "may request 200 of this server's 250 pages: pass max_pages=50 or less" in text
            assert answer(await index(url=f"{site}/docs/api.html", library="c", max_pages=50))["started"]
            # versions: 3 of 3
            text = error(await index(url=f"{site}/docs/deep.html", library="d", max_pages=1))
            assert "this server holds 3 versions indexed by callers, its limit: remove one first" in text
            assert answer(await mcp.call_tool("remove_library", {"library": "c"}))["removed"][0]["version"] == "c"
            assert answer(await index(url=f"{site}/docs/deep.html", library="d", max_pages=1))["started"]

    anyio.run(main)
    rows = db.execute(
        "SELECT l.name, v.refresh_interval, v.settings->>'max_pages' FROM versions v "
        "JOIN libraries l ON l.id = v.library_id ORDER BY l.name"
    ).fetchall()
    assert [(name, str(every), pages) for name, every, pages in rows] == [
        ("a", "1:00:00", "100"), ("b", "None", "100"), ("d", "None", "1"),
    ]  # fmt: skip


# --- sessions of the web pages, /login ----------------------------------------------------------------------------


class _Index:
    """What the app reads of the service before a page asks it anything; ``libraries`` fails as a bug would."""

    settings: dict[str, str] = {}
    allow_writes = True

    def libraries(self, *args: Any) -> Any:
        raise RuntimeError("a bug")

    def version_names(self) -> list[str]:
        return []


def _encodings(digest: bytes) -> list[bytes]:
    return [digest, digest.hex().encode(), digest.hex().upper().encode(), base64.b64encode(digest),
            base64.urlsafe_b64encode(digest), base64.b64encode(digest).rstrip(b"="),
            base64.urlsafe_b64encode(digest).rstrip(b"=")]  # fmt: skip


def test_a_session_cookie_tells_nothing_about_the_token_and_login_is_rate_limited():
    """The review's findings: the cookie held ``sha256("docsbot-session:" + token)``, a target for an offline guess
    of a weak token, and ``/login`` took any number of guesses."""
    token = "weak"
    app = build_app(_Index(), None, token, "127.0.0.1")
    with TestClient(app, base_url="http://127.0.0.1:8765", client=("10.0.0.1", 5000)) as browser:
        signed_in = browser.post("/login", data={"token": token}, follow_redirects=False)
        assert signed_in.status_code == 303
        cookie = signed_in.cookies["docsbot_session"]
        payload = cookie.split(".")[0]
        decoded = base64.b64decode(payload + "=" * (-len(payload) % 4))
        for secret in (token.encode(), b"docsbot-session:" + token.encode()):
            for form in _encodings(hashlib.sha256(secret).digest()):
                assert form not in cookie.encode() and form not in decoded, form
        assert token.encode() not in decoded
        assert browser.get("/", headers={"Accept": "text/html"}, follow_redirects=False).status_code == 200
        # ten wrong guesses a minute from one address, then 429, the right token included
        for _ in range(10):
            assert browser.post("/login", data={"token": "guess"}).status_code == 401
        limited = browser.post("/login", data={"token": token})
        assert limited.status_code == 429 and 1 <= int(limited.headers["retry-after"]) <= 60
        assert "Too many failed sign-ins" in limited.text and secured(limited)
        # a bearer token counts alike: the header is no faster a way to guess
        bearer = browser.get("/libraries.json", headers={"Authorization": f"Bearer {token}"})
        assert bearer.status_code == 429 and bearer.headers["retry-after"]
    with TestClient(app, base_url="http://127.0.0.1:8765", client=("10.0.0.2", 5000)) as other:
        for _ in range(10):
            assert other.get("/libraries.json", headers={"Authorization": "Bearer guess"}).status_code == 401
        assert other.post("/login", data={"token": token}).status_code == 429
    with TestClient(app, base_url="http://127.0.0.1:8765", client=("10.0.0.3", 5000)) as third:
        assert third.post("/login", data={"token": token}, follow_redirects=False).status_code == 303


# --- every response -----------------------------------------------------------------------------------------------


def test_every_response_of_every_status_carries_the_security_headers_and_protected_ones_no_store():
    from docsbot.web.app import MAX_FORM_BYTES

    index = _Index()
    app = build_app(index, build_server(index, "tok"), "tok", "127.0.0.1")  # type: ignore[arg-type]
    auth = {"Authorization": "Bearer tok"}
    with TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False) as client:
        answers = {
            200: client.get("/login"),
            303: client.get("/libraries", headers={"Accept": "text/html"}, follow_redirects=False),
            401: client.get("/libraries.json"),
            404: client.get("/nowhere", headers=auth),
            405: client.put("/mcp", headers=auth),  # (a page's route with another method falls through to /mcp's)
            413: client.post(
                "/login",
                content=b"token=" + b"x" * MAX_FORM_BYTES,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            ),
            500: client.get("/libraries.json", headers=auth),
        }
        mcp = client.post("/mcp", json=INITIALIZE, headers={**MCP_ACCEPT, **auth})
        anonymous_mcp = client.post("/mcp", json=INITIALIZE, headers=MCP_ACCEPT)
        static = client.get("/static/docsbot.js")
    for status, response in answers.items():
        assert response.status_code == status, (status, response.text[:300])
        assert secured(response), (status, dict(response.headers))
        assert response.headers["cache-control"] == "no-store", status
    assert "Traceback" not in answers[500].text
    for response in (mcp, anonymous_mcp):
        assert secured(response) and response.headers["cache-control"] == "no-store"
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert (mcp.status_code, anonymous_mcp.status_code) == (200, 401)
    assert static.headers["cache-control"] == "max-age=3600" and secured(static)  # the same for everyone

    open_app = build_app(_Index(), None, None, "127.0.0.1")
    with TestClient(open_app, base_url="http://127.0.0.1:8765") as client:
        page = client.get("/nowhere")
    assert page.status_code == 404 and secured(page) and "cache-control" not in page.headers  # nothing protected


def test_an_unknown_prompt_is_an_error_without_a_traceback_in_the_log(caplog):
    index = _Index()

    async def main() -> None:
        async with Client(build_server(index)) as mcp:  # type: ignore[arg-type]
            for _ in range(3):
                with pytest.raises(MCPError) as failed:
                    await mcp.get_prompt("nope\x1b[31m")
                assert failed.value.code == -32602 and "Unknown prompt" in failed.value.message

    with caplog.at_level(logging.DEBUG):
        anyio.run(main)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], caplog.text


# --- docsbot mcp --http alone -------------------------------------------------------------------------------------


def test_the_mcp_server_alone_answers_with_the_security_headers_and_no_store(database_url, tmp_path):
    server = HttpServer(docsbot_env(database_url, tmp_path, DOCSBOT_MCP_TOKEN="tok"), tmp_path / "m.log",
                        "--http", "127.0.0.1:0", "--allow-refresh")  # fmt: skip
    try:
        url = server.wait_ready()
        for headers, status in (({}, 401), ({"Authorization": "Bearer tok"}, 200)):
            response = httpx2.post(url, json=INITIALIZE, headers={**MCP_ACCEPT, **headers}, timeout=30)
            assert response.status_code == status and secured(response)
            assert response.headers["cache-control"] == "no-store"
        elsewhere = httpx2.get(url.replace("/mcp", "/nowhere"), timeout=30)
        assert elsewhere.status_code in (401, 404) and secured(elsewhere)
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text()
