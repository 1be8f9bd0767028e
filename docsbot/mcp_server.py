"""``docsbot mcp``: the index served to LLM agents over the Model Context Protocol (MCP Python SDK 2.x).

One process keeps the embedding model and a connection pool warm (:class:`docsbot.search.Searcher`) and serves
these tools, over stdio (what desktop clients launch) or Streamable HTTP:

- ``search_docs(query, library=None, version=None, limit=5)``: page-level hybrid search, as ``docsbot search``;
- ``list_libraries()``: what is indexed, with counts and the last run of each version;
- ``get_page(url, section=None)``: a page's stored Markdown, or one section of it by anchor; no network request;
- ``refresh_library(library, version=None)`` and ``get_run(run_id)``: only with ``--allow-refresh``. A refresh is
  ``scrapy crawl docs -a mode=refresh`` started as a child process, or a job scheduled on Scrapyd when
  ``SCRAPYD_URL`` is set: there is one refresh path.

Every tool runs its database and model work on a worker thread (``anyio.to_thread``), so calls do not block
each other. A bad argument, an unknown library or page, or a database that is down gives a tool error
(``CallToolResult.is_error``) with a message that says what to do; the server keeps serving.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from base64 import b64encode
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
import psycopg
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from psycopg_pool import PoolTimeout
from pydantic import BaseModel, Field
from scrapy.settings import Settings

from docsbot import db
from docsbot.chunking import _headings
from docsbot.embedding import load_embedder
from docsbot.errors import DocsbotError
from docsbot.search import MAX_QUERY_CHARS, BadQuery, Searcher, UnknownLibrary, version_label
from docsbot.urls import InvalidURL, canonical_url
from docsbot.urls import Scope as CrawlScope

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from starlette.types import ASGIApp, Receive, Scope, Send

    from docsbot.embedding import Embedder

__all__ = ["DocsIndex", "build_server", "parse_http_address", "serve"]

logger = logging.getLogger("docsbot.mcp")

TOKEN_ENV = "DOCSBOT_MCP_TOKEN"
SCRAPYD_PROJECT = "docsbot"
MAX_URL_CHARS = 2048
MAX_NAME_CHARS = 200
REFRESH_TOOLS = ("refresh_library", "get_run")
RunState = Literal["starting", "running", "finished", "failed", "interrupted"]

# --- What the tools answer (also their output schemas) ----------------------------------------------------------


class SearchHit(BaseModel):
    title: str
    url: str = Field(description="the page URL (pass it to get_page)")
    deep_link: str = Field(description="URL of the best-matching section (url#anchor), or the page URL")
    heading_path: list[str] = Field(description="headings the matching text sits under, outermost first")
    score: float = Field(description="fusion score; higher is better, not comparable across queries")
    content: str = Field(description="the matching Markdown")
    library: str
    version: str


class SearchDocsResult(BaseModel):
    query: str
    results: list[SearchHit]


class RunInfo(BaseModel):
    run_id: str = Field(description="the id to pass to get_run")
    crawl_run_id: int | None = Field(None, description="the run's row in crawl_runs, once it has one")
    library: str
    version: str
    mode: str
    state: RunState = Field(
        description="starting (launched, not yet crawling), running, finished (completed), failed (stopped "
        "early or could not start), interrupted (killed: it never recorded an end)"
    )
    started_at: str | None = None
    finished_at: str | None = None
    finish_reason: str | None = Field(None, description="Scrapy's close reason: finished, root_failed, shutdown…")
    outcome: str | None = Field(
        None,
        description="once it ended: complete, incomplete (pages not stored), vectors_pending (every page stored, "
        "chunks still waiting for a vector), failed, or interrupted",
    )
    outcome_reason: str | None = Field(None, description="what is missing, in one line (none when complete)")
    counts: dict[str, int] = Field(
        default_factory=dict, description="unchanged, modified, new, deleted, failed, chunks_embedded…"
    )
    progress: dict[str, Any] | None = Field(None, description="while running: pages written so far, elapsed")
    message: str = ""


class LibraryVersion(BaseModel):
    library: str
    version: str = Field(description="'' for a library indexed without a version")
    root_url: str
    pages: int
    chunks: int
    vectors: int = Field(description="chunks with their vector; the others are searchable by text until they get one")
    vectors_waiting: int = Field(description="chunks still waiting for a vector")
    embedding: dict[str, Any] | None = Field(
        None,
        description="while workers embed this version: workers, rate (chunks per second), seconds_left; null when none",
    )
    embedding_model: str | None
    last_updated: str | None = Field(None, description="when a page of it last changed in the index")
    refreshing: bool = Field(description="a run of this version is in progress now")
    last_run: RunInfo | None = None


class ListLibrariesResult(BaseModel):
    libraries: list[LibraryVersion]


class PageSection(BaseModel):
    heading: str
    level: int
    anchor: str = Field(description="pass as get_page's section")


class PageResult(BaseModel):
    url: str
    title: str
    library: str
    version: str
    section: str | None = Field(None, description="the section asked for, if any")
    heading_path: list[str] = Field(default_factory=list, description="the section's headings, outermost first")
    markdown: str
    source: Literal["page", "chunks"] = Field(
        description="page: the stored Markdown; chunks: the page's chunks joined (a page stored before docsbot "
        "kept Markdown and unchanged since)"
    )
    updated_at: str | None = None
    sections: list[PageSection] = Field(
        default_factory=list, description="the page's sections (whole page only), for section="
    )


class RefreshResult(BaseModel):
    run_id: str = Field(description="pass to get_run")
    library: str
    version: str
    started: bool = Field(description="false: a run of this version was already in progress; run_id is that run")
    backend: Literal["local", "scrapyd"]
    scrapyd_job: str | None = None
    message: str


# --- Sections of a page -----------------------------------------------------------------------------------------

_SLUG_DROP = re.compile(r"[^\w\s-]")
_SLUG_SPACE = re.compile(r"[\s_-]+")


def slugify(text: str) -> str:
    """``"Getting started"`` → ``"getting-started"``: the anchor Sphinx, MkDocs and GitHub give a heading."""
    return _SLUG_SPACE.sub("-", _SLUG_DROP.sub("", text.lower())).strip("-")


@dataclass(frozen=True)
class Heading:
    offset: int
    level: int
    text: str
    path: tuple[str, ...]  # the heading's text with those of its ancestors, outermost first


def page_headings(markdown: str) -> list[Heading]:
    """ATX headings outside code fences, each with its heading path (the same paths chunks carry)."""
    out: list[Heading] = []
    stack: list[tuple[int, str]] = []
    for offset, level, text in _headings(markdown):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        out.append(Heading(offset, level, text, tuple(t for _, t in stack)))
    return out


def section_markdown(markdown: str, headings: list[Heading], index: int) -> str:
    """From heading ``index`` to the next heading of the same or a higher level (or the end)."""
    start = headings[index]
    end = next((h.offset for h in headings[index + 1 :] if h.level <= start.level), len(markdown))
    return markdown[start.offset : end].strip()


def find_heading(headings: list[Heading], section: str, anchored_path: list[str] | None) -> int | None:
    """Index of the heading ``section`` names: the heading whose path is ``anchored_path`` (the path of the
    chunks carrying that anchor), else the first whose slug or text equals the section's."""
    if anchored_path:
        for i, h in enumerate(headings):
            if list(h.path) == anchored_path:
                return i
    wanted = section.strip().lstrip("#")
    for i, h in enumerate(headings):
        if slugify(h.text) == slugify(wanted) or h.text.lower() == wanted.lower():
            return i
    return None


# --- The process state: pool, model, refresh runs ----------------------------------------------------------------


class ToolFailure(DocsbotError, ValueError):
    """A tool call that cannot be answered as asked; the message is what the agent reads."""


@dataclass
class Launch:
    """A refresh this server started: a child process, or a Scrapyd job."""

    run_id: str
    version: db.VersionRow
    since: datetime  # database clock just before the launch
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    scrapyd_job: str | None = None
    crawl_run_id: int | None = None


def _iso(value: datetime | str | None) -> str | None:
    """ISO 8601 to the second; ``value`` may be a timestamp as ``to_jsonb`` writes it."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.isoformat(timespec="seconds")


_COUNTS = ("unchanged", "modified", "new", "deleted", "failed", "chunks_embedded")


def _counts(stats: dict[str, Any]) -> dict[str, int]:
    """The numbers of a finished run's stats, the usual ones present even when 0 (a run records only what
    happened); ``{}`` before it ends."""
    if not stats:
        return {}
    found = {k: v for k, v in stats.items() if isinstance(v, int) and not isinstance(v, bool)}
    return {**dict.fromkeys(_COUNTS, 0), **found}


def _log_tail(path: Path | None, lines: int = 5) -> str:
    if path is None or not path.is_file():
        return ""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 8192))
        text = f.read().decode("utf-8", "replace")
    return "\n".join(text.strip().splitlines()[-lines:])


class DocsIndex:
    """What the tools work with, alive for the whole process: a :class:`Searcher` (connection pool + embedding
    model), the settings, and the refresh runs this process started. Every method is synchronous and
    thread-safe; the server calls them on worker threads. They raise :class:`ToolFailure`,
    :class:`UnknownLibrary` or :class:`BadQuery` with a message for the agent, and psycopg / pool errors when
    the database is unreachable."""

    def __init__(
        self,
        settings: Settings,
        dsn: str,
        embedder: Embedder,
        *,
        allow_refresh: bool = False,
        pool_size: int = 4,
        env: dict[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.dsn = dsn
        self.allow_refresh = allow_refresh
        self.searcher = Searcher(dsn, embedder, pool_size=pool_size)
        self.scrapyd_url = (env if env is not None else os.environ).get("SCRAPYD_URL", "").strip()
        self._launches: dict[str, Launch] = {}
        self._refresh_lock = threading.Lock()

    def open(self) -> DocsIndex:
        self.searcher.open()
        self.searcher.warm_up()  # load the model now, not on the first call
        return self

    def close(self) -> None:
        """Stop the refreshes this process started (SIGTERM: Scrapy stops cleanly; pages stored stay stored),
        then close the pool."""
        for launch in self._launches.values():
            if launch.process is not None and launch.process.poll() is None:
                launch.process.terminate()
        for launch in self._launches.values():
            if launch.process is not None:
                try:
                    launch.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    launch.process.kill()
                    launch.process.wait()
        self.searcher.close()

    # --- read-only tools ---

    def search(self, query: str, library: str | None, version: str | None, limit: int) -> SearchDocsResult:
        results = self.searcher.search(query, library or None, version, limit)
        return SearchDocsResult(
            query=query,
            results=[
                SearchHit(
                    title=r.title,
                    url=r.url,
                    deep_link=r.deep_link,
                    heading_path=r.heading_path,
                    score=round(r.score, 6),
                    content=r.content,
                    library=r.library,
                    version=r.version,
                )
                for r in results
            ],
        )

    def libraries(self) -> ListLibrariesResult:
        with self.searcher.connection() as conn:
            if not db.has_schema(conn):
                return ListLibrariesResult(libraries=[])
            rows = db.version_overview(conn, runs=1)
        out = []
        for row in rows:
            last = row["runs"][0] if row["runs"] else None
            waiting = row["chunks"] - row["vectors"]
            work = row["embedding"]
            if work is not None:
                rate = work["rate"] or None
                work = {**work, "seconds_left": round(waiting / rate) if rate else None}
            out.append(
                LibraryVersion(
                    library=row["library"],
                    version=row["version"],
                    root_url=row["root_url"],
                    pages=row["pages"],
                    chunks=row["chunks"],
                    vectors=row["vectors"],
                    vectors_waiting=waiting,
                    embedding=work,
                    embedding_model=row["embedding_model"],
                    last_updated=_iso(row["last_updated"]),
                    refreshing=row["running"],
                    last_run=self._run_info(
                        str(last["id"]),
                        {**last, "version_id": row["id"], "library": row["library"], "version": row["version"]},
                        {row["id"]} if row["running"] else set(),
                    )
                    if last
                    else None,
                )
            )
        return ListLibrariesResult(libraries=out)

    def page(self, url: str, section: str | None) -> PageResult:
        url = url.strip()
        if "#" in url:
            url, _, fragment = url.partition("#")
            section = section or urllib.parse.unquote(fragment) or None
        try:
            key = canonical_url(url)
        except InvalidURL as exc:
            raise ToolFailure(f"{exc}; pass a page URL as search_docs returns it") from None
        with self.searcher.connection() as conn:
            pages = db.find_pages(conn, key)
            if not pages:
                raise ToolFailure(self._not_stored(conn, key))
            page = pages[0]
            chunks = db.page_chunks(conn, page["id"])
        markdown = page["markdown"]
        source: Literal["page", "chunks"] = "page"
        if markdown is None:  # stored before pages kept their Markdown, unchanged since
            markdown, source = "\n\n".join(content for content, _, _ in chunks), "chunks"
        result = {
            "url": page["url"],
            "title": page["title"],
            "library": page["library"],
            "version": page["version"],
            "source": source,
            "updated_at": _iso(page["updated_at"]),
        }
        anchors = {}
        for _, path, anchor in chunks:
            if anchor and anchor not in anchors:
                anchors[anchor] = path
        if not section:
            headings = page_headings(markdown) if source == "page" else []
            by_path: dict[tuple[str, ...], str] = {}
            for anchor, path in anchors.items():
                by_path.setdefault(tuple(path), anchor)
            sections = [
                PageSection(
                    heading=h.text,
                    level=h.level,
                    # the heading's own id when the crawl recorded it, else the first id recorded under it
                    anchor=slugify(h.text) if slugify(h.text) in anchors else by_path.get(h.path, slugify(h.text)),
                )
                for h in headings
                if h.level > 1
            ]
            return PageResult(**result, markdown=markdown, sections=sections)
        section = section.strip()
        anchored = anchors.get(section) or anchors.get(section.lstrip("#"))
        if source == "page":
            headings = page_headings(markdown)
            index = find_heading(headings, section, anchored)
            if index is not None:
                return PageResult(
                    **result,
                    section=section,
                    heading_path=list(headings[index].path),
                    markdown=section_markdown(markdown, headings, index),
                )
        else:
            target = anchored or next(
                (path for _, path, _ in chunks if path and slugify(path[-1]) == slugify(section.lstrip("#"))), None
            )
            if target:
                parts = [content for content, path, _ in chunks if path[: len(target)] == target]
                return PageResult(**result, section=section, heading_path=target, markdown="\n\n".join(parts))
        known = sorted(anchors) or [slugify(h.text) for h in page_headings(markdown) if h.level > 1]
        raise ToolFailure(
            f"no section {section!r} on {page['url']}; its sections: {', '.join(known[:40]) or 'none'}"
            + (" …" if len(known) > 40 else "")
        )

    def _not_stored(self, conn: psycopg.Connection, url: str) -> str:
        versions = db.list_versions(conn)
        for v in versions:
            if url in CrawlScope.from_root(v.root_url):
                return (
                    f"{url} is not stored in {version_label(v.library, v.name)}: it was not reached by the last "
                    "crawl (out of depth, not linked, or gone); search_docs finds the pages that are"
                )
        roots = ", ".join(f"{version_label(v.library, v.name)} ({v.root_url})" for v in versions)
        return f"{url} is not in any indexed version; indexed: {roots or 'nothing yet'}"

    # --- refresh ---

    def refresh(self, library: str, version: str | None) -> RefreshResult:
        self._require_refresh()
        versions = self.searcher.versions(library, version)
        if len(versions) > 1:
            names = ", ".join(repr(v.name) for v in versions)
            raise ToolFailure(f"{library} has several indexed versions ({names}); say which with version=")
        target = versions[0]
        label = version_label(target.library, target.name)
        backend: Literal["local", "scrapyd"] = "scrapyd" if self.scrapyd_url else "local"

        def result(run_id: str, started: bool, message: str, scrapyd_job: str | None = None) -> RefreshResult:
            return RefreshResult(
                run_id=run_id,
                library=target.library,
                version=target.name,
                started=started,
                backend=backend,
                scrapyd_job=scrapyd_job,
                message=message,
            )

        with self._refresh_lock:
            for launch in self._launches.values():
                if launch.version.id == target.id and self._launch_state(launch).state in ("starting", "running"):
                    message = f"a refresh of {label} started by this server is already in progress"
                    return result(launch.run_id, False, message, launch.scrapyd_job)
            with self.searcher.connection() as conn:
                if target.id in db.running_version_ids(conn):
                    run = db.latest_run_id(conn, target.id)
                    message = f"another run of {label} is in progress (one run per version at a time); "
                    return result(str(run) if run else "", False, message + "nothing was started")
                since = db.database_now(conn)
            launch = Launch(f"mcp-{uuid.uuid4().hex[:12]}", target, since)
            if backend == "scrapyd":
                launch.scrapyd_job = self._schedule_on_scrapyd(target)
                message = f"refresh of {label} scheduled on Scrapyd as job {launch.scrapyd_job}"
            else:
                self._start_child(launch)
                message = f"refresh of {label} started (process {launch.process.pid})"
            self._launches[launch.run_id] = launch
        logger.info("%s (run %s)", message, launch.run_id)
        return result(launch.run_id, True, message + "; poll get_run with its run_id", launch.scrapyd_job)

    def _require_refresh(self) -> None:
        if not self.allow_refresh:
            raise ToolFailure("refresh is disabled: this server is read-only (start it with --allow-refresh)")

    def _start_child(self, launch: Launch) -> None:
        """``python -m scrapy crawl docs -a library=… -a version=… -a mode=refresh`` with this server's
        environment and database; output to a log file under ``DOCSBOT_DATA_DIR/mcp-runs``."""
        logs = Path(self.settings.get("DOCSBOT_DATA_DIR")).expanduser() / "mcp-runs"
        logs.mkdir(parents=True, exist_ok=True)
        launch.log_path = logs / f"{launch.run_id}.log"
        env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "docsbot.settings", "DATABASE_URL": self.dsn}
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"library={launch.version.library}"]
        cmd += ["-a", f"version={launch.version.name}", "-a", "mode=refresh"]
        with launch.log_path.open("wb") as log:
            launch.process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def _scrapyd(self, path: str, data: dict[str, str] | None = None) -> dict[str, Any]:
        parts = urllib.parse.urlsplit(self.scrapyd_url)
        headers = {}
        if parts.username:
            credentials = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            headers["Authorization"] = "Basic " + b64encode(credentials.encode()).decode()
            parts = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))
        url = urllib.parse.urljoin(urllib.parse.urlunsplit(parts).rstrip("/") + "/", path)
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(url, data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                answer = json.loads(response.read().decode())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ToolFailure(f"Scrapyd at {parts.hostname} did not answer {path}: {exc}") from None
        if answer.get("status") != "ok":
            raise ToolFailure(f"Scrapyd refused {path}: {answer.get('message', answer)}")
        return answer

    def _schedule_on_scrapyd(self, version: db.VersionRow) -> str:
        answer = self._scrapyd(
            "schedule.json",
            {
                "project": SCRAPYD_PROJECT,
                "spider": "docs",
                "library": version.library,
                "version": version.name,
                "mode": "refresh",
            },
        )
        return str(answer["jobid"])

    def run(self, run_id: str) -> RunInfo:
        self._require_refresh()
        run_id = run_id.strip()
        launch = self._launches.get(run_id)
        if launch is not None:
            return self._launch_state(launch)
        if run_id.isdigit():
            with self.searcher.connection() as conn:
                row = db.crawl_run(conn, int(run_id))
                running = db.running_version_ids(conn)
            if row is not None:
                return self._run_info(run_id, row, running)
        raise ToolFailure(
            f"no run {run_id!r}: pass the run_id refresh_library returned (this server's runs) or a crawl_runs id "
            "as list_libraries reports it"
        )

    def _launch_state(self, launch: Launch) -> RunInfo:
        version = launch.version
        alive = launch.process is not None and launch.process.poll() is None
        with self.searcher.connection() as conn:
            if launch.crawl_run_id is None:
                launch.crawl_run_id = db.first_run_since(conn, version.id, "refresh", launch.since)
            row = db.crawl_run(conn, launch.crawl_run_id) if launch.crawl_run_id is not None else None
            running = db.running_version_ids(conn)
            progress = None
            if row is not None and row["finished_at"] is None:
                progress = {
                    "pages_written": db.pages_written_since(conn, version.id, row["started_at"]),
                    "elapsed_seconds": round((db.database_now(conn) - row["started_at"]).total_seconds(), 1),
                }
        if row is not None:
            info = self._run_info(launch.run_id, row, running, process_alive=alive)
            info.progress = progress
            if info.state in ("failed", "interrupted"):
                info.message = "\n".join(filter(None, [info.message, _log_tail(launch.log_path)]))
            return info
        base = {"run_id": launch.run_id, "library": version.library, "version": version.name, "mode": "refresh"}
        if launch.process is not None and not alive:
            return RunInfo(
                **base,
                state="failed",
                message=f"the crawl exited with code {launch.process.returncode} before it started: "
                + (_log_tail(launch.log_path, 2) or "no output"),
            )
        if launch.scrapyd_job is not None:
            state = self._scrapyd_job_state(launch.scrapyd_job)
            if state == "finished":
                return RunInfo(
                    **base,
                    state="failed",
                    message=f"Scrapyd job {launch.scrapyd_job} ended without recording a run; see its log "
                    f"(logs/{SCRAPYD_PROJECT}/docs/{launch.scrapyd_job}.log on the Scrapyd node)",
                )
            return RunInfo(**base, state="starting", message=f"Scrapyd job {launch.scrapyd_job}: {state}")
        return RunInfo(**base, state="starting", message="the crawl process is starting")

    def _scrapyd_job_state(self, job: str) -> str:
        try:
            answer = self._scrapyd(f"listjobs.json?project={SCRAPYD_PROJECT}")
        except ToolFailure as exc:
            return str(exc)
        for state in ("pending", "running", "finished"):
            if any(j.get("id") == job for j in answer.get(state, [])):
                return state
        return "unknown to Scrapyd"

    @staticmethod
    def _run_info(run_id: str, row: dict[str, Any], running: set[int], *, process_alive: bool = False) -> RunInfo:
        stats = row.get("stats") or {}
        reason = stats.get("finish_reason")
        outcome = db.run_state(row, running=row["version_id"] in running or process_alive)
        state: RunState
        if row["finished_at"] is not None:
            state = "failed" if outcome == "failed" else "finished"
            message = f"ended: {outcome}" + (f" ({row['outcome_reason']})" if row.get("outcome_reason") else "")
        elif outcome == "running":
            state, message = "running", "in progress"
        else:
            state, message = "interrupted", "the run never recorded an end (killed); pages it stored stay stored"
        return RunInfo(
            run_id=run_id,
            crawl_run_id=row["id"],
            library=row["library"],
            version=row["version"],
            mode=row["mode"],
            state=state,
            started_at=_iso(row["started_at"]),
            finished_at=_iso(row["finished_at"]),
            finish_reason=reason,
            outcome=outcome if outcome != "running" else None,
            outcome_reason=row.get("outcome_reason"),
            counts=_counts(stats),
            message=message,
        )


# --- The MCP server ----------------------------------------------------------------------------------------------

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

Query = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for, in words or identifiers")
]
Name = Annotated[str | None, Field(max_length=MAX_NAME_CHARS)]


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` on a worker thread; turn what the agent can act on into a tool error."""
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except (UnknownLibrary, BadQuery, ToolFailure) as exc:
        raise ToolError(str(exc)) from None
    except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, db.DatabaseError) as exc:
        logger.warning("database unavailable: %s", exc)
        raise ToolError(
            "the index database is unavailable right now (restarting or unreachable); try again in a few seconds"
        ) from None


def _tool(server: MCPServer, annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@server.tool`` with the docstring as one paragraph: what the model reads, without source indentation."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        server.add_tool(fn, description=" ".join((fn.__doc__ or "").split()), annotations=annotations)
        return fn

    return register


def build_server(index: DocsIndex) -> MCPServer:
    """The MCP server with docsbot's tools bound to ``index``. ``refresh_library`` and ``get_run`` are listed
    only when ``index.allow_refresh``; called on a read-only server they answer a tool error that says so."""
    server = MCPServer(
        "docsbot",
        title="docsbot documentation index",
        instructions=(
            "Search indexed documentation with search_docs, read a whole page or one section with get_page "
            "(pass a result's url or deep_link), and see what is indexed with list_libraries."
        ),
        middleware=[] if index.allow_refresh else [_refuse_refresh_tools],
    )

    @_tool(server, _READ_ONLY)
    async def search_docs(
        query: Query,
        library: Annotated[Name, Field(description="only this library (see list_libraries); default: all")] = None,
        version: Annotated[Name, Field(description="only this version of it; '' for the unversioned one")] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="number of pages to return, 1-50")] = 5,
    ) -> SearchDocsResult:
        """Search the indexed documentation (hybrid: full text + embeddings). Returns the best pages, one result
        per page: title, url, deep_link to the best-matching section, heading_path, score and that section's
        Markdown. Use get_page with url (or deep_link) to read more. An unknown library or version is an error
        listing what is indexed."""
        return await _call(index.search, query, library, version, limit)

    @_tool(server, _READ_ONLY)
    async def list_libraries() -> ListLibrariesResult:
        """Every indexed library and version: root URL, page and chunk counts, embedding model, when its pages
        last changed, whether a refresh is running, and its last run (state, counts, when it started and ended)."""
        return await _call(index.libraries)

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

    if index.allow_refresh:

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

    return server


async def _refuse_refresh_tools(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """On a read-only server, a call of a refresh tool gets an explicit tool error, not "unknown tool"."""
    if ctx.method == "tools/call" and (ctx.params or {}).get("name") in REFRESH_TOOLS:
        name = ctx.params["name"]
        text = f"{name} is disabled: this server is read-only (start it with `docsbot mcp --allow-refresh`)"
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    return await call_next(ctx)


# --- Transports ---------------------------------------------------------------------------------------------------


class BearerTokenMiddleware:
    """ASGI middleware: HTTP requests must carry ``Authorization: Bearer <token>`` (RFC 6750), compared in
    constant time; anything else gets 401 with ``WWW-Authenticate: Bearer``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error": "invalid_token", "error_description": "Authorization: Bearer <token> required"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer error="invalid_token"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _serve_http(server: MCPServer, host: str, port: int, token: str | None) -> None:
    import uvicorn

    app: ASGIApp = ClosedSessionGuard(server.streamable_http_app(host=host))
    logging.getLogger("mcp.server.streamable_http").addFilter(_ClosedSessionFilter())
    if token:
        app = BearerTokenMiddleware(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)

    async def announce() -> None:
        while not web.started:
            await anyio.sleep(0.05)
        bound = web.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        print(f"docsbot mcp: serving http://{shown}:{bound[1]}/mcp", file=sys.stderr, flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await web.serve()
        tg.cancel_scope.cancel()


def serve(http: str | None = None, allow_refresh: bool = False) -> int:
    """Run the server until the client goes away (stdio) or the process is stopped (HTTP). Returns the exit
    code. Raises :class:`UsageError` for a bad address or a non-loopback bind without ``DOCSBOT_MCP_TOKEN``,
    :class:`docsbot.db.DatabaseError` / :class:`docsbot.embedding.EmbeddingModelError` when the database or
    the model cannot be reached, before anything is served."""
    token = os.environ.get(TOKEN_ENV, "").strip() or None
    address = parse_http_address(http) if http is not None else None
    if address is not None and not is_loopback(address[0]) and not token:
        raise UsageError(
            f"refusing to serve on {address[0]} without a token: set {TOKEN_ENV} (clients send it as "
            "'Authorization: Bearer <token>'), or bind to 127.0.0.1"
        )
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    settings = Settings()
    settings.setmodule("docsbot.settings", priority="project")
    dsn = db.resolve_dsn(settings)
    with db.connect(dsn) as conn:
        try:
            db.check_schema(conn)  # read-only: a reader never migrates (nor races a writer's migration)
        except db.NoSchema:
            logger.warning("nothing is indexed in this database yet: the tools answer so until a crawl indexes a site")
    index = DocsIndex(settings, dsn, load_embedder(settings), allow_refresh=allow_refresh)
    server = build_server(index)
    # SIGTERM (and uvicorn re-raising it after a graceful shutdown) ends the process through the cleanup below.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        index.open()
        mode = "read-only" if not allow_refresh else "refresh allowed"
        where = "stdio" if address is None else f"http {address[0]}:{address[1]}"
        logger.info("docsbot mcp on %s (%s, database %s)", where, mode, db.redact_dsn(dsn))
        try:
            if address is None:
                anyio.run(server.run_stdio_async)
            else:
                anyio.run(_serve_http, server, address[0], address[1], token)
        except* (KeyboardInterrupt, SystemExit):
            logger.info("docsbot mcp stopped")
    finally:
        index.close()
        signal.signal(signal.SIGTERM, previous)
    return 0
