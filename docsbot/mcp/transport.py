"""Serving the MCP server (:mod:`docsbot.mcp.server`): over stdio (what desktop clients launch), or Streamable HTTP
with uvicorn, alone (``docsbot mcp --http``) or inside the app of ``docsbot serve``, whose web pages it sits beside
at ``/mcp``.

Over HTTP, the server binds 127.0.0.1 unless given a host; any other address needs ``DOCSBOT_MCP_TOKEN``, which every
request then carries, and so do writes (``--allow-refresh``, ``--allow-writes``) on any address: loopback is open to
every user of the machine. Over stdio the server is the client's own child process, its only caller. On loopback,
the SDK's DNS-rebinding protection is on for every loopback name (:func:`transport_security`). The HTTP layer around
the transport (security headers, bounded sessions, failed token checks) is :mod:`docsbot.mcp.http`.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from docsbot import store
from docsbot.embedding.models import load_embedder
from docsbot.errors import DocsbotError
from docsbot.mcp.http import MCP_POLICY, guarded, session_options
from docsbot.mcp.server import build_server
from docsbot.project_settings import ProjectSettings
from docsbot.service import DocsIndex

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ClosedSessionGuard", "UsageError", "is_loopback", "parse_http_address", "serve", "transport_security"]

logger = logging.getLogger("docsbot.mcp")


def _closed_session(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError)):
            return True
        exc = exc.__context__
    return False


class ClosedSessionGuard:
    """ASGI middleware for a race of the SDK (python-sdk issue #2741, PR #2983, open in 2.3.0): a message
    that arrives as its session closes (a client cancelling calls and leaving at once) makes the transport
    write to a closed stream and then answer twice. Nothing is lost: the session is gone. This logs it as one
    line instead of two tracebacks; any other error goes on to uvicorn as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception as exc:
            if not _closed_session(exc):
                raise
            logger.info("a message arrived as its session closed (the client left); ignored")


class _ClosedSessionFilter(logging.Filter):
    """The same race as :class:`ClosedSessionGuard`, as the SDK logs it (with a traceback): one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and _closed_session(record.exc_info[1]):
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args = "a message arrived as its session closed (the client left); ignored", ()
        return True


class UsageError(DocsbotError, ValueError):
    """A bad ``docsbot mcp`` option (address, missing token)."""


def parse_http_address(value: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` → (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--http takes [HOST:]PORT, got {value!r}")
    return host, int(port)


def transport_security(host: str, port: int = 0) -> TransportSecuritySettings | None:
    """The MCP SDK's DNS-rebinding protection (``Host`` and ``Origin`` checked) for a loopback bind: the SDK turns
    it on by itself only for 127.0.0.1, localhost and ::1; any 127/8 address (or ``localhost``) is served without a
    token here, so only loopback names (the bound address's among them) are accepted, on any port. Off loopback a
    token guards every request: ``None`` (the SDK's default)."""
    if not is_loopback(host):
        return None
    names = {host if ":" not in host else f"[{host}]", "127.0.0.1", "localhost", "[::1]"}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(f"{name}:*" for name in names),
        allowed_origins=sorted(f"http://{name}:*" for name in names),
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _serve_http(app: ASGIApp, host: str, port: int, banner: str) -> None:
    """Serve ``app`` with uvicorn until stopped; once bound, print ``banner`` with ``{url}`` (the bound address)
    to stderr, for a person and for whoever waits for the server to be ready."""
    import uvicorn

    logging.getLogger("mcp.server.streamable_http").addFilter(_ClosedSessionFilter())
    config = uvicorn.Config(ClosedSessionGuard(app), host=host, port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)

    async def announce() -> None:
        while not web.started:
            await anyio.sleep(0.05)
        bound = web.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        print(banner.format(url=f"http://{shown}:{bound[1]}"), file=sys.stderr, flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await web.serve()
        tg.cancel_scope.cancel()


PagesFactory = Callable[[DocsIndex, MCPServer, "str | None", str], "ASGIApp"]


def serve(
    http: str | None = None,
    allow_refresh: bool = False,
    *,
    pages: PagesFactory | None = None,
    allowed_networks: list[str] | None = None,
) -> int:
    """Run the server until the client goes away (stdio) or the process is stopped (HTTP). Returns the exit
    code. ``pages``: ``docsbot serve``, which serves the app ``pages(index, mcp_server, token, host)`` builds (the
    web pages with ``/mcp`` among them) instead of the MCP transport alone; it needs ``http``.
    ``allowed_networks``: what crawls started from the network may reach besides public addresses
    (``--allow-network``, ``*`` for ``--allow-private-networks``), added to ``DOCSBOT_ALLOWED_NETWORKS``. Raises
    :class:`UsageError` for a bad address, or without ``DOCSBOT_MCP_TOKEN`` a non-loopback bind or writes over HTTP,
    :class:`docsbot.store.DatabaseError` / :class:`docsbot.embedding.models.EmbeddingModelError` when the database or
    the model cannot be reached, before anything is served."""
    name = "docsbot serve" if pages is not None else "docsbot mcp"
    settings = ProjectSettings("docsbot.settings")
    token = str(settings.get("DOCSBOT_MCP_TOKEN") or "").strip() or None
    address = parse_http_address(http) if http is not None else None
    if address is not None and not is_loopback(address[0]) and not token:
        raise UsageError(
            f"refusing to serve on {address[0]} without a token: set DOCSBOT_MCP_TOKEN (clients send it as "
            "'Authorization: Bearer <token>'), or bind to 127.0.0.1"
        )
    if address is not None and allow_refresh and not token:
        # Loopback is no boundary between the users of one machine (or the containers of one network namespace)
        flag = "--allow-writes" if pages is not None else "--allow-refresh"
        raise UsageError(
            f"refusing {flag} over HTTP without a token, on loopback too (every user of this machine can reach it): "
            "set DOCSBOT_MCP_TOKEN=$(openssl rand -hex 32); clients send it as 'Authorization: Bearer <token>'"
        )
    if pages is not None and address is None:
        raise UsageError("docsbot serve needs an address: --http [HOST:]PORT")
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    dsn = store.resolve_dsn(settings)
    with store.connect(dsn) as conn:
        try:
            store.check_schema(conn)  # read-only: a reader never migrates (nor races a writer's migration)
        except store.NoSchema:
            logger.warning("nothing is indexed in this database yet: the answers say so until a crawl indexes a site")
    allowed = " ".join([str(settings.get("DOCSBOT_ALLOWED_NETWORKS") or ""), *(allowed_networks or [])]).strip()
    try:
        index = DocsIndex(settings, dsn, load_embedder(settings), allow_writes=allow_refresh, allowed_networks=allowed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    base_url = f"http://{address[0]}:{address[1]}/" if address is not None else "http://127.0.0.1/"
    server = build_server(index, token if address is not None else None, base_url)
    # SIGTERM (and uvicorn re-raising it after a graceful shutdown) ends the process through the cleanup below.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        index.open()
        mode = "read-only" if not allow_refresh else "writes allowed"
        where = "stdio" if address is None else f"http {address[0]}:{address[1]}"
        logger.info("%s on %s (%s, database %s)", name, where, mode, store.redact_dsn(dsn))
        try:
            if address is None:
                anyio.run(server.run_stdio_async)
            elif pages is None:
                app = server.streamable_http_app(
                    host=address[0], transport_security=transport_security(*address), **session_options(settings)
                )
                app = guarded(app, settings, token=token, policy=MCP_POLICY)
                anyio.run(_serve_http, app, address[0], address[1], "docsbot mcp: serving {url}/mcp")
            else:
                app = pages(index, server, token, address[0])
                banner = "docsbot serve: serving {url}/ (MCP at {url}/mcp)"
                anyio.run(_serve_http, app, address[0], address[1], banner)
        except* (KeyboardInterrupt, SystemExit):
            logger.info("%s stopped", name)
    finally:
        index.close()
        signal.signal(signal.SIGTERM, previous)
    return 0
