"""``docsbot serve``: web pages for people and the MCP Streamable HTTP transport (``/mcp``), in one process.

A thin interface over the service (:class:`docsbot.service.DocsIndex`), server-rendered with Jinja2 templates
(``docsbot/templates``) and a few lines of progressive enhancement (no JavaScript build chain), in the shape of
Datasette's pages: every page's URL holds its whole query, and every page has a JSON twin answered by the same view
(:func:`view`: ``/search.json``, ``/libraries.json``, ``/runs/ID.json``, ``/page.json``, ``/changes.json``).

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
- ``/mcp``: the MCP server of :mod:`docsbot.mcp.server`, with the same tools as ``docsbot mcp``.

The MCP server's rules apply to the whole process: it binds 127.0.0.1 unless given a host; any other address needs
``DOCSBOT_MCP_TOKEN``, and then every request must carry it, as ``Authorization: Bearer <token>`` (scripts, MCP
clients) or, for a person, through the ``/login`` form (a signed session cookie: ``HttpOnly``, ``SameSite=Strict``,
``Secure`` when the request came over HTTPS, valid ``DOCSBOT_WEB_SESSION_HOURS``, ended at once by signing out and
for everyone by a restart). On loopback, requests whose ``Host`` is not a loopback name are refused (DNS
rebinding). Writes are off unless ``--allow-writes``; a write is a POST whose form carries this process's CSRF
token and, when the browser sends one, an ``Origin`` of this server.

Every response carries a Content-Security-Policy without inline script (the pages' few lines of behaviour are
``/static/docsbot.js``), ``frame-ancestors 'none'``, ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy:
same-origin`` (``no-referrer`` would make browsers send ``Origin: null`` with the pages' own forms); images in
stored Markdown are shown as links unless ``DOCSBOT_WEB_REMOTE_IMAGES``. A form body over :data:`MAX_FORM_BYTES` is
answered 413 before it is read.

An unknown library, a malformed query, a page that is not stored: a page that says so with the service error's
HTTP status (400, 403, 404, 502), or 503 while the database is unreachable; never a traceback.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import re
import secrets
import time
import urllib.parse
from datetime import UTC, datetime
from importlib import resources
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
from docsbot.urls import without_credentials

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from mcp.server.mcpserver import MCPServer
    from pydantic import BaseModel
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from docsbot.service import ChangesResult, DocsIndex

__all__ = ["build_app", "highlight", "render_markdown"]

logger = logging.getLogger("docsbot.web")

EXCERPT_CHARS = 400
MAX_FORM_BYTES = 64 * 1024  # a sign-in or a write form is a few hundred bytes
MAX_FORM_FIELDS = 20
# A page view renders at most this much Markdown (about 0.2 s of markdown-it here; /page.json has all of it).
MAX_RENDERED_CHARS = 256 * 1024
_STATIC = {"docsbot.js": "text/javascript; charset=utf-8", "docsbot.css": "text/css; charset=utf-8"}
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


def _image_as_link(self: Any, tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
    """markdown-it's ``image`` rule, replaced: a link to the image (its alt text, else its address), which the
    reader's browser does not load. The address was already checked by markdown-it's ``validateLink``."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    text = self.renderInlineAsText(token.children or [], options, env) or src
    return f'<a class="image" href="{escape(src)}" rel="noreferrer nofollow">[image: {escape(text)}]</a>'


_MARKDOWN_NO_IMAGES = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_MARKDOWN_NO_IMAGES.add_render_rule("image", _image_as_link)


def render_markdown(markdown: str, anchors: list[str], *, images: bool = False) -> Markup:
    """A stored page's Markdown as HTML (CommonMark and GFM tables, markdown-it-py). Raw HTML in it is escaped,
    never rendered; link and image addresses markdown-it deems unsafe (``javascript:``, ``data:`` but images...) are
    dropped by it. Images are shown as links to them unless ``images`` (an ``<img>`` would make every reader's
    browser ask the documentation's host for it). Headings below the title get, in order, the ids in ``anchors``
    (the page's sections, so that ``#anchor`` links land on them). Linear in the size of the page."""
    md = _MARKDOWN if images else _MARKDOWN_NO_IMAGES
    tokens = md.parse(markdown)
    pending = iter(anchors)
    for token in tokens:
        if token.type == "heading_open" and token.tag != "h1":
            ident = next(pending, None)
            if ident is None:
                break
            token.attrSet("id", ident)
    return Markup(md.renderer.render(tokens, md.options, {}))


def safe_href(url: Any) -> str:
    """``url`` if it is an absolute http(s) URL (what docsbot stores), else ``#``: no ``javascript:`` in a link."""
    text = str(url or "")
    return text if urllib.parse.urlsplit(text).scheme.lower() in ("http", "https") else "#"


def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("docsbot.web", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["highlight"] = highlight
    env.filters["excerpt"] = excerpt
    env.filters["quote"] = lambda value: urllib.parse.quote(str(value), safe="")
    env.filters["href"] = safe_href
    env.globals["label"] = store.version_label
    env.globals["max_query"] = MAX_QUERY_CHARS
    env.globals["max_rendered"] = MAX_RENDERED_CHARS
    return env


# --- The app ------------------------------------------------------------------------------------------------------


class View:
    """What a page view answers: ``data`` (a service model, or a dict), shown as JSON at the view's ``.json`` twin,
    and the ``template`` with its ``context`` that shows it as a page."""

    __slots__ = ("context", "data", "template")

    def __init__(self, data: BaseModel | dict[str, Any] | None, template: str = "", **context: Any) -> None:
        self.data, self.template, self.context = data, template, context


def view(handler: Callable[[Any, Request, bool], Awaitable[View | Response]]) -> Callable[..., Awaitable[Response]]:
    """One route for a page and its JSON twin: ``handler(pages, request, as_json)`` (``as_json`` when the path ends
    in ``.json``) returns a :class:`View`, or a ``Response`` of its own. A service error, a bad parameter or an
    unreachable database it raises becomes the answer :meth:`Pages.failure` gives, as a page or as JSON."""

    @functools.wraps(handler)
    async def endpoint(pages: Pages, request: Request) -> Response:
        as_json = request.url.path.endswith(".json")
        try:
            answer = await handler(pages, request, as_json)
        except _FAILURES as exc:
            return pages.failure(request, exc, as_json)
        if isinstance(answer, Response):
            return answer
        if as_json:
            return pages.json(answer.data if answer.data is not None else {})
        return pages.render(request, answer.template, **answer.context)

    return endpoint


class Pages:
    """The routes of the web pages, bound to one service instance."""

    def __init__(self, index: DocsIndex, *, token: str | None, csrf: str, sessions: Sessions | None = None) -> None:
        self.index = index
        self.token = token
        self.csrf = csrf
        self.sessions = sessions or Sessions(token, 12 * 3600)
        settings = getattr(index, "settings", None) or {}
        self.images = bool(settings.get("DOCSBOT_WEB_REMOTE_IMAGES", False))
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
        elif isinstance(exc, store.DatabaseError) and not isinstance(exc, store.StoreUnavailable):
            status, message = 503, str(exc)  # its message says what is wrong (a schema this role cannot apply)
        elif isinstance(exc, psycopg.DataError):  # a value the database cannot hold (checked first by the service)
            status, message = 400, f"a parameter holds a value the index cannot look up ({type(exc).__name__})"
        elif isinstance(exc, psycopg.Error) and not isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
            logger.warning("the database refused: %s: %s", type(exc).__name__, exc)
            status, message = 503, f"the index database refused this request ({type(exc).__name__}); see the log"
        else:
            logger.warning("database unavailable: %s", exc)
            status = 503
            message = "the index database is unavailable right now (restarting or unreachable); try again shortly"
        if as_json:
            return JSONResponse({"error": message, "status": status}, status_code=status)
        return self.render(request, "error.html", status, title="Error", message=message, status=status)

    # --- pages: each a view (its answer as a page, or as JSON at its .json twin) ---

    @view
    async def search(self, request: Request, as_json: bool) -> View:
        params = request.query_params
        query = " ".join(params.get("q", "").split())
        library = params.get("library") or None
        version = params.get("version")  # '' is the unversioned one; absent is any
        version = version if library else None
        kind = params.get("kind") or None
        try:
            limit = int(params.get("limit", "10"))
        except ValueError:
            limit = 0
        libraries = await self.call(self.index.version_names)
        context = {"query": query, "library": library, "version": version, "limit": limit, "libraries": libraries,
                   "kind": kind}  # fmt: skip
        if not query:
            if as_json:
                raise _invalid("the query is empty: pass q=")
            return View(None, "search.html", title="Search", result=None, **context)
        result = await self.call(self.index.search, query, library, version, limit, kind)
        return View(result, "search.html", title=f"{query[:80]} · Search", result=result, **context)

    @view
    async def libraries(self, request: Request, as_json: bool) -> View:
        notice = request.query_params.get("removed")
        result = await self.call(self.index.libraries, 3)
        return View(result, "libraries.html", title="Libraries", result=result,
                    notice=f"removed {notice}" if notice else None)  # fmt: skip

    @view
    async def run(self, request: Request, as_json: bool) -> View:
        run_id = request.path_params["run_id"].removesuffix(".json")
        result = await self.call(self.index.run, run_id)
        changes = None
        if not as_json and result.crawl_run_id is not None and result.state not in ("starting", "running"):
            changes = await self.call(
                lambda: self.index.changes(result.library, result.version, run=result.crawl_run_id, limit=1000)
            )
        return View(result, "run.html", title=f"Run {run_id}", result=result, changes=changes)

    @view
    async def page(self, request: Request, as_json: bool) -> View:
        url = request.query_params.get("url", "")
        section = request.query_params.get("section") or None
        if not url:
            raise _invalid("which page? pass url= (a result's URL)")
        result = await self.call(self.index.page, url, section)
        if as_json:
            return View(result)
        whole = result if section is None else await self.call(self.index.page, result.url, None)
        anchors = [s.anchor for s in result.sections] if section is None else []
        markdown, cut = result.markdown, None
        if len(markdown) > MAX_RENDERED_CHARS:  # the page view's cost is bounded; /page.json has the whole page
            end = markdown.rfind("\n", 0, MAX_RENDERED_CHARS)
            markdown, cut = markdown[: end if end > 0 else MAX_RENDERED_CHARS], len(result.markdown)
        html = await self.call(lambda: render_markdown(markdown, anchors, images=self.images))
        return View(result, "page.html", title=result.title, result=result, whole=whole, html=html, cut=cut)

    @view
    async def changes(self, request: Request, as_json: bool) -> View | Response:
        """/changes (HTML), /changes.json and /changes.atom (an Atom feed: one entry per page change)."""
        params = request.query_params
        library = params.get("library", "")
        version = params.get("version")
        since = params.get("since") or None
        run = params.get("run")
        if not library:
            raise _invalid("which library? pass library= (and version=)")
        run_id = None
        if run:
            run_id = int(run) if run.isascii() and run.isdigit() and len(run) <= 18 else None
            if run_id is None:
                raise _invalid(f"run= takes a run id (a number), got {run[:40]!r}")
        result = await self.call(lambda: self.index.changes(library, version, since, run=run_id, diffs=True))
        if request.url.path.endswith(".atom"):
            return Response(atom_feed(result, str(request.url)), media_type="application/atom+xml")
        label = store.version_label(library, version) if version is not None else library
        return View(result, "changes.html", title=f"Changes · {label}", result=result, label=label)

    async def write(self, request: Request) -> Response:
        """POST /libraries/refresh and /libraries/remove: forms with library, version and the CSRF token."""
        form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
        given = str(form.get("csrf", "")).encode("utf-8", "replace")
        if not hmac.compare_digest(given, self.csrf.encode()) or not _same_origin(request):
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
            except _FAILURES as exc:
                return self.failure(request, exc, False)
            return RedirectResponse(f"/runs/{urllib.parse.quote(result.run_id or '')}", status_code=303)
        try:
            removed = await self.call(self.index.remove, library, version)
        except _FAILURES as exc:
            return self.failure(request, exc, False)
        names = ", ".join(v["version"] for v in removed.removed)
        return RedirectResponse(f"/libraries?removed={urllib.parse.quote(names)}", status_code=303)

    async def login(self, request: Request) -> Response:
        target = _local_path(request.query_params.get("next", "/"))
        if request.method == "POST":
            form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
            given = str(form.get("token", ""))
            if self.token and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
                request.session.clear()
                request.session.update(self.sessions.new())
                return RedirectResponse(_local_path(str(form.get("next", "/"))), status_code=303)
            return self.render(request, "login.html", 401, title="Sign in", next=target, failed=True)
        return self.render(request, "login.html", title="Sign in", next=target, failed=False)

    async def logout(self, request: Request) -> Response:
        self.sessions.revoke(request.session)
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


_FAILURES = (ServiceError, psycopg.Error, PoolTimeout, store.DatabaseError)


def _invalid(message: str) -> ServiceError:
    from docsbot.service import Invalid

    return Invalid(message)


def _local_path(target: str) -> str:
    """``target`` if it is a path on this server (``/…``, not ``//host`` nor ``/\\host``), else ``/``: no open
    redirects."""
    if target.startswith("/") and not target.startswith(("//", "/\\")) and target.isprintable():
        return target
    return "/"


def _same_origin(request: Request) -> bool:
    """A browser's ``Origin`` (when it sends one) names this server."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    return urllib.parse.urlsplit(origin).netloc == request.headers.get("host", "")


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
    its names is refused with 421 (DNS rebinding)."""

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
    plain HTTP (a cookie marked ``Secure`` would never come back there)."""

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
    without ``frame-ancestors``), ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``."""

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


class BodyLimit:
    """ASGI middleware: a request body to the pages (a sign-in or write form; ``/mcp`` has the SDK's own limit)
    over ``limit`` bytes is answered 413 before the app reads it; a smaller one is read here and handed on."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith("/mcp") or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        too_large = PlainResponse(413, f"the request body is over {self.limit} bytes: a form here is far smaller")
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await too_large(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await too_large(scope, receive, send)
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


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


class LlmsTxt:
    """llms.txt for every indexed version (https://llmstxt.org/): ``/llms.txt`` lists the versions, each with its
    ``/docs/LIBRARY@VERSION/llms.txt`` (its pages' titles and URLs) and ``/docs/LIBRARY@VERSION/llms-full.txt``
    (every page's Markdown, streamed from the database), read from the index at each request: current after every
    refresh. An unversioned library is ``/docs/LIBRARY/``."""

    def __init__(self, index: DocsIndex) -> None:
        self.index = index

    async def _version(self, request: Request, fn: Callable[..., Any]) -> Any:
        """``fn(library, version)`` for the path's ``LIBRARY@VERSION`` on a worker thread, or the failure as a
        plain-text response."""
        library, sep, version = request.path_params["label"].partition("@")
        try:
            return await Pages.call(fn, library, version if sep else None)
        except _FAILURES as e:
            return PlainResponse(getattr(e, "status", 503), str(e))

    async def root(self, request: Request) -> Response:
        try:
            versions = await Pages.call(self.index.searcher.versions)
        except _FAILURES as e:
            return PlainResponse(getattr(e, "status", 503), str(e))
        lines = ["# docsbot", "", "> The documentation this docsbot server keeps indexed and fresh.", "", "## Docs", ""]
        for v in versions:
            label = store.version_label(v.library, v.name)
            quoted = urllib.parse.quote(label, safe="@")
            lines.append(f"- [{label}](/docs/{quoted}/llms.txt): from {without_credentials(v.root_url)}")
        return PlainResponse(200, "\n".join(lines))

    async def version(self, request: Request) -> Response:
        from docsbot.service.docs import llms_txt

        answer = await self._version(request, self.index.page_list)
        if isinstance(answer, Response):
            return answer
        target, pages = answer
        label = store.version_label(target.library, target.name)
        full = f"/docs/{urllib.parse.quote(label, safe='@')}/llms-full.txt"
        text = llms_txt(label, without_credentials(target.root_url), pages, full)
        return Response(text, media_type="text/plain; charset=utf-8")

    async def full(self, request: Request) -> Response:
        from starlette.responses import StreamingResponse

        from docsbot.service.docs import llms_full

        answer = await self._version(request, self.index.export_pages)
        if isinstance(answer, Response):
            return answer
        target, pages = answer
        label = store.version_label(target.library, target.name)
        # a sync iterator: Starlette reads it on worker threads, a server-side cursor behind it
        return StreamingResponse(
            llms_full(label, without_credentials(target.root_url), pages), media_type="text/plain; charset=utf-8"
        )


class PlainResponse(Response):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text + "\n", status_code=status, media_type="text/plain")


def build_app(index: DocsIndex, mcp: MCPServer | None, token: str | None, host: str) -> Starlette:
    """The ASGI app of ``docsbot serve``: the pages, their JSON twins, ``/static/`` (the pages' script and style),
    ``/login`` when a token is set, and ``/mcp`` (``mcp``'s Streamable HTTP transport, its session manager run by
    this app's lifespan) when given."""
    from docsbot.mcp.server import is_loopback, transport_security

    settings = getattr(index, "settings", None) or {}
    max_age = int(float(settings.get("DOCSBOT_WEB_SESSION_HOURS", 12) or 12) * 3600)
    sessions = Sessions(token, max_age)
    pages = Pages(index, token=token, csrf=secrets.token_urlsafe(24), sessions=sessions)
    llms = LlmsTxt(index)
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
        Route("/static/{name:str}", _static),
        Route("/llms.txt", llms.root),
        Route("/docs/{label:str}/llms.txt", llms.version),
        Route("/docs/{label:str}/llms-full.txt", llms.full),
    ]
    if token:
        routes += [Route("/login", pages.login, methods=["GET", "POST"]), Route("/logout", pages.logout)]
    lifespan = None
    if mcp is not None:
        mcp_app = mcp.streamable_http_app(host=host, transport_security=transport_security(host))
        routes.append(Mount("/", app=mcp_app))  # its one route is /mcp

        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def lifespan(app: Starlette):  # noqa: ANN202 - Starlette's lifespan protocol
            async with mcp.session_manager.run():
                yield

    middleware = [
        Middleware(SecurityHeaders, policy=content_security_policy(pages.images)),
        Middleware(ServerTiming),
        Middleware(BodyLimit, limit=MAX_FORM_BYTES),
        # a key of this process: a restart ends every session; without a token there are none
        Middleware(SessionCookies, secret_key=secrets.token_hex(32), max_age=max_age),
        Middleware(
            AccessGuard, token=token, hosts=loopback_names(host) if is_loopback(host) else None, sessions=sessions
        ),  # fmt: skip
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers={404: pages.not_found})


_static_files: dict[str, bytes] = {}


async def _static(request: Request) -> Response:
    """``/static/docsbot.js`` and ``/static/docsbot.css``, read from the package once (``importlib.resources``)."""
    name = request.path_params["name"]
    if name not in _STATIC:
        return PlainResponse(404, "no such file here")
    if name not in _static_files:
        _static_files[name] = (resources.files("docsbot.web") / "static" / name).read_bytes()
    return Response(_static_files[name], media_type=_STATIC[name], headers={"Cache-Control": "max-age=3600"})


async def _read_only(request: Request) -> Response:
    return PlainResponse(
        403, "this server is read-only: start it with `docsbot serve --allow-writes` to refresh or remove"
    )
