"""The ASGI middlewares of ``docsbot serve``, outermost first: :class:`~docsbot.mcp.http.SecurityHeaders`, with the
MCP transport's session limits and failed token checks (:func:`docsbot.mcp.http.guarded`, around the whole app), then
in :func:`docsbot.web.app.build_app`'s order :class:`ServerTiming`, :class:`SessionCookies` and :class:`AccessGuard`,
with the sign-ins of this process (:class:`Sessions`) they check. A form's size is bounded by Starlette itself (the
POST routes' ``max_body_size``). Each middleware here is docsbot's own because neither Starlette nor the MCP SDK
ships one that does its job; its docstring says what the nearest one lacks."""

from __future__ import annotations

import hmac
import secrets
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from starlette.middleware.sessions import SessionMiddleware
from starlette.responses import JSONResponse, RedirectResponse, Response

from docsbot.mcp.http import SecurityHeaders

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "AccessGuard",
    "PlainResponse",
    "SecurityHeaders",
    "ServerTiming",
    "SessionCookies",
    "Sessions",
    "content_security_policy",
    "loopback_names",
]


class Sessions:
    """The sign-ins of this process, kept here: a session cookie (signed by Starlette with a key of this process)
    holds only a random id, which tells nothing about the token; an id is valid while this process signed it in less
    than ``max_age`` seconds ago and it was not signed out (:meth:`revoke`: a copied cookie stops working when its
    owner signs out). A restart (the only way to change the token) signs everyone out. At most ``limit`` sign-ins
    are kept, the oldest dropped first."""

    def __init__(self, token: str | None, max_age: float, limit: int = 10_000) -> None:
        self.enabled = bool(token)
        self.max_age = max_age
        self.limit = limit
        self._signed_in: dict[str, float] = {}  # sid -> when (monotonic seconds), oldest first

    def new(self) -> dict[str, Any]:
        """A new sign-in: what the session cookie holds."""
        now = time.monotonic()
        for sid in [sid for sid, at in self._signed_in.items() if now - at > self.max_age]:
            del self._signed_in[sid]
        while len(self._signed_in) >= self.limit:
            del self._signed_in[next(iter(self._signed_in))]
        sid = secrets.token_urlsafe(24)
        self._signed_in[sid] = now
        return {"sid": sid}

    def valid(self, session: dict[str, Any]) -> bool:
        at = self._signed_in.get(str(session.get("sid", ""))) if self.enabled else None
        return at is not None and time.monotonic() - at <= self.max_age

    def revoke(self, session: dict[str, Any]) -> None:
        self._signed_in.pop(str(session.get("sid", "")), None)


def _host_name(header: str) -> str:
    """The name in a ``Host`` header, without its port: ``127.0.0.2:8765`` → ``127.0.0.2``, ``[::1]:80`` → ``[::1]``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.partition(":")[0]


def loopback_names(host: str) -> frozenset[str]:
    """The ``Host`` names a server bound to the loopback address ``host`` answers to: that address's, 127.0.0.1,
    localhost and [::1]."""
    own = f"[{host.lower()}]" if ":" in host else host.lower()
    return frozenset({own, "127.0.0.1", "localhost", "[::1]"})


class AccessGuard:
    """ASGI middleware for the web pages (the MCP transport checks its own token): with a token, a request needs
    ``Authorization: Bearer <token>`` or a signed-in session (:class:`Sessions`), else it is sent to ``/login``
    (pages) or answered 401 (JSON); on loopback (``hosts``: :func:`loopback_names`), a ``Host`` that is not one of
    its names is refused with 421 (DNS rebinding).

    Why not Starlette's: ``TrustedHostMiddleware`` answers a foreign ``Host`` 400, where the MCP transport beside the
    pages answers 421 (Misdirected Request) for the same request; ``AuthenticationMiddleware`` only labels a request,
    and its ``requires(redirect=…)`` sends the whole URL (this server's host included) as ``next``, which the sign-in
    refuses as an open redirect. The SDK's ``RequireAuthMiddleware`` knows bearer tokens only, not a person's
    session."""

    OPEN = ("/login", "/mcp", "/static/")

    def __init__(self, app: ASGIApp, token: str | None, hosts: frozenset[str] | None, sessions: Sessions) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        if self.hosts is not None and _host_name(headers.get("host", "")) not in self.hosts:
            names = ", ".join(sorted(self.hosts))
            await PlainResponse(421, f"this server answers only to {names}")(scope, receive, send)
            return
        path = scope.get("path", "")
        if self.token and not path.startswith(self.OPEN) and not self._allowed(scope, headers):
            if path.endswith(".json") or "text/html" not in headers.get("accept", ""):
                response: Response = JSONResponse(
                    {"error": "Authorization: Bearer <token> required", "status": 401},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
                )
            else:
                target = path + (f"?{scope['query_string'].decode('latin-1')}" if scope.get("query_string") else "")
                response = RedirectResponse(f"/login?next={urllib.parse.quote(target)}", status_code=303)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope, headers: dict[str, str]) -> bool:
        given = headers.get("authorization", "")
        if given[:7].lower() == "bearer " and hmac.compare_digest(
            given[7:].encode("latin-1"), self.token.encode("utf-8")
        ):
            return True
        return self.sessions.valid(scope.get("session") or {})


class SessionCookies:
    """Starlette's ``SessionMiddleware``, with the cookie's ``Secure`` flag when the request came over HTTPS
    (``scope["scheme"]``: uvicorn sets it from a trusted reverse proxy's ``X-Forwarded-Proto``), and without it on
    plain HTTP (a cookie marked ``Secure`` would never come back there). Starlette's alone sets the flag for every
    request or for none (``https_only``, fixed when it is built): this picks one of two per request."""

    def __init__(self, app: ASGIApp, secret_key: str, max_age: int) -> None:
        options = {"secret_key": secret_key, "session_cookie": "docsbot_session", "same_site": "strict"}
        self.plain = SessionMiddleware(app, max_age=max_age, **options)
        self.secure = SessionMiddleware(app, max_age=max_age, https_only=True, **options)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chosen = self.secure if scope.get("scheme") in ("https", "wss") else self.plain
        await chosen(scope, receive, send)


def content_security_policy(images: bool) -> str:
    """The pages' policy: their own script, style and requests only, no inline script, never framed; images from
    this server (and from anywhere with ``DOCSBOT_WEB_REMOTE_IMAGES``)."""
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; "
        f"img-src 'self' data:{' http: https:' if images else ''}; base-uri 'none'; frame-ancestors 'none'"
    )


class ServerTiming:
    """ASGI middleware: every response carries ``Server-Timing: app;dur=MS``, the milliseconds from the request's
    arrival to its response headers (W3C Server Timing), which browsers' developer tools and the benchmark read.
    Starlette ships none (its OpenTelemetry middleware records spans, not a header a browser reads)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith("/mcp"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = (time.perf_counter() - started) * 1000
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (b"server-timing", f"app;dur={took:.1f}".encode())],
                }
            await send(message)

        await self.app(scope, receive, timed)


class PlainResponse(Response):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text + "\n", status_code=status, media_type="text/plain")
