"""The HTTP layer around the MCP server's Streamable HTTP transport, shared by ``docsbot mcp --http`` and ``docsbot
serve`` (whose web pages sit beside ``/mcp``): security headers on every response (:class:`SecurityHeaders`), bounded
MCP sessions (:class:`SessionLimits`), and a count of failed token checks per client (:class:`AttemptLimiter`), all
keyed by :func:`client_key`.

Each is docsbot's own ASGI code because neither Starlette, uvicorn nor the MCP SDK ships it: the SDK's session manager
(2.3) caps the sessions in total and closes idle ones (``max_sessions``, ``session_idle_timeout``: both used here), but
at its cap it refuses every new client with 503 until a session ends, whichever client holds them.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "MCP_POLICY",
    "AttemptLimiter",
    "FailedTokens",
    "SecurityHeaders",
    "SessionLimits",
    "client_key",
    "guarded",
    "session_options",
    "too_many_attempts",
]

logger = logging.getLogger("docsbot.mcp")

# /mcp answers JSON and event streams, never a page: nothing may load from it, nothing may frame it.
MCP_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
_SESSION_HEADER = b"mcp-session-id"


def client_key(scope: Scope) -> str:
    """Who a request comes from, for per-client limits: its IPv4 address; an IPv6 client's /64 network (one host
    is usually given a whole /64, so counting single IPv6 addresses would count nothing); ``local`` for a Unix
    socket. ``scope["client"]`` is uvicorn's: behind a reverse proxy it trusts (127.0.0.1 unless
    ``FORWARDED_ALLOW_IPS``), the address the proxy's ``X-Forwarded-For`` names."""
    client = scope.get("client")
    if not client:
        return "local"
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return str(client[0])
    if address.version == 6 and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class SecurityHeaders:
    """ASGI middleware, outermost (outside Starlette's own error handler, so that its 500 has them too): every
    response carries ``policy`` as its Content-Security-Policy, ``X-Frame-Options: DENY`` (for browsers without
    ``frame-ancestors``), ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``, unless it set its
    own. ``no_store`` (a server with a token): every response but ``/static/`` files (the same for everyone) carries
    ``Cache-Control: no-store``, so that no browser or proxy keeps what only a token holder may read (RFC 9111
    §5.2.2.5). Starlette ships no middleware that adds response headers. A response uvicorn itself makes (a request
    it cannot parse) has none: it never reaches the app."""

    def __init__(self, app: ASGIApp, policy: str, *, no_store: bool = False) -> None:
        self.app = app
        self.no_store = no_store
        self.headers = [
            (b"content-security-policy", policy.encode()),
            (b"x-frame-options", b"DENY"),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        no_store = self.no_store and not scope.get("path", "").startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if no_store:
                    headers = [(k, v) for k, v in headers if k.lower() != b"cache-control"]
                    headers.append((b"cache-control", b"no-store"))
                present = {name.lower() for name, _ in headers}
                message = {**message, "headers": [*headers, *((k, v) for k, v in self.headers if k not in present)]}
            await send(message)

        await self.app(scope, receive, with_headers)


class AttemptLimiter:
    """Failed token checks per client (:func:`client_key`) in a sliding window: after ``limit`` failures within
    ``window`` seconds, :meth:`wait` says how many seconds the client waits before its next try (``Retry-After``,
    RFC 9110 §10.2.3); a success does not reset the count (a guesser would interleave one). At most ``clients``
    clients are tracked, the least recent forgotten first, so that memory stays bounded whatever the addresses."""

    def __init__(self, limit: int = 10, window: float = 60.0, clients: int = 10_000) -> None:
        self.limit, self.window, self.clients = limit, window, clients
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def wait(self, client: str) -> int:
        """Seconds until ``client`` may try again; 0: now."""
        failures = self._failures.get(client)
        if failures is None:
            return 0
        now = time.monotonic()
        while failures and now - failures[0] >= self.window:
            failures.popleft()
        if len(failures) < self.limit:
            return 0
        return max(1, math.ceil(failures[0] + self.window - now))

    def failed(self, client: str) -> None:
        failures = self._failures.pop(client, None) or deque(maxlen=self.limit)
        failures.append(time.monotonic())
        self._failures[client] = failures
        while len(self._failures) > self.clients:
            self._failures.popitem(last=False)


class FailedTokens:
    """ASGI middleware: a request whose ``Authorization`` carries another bearer token than ``token`` is a failed
    attempt of its client (:class:`AttemptLimiter`, shared with the ``/login`` form); while the client waits, every
    request of it that carries a token is answered 429 with ``Retry-After`` before it is checked, so that a token
    cannot be guessed faster by sending it as a header than by the form. A request without ``Authorization``
    (a signed-in session, a caller who has none) passes, to be answered as before."""

    def __init__(self, app: ASGIApp, token: str, attempts: AttemptLimiter) -> None:
        self.app = app
        self.token = token.encode()
        self.attempts = attempts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        given = dict(scope.get("headers") or []).get(b"authorization") if scope["type"] == "http" else None
        if given is not None:
            client = client_key(scope)
            wait = self.attempts.wait(client)
            if wait:
                await too_many_attempts(wait)(scope, receive, send)
                return
            if not (given[:7].lower() == b"bearer " and hmac.compare_digest(given[7:], self.token)):
                self.attempts.failed(client)
        await self.app(scope, receive, send)


def too_many_attempts(wait: int) -> JSONResponse:
    """429 with ``Retry-After``: a client's failed token checks reached :class:`AttemptLimiter`'s limit."""
    message = f"too many failed token checks from this address: try again in {wait} s"
    return JSONResponse({"error": message, "status": 429}, status_code=429, headers={"Retry-After": str(wait)})


@dataclass
class _Session:
    client: str
    owner: list[tuple[bytes, bytes]]  # the Host and Authorization of the request that opened it: to close it as it
    last: float = field(default_factory=time.monotonic)
    busy: int = 0  # requests in flight (an open GET stream is one)


class SessionLimits:
    """ASGI middleware in front of the MCP SDK's Streamable HTTP transport: at most ``per_client`` sessions per
    client (:func:`client_key`) and ``total`` in all. A client that opens one more has its own least recently used
    idle session closed; past ``total``, the least recently used idle session of any client is. A session is idle
    while no request of it is in flight (an open event stream is one), as the SDK counts it; the SDK closes a session
    idle ``idle`` seconds by itself (``session_idle_timeout``), and a closed session's client gets 404 and opens a
    new one (the MCP specification's rule). When every session that could make room is busy, the new one is refused:
    429 (this client's) or 503 (the server's), with ``Retry-After``, a JSON-RPC error as the SDK words its own.

    A session is closed as its client would close it, by ``DELETE /mcp`` with its id (the SDK's own path; its owner's
    ``Authorization``, since the SDK binds a session to the credential that opened it). Only a request that would open
    a session counts (a ``POST`` without ``Mcp-Session-Id`` that carries the ``token`` when there is one); it closes
    others only once the SDK has answered it with a new session, so a request the SDK refuses (a foreign ``Host``, a
    malformed body) closes nothing. Concurrent openings may pass ``total`` by how many are in flight; the SDK's own
    ``max_sessions`` (set above ``total``) is the hard stop."""

    def __init__(
        self, app: ASGIApp, *, total: int, per_client: int, idle: float, token: str | None = None, path: str = "/mcp"
    ) -> None:
        self.app = app
        self.total, self.per_client, self.idle = total, per_client, idle
        self.token = token.encode() if token else None
        self.path = path
        self.sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self._opening: dict[str, int] = {}  # per client: requests that may open a session, in flight
        self.closed = 0  # sessions this layer closed to make room (for the log and the tests)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        sid = headers.get(_SESSION_HEADER, b"").decode("latin-1")
        if sid:
            await self._in_session(sid, scope, receive, send)
        elif scope.get("method") == "POST" and self._authorized(headers):
            await self._opening_request(headers, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        if self.token is None:
            return True
        given = headers.get(b"authorization", b"")
        return given[:7].lower() == b"bearer " and hmac.compare_digest(given[7:], self.token)

    async def _in_session(self, sid: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self.sessions.get(sid)
        if session is None:  # unknown, or closed: the SDK answers (404)
            await self.app(scope, receive, send)
            return
        self.sessions.move_to_end(sid)
        request = _Request(session, send)
        try:
            await self.app(scope, receive, request.send)
        finally:
            request.done()
        if request.status == 404 or (scope.get("method") == "DELETE" and 0 < request.status < 300):
            self.sessions.pop(sid, None)  # ended by its client, by the SDK's idle timeout, or by a restart

    async def _opening_request(self, headers: dict[bytes, bytes], scope: Scope, receive: Receive, send: Send) -> None:
        client = client_key(scope)
        self._forget_expired()
        refusal = self._refusal(client)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        self._opening[client] = self._opening.get(client, 0) + 1
        owner = [(k, v) for k, v in headers.items() if k in (b"host", b"authorization")]
        request = _Request(_Session(client, owner), send)

        async def registering(message: Message) -> None:
            # Registered, and room made, before its client learns of it: the request's task may end well after
            # its client has read the answer and sent its next requests, which must find this done.
            if message["type"] == "http.response.start" and message["status"] < 400:
                sid = next((v for k, v in message.get("headers", []) if k.lower() == _SESSION_HEADER), None)
                if sid is not None:
                    self.sessions[sid.decode("latin-1")] = request.session
                    request.opened = True
                    self._closing_opening(client)
                    await self._make_room(client, scope)
            await request.send(message)

        try:
            await self.app(scope, receive, registering)
        finally:
            request.done()
            if not request.opened:
                self._closing_opening(client)

    def _closing_opening(self, client: str) -> None:
        self._opening[client] -= 1
        if not self._opening[client]:
            del self._opening[client]

    def _forget_expired(self) -> None:
        """Sessions idle past the SDK's timeout are gone there: forget them here (oldest first, so stop early)."""
        limit = time.monotonic() - self.idle
        while self.sessions:
            sid, session = next(iter(self.sessions.items()))
            if session.busy or session.last > limit:
                break
            del self.sessions[sid]

    def _count(self, client: str) -> int:
        return sum(1 for s in self.sessions.values() if s.client == client) + self._opening.get(client, 0)

    def _refusal(self, client: str) -> JSONResponse | None:
        """The answer to a new session that no idle session can make room for, else ``None``."""
        idle = [s for s in self.sessions.values() if not s.busy]
        if self._count(client) >= self.per_client and not any(s.client == client for s in idle):
            return _busy(429, f"this client has {self.per_client} MCP sessions open, all of them busy")
        if len(self.sessions) + sum(self._opening.values()) >= self.total and not idle:
            return _busy(503, f"this server has {self.total} MCP sessions open, all of them busy")
        return None

    async def _make_room(self, client: str, scope: Scope) -> None:
        """Close the least recently used idle sessions while ``client`` or the server holds more than its cap
        (sessions being opened by other requests are not counted: they make their own room once opened)."""
        while sum(1 for s in self.sessions.values() if s.client == client) > self.per_client:
            if not await self._close_one(scope, client):
                break
        while len(self.sessions) > self.total and await self._close_one(scope):
            pass

    async def _close_one(self, scope: Scope, client: str | None = None) -> bool:
        sid = next(
            (sid for sid, s in self.sessions.items() if not s.busy and (client is None or s.client == client)), None
        )
        if sid is None:
            return False
        session = self.sessions.pop(sid)
        request = {**scope, "method": "DELETE", "query_string": b"", "headers": [(_SESSION_HEADER, sid.encode())]}
        request["headers"] += session.owner
        answered: list[int] = []
        await self.app(request, _empty_body(), _watch(_discard, answered))
        self.closed += 1
        logger.info(
            "closed the least recently used idle MCP session of %s to make room (%s)",
            session.client,
            answered[0] if answered else "no answer",
        )
        return True


class _Request:
    """One request of ``session``, in flight (the session busy) from its start until its answer's last byte is sent
    or the app returns, whichever comes first: the SDK may end an event stream's task well after its client has
    read the whole answer and moved on. ``send`` is the app's ``send`` that notes all this."""

    def __init__(self, session: _Session, send: Send) -> None:
        self.session, self._send = session, send
        self.status = 0
        self.opened = False
        self._in_flight = True
        session.busy += 1

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self._send(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.done()

    def done(self) -> None:
        if self._in_flight:
            self._in_flight = False
            self.session.busy -= 1
            self.session.last = time.monotonic()


def _busy(status: int, why: str) -> JSONResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": f"Too many open sessions: {why}"}}
    return JSONResponse(body, status_code=status, headers={"Retry-After": "30"})


def _watch(send: Send, status: list[int]) -> Send:
    """``send``, noting the response's status into ``status``."""

    async def watched(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        await send(message)

    return watched


async def _discard(message: Message) -> None:
    return None


def _empty_body() -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": b"", "more_body": False}

    return receive


def session_options(settings: Any) -> dict[str, Any]:
    """The options of the SDK's ``streamable_http_app`` that bound its sessions: ``DOCSBOT_MCP_SESSION_IDLE_TIMEOUT``
    as its idle timeout, and its own cap above :class:`SessionLimits`' (which keeps below it)."""
    total = int(settings.get("DOCSBOT_MCP_MAX_SESSIONS") or 256)
    return {
        "session_idle_timeout": float(settings.get("DOCSBOT_MCP_SESSION_IDLE_TIMEOUT") or 600),
        "max_sessions": total + max(16, total // 4),
    }


def guarded(
    app: ASGIApp, settings: Any, *, token: str | None, policy: str, attempts: AttemptLimiter | None = None
) -> ASGIApp:
    """``app`` (the MCP transport, or the web pages with it) as served: inside, :class:`SessionLimits` (from the
    ``DOCSBOT_MCP_*`` settings); with a token, :class:`FailedTokens` (``attempts``: the limiter the ``/login``
    form shares); outside, :class:`SecurityHeaders` with ``policy``, ``no-store`` with a token."""
    total = int(settings.get("DOCSBOT_MCP_MAX_SESSIONS") or 256)
    per_client = int(settings.get("DOCSBOT_MCP_SESSIONS_PER_CLIENT") or 32)
    idle = session_options(settings)["session_idle_timeout"]
    app = SessionLimits(app, total=total, per_client=min(per_client, total), idle=idle, token=token)
    if token:
        app = FailedTokens(app, token, attempts or AttemptLimiter())
    return SecurityHeaders(app, policy, no_store=bool(token))
