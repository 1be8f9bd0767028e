"""The ASGI app of ``docsbot serve``: the pages' routes, ``/static/``, llms.txt, the MCP transport at ``/mcp``, and
the middlewares around them."""

from __future__ import annotations

import secrets
from importlib import resources
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.routing import Mount, Route

from docsbot.mcp.http import AttemptLimiter, guarded, session_options
from docsbot.web.llms import LlmsTxt
from docsbot.web.middleware import (
    AccessGuard,
    PlainResponse,
    ServerTiming,
    SessionCookies,
    Sessions,
    content_security_policy,
    loopback_names,
)
from docsbot.web.views import Pages

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.requests import Request
    from starlette.types import ASGIApp

    from docsbot.service import DocsIndex

__all__ = ["MAX_FORM_BYTES", "build_app"]

# A sign-in or a write form is a few hundred bytes: a body over this is answered 413 before it is read (declared
# larger) or as soon as it is (streamed), by Starlette's limit on the routes that take a form; /mcp has the SDK's own.
MAX_FORM_BYTES = 64 * 1024
_STATIC = {
    "docsbot.js": "text/javascript; charset=utf-8",
    "docsbot.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


class _LabelConvertor(PathConvertor):
    """A ``LIBRARY@VERSION`` path segment, whatever a name stored before names were checked holds: a ``/``
    (``a/../b``, quoted as ``%2F`` in the links) or a newline (Starlette's ``path`` stops at one)."""

    regex = "(?s:.+)"


register_url_convertor("label", _LabelConvertor())


def build_app(index: DocsIndex, mcp: MCPServer | None, token: str | None, host: str) -> ASGIApp:
    """The ASGI app of ``docsbot serve``: the pages, their JSON twins, ``/static/`` (the pages' script and style),
    ``/login`` when a token is set, and ``/mcp`` (``mcp``'s Streamable HTTP transport, its session manager run by
    this app's lifespan) when given; inside :func:`docsbot.mcp.http.guarded` (security headers on every response,
    bounded MCP sessions, failed token checks counted with the ``/login`` form's)."""
    from docsbot.mcp.transport import is_loopback, transport_security

    settings = getattr(index, "settings", None) or {}
    max_age = int(float(settings.get("DOCSBOT_WEB_SESSION_HOURS", 12) or 12) * 3600)
    sessions = Sessions(token, max_age)
    attempts = AttemptLimiter()  # failed sign-ins and bearer tokens, per client address
    pages = Pages(index, token=token, csrf=secrets.token_urlsafe(24), sessions=sessions, attempts=attempts)
    llms = LlmsTxt(index)
    routes: list[Route | Mount] = [
        Route("/", pages.search),
        Route("/search.json", pages.search),
        Route("/libraries", pages.libraries),
        Route("/libraries.json", pages.libraries),
        Route(
            "/libraries/{action:str}",
            pages.write if index.allow_writes else _read_only,
            methods=["POST"],
            max_body_size=MAX_FORM_BYTES,
        ),
        Route("/runs/{run_id:str}", pages.run),
        Route("/page", pages.page),
        Route("/changes", pages.changes),
        Route("/changes.json", pages.changes),
        Route("/changes.atom", pages.changes),
        Route("/page.json", pages.page),
        Route("/static/{name:str}", _static),
        Route("/favicon.ico", _favicon),  # asked for by browsers whatever the page links
        Route("/llms.txt", llms.root),
        Route("/docs/{label:label}/llms.txt", llms.version),
        Route("/docs/{label:label}/llms-full.txt", llms.full),
    ]
    if token:
        routes += [
            Route("/login", pages.login, methods=["GET", "POST"], max_body_size=MAX_FORM_BYTES),
            Route("/logout", pages.logout),
        ]
    lifespan = None
    if mcp is not None:
        mcp_app = mcp.streamable_http_app(
            host=host, transport_security=transport_security(host), **session_options(settings)
        )
        routes.append(Mount("/", app=mcp_app))  # its one route is /mcp

        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def lifespan(app: Starlette):  # noqa: ANN202 - Starlette's lifespan protocol
            async with mcp.session_manager.run():
                yield

    middleware = [
        Middleware(ServerTiming),
        # a key of this process: a restart ends every session; without a token there are none
        Middleware(SessionCookies, secret_key=secrets.token_hex(32), max_age=max_age),
        Middleware(
            AccessGuard, token=token, hosts=loopback_names(host) if is_loopback(host) else None, sessions=sessions
        ),  # fmt: skip
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers={404: pages.not_found})
    policy = content_security_policy(pages.images)
    return guarded(app, settings, token=token, policy=policy, attempts=attempts)


_static_files: dict[str, bytes] = {}


async def _static(request: Request) -> Response:
    """``/static/docsbot.js``, ``/static/docsbot.css`` and ``/static/favicon.svg``, read from the package once
    (``importlib.resources``)."""
    name = request.path_params["name"]
    if name not in _STATIC:
        return PlainResponse(404, "no such file here")
    if name not in _static_files:
        _static_files[name] = (resources.files("docsbot.web") / "static" / name).read_bytes()
    return Response(_static_files[name], media_type=_STATIC[name], headers={"Cache-Control": "max-age=3600"})


async def _favicon(request: Request) -> Response:
    """``/favicon.ico``: the SVG icon the pages link (browsers take an SVG whatever the name ends with)."""
    request.scope["path_params"] = {"name": "favicon.svg"}
    return await _static(request)


async def _read_only(request: Request) -> Response:
    return PlainResponse(
        403, "this server is read-only: start it with `docsbot serve --allow-writes` to refresh or remove"
    )
