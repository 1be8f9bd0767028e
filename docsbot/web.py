"""``docsbot serve``: web pages for people and the MCP Streamable HTTP transport (``/mcp``), in one process.

A thin interface over the service (:class:`docsbot.service.DocsIndex`), server-rendered with Jinja2 templates
(``docsbot/templates``) and a few lines of progressive enhancement (no JavaScript build chain), in the shape of
Datasette's pages: every page's URL holds its whole query, and every page has a JSON twin from the same service call
(``/search.json``, ``/libraries.json``, ``/runs/ID.json``, ``/page.json``).

- ``/`` search: a query box with library/version filters, one result per page with its title, heading path, deep link
  and an excerpt with the query's words marked;
- ``/libraries``: each version with pages, chunks, vector coverage and its last runs; refresh and remove buttons
  when writes are allowed (``--allow-writes``);
- ``/runs/ID``: a run's counts and outcome, its progress while it runs (the page polls its JSON twin; without
  JavaScript it reloads itself), and the tail of its log for runs this server started;
- ``/changes?library=…&version=…&since=…``: what refreshes changed (pages added, modified with their sections
  and diffs, deleted, moved), with an Atom feed of the same (``/changes.atom?…``);
- ``/page?url=…&section=…``: a stored page's Markdown rendered (HTML in the Markdown is shown as text, never run),
  its sections, when it was last checked and written;
- ``/mcp``: the MCP server of :mod:`docsbot.mcp_server`, with the same tools as ``docsbot mcp``.

The MCP server's rules apply to the whole process: it binds 127.0.0.1 unless given a host; any other address needs
``DOCSBOT_MCP_TOKEN``, and then every request must carry it, as ``Authorization: Bearer <token>`` (scripts, MCP
clients) or, for a person, through the ``/login`` form (a signed session cookie). On loopback, requests whose
``Host`` is not a loopback name are refused (DNS rebinding). Writes are off unless ``--allow-writes``; a write is a
POST whose form carries this process's CSRF token and, when the browser sends one, an ``Origin`` of this server.

An unknown library, a malformed query, a page that is not stored: a page that says so with the service error's
HTTP status (400, 403, 404, 502), or 503 while the database is unreachable; never a traceback.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import time
import urllib.parse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import psycopg
from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from psycopg_pool import PoolTimeout
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

from docsbot import store
from docsbot.service import MAX_QUERY_CHARS, ServiceError

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp.server.mcpserver import MCPServer
    from pydantic import BaseModel
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from docsbot.service import ChangesResult, DocsIndex

__all__ = ["build_app", "highlight", "render_markdown"]

logger = logging.getLogger("docsbot.web")

EXCERPT_CHARS = 400
LOOPBACK_HOSTS = re.compile(r"^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$")
_WORD = re.compile(r"[\w][\w.:-]*[\w]|[\w]")
# Words not worth marking in an excerpt (marking every "the" hides the words that matched).
_UNMARKED = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "why",
        "with",
    ]
)
_MARKDOWN_SYNTAX = re.compile(r"```[^\n]*\n?|`|\*\*|__|^#{1,6} |^\s*[-*] |^>\s?", re.M)


# --- Rendering helpers ---------------------------------------------------------------------------------------------


def excerpt(markdown: str, width: int = EXCERPT_CHARS) -> str:
    """A result's text as one plain line of at most ``width`` characters: Markdown's code fences, backticks,
    emphasis and heading marks dropped, whitespace collapsed, cut at a word with an ellipsis."""
    text = " ".join(_MARKDOWN_SYNTAX.sub(" ", markdown).split())
    if len(text) <= width:
        return text
    return text[:width].rsplit(" ", 1)[0] + " …"


def highlight(text: str, query: str) -> Markup:
    """``text`` escaped for HTML, with each word of ``query`` (letters, digits, ``_ . : -`` inside a word) marked
    by ``<mark>`` wherever it stands as a whole word, case-insensitively; a few English function words ("the",
    "how", "to") are not marked."""
    words = sorted({w for w in _WORD.findall(query) if w.lower() not in _UNMARKED}, key=len, reverse=True)
    if not words:
        return escape(text)
    pattern = re.compile(r"(?<![\w])(" + "|".join(map(re.escape, words)) + r")(?![\w])", re.I)
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[pos : m.start()]))
        out.append(Markup("<mark>%s</mark>") % m.group(0))
        pos = m.end()
    out.append(escape(text[pos:]))
    return Markup("").join(out)


_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_markdown(markdown: str, anchors: list[str]) -> Markup:
    """A stored page's Markdown as HTML (CommonMark and GFM tables, markdown-it-py). Raw HTML in it is escaped,
    never rendered. Headings below the title get, in order, the ids in ``anchors`` (the page's sections, so that
    ``#anchor`` links land on them)."""
    tokens = _MARKDOWN.parse(markdown)
    pending = list(anchors)
    for token in tokens:
        if token.type == "heading_open" and token.tag != "h1" and pending:
            token.attrSet("id", pending.pop(0))
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("docsbot", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["highlight"] = highlight
    env.filters["excerpt"] = excerpt
    env.filters["quote"] = lambda value: urllib.parse.quote(str(value), safe="")
    env.globals["label"] = store.version_label
    env.globals["max_query"] = MAX_QUERY_CHARS
    return env


# --- The app ------------------------------------------------------------------------------------------------------


class Pages:
    """The routes of the web pages, bound to one service instance."""

    def __init__(self, index: DocsIndex, *, token: str | None, csrf: str) -> None:
        self.index = index
        self.token = token
        self.csrf = csrf
        self.templates = _templates()

    # --- plumbing ---

    def render(self, request: Request, template: str, http_status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("title", "")
        html = self.templates.get_template(template).render(
            request=request,
            writes=self.index.allow_writes,
            csrf=self.csrf,
            login=bool(self.token),
            **context,
        )
        return HTMLResponse(html, status_code=http_status)

    @staticmethod
    def json(model: BaseModel | dict[str, Any], status: int = 200) -> JSONResponse:
        data = model if isinstance(model, dict) else model.model_dump(mode="json")
        return JSONResponse(data, status_code=status)

    @staticmethod
    async def call(fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on a worker thread (the service blocks on the database and the model)."""
        return await anyio.to_thread.run_sync(fn, *args)

    def failure(self, request: Request, exc: BaseException, as_json: bool) -> Response:
        """A service error (its status and message) or an unreachable database (503), as a page or JSON."""
        if isinstance(exc, ServiceError):
            status, message = exc.status, str(exc)
        else:
            logger.warning("database unavailable: %s", exc)
            status = 503
            message = "the index database is unavailable right now (restarting or unreachable); try again shortly"
        if as_json:
            return JSONResponse({"error": message, "status": status}, status_code=status)
        return self.render(request, "error.html", status, title="Error", message=message, status=status)

    async def answer(
        self, request: Request, as_json: bool, fn: Callable[..., Any], *args: Any, template: str, **context: Any
    ) -> Response:
        try:
            result = await self.call(fn, *args)
        except (ServiceError, psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, store.DatabaseError) as e:
            return self.failure(request, e, as_json)
        if as_json:
            return self.json(result)
        return self.render(request, template, result=result, **context)

    # --- pages ---

    async def search(self, request: Request) -> Response:
        as_json = request.url.path.endswith(".json")
        params = request.query_params
        query = " ".join(params.get("q", "").split())
        library = params.get("library") or None
        version = params.get("version")  # '' is the unversioned one; absent is any
        version = version if library else None
        try:
            limit = int(params.get("limit", "10"))
        except ValueError:
            limit = 0
        try:
            libraries = await self.call(self.index.version_names)
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, store.DatabaseError) as exc:
            return self.failure(request, exc, as_json)
        context = {"query": query, "library": library, "version": version, "limit": limit, "libraries": libraries}
        if not query:
            if as_json:
                return self.failure(request, _invalid("the query is empty: pass q="), True)
            return self.render(request, "search.html", title="Search", result=None, **context)
        title = f"{query[:80]} · Search"
        return await self.answer(
            request,
            as_json,
            self.index.search,
            query,
            library,
            version,
            limit,
            template="search.html",
            title=title,
            **context,
        )

    async def libraries(self, request: Request) -> Response:
        as_json = request.url.path.endswith(".json")
        notice = request.query_params.get("removed")
        return await self.answer(
            request,
            as_json,
            self.index.libraries,
            3,
            template="libraries.html",
            title="Libraries",
            notice=f"removed {notice}" if notice else None,
        )

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        as_json = run_id.endswith(".json")
        run_id = run_id.removesuffix(".json")
        try:
            result = await self.call(self.index.run, run_id)
            changes = None
            if not as_json and result.crawl_run_id is not None and result.state not in ("starting", "running"):
                changes = await self.call(
                    lambda: self.index.changes(result.library, result.version, run=result.crawl_run_id, limit=1000)
                )
        except (ServiceError, psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, store.DatabaseError) as e:
            return self.failure(request, e, as_json)
        if as_json:
            return self.json(result)
        return self.render(request, "run.html", title=f"Run {run_id}", result=result, changes=changes)

    async def page(self, request: Request) -> Response:
        as_json = request.url.path.endswith(".json")
        url = request.query_params.get("url", "")
        section = request.query_params.get("section") or None
        if not url:
            return self.failure(request, _invalid("which page? pass url= (a result's URL)"), as_json)
        try:
            result = await self.call(self.index.page, url, section)
            whole = result if section is None else await self.call(self.index.page, result.url, None)
        except (ServiceError, psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, store.DatabaseError) as e:
            return self.failure(request, e, as_json)
        if as_json:
            return self.json(result)
        if section is None:
            html = render_markdown(result.markdown, [s.anchor for s in result.sections])
        else:
            html = render_markdown(result.markdown, [])
        return self.render(request, "page.html", title=result.title, result=result, whole=whole, html=html)

    async def changes(self, request: Request) -> Response:
        """/changes (HTML), /changes.json and /changes.atom (an Atom feed: one entry per page change)."""
        path = request.url.path
        params = request.query_params
        library = params.get("library", "")
        version = params.get("version")
        since = params.get("since") or None
        run = params.get("run")
        as_json = path.endswith(".json")
        if not library:
            return self.failure(request, _invalid("which library? pass library= (and version=)"), as_json)
        try:
            run_id = int(run) if run else None
            result = await self.call(lambda: self.index.changes(library, version, since, run=run_id, diffs=True))
        except ValueError:
            return self.failure(request, _invalid(f"run= takes a run id, got {run!r}"), as_json)
        except (ServiceError, psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, store.DatabaseError) as e:
            return self.failure(request, e, as_json)
        if as_json:
            return self.json(result)
        if path.endswith(".atom"):
            return Response(atom_feed(result, str(request.url)), media_type="application/atom+xml")
        label = store.version_label(library, version) if version is not None else library
        return self.render(request, "changes.html", title=f"Changes · {label}", result=result, label=label)

    async def write(self, request: Request) -> Response:
        """POST /libraries/refresh and /libraries/remove: forms with library, version and the CSRF token."""
        form = await request.form()
        if not hmac.compare_digest(str(form.get("csrf", "")), self.csrf) or not _same_origin(request):
            return self.render(
                request, "error.html", 403, title="Error", status=403, message="this form has expired: reload the page"
            )
        library = str(form.get("library", ""))
        version = form.get("version")
        version = None if version is None or form.get("all") else str(version)
        action = request.path_params["action"]
        if action == "refresh":
            try:
                result = await self.call(self.index.refresh, library, version)
            except (ServiceError, psycopg.Error, PoolTimeout, store.DatabaseError) as exc:
                return self.failure(request, exc, False)
            return RedirectResponse(f"/runs/{urllib.parse.quote(result.run_id or '')}", status_code=303)
        try:
            removed = await self.call(self.index.remove, library, version)
        except (ServiceError, psycopg.Error, PoolTimeout, store.DatabaseError) as exc:
            return self.failure(request, exc, False)
        names = ", ".join(v["version"] for v in removed.removed)
        return RedirectResponse(f"/libraries?removed={urllib.parse.quote(names)}", status_code=303)

    async def login(self, request: Request) -> Response:
        target = _local_path(request.query_params.get("next", "/"))
        if request.method == "POST":
            form = await request.form()
            given = str(form.get("token", ""))
            if self.token and hmac.compare_digest(given.encode(), self.token.encode()):
                request.session["auth"] = _session_mark(self.token)
                return RedirectResponse(_local_path(str(form.get("next", "/"))), status_code=303)
            return self.render(request, "login.html", 401, title="Sign in", next=target, failed=True)
        return self.render(request, "login.html", title="Sign in", next=target, failed=False)

    async def logout(self, request: Request) -> Response:
        request.session.clear()
        return RedirectResponse("/login", status_code=303)

    async def not_found(self, request: Request, exc: Exception) -> Response:
        return self.render(request, "error.html", 404, title="Not found", status=404, message="no such page here")


def atom_feed(result: ChangesResult, url: str) -> bytes:
    """An Atom 1.0 feed (RFC 4287, written by feedgen) of a change log: one entry per page change, newest first,
    linking to the page (its first changed section), its content the changed sections and the diff."""
    from feedgen.feed import FeedGenerator

    label = store.version_label(result.library, result.version) if result.version is not None else result.library
    feed = FeedGenerator()
    feed.id(url)
    feed.title(f"Changes in the {label} docs")
    feed.subtitle(f"Pages docsbot's refreshes of {label} found added, modified, deleted or moved")
    feed.link(href=url, rel="self")
    feed.author(name="docsbot")
    feed.generator("docsbot")
    updated = max((datetime.fromisoformat(c.at) for c in result.changes), default=None)
    feed.updated(updated or datetime.now(UTC))
    for change in reversed(result.changes):  # feedgen prepends: oldest first in, newest first out
        entry = feed.add_entry()
        entry.id(f"{url.split('?')[0]}#change-{change.id}")
        entry.title(f"{change.kind}: {change.title or change.url}")
        anchor = next((s.anchor for s in change.sections if s.anchor), None)
        entry.link(href=f"{change.url}#{anchor}" if anchor else change.url)
        entry.updated(datetime.fromisoformat(change.at))
        lines = [f"{change.kind} in {store.version_label(change.library, change.version)}: {change.url}"]
        if change.old_url:
            lines.append(f"moved from {change.old_url}")
        for section in change.sections:
            lines.append(f"{section.change}: {' > '.join(section.heading_path) or '(before the first heading)'}")
        body = escape("\n".join(lines))
        if change.diff:
            body += Markup("<pre>%s</pre>") % change.diff
        entry.content(str(Markup("<p>%s</p>") % Markup(str(body).replace("\n", "<br>"))), type="html")
    return feed.atom_str(pretty=True)


def _invalid(message: str) -> ServiceError:
    from docsbot.service import Invalid

    return Invalid(message)


def _local_path(target: str) -> str:
    """``target`` if it is a path on this server (``/…``, not ``//host``), else ``/``: no open redirects."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


def _same_origin(request: Request) -> bool:
    """A browser's ``Origin`` (when it sends one) names this server."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    return urllib.parse.urlsplit(origin).netloc == request.headers.get("host", "")


def _session_mark(token: str) -> str:
    """What a signed-in session holds: a digest of the token, so that a new token signs everyone out."""
    return hashlib.sha256(b"docsbot-session:" + token.encode()).hexdigest()


class AccessGuard:
    """ASGI middleware for the web pages (the MCP transport checks its own token): with a token, a request needs
    ``Authorization: Bearer <token>`` or a signed-in session, else it is sent to ``/login`` (pages) or answered 401
    (JSON); on loopback, a ``Host`` that is not a loopback name is refused (DNS rebinding)."""

    OPEN = ("/login", "/mcp")

    def __init__(self, app: ASGIApp, token: str | None, loopback: bool) -> None:
        self.app = app
        self.token = token
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
        if self.loopback and not LOOPBACK_HOSTS.match(headers.get("host", "")):
            await PlainResponse(421, "this server answers only to 127.0.0.1 and localhost")(scope, receive, send)
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
                target = path + (f"?{scope['query_string'].decode()}" if scope.get("query_string") else "")
                response = RedirectResponse(f"/login?next={urllib.parse.quote(target)}", status_code=303)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope, headers: dict[str, str]) -> bool:
        given = headers.get("authorization", "")
        if given.lower().startswith("bearer ") and hmac.compare_digest(given[7:].encode(), self.token.encode()):
            return True
        session = scope.get("session") or {}
        return hmac.compare_digest(str(session.get("auth", "")), _session_mark(self.token))


class ServerTiming:
    """ASGI middleware: every response carries ``Server-Timing: app;dur=MS``, the milliseconds from the request's
    arrival to its response headers (W3C Server Timing), which browsers' developer tools and the benchmark read."""

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


def build_app(index: DocsIndex, mcp: MCPServer | None, token: str | None, host: str) -> Starlette:
    """The ASGI app of ``docsbot serve``: the pages, their JSON twins, ``/login`` when a token is set, and ``/mcp``
    (``mcp``'s Streamable HTTP transport, its session manager run by this app's lifespan) when given."""
    pages = Pages(index, token=token, csrf=secrets.token_urlsafe(24))
    routes: list[Route | Mount] = [
        Route("/", pages.search),
        Route("/search.json", pages.search),
        Route("/libraries", pages.libraries),
        Route("/libraries.json", pages.libraries),
        Route("/libraries/{action:str}", pages.write, methods=["POST"])
        if index.allow_writes
        else Route("/libraries/{action:str}", _read_only, methods=["POST"]),
        Route("/runs/{run_id:str}", pages.run),
        Route("/page", pages.page),
        Route("/changes", pages.changes),
        Route("/changes.json", pages.changes),
        Route("/changes.atom", pages.changes),
        Route("/page.json", pages.page),
    ]
    if token:
        routes += [Route("/login", pages.login, methods=["GET", "POST"]), Route("/logout", pages.logout)]
    lifespan = None
    if mcp is not None:
        mcp_app = mcp.streamable_http_app(host=host)
        routes.append(Mount("/", app=mcp_app))  # its one route is /mcp

        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def lifespan(app: Starlette):  # noqa: ANN202 - Starlette's lifespan protocol
            async with mcp.session_manager.run():
                yield

    from docsbot.mcp_server import is_loopback

    # A session key derived from the token: a new token invalidates every session; without one, no sessions.
    secret = hashlib.sha256(b"docsbot-web:" + (token or secrets.token_hex(16)).encode()).hexdigest()
    middleware = [
        Middleware(ServerTiming),
        Middleware(SessionMiddleware, secret_key=secret, session_cookie="docsbot_session", same_site="strict"),
        Middleware(AccessGuard, token=token, loopback=is_loopback(host)),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers={404: pages.not_found})


async def _read_only(request: Request) -> Response:
    return PlainResponse(
        403, "this server is read-only: start it with `docsbot serve --allow-writes` to refresh or remove"
    )
