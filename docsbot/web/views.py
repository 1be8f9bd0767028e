"""The web pages' views: each route a method of :class:`Pages` bound to one service instance, and each page answered
by the same view as a page (a Jinja template) and as JSON at its ``.json`` twin (:func:`view`), as Datasette's pages
are. A service error, a bad parameter or an unreachable database is a page (or JSON) that says so with its HTTP
status, never a traceback (:meth:`Pages.failure`)."""

from __future__ import annotations

import functools
import hmac
import logging
import urllib.parse
from typing import TYPE_CHECKING, Any

import anyio
import psycopg
from psycopg_pool import PoolTimeout
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from docsbot import store
from docsbot.mcp.http import AttemptLimiter, client_key
from docsbot.service import ServiceError
from docsbot.web.feed import atom_feed
from docsbot.web.middleware import Sessions
from docsbot.web.rendering import MAX_RENDERED_CHARS, render_markdown, render_snippet, templates, vectors_progress

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pydantic import BaseModel
    from starlette.requests import Request

    from docsbot.service import DocsIndex

__all__ = ["FAILURES", "MAX_FORM_FIELDS", "Pages", "View", "view"]

logger = logging.getLogger("docsbot.web")

MAX_FORM_FIELDS = 20
# What a view answers as a failure page (or JSON) rather than raising: the service's errors and the database's.
FAILURES = (ServiceError, psycopg.Error, PoolTimeout, store.DatabaseError)


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
        except FAILURES as exc:
            return pages.failure(request, exc, as_json)
        if isinstance(answer, Response):
            return answer
        if as_json:
            return pages.json(answer.data if answer.data is not None else {})
        return pages.render(request, answer.template, **answer.context)

    return endpoint


class Pages:
    """The routes of the web pages, bound to one service instance."""

    def __init__(
        self,
        index: DocsIndex,
        *,
        token: str | None,
        csrf: str,
        sessions: Sessions | None = None,
        attempts: AttemptLimiter | None = None,
    ) -> None:
        self.index = index
        self.token = token
        self.csrf = csrf
        self.sessions = sessions or Sessions(token, 12 * 3600)
        self.attempts = attempts or AttemptLimiter()
        settings = getattr(index, "settings", None) or {}
        self.images = bool(settings.get("DOCSBOT_WEB_REMOTE_IMAGES", False))
        self.templates = templates()

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
        explain = params.get("explain") in ("1", "true")  # each result says why it ranks there
        result = await self.call(self.index.search, query, library, version, limit, kind, explain)
        snippets = [render_snippet(hit.content, query) for hit in result.results]
        data = result.model_dump(mode="json")  # the JSON twin: each hit's Markdown and, beside it, its snippet's HTML
        for hit, html in zip(data["results"], snippets, strict=True):
            hit["snippet_html"] = str(html)
        return View(data, "search.html", title=f"{query[:80]} · Search", result=result, snippets=snippets, **context)

    @view
    async def libraries(self, request: Request, as_json: bool) -> View:
        notice = request.query_params.get("removed")
        result = await self.call(self.index.libraries, 3)
        data = result.model_dump(mode="json")  # each version's vectors beside, as the page shows them (and updates)
        for entry, version in zip(data["libraries"], result.libraries, strict=True):
            entry["vectors_progress"] = vectors_progress(version)
        return View(data, "libraries.html", title="Libraries", result=result,
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
        versions = await self.call(self.index.libraries, 1)
        key = (result.library, result.version)
        version = next((v for v in versions.libraries if (v.library, v.version) == key), None)
        vectors = vectors_progress(version) if version is not None else None  # none once the version is removed
        data = {**result.model_dump(mode="json"), "vectors": vectors}
        return View(data, "run.html", title=f"Run {run_id}", result=result, changes=changes, vectors=vectors)

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
        """POST /libraries/refresh and /libraries/remove (forms with library, version and the CSRF token), and
        /libraries/index (url, library, version, scope, include, exclude: what the service's ``index`` takes from a
        network caller, patterns comma-separated)."""
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
        if action == "index":

            def field(name: str) -> str | None:
                return str(form.get(name) or "").strip() or None

            try:
                result = await self.call(
                    lambda: self.index.index(
                        str(form.get("url", "")), field("library"), field("version") or "", field("refresh"),
                        scope=field("scope"), include=field("include"), exclude=field("exclude"),
                    )
                )  # fmt: skip
            except FAILURES as exc:
                return self.failure(request, exc, False)
            return RedirectResponse(f"/runs/{urllib.parse.quote(result.run_id or '')}", status_code=303)
        if action not in ("refresh", "remove"):
            return await self.not_found(request, LookupError(action))
        if action == "refresh":
            try:
                result = await self.call(self.index.refresh, library, version)
            except FAILURES as exc:
                return self.failure(request, exc, False)
            return RedirectResponse(f"/runs/{urllib.parse.quote(result.run_id or '')}", status_code=303)
        try:
            removed = await self.call(self.index.remove, library, version)
        except FAILURES as exc:
            return self.failure(request, exc, False)
        names = ", ".join(v["version"] for v in removed.removed)
        return RedirectResponse(f"/libraries?removed={urllib.parse.quote(names)}", status_code=303)

    async def login(self, request: Request) -> Response:
        target = _local_path(request.query_params.get("next", "/"))
        if request.method == "POST":
            client = client_key(request.scope)
            wait = self.attempts.wait(client)
            if wait:  # refused before the token is read: a right guess counts no more than a wrong one
                response = self.render(request, "login.html", 429, title="Sign in", next=target, failed=True, wait=wait)
                response.headers["Retry-After"] = str(wait)
                return response
            form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
            given = str(form.get("token", ""))
            if self.token and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
                request.session.clear()
                request.session.update(self.sessions.new())
                return RedirectResponse(_local_path(str(form.get("next", "/"))), status_code=303)
            self.attempts.failed(client)
            return self.render(request, "login.html", 401, title="Sign in", next=target, failed=True)
        return self.render(request, "login.html", title="Sign in", next=target, failed=False)

    async def logout(self, request: Request) -> Response:
        self.sessions.revoke(request.session)
        request.session.clear()
        return RedirectResponse("/login", status_code=303)

    async def not_found(self, request: Request, exc: Exception) -> Response:
        return self.render(request, "error.html", 404, title="Not found", status=404, message="no such page here")


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
