"""The MCP server of ``docsbot mcp`` and ``docsbot serve``: the index's tools for LLM agents (MCP Python SDK 2.x).

A thin interface over the service (:class:`docsbot.service.DocsIndex`), which keeps the embedding model and a
connection pool warm. Its tools, over stdio (what desktop clients launch) or Streamable HTTP:

- ``search_docs(query, library=None, version=None, limit=5)``: page-level hybrid search, as ``docsbot search``;
- ``list_libraries()``: what is indexed, with each version's status, counts, freshness and last run;
- ``resolve_library(name)``: the indexed libraries a name may mean, their versions with pages first;
- ``get_docs(library, version=None, topic=None, max_tokens=5000)``: a version's best sections for a topic, the
  whole reply (Markdown text and structured JSON) within ``max_tokens``, its top match always in it;
- ``get_page(url, section=None)``: a page's stored Markdown, or one section of it by anchor; no network request;
- ``get_changes(library, version=None, since=None, diffs=False)``: what the library's refreshes changed;
- ``diff_versions(library, old_version, new_version)``: names added, removed and changed between two versions;
- ``refresh_library(library, version=None)``, ``get_run(run_id)``, ``index_library(url, library, version, refresh,
  max_pages, max_depth, scope, include, exclude)``,
  ``remove_library(library, version)``, ``list_runs(library, version, limit)`` and ``cancel_run(run_id)``: only with
  ``--allow-refresh`` (writes allowed). A refresh is ``scrapy crawl docs -a mode=refresh`` started as a child
  process, or a job scheduled on Scrapyd when ``SCRAPYD_URL`` is set: there is one refresh path.

Every tool runs its database and model work on a worker thread (``anyio.to_thread``), so calls do not block
each other. A bad argument (one line naming it, what it takes and what it got: :class:`DocsbotServer`), an
unknown library (with the nearest indexed names) or page, a version without pages (with its state), or a database
that is down gives a tool error (``CallToolResult.is_error``) with a message that says what to do; the server keeps
serving. Over HTTP off
loopback, a shared token (``DOCSBOT_MCP_TOKEN``) is checked by the SDK's own bearer-token hooks
(:class:`SharedTokenVerifier`). How the server is served (stdio, Streamable HTTP) is :mod:`docsbot.mcp.transport`.
"""

from __future__ import annotations

import hmac
import logging
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
import psycopg
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from psycopg_pool import PoolTimeout
from pydantic import Field, ValidationError

from docsbot import store
from docsbot.mcp.arguments import bad_arguments
from docsbot.service import (
    MAX_QUERY_CHARS,
    CancelResult,
    ChangesResult,
    DocsIndex,
    DocsResult,
    LibraryMatches,
    ListLibrariesResult,
    PageResult,
    RefreshResult,
    RemoveResult,
    RunInfo,
    RunList,
    SearchDocsResult,
    ServiceError,
    VersionDiff,
)
from docsbot.service.docs import docs_markdown
from docsbot.service.reading import DOCS_MAX_TOKENS, DOCS_MIN_TOKENS

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import Context
    from mcp_types import GetPromptResult, InputRequiredResult

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_URL_CHARS",
    "WRITE_TOOLS",
    "DocsbotServer",
    "SharedTokenVerifier",
    "build_server",
    "docs_reply",
]

logger = logging.getLogger("docsbot.mcp")

MAX_URL_CHARS = 2048
MAX_NAME_CHARS = 200
WRITE_TOOLS = ("refresh_library", "get_run", "index_library", "remove_library", "list_runs", "cancel_run")

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

Query = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for, in words or identifiers")
]
Name = Annotated[str | None, Field(max_length=MAX_NAME_CHARS)]


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` on a worker thread; turn what the agent can act on into a tool error."""
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except ServiceError as exc:
        raise ToolError(str(exc)) from None
    except store.DatabaseError as exc:  # says what is wrong and what to do (a schema a read-only role cannot apply)
        raise ToolError(str(exc)) from None
    except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
        logger.warning("database unavailable: %s", exc)
        raise ToolError(
            "the index database is unavailable right now (restarting or unreachable); try again in a few seconds"
        ) from None
    except psycopg.DataError as exc:
        raise ToolError(f"an argument holds a value the index cannot look up ({type(exc).__name__})") from None
    except psycopg.Error as exc:  # the server refused: a privilege, a read-only transaction
        logger.warning("the database refused: %s: %s", type(exc).__name__, exc)
        raise ToolError(
            f"the index database refused this request ({type(exc).__name__}); see the server's log"
        ) from None


class DocsbotServer(MCPServer):
    """The SDK's server, but for arguments that fail the tool's input schema: the SDK answers pydantic's report
    (several lines, a documentation link per error); this answers one line per call naming each argument, what
    it takes and what it got (:func:`docsbot.mcp.arguments.bad_arguments`), still a tool error (``is_error``)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # Tool.run raises a ToolError from the ValidationError of the arguments; an UnexpectedToolError from one
            # is the tool's own output failing its schema: a bug, left to the SDK's generic answer.
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            schema = next((t.input_schema for t in await self.list_tools() if t.name == name), {})
            raise ToolError(f"Error executing tool {name}: {bad_arguments(exc.__cause__, schema)}") from exc.__cause__

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        """An unknown prompt is a JSON-RPC error (invalid params), as an unknown resource is: the SDK raises a plain
        ``ValueError`` for it, which its dispatcher logs with a traceback as a server failure."""
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name[:MAX_NAME_CHARS]!r} (see prompts/list)")
        return await super().get_prompt(name, arguments, context)


def _tool(server: MCPServer, annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@server.tool`` with the docstring as one paragraph: what the model reads, without source indentation."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        server.add_tool(fn, description=" ".join((fn.__doc__ or "").split()), annotations=annotations)
        return fn

    return register


def build_server(index: DocsIndex, token: str | None = None, base_url: str = "http://127.0.0.1/") -> MCPServer:
    """The MCP server with docsbot's tools bound to ``index``. ``refresh_library`` and ``get_run`` are listed
    only when ``index.allow_writes``; called on a read-only server they answer a tool error that says so.
    ``token``: HTTP requests must carry ``Authorization: Bearer <token>`` (checked by the SDK's bearer-token
    middleware through :class:`SharedTokenVerifier`; ``base_url`` is the issuer the SDK's settings require)."""
    auth: dict[str, Any] = {}
    if token:
        auth = {
            "token_verifier": SharedTokenVerifier(token),
            # A shared secret, not OAuth: no authorization server, no protected-resource metadata to publish.
            "auth": AuthSettings(issuer_url=base_url, resource_server_url=None),
        }
    server = DocsbotServer(
        "docsbot",
        title="docsbot documentation index",
        instructions=(
            "Find a library's indexed name with resolve_library and read its docs on a topic with get_docs. "
            "Search indexed documentation with search_docs, read a whole page or one section with get_page "
            "(pass a result's url or deep_link), see what is indexed with list_libraries, what changed with "
            "get_changes, and how two versions' APIs differ with diff_versions."
        ),
        middleware=[] if index.allow_writes else [_refuse_refresh_tools],
        **auth,
    )

    @_tool(server, _READ_ONLY)
    async def search_docs(
        query: Query,
        library: Annotated[Name, Field(description="only this library (see list_libraries); default: all")] = None,
        version: Annotated[Name, Field(description="only this version of it; '' for the unversioned one")] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="number of pages to return, 1-50")] = 5,
        kind: Annotated[
            Literal["docs", "changelog", "index", "example"] | None,
            Field(
                description="only pages of this kind: docs (reference, guides), changelog (release notes), index; "
                "example: only sections holding a code example"
            ),
        ] = None,
        explain: Annotated[
            bool, Field(description="each result also says why it ranks there: its rank in each list, the knobs")
        ] = False,
    ) -> SearchDocsResult:
        """Search the indexed documentation (hybrid: full text + embeddings). Returns the best pages, one result
        per page: title, url, deep_link to the best-matching section or definition, heading_path, score and that
        section's Markdown. Release notes rank below the reference unless the query asks about versions or
        changes; kind="changelog" searches them alone, kind="example" code examples alone. Use get_page with url
        (or deep_link) to read more. An unknown library or version is an error listing what is indexed."""
        return await _call(index.search, query, library, version, limit, kind, explain)

    @_tool(server, _READ_ONLY)
    async def list_libraries() -> ListLibrariesResult:
        """Every indexed library and version: its status (ready: it has pages; indexing, empty, failed or
        not_indexed: it has none, and status_reason says why), root URL, page and chunk counts, embedding model,
        when it was last refreshed, checked and changed, whether a run is in progress, and its last run (state,
        counts, when it started and ended)."""
        return await _call(index.libraries, 1)

    @_tool(server, _READ_ONLY)
    async def resolve_library(
        name: Annotated[
            str, Field(min_length=1, max_length=MAX_NAME_CHARS, description="a library's name as you know it")
        ],
    ) -> LibraryMatches:
        """The indexed libraries a name may mean (case, separators, prefixes like python- or suffixes like .js,
        close spellings), best first, each with its versions (those with pages first, then newest first), their
        status (ready, or without pages: indexing, empty, failed, not_indexed), page counts and when each was last
        refreshed, checked and changed. A library with no version that has pages ranks lower. Use the library it
        gives with get_docs and search_docs. An empty list: not indexed."""
        return await _call(index.resolve_library, name)

    @_tool(server, _READ_ONLY)
    async def get_docs(
        library: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, description="see resolve_library")],
        version: Annotated[
            Name, Field(description="exact, or loose: 'latest', '3', '3.x'; default: the newest with pages")
        ] = None,
        topic: Annotated[
            str | None,
            Field(max_length=MAX_QUERY_CHARS, description="what you need, in words or identifiers; none: overview"),
        ] = None,
        max_tokens: Annotated[
            int,
            Field(
                ge=DOCS_MIN_TOKENS,
                le=DOCS_MAX_TOKENS,
                description=f"the whole reply's budget in tokens, {DOCS_MIN_TOKENS}-{DOCS_MAX_TOKENS}",
            ),
        ] = 5000,
    ) -> Annotated[CallToolResult, DocsResult]:
        """Documentation of one library version, ready to read: for a topic, the best sections or definitions
        (one per page, as search_docs ranks them), each whole or cut between blocks; without one, its overview
        pages. The top match is always there, cut inside a block (ending with …) if it must be. max_tokens bounds
        the whole reply as sent, its Markdown text and its structured JSON together, counted with the tokenizer of
        the server's embedding model (all-MiniLM-L6-v2's WordPiece by default; characters / 4 for a model without
        one); tokens says how many it holds. Each section has its deep link for get_page. A version without pages
        (being indexed, empty, failed) is an error saying which and what to do."""
        return docs_reply(await _call(index.docs, library, version, topic, max_tokens))

    @_tool(server, _READ_ONLY)
    async def get_page(
        url: Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS, description="a page URL from search_docs")],
        section: Annotated[
            str | None,
            Field(max_length=MAX_NAME_CHARS, description="an anchor (the part after # of a deep_link) or heading"),
        ] = None,
    ) -> PageResult:
        """The stored Markdown of an indexed page, or of one section (from its heading to the next heading of
        the same or a higher level). A deep_link's #anchor selects its section. Served from the index: no
        network request. The whole page comes with the list of its sections."""
        return await _call(index.page, url, section)

    @_tool(server, _READ_ONLY)
    async def get_changes(
        library: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)],
        version: Annotated[Name, Field(description="one version; default: every version of the library")] = None,
        since: Annotated[
            str | None,
            Field(max_length=64, description="a duration back from now (7d, 12h) or a date (2026-11-20); default: all"),
        ] = None,
        diffs: Annotated[bool, Field(description="include each modified page's unified diff (long)")] = False,
    ) -> ChangesResult:
        """What changed in a library's docs, as its refreshes found it: pages added, modified (with the sections
        whose text changed, and on request the diff), deleted or moved, newest first, each with when. Use it to
        check whether an API you know was changed or removed since a date."""
        return await _call(lambda: index.changes(library, version, since, limit=200, diffs=diffs))

    @_tool(server, _READ_ONLY)
    async def diff_versions(
        library: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)],
        old_version: Annotated[str, Field(max_length=MAX_NAME_CHARS, description="the earlier version")],
        new_version: Annotated[str, Field(max_length=MAX_NAME_CHARS, description="the later version")],
    ) -> VersionDiff:
        """The API difference between two indexed versions of a library, from the names their docs define: names
        added, removed, and those whose documentation text changed, each with a deep link."""
        return await _call(index.diff_versions, library, old_version, new_version)

    if index.allow_writes:

        @_tool(server, ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
        async def refresh_library(
            library: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)],
            version: Annotated[Name, Field(description="required when the library has several versions")] = None,
        ) -> RefreshResult:
            """Start a refresh of an indexed library version: every page revalidated against the site with
            conditional requests, changes re-indexed. Returns at once with a run_id; poll get_run. A refresh
            already running for that version is reported, not started again."""
            return await _call(index.refresh, library, version)

        @_tool(server, _READ_ONLY)
        async def get_run(
            run_id: Annotated[str, Field(min_length=1, max_length=64, description="from refresh_library")],
        ) -> RunInfo:
            """Progress and outcome of a refresh: state (starting, running, finished, failed, interrupted),
            counts (unchanged, modified, new, deleted, failed pages; chunks embedded) and times."""
            return await _call(index.run, run_id)

        @_tool(server, ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
        async def index_library(
            url: Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS, description="the docs' root URL")],
            library: Annotated[Name, Field(description="its name; default: the URL's host")] = None,
            version: Annotated[str, Field(max_length=MAX_NAME_CHARS, description="e.g. 3.11; '' for none")] = "",
            refresh: Annotated[
                str | None,
                Field(
                    max_length=16,
                    description="refresh it on this schedule: 1d, 12h, 2w (at least the server's floor, 1h by "
                    "default); default never",
                ),
            ] = None,
            max_pages: Annotated[
                int | None, Field(ge=1, description="request at most this many pages; default and cap: the server's")
            ] = None,
            max_depth: Annotated[
                int | None, Field(ge=0, description="follow links at most this deep; default and cap: the server's")
            ] = None,
            scope: Annotated[
                Literal["prefix", "host", "domain"] | None,
                Field(
                    description="how far from the URL: prefix (default: its directory, after its redirects), host "
                    "(any path of its host), domain (every host of its registrable domain)"
                ),
            ] = None,
            include: Annotated[
                list[Annotated[str, Field(max_length=MAX_URL_CHARS)]] | None,
                Field(
                    max_length=50,
                    description="only URLs matching one of these: globs on the URL ('/guide/*', '*/api/*'; '*' "
                    "matches '/' too) or /regex/",
                ),
            ] = None,
            exclude: Annotated[
                list[Annotated[str, Field(max_length=MAX_URL_CHARS)]] | None,
                Field(max_length=50, description="never URLs matching one of these (wins over include), as include"),
            ] = None,
        ) -> RefreshResult:
            """Index a new library version from its docs' root URL (by default only pages under that URL's
            directory are crawled; scope, include and exclude shape that; only public addresses, unless the server
            allows more). Returns at once with a run_id; poll get_run. Optionally keep it fresh on a schedule. A root
            URL already indexed with the same scope (under any name) is an error naming that version; the server
            bounds how many versions and pages callers may index."""
            return await _call(
                lambda: index.index(
                    url, library, version, refresh, max_pages=max_pages, max_depth=max_depth, scope=scope,
                    include=include, exclude=exclude,
                )
            )  # fmt: skip

        @_tool(server, ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
        async def remove_library(
            library: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)],
            version: Annotated[Name, Field(description="one version; default: every version of the library")] = None,
        ) -> RemoveResult:
            """Delete an indexed library version (or every version of the library) with all its pages. Refused
            while a run of it is in progress."""
            return await _call(index.remove, library, version)

        @_tool(server, _READ_ONLY)
        async def list_runs(
            library: Annotated[Name, Field(description="only this library's runs")] = None,
            version: Annotated[Name, Field(description="only this version's")] = None,
            limit: Annotated[int, Field(ge=1, le=200)] = 20,
        ) -> RunList:
            """The latest index and refresh runs, newest first: state, outcome, counts, times."""
            return await _call(index.runs, library, version, limit)

        @_tool(server, ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
        async def cancel_run(
            run_id: Annotated[str, Field(min_length=1, max_length=64, description="a run_id this server started")],
        ) -> CancelResult:
            """Stop a run this server started. Pages it stored stay stored; it deletes nothing."""
            return await _call(index.cancel, run_id)

    return server


def docs_reply(result: DocsResult) -> CallToolResult:
    """``get_docs``' reply: the docs as Markdown (what most clients hand the model) and as structured content (the
    output schema's JSON, for programs), the two forms the service's budget counts
    (:data:`docsbot.service.reading.REPLY_FORMS`)."""
    return CallToolResult(
        content=[TextContent(type="text", text=docs_markdown(result))],
        structured_content=result.model_dump(mode="json"),
    )


async def _refuse_refresh_tools(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """On a read-only server, a call of a refresh tool gets an explicit tool error, not "unknown tool"."""
    if ctx.method == "tools/call" and (ctx.params or {}).get("name") in WRITE_TOOLS:
        name = ctx.params["name"]
        text = f"{name} is disabled: this server is read-only (start it with `docsbot mcp --allow-refresh`)"
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    return await call_next(ctx)


class SharedTokenVerifier:
    """The MCP SDK's ``TokenVerifier`` for one shared secret (``DOCSBOT_MCP_TOKEN``): a bearer token (RFC 6750)
    equal to it, compared in constant time, is accepted; anything else gets the SDK's 401 with
    ``WWW-Authenticate: Bearer``."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="shared", client_id="docsbot", scopes=[])
        return None
