"""The ASGI middlewares of ``docsbot serve`` (in :func:`docsbot.web.app.build_app`'s order, outermost first):
:class:`SecurityHeaders`, :class:`ServerTiming`, :class:`SessionCookies` and :class:`AccessGuard`, with the sign-ins
of this process (:class:`Sessions`) they check. A form's size is bounded by Starlette itself (the POST routes'
``max_body_size``). Each middleware here is docsbot's own because neither Starlette nor the MCP SDK ships one that
does its job; its docstring says what the nearest one lacks."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from starlette.middleware.sessions import SessionMiddleware
from starlette.responses import JSONResponse, RedirectResponse, Response

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
    """The sign-ins of this process. A session cookie (signed with a key of this process: a restart signs everyone
    out) holds ``{"auth": digest of the token, "sid": random id, "at": unix time}``; it is valid while its digest is
    the token's (a new token signs everyone out), it is younger than ``max_age`` seconds, and its id was not signed
    out (:meth:`revoke`: a copied cookie stops working when its owner signs out)."""

    def __init__(self, token: str | None, max_age: float) -> None:
        self.mark = hashlib.sha256(b"docsbot-session:" + token.encode()).hexdigest() if token else None
        self.max_age = max_age
        self._revoked: dict[str, float] = {}  # sid -> when it was signed in (pruned once it would be too old)

    def new(self) -> dict[str, Any]:
        return {"auth": self.mark, "sid": secrets.token_urlsafe(18), "at": int(time.time())}

    def valid(self, session: dict[str, Any]) -> bool:
        if self.mark is None or not hmac.compare_digest(str(session.get("auth", "")), self.mark):
            return False
        at = session.get("at")
        if not isinstance(at, int) or not 0 <= time.time() - at <= self.max_age:
            return False
        return str(session.get("sid", "")) not in self._revoked

    def revoke(self, session: dict[str, Any]) -> None:
        now = time.time()
        self._revoked = {sid: at for sid, at in self._revoked.items() if now - at <= self.max_age}
        if session.get("sid") and isinstance(session.get("at"), int):
            self._revoked[str(session["sid"])] = session["at"]


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


class SecurityHeaders:
    """ASGI middleware: every response carries the Content-Security-Policy, ``X-Frame-Options: DENY`` (for browsers
    without ``frame-ancestors``), ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``, unless it
    set its own. Starlette ships no middleware that adds response headers."""

    def __init__(self, app: ASGIApp, policy: str) -> None:
        self.app = app
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

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in self.headers if k not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


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
