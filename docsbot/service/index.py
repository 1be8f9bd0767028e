"""The service: every answer docsbot gives, for every interface (the CLI, the MCP server, the web pages).

:class:`DocsIndex` lives as long as its process: a :class:`~docsbot.service.search.Searcher` (connection pool and
embedding model), the settings, and the refreshes this process started. Interfaces call its methods and render what
they return; none assembles an answer of its own. Errors are :class:`~docsbot.service.errors.ServiceError`\\ s whose
message is what a person or agent reads (an interface maps the class to a tool error, an HTTP status or an exit
code), and psycopg / pool errors when the database is unreachable.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.parse
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from docsbot import store
from docsbot.arguments import parse_duration
from docsbot.network import BlockedAddress, NetworkPolicy, check_url
from docsbot.service.errors import Forbidden, Invalid, NotFound
from docsbot.service.models import (
    CancelResult,
    CandidateVersion,
    ChangesResult,
    DocsResult,
    DocsSection,
    LibraryCandidate,
    LibraryMatches,
    LibraryVersion,
    ListLibrariesResult,
    PageChangeInfo,
    PageResult,
    PageSection,
    RefreshResult,
    RemoveResult,
    RunInfo,
    RunList,
    SearchDocsResult,
    SearchHit,
    SymbolRef,
    VersionDiff,
)
from docsbot.service.runs import Launch, Launcher, iso, run_info
from docsbot.service.search import Searcher
from docsbot.service.sections import (
    anchor_section,
    find_heading,
    heading_anchors,
    page_headings,
    section_markdown,
    slugify,
)
from docsbot.store import version_label
from docsbot.urls import InvalidURL, Scope, canonical_url, without_credentials

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    import psycopg

    from docsbot.config import ProjectSettings
    from docsbot.embedding.models import Embedder

__all__ = ["DocsIndex", "parse_since"]


def parse_since(value: str | None, now: datetime) -> datetime | None:
    """``since`` as a time: ``None``/``''`` for none; a duration back from ``now`` (``7d``, ``12h``, ``2w``); or a
    date or time in ISO 8601 (``2026-11-20``, ``2026-11-20T08:00:00+00:00``; without a zone, UTC). Raises
    :class:`Invalid` for anything else."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    try:
        duration = parse_duration(text)
    except ValueError:
        duration = None
    if duration is not None:
        try:
            return now - duration
        except OverflowError:
            raise Invalid(f"since= {text!r} reaches back before the year 1") from None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise Invalid(f"since= takes a duration (7d, 12h, 2w) or a date or time (2026-11-20); got {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def check_text(**values: str | None) -> None:
    """Raise :class:`Invalid` naming the first of ``values`` PostgreSQL cannot take as text: one holding a NUL
    character, or one that is not valid Unicode (a lone surrogate, as a JSON ``\\ud800`` escape gives)."""
    for name, value in values.items():
        if value is None:
            continue
        if "\x00" in value:
            raise Invalid(f"{name} holds a NUL character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Invalid(f"{name} is not valid Unicode text") from None


def _interval(value: Any) -> str | None:
    """A refresh interval as people write it: ``7d``, ``12h``, ``30m`` (the largest unit that divides it)."""
    if value is None:
        return None
    seconds = int(value.total_seconds())
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _deep_link(url: str, anchor: str | None) -> str:
    return f"{url}#{anchor}" if anchor else url


DOCS_PAGES = 30  # get_docs: the pages search ranks for a topic, their sections packed in that order


class DocsIndex:
    """The index at ``dsn`` as the service answers about it. ``embedder`` is the query model (``None``: a process
    that does not search, such as ``docsbot status``); ``allow_writes`` enables :meth:`refresh` and :meth:`remove`
    (otherwise they raise :class:`Forbidden`); ``env`` is where ``SCRAPYD_URL`` is read (the process environment by
    default). ``allowed_networks``: what a crawl :meth:`index` starts may reach besides public addresses
    (``DOCSBOT_ALLOWED_NETWORKS``' syntax, :func:`docsbot.network.parse_allowed`; default: that setting). Raises
    ``ValueError`` for a malformed one.

    Every method is synchronous and thread-safe: servers call them on worker threads."""

    def __init__(
        self,
        settings: ProjectSettings | Mapping,
        dsn: str,
        embedder: Embedder | None = None,
        *,
        allow_writes: bool = False,
        pool_size: int = 4,
        env: Mapping[str, str] | None = None,
        allowed_networks: str | None = None,
    ) -> None:
        import os

        self.dsn = dsn
        self.settings = settings
        self.allow_writes = allow_writes
        self.searcher = Searcher(dsn, embedder, pool_size=pool_size)
        self._token_counter: Any = None  # docsbot.service.docs.TokenCounter, on the first docs()
        data_dir = Path(settings.get("DOCSBOT_DATA_DIR")).expanduser()
        scrapyd_url = (env if env is not None else os.environ).get("SCRAPYD_URL", "").strip()
        if allowed_networks is None:
            allowed_networks = str(settings.get("DOCSBOT_ALLOWED_NETWORKS") or "")
        self.network = NetworkPolicy.public(allowed_networks)
        self.network_limits = (
            int(settings.get("DOCSBOT_NETWORK_MAX_PAGES") or 10000),
            int(settings.get("DOCSBOT_NETWORK_MAX_DEPTH") or 20),
        )
        self.launcher = Launcher(dsn, data_dir / "mcp-runs", scrapyd_url, allowed_networks.strip())
        self._launches: dict[str, Launch] = {}
        self._refresh_lock = threading.Lock()

    def open(self, *, warm_up: bool = True) -> DocsIndex:
        """Open the connection pool and, with an embedder and ``warm_up``, load the query model now rather than
        on the first search."""
        self.searcher.open()
        if warm_up and self.searcher.embedder is not None:
            self.searcher.warm_up()
        return self

    def close(self) -> None:
        """Stop the refreshes this process started (SIGTERM: pages already stored stay stored), close the pool."""
        Launcher.stop(list(self._launches.values()))
        self.searcher.close()

    def __enter__(self) -> DocsIndex:
        return self.open(warm_up=False)

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(self):  # noqa: ANN201 - a context manager of a pooled psycopg.Connection
        return self.searcher.connection()

    # --- reads ---

    def search(
        self,
        query: str,
        library: str | None = None,
        version: str | None = None,
        limit: int = 5,
        kind: str | None = None,
    ) -> SearchDocsResult:
        """Page-level hybrid search (one result per page, its best section or definition); ``kind``: only pages of
        that kind (``docs``, ``changelog``, ``index``). Raises :class:`~docsbot.service.search.UnknownLibrary` and
        :class:`~docsbot.service.search.BadQuery`."""
        check_text(query=query, library=library, version=version, kind=kind)
        results = self.searcher.search(query, library or None, version, limit, kind=kind or None)
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
                    last_checked_at=r.last_checked_at,
                    last_modified=r.last_modified,
                    changed_at=r.changed_at,
                )
                for r in results
            ],
        )

    def resolve_library(self, name: str, limit: int = 5) -> LibraryMatches:
        """The indexed libraries ``name`` may mean (:func:`docsbot.service.docs.name_matches`: case, separators,
        affixes like ``python-`` or ``.js``, then close spellings), best first, each with its versions (newest
        first), page counts and when each was last refreshed and changed."""
        from docsbot.service.docs import name_matches
        from docsbot.service.search import version_key

        check_text(name=name)
        if not name.strip():
            raise Invalid("name: the library's name, e.g. 'requests'")
        rows = self.libraries(1).libraries
        matches = name_matches(name, sorted({r.library for r in rows}), limit)
        candidates = []
        for library, score in matches:
            versions = sorted((r for r in rows if r.library == library), key=lambda r: version_key(r.version),
                              reverse=True)  # fmt: skip
            candidates.append(
                LibraryCandidate(
                    library=library,
                    score=score,
                    versions=[
                        CandidateVersion(
                            version=v.version,
                            pages=v.pages,
                            last_refreshed=v.last_refreshed,
                            last_changed=v.last_changed,
                        )  # fmt: skip
                        for v in versions
                    ],
                )
            )
        return LibraryMatches(name=name, candidates=candidates)

    def docs(self, library: str, version: str | None = None, topic: str | None = None,
             max_tokens: int = 5000) -> DocsResult:  # fmt: skip
        """The best sections of ``library`` for ``topic`` (one per page, as search ranks the pages: the section or
        definition a result links, else its matching chunks), or without a topic the version's overview pages
        (the root and the pages near it), each whole or cut between blocks (a code example is never cut), until
        ``max_tokens`` tokens of the embedding model's tokenizer: their sum never exceeds it. ``version``: exact
        or loose (``latest``, ``3.x``); default the newest. Raises :class:`Invalid` for a budget outside
        100-100,000, :class:`~docsbot.service.search.UnknownLibrary` for a library or version not indexed."""
        from docsbot.service.docs import Piece, TokenCounter, pack

        check_text(library=library, version=version, topic=topic)
        if not 100 <= max_tokens <= 100_000:
            raise Invalid(f"max_tokens: between 100 and 100000, got {max_tokens}")
        topic = (topic or "").strip() or None
        target = self.searcher.versions(library, version if version is not None else "latest")[0]
        if self._token_counter is None:  # loaded once: the model's tokenizer.json is parsed, not read per call
            embedder = self.searcher.embedder
            self._token_counter = TokenCounter(embedder.tokenizer() if embedder is not None else None)
        count = self._token_counter
        pieces: list[Piece] = []
        if topic is not None:
            hits = self.searcher.search(topic, target.library, target.name, DOCS_PAGES)
            for hit in hits:
                anchor = hit.deep_link.partition("#")[2] if hit.deep_link else ""
                section = ""
                path = tuple(hit.heading_path)
                if anchor:
                    try:
                        found = self.page(hit.deep_link)
                    except NotFound:
                        found = None
                    if found is not None:
                        section, path = found.markdown, tuple(found.heading_path) or path
                pieces.append(Piece(hit.title, hit.url, hit.deep_link or hit.url, path, section or hit.content,
                                    hit.content if section else ""))  # fmt: skip
        else:
            with self.connection() as conn:
                pages = store.overview_pages(conn, target.id, 20)
            pieces = [Piece(title, url, url, (), markdown) for url, title, markdown in pages]
        packed = pack(pieces, max_tokens, count)
        sections = [
            DocsSection(
                title=p.title,
                heading_path=list(p.heading_path),
                url=p.url,
                deep_link=p.deep_link,
                tokens=tokens,
                content=text,
            )  # fmt: skip
            for p, text, tokens in packed
        ]
        return DocsResult(library=target.library, version=target.name, topic=topic, max_tokens=max_tokens,
                          tokens=sum(s.tokens for s in sections), sections=sections)  # fmt: skip

    def version_names(self) -> list[dict[str, str]]:
        """Every indexed version's ``library`` and ``version``, by name: one cheap query (a form's choices),
        where :meth:`libraries` counts every page and chunk."""
        with self.connection() as conn:
            if not store.has_schema(conn):
                return []
            return [{"library": v.library, "version": v.name} for v in store.list_versions(conn)]

    def libraries(self, runs: int = 1) -> ListLibrariesResult:
        """Every indexed version with its counts, vector coverage and embedding progress, and its last ``runs``
        runs (``last_run``, then ``recent_runs``)."""
        with self.connection() as conn:
            if not store.has_schema(conn):
                return ListLibrariesResult(libraries=[])
            rows = store.version_overview(conn, runs=max(1, runs))
            indexes = store.vector_indexes(conn)
        out = []
        for row in rows:
            waiting = row["waiting"]
            work = row["embedding"]
            if work is not None:
                rate = work["rate"] or None
                work = {**work, "seconds_left": round(waiting / rate) if rate else None}
            running = {row["id"]} if row["running"] else set()
            index = indexes.get(row["id"], store.VectorIndex("none"))
            infos = [
                run_info(
                    str(r["id"]),
                    {**r, "version_id": row["id"], "library": row["library"], "version": row["version"]},
                    running if i == 0 else set(),
                )
                for i, r in enumerate(row["runs"])
            ]
            out.append(
                LibraryVersion(
                    library=row["library"],
                    version=row["version"],
                    root_url=without_credentials(row["root_url"]),
                    pages=row["pages"],
                    chunks=row["chunks"],
                    definitions=row["definitions"],
                    vectors=row["vectors"],
                    vectors_waiting=waiting,
                    embedding=work,
                    embedding_model=row["embedding_model"],
                    vector_index=index.state,
                    vector_index_bytes=index.bytes,
                    last_updated=iso(row["last_updated"]),
                    last_changed=iso(row["last_changed"]),
                    last_refreshed=iso(row["last_refreshed"]),
                    refreshing=row["running"],
                    refresh_interval=_interval(row["refresh_interval"]),
                    next_due=iso(row["next_due_at"]),
                    failures=row["failures"] or 0,
                    last_error=row["last_error"],
                    last_run=infos[0] if infos else None,
                    recent_runs=infos[1:],
                )
            )
        return ListLibrariesResult(libraries=out)

    def page(self, url: str, section: str | None = None) -> PageResult:
        """The stored Markdown of the page at ``url`` (a ``url#anchor`` selects its section), or of ``section``
        (an anchor or a heading's text): from that heading to the next heading of the same or a higher level; the
        whole page comes with its sections. Raises :class:`Invalid` for a malformed URL and :class:`NotFound` for
        a page or section that is not stored."""
        check_text(url=url, section=section)
        url = url.strip()
        if "#" in url:
            url, _, fragment = url.partition("#")
            section = section or urllib.parse.unquote(fragment) or None
        try:
            key = canonical_url(url)
        except InvalidURL as exc:
            raise Invalid(f"{exc}; pass a page URL as search returns it") from None
        with self.connection() as conn:
            pages = store.find_pages(conn, key)
            if not pages:
                raise NotFound(self._not_stored(conn, key))
            page = pages[0]
            chunks = store.page_chunks(conn, page["id"])
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
            "updated_at": iso(page["updated_at"]),
            "last_checked_at": iso(page["last_checked_at"]),
            "last_modified": page["last_modified"],
            "changed_at": iso(page["content_changed_at"]),
        }
        anchors: dict[str, list[str]] = {}
        for _, path, anchor in chunks:
            if anchor and anchor not in anchors:
                anchors[anchor] = path
        # Every anchor of the page with its offset (pages.anchors, from the extraction); None for pages stored
        # before docsbot kept them: then only the chunks' first anchors are known.
        offsets = {ident: offset for offset, ident in page["anchors"] or []} if source == "page" else {}
        headings = page_headings(markdown) if source == "page" else []
        if not section:
            by_path: dict[tuple[str, ...], str] = {}
            for anchor, path in anchors.items():
                by_path.setdefault(tuple(path), anchor)
            own = heading_anchors(markdown, headings, [(o, i) for i, o in offsets.items()])
            sections = [
                PageSection(
                    heading=h.text,
                    level=h.level,
                    # the heading's own id (recorded by the crawl), else the first id recorded under it, else a slug
                    anchor=own.get(n)
                    or (slugify(h.text) if slugify(h.text) in anchors else by_path.get(h.path, slugify(h.text))),
                )
                for n, h in enumerate(headings)
                if h.level > 1
            ]
            return PageResult(**result, markdown=markdown, sections=sections)
        section = section.strip()
        ident = section.lstrip("#")
        if ident in offsets:
            index, text = anchor_section(markdown, headings, offsets[ident])
            path = list(headings[index].path) if index is not None else []
            return PageResult(**result, section=section, heading_path=path, markdown=text)
        anchored = anchors.get(section) or anchors.get(ident)
        if source == "page":
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
        known = sorted(set(anchors) | set(offsets)) or [slugify(h.text) for h in headings if h.level > 1]
        raise NotFound(
            f"no section {section!r} on {page['url']}; its sections: {', '.join(known[:40]) or 'none'}"
            + (" …" if len(known) > 40 else "")
        )

    def _not_stored(self, conn: psycopg.Connection, url: str) -> str:
        versions = store.list_versions(conn)
        for v in versions:
            if url in Scope.from_root(v.root_url):
                return (
                    f"{url} is not stored in {version_label(v.library, v.name)}: it was not reached by the last "
                    "crawl (out of depth, not linked, or gone); search finds the pages that are"
                )
        roots = ", ".join(f"{version_label(v.library, v.name)} ({without_credentials(v.root_url)})" for v in versions)
        return f"{url} is not in any indexed version; indexed: {roots or 'nothing yet'}"

    def run(self, run_id: str) -> RunInfo:
        """A run: one this process started (its ``run_id``) or any ``crawl_runs`` id. Raises :class:`NotFound`."""
        check_text(run_id=run_id)
        run_id = run_id.strip()
        launch = self._launches.get(run_id)
        if launch is not None:
            with self.connection() as conn:
                return self.launcher.state(launch, conn)
        if run_id.isascii() and run_id.isdigit() and int(run_id) < 2**63:
            with self.connection() as conn:
                row = store.crawl_run(conn, int(run_id))
                running = store.running_version_ids(conn)
            if row is not None:
                return run_info(run_id, row, running)
        raise NotFound(
            f"no run {run_id!r}: pass the run_id a refresh returned (this server's runs) or a crawl_runs id as the "
            "list of libraries reports it"
        )

    # --- what changed ---

    def changes(
        self,
        library: str,
        version: str | None = None,
        since: str | None = None,
        *,
        run: int | None = None,
        limit: int = 200,
        diffs: bool = False,
    ) -> ChangesResult:
        """The pages a library's runs added, modified (with the sections that changed; ``diffs``: the diff of its
        Markdown), deleted or moved, newest first: of one version, or of all the library's versions (``version``
        None); ``since`` a duration back from now (``7d``, ``12h``) or a date or time (``2026-11-20``, ISO 8601);
        ``run`` a ``crawl_runs`` id. Raises :class:`NotFound` for a library or version that is not indexed and
        :class:`Invalid` for a ``since`` it cannot read or a ``limit`` outside 1-1000."""
        check_text(library=library, version=version, since=since)
        if not 1 <= limit <= 1000:
            raise Invalid(f"limit must be between 1 and 1000, got {limit}")
        versions = self.searcher.versions(library, version)
        with self.connection() as conn:
            start = parse_since(since, store.database_now(conn))
            rows = store.list_changes(
                conn, [v.id for v in versions], since=start, run_id=run, limit=limit + 1, with_diff=diffs
            )
        listed = [
            PageChangeInfo(
                id=row["id"],
                kind=row["kind"],
                url=row["url"],
                old_url=row["old_url"],
                title=row["title"],
                sections=row["sections"],
                diff=row["diff"],
                at=iso(row["created_at"]),
                run_id=row["run_id"],
                library=row["library"],
                version=row["version"],
            )
            for row in rows[:limit]
        ]
        counts: dict[str, int] = {}
        for change in listed:
            counts[change.kind] = counts.get(change.kind, 0) + 1
        return ChangesResult(
            library=library,
            version=versions[0].name if version is not None and len(versions) == 1 else version,
            since=iso(start),
            counts=counts,
            changes=listed,
            truncated=len(rows) > limit,
        )

    def diff_versions(self, library: str, old_version: str, new_version: str, limit: int = 1000) -> VersionDiff:
        """What ``new_version`` of a library defines that ``old_version`` does not, what it no longer defines,
        and the names whose documentation text changed, from the two versions' symbol tables, with deep links.
        Raises :class:`NotFound` for a version that is not indexed."""
        check_text(library=library, old_version=old_version, new_version=new_version)
        (old,) = self.searcher.versions(library, old_version)
        (new,) = self.searcher.versions(library, new_version)
        with self.connection() as conn:
            found = store.symbol_diff(conn, old.id, new.id, limit)

        def refs(rows: list[dict]) -> list[SymbolRef]:
            return [
                SymbolRef(name=r["name"], url=r["url"], anchor=r["anchor"], deep_link=_deep_link(r["url"], r["anchor"]))
                for r in rows
            ]

        return VersionDiff(
            library=library,
            old_version=old.name,
            new_version=new.name,
            added=refs(found["added"]),
            removed=refs(found["removed"]),
            changed=refs(found["changed"]),
            not_compared=found["unknown"],
        )

    def export_pages(self, library: str, version: str | None = None) -> tuple[store.VersionRow, Iterator]:
        """The version (``version`` only needed when the library has several) and an iterator of its pages'
        ``(url, title, markdown)``, by depth then URL, read from the database as they are consumed."""
        target = self._one_version(library, version)

        def pages() -> Iterator[tuple[str, str, str]]:
            with self.connection() as conn:
                yield from store.version_pages(conn, target.id)

        return target, pages()

    def page_list(
        self, library: str, version: str | None = None
    ) -> tuple[store.VersionRow, list[tuple[str, str, str]]]:
        """The version (``version`` only needed when the library has several; loose names resolve) and its pages'
        ``(url, title, kind)`` by depth then URL: an llms.txt's list."""
        target = self._one_version(library, version)
        with self.connection() as conn:
            return target, store.page_list(conn, target.id)

    # --- writes ---

    def _require_writes(self, what: str) -> None:
        if not self.allow_writes:
            raise Forbidden(f"{what} is disabled: this server is read-only")

    def _one_version(self, library: str, version: str | None) -> store.VersionRow:
        check_text(library=library, version=version)
        versions = self.searcher.versions(library, version)
        if len(versions) > 1:
            names = ", ".join(repr(v.name) for v in versions)
            raise Invalid(f"{library} has several indexed versions ({names}); say which with version=")
        return versions[0]

    def refresh(self, library: str, version: str | None = None) -> RefreshResult:
        """Start a refresh of a library version (``version`` only needed when it has several); returns at once.
        A run of that version already in progress (this process's, or any holding its run lock) is reported with
        ``started=False``, never started twice. Raises :class:`Forbidden`, :class:`NotFound`, :class:`Invalid`,
        and :class:`~docsbot.service.errors.Upstream` when Scrapyd refuses."""
        check_text(library=library, version=version)
        self._require_writes("refresh")
        target = self._one_version(library, version)
        label = version_label(target.library, target.name)
        backend = self.launcher.backend

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
            with self.connection() as conn:
                for launch in self._launches.values():
                    if launch.version.id == target.id and self.launcher.state(launch, conn).state in (
                        "starting",
                        "running",
                    ):
                        message = f"a refresh of {label} started by this server is already in progress"
                        return result(launch.run_id, False, message, launch.scrapyd_job)
                if target.id in store.running_version_ids(conn):
                    run = store.latest_run_id(conn, target.id)
                    message = f"another run of {label} is in progress (one run per version at a time); "
                    return result(str(run) if run else "", False, message + "nothing was started")
                since = store.database_now(conn)
                launch = Launch(f"run-{uuid.uuid4().hex[:12]}", target, since)
                held = self._claim(conn, target, launch)
                if held is not None:
                    message = f"{label} cannot start now ({held}); nothing was started, try again later"
                    return result("", False, message)
            message = self._start(launch)
        return result(launch.run_id, True, message + "; follow it with its run_id", launch.scrapyd_job)

    def _claim(self, conn: psycopg.Connection, target: store.VersionRow, launch: Launch) -> str | None:
        """Claim ``target`` for ``launch`` as a scheduler claims a due version (no scheduler starts a second run of
        it meanwhile; the run's end releases it). ``None`` when claimed, else who holds it."""
        from docsbot.store import fleet as fleet_store

        who = f"{socket.gethostname()}:{os.getpid()}:{launch.run_id}"
        return fleet_store.claim_version(
            conn, target.id, who, fleet_store.DEFAULT_LEASE,
            host_concurrency=int(self.settings.get("DOCSBOT_HOST_CONCURRENCY") or fleet_store.HOST_CONCURRENCY),
            per_run=int(self.settings.get("CONCURRENT_REQUESTS_PER_DOMAIN") or fleet_store.PER_RUN_CONCURRENCY),
        )  # fmt: skip

    def _start(self, launch: Launch) -> str:
        """Start the claimed ``launch``; a launch that cannot start gives its claim back (with the failure's
        backoff, as a scheduler's would) and raises."""
        from docsbot.store import fleet as fleet_store

        try:
            message = self.launcher.start(launch)
        except Exception as exc:
            with self.connection() as conn:
                fleet_store.release_claim(conn, launch.version.id, f"the run could not start: {exc}")
            raise
        self._launches[launch.run_id] = launch
        return message

    def index(
        self,
        url: str,
        library: str | None = None,
        version: str = "",
        refresh: str | None = None,
        *,
        max_pages: int | None = None,
        max_depth: int | None = None,
    ) -> RefreshResult:
        """Start a full index of the docs at ``url`` as ``library`` (default: the URL's host) ``version``, on a
        network caller's behalf; with ``refresh`` (a duration: ``1d``, ``12h``), the version is then refreshed on
        that schedule (``docsbot scheduler``). Returns at once.

        The crawl and every later run of the version connect only to public addresses and those the server allows
        (``-a network=public``, :mod:`docsbot.network`); ``url``'s host is checked here first, on its resolved
        addresses. It requests at most ``max_pages`` pages, ``max_depth`` links deep, each at most the server's
        ``DOCSBOT_NETWORK_MAX_PAGES`` / ``DOCSBOT_NETWORK_MAX_DEPTH`` (their default). Raises :class:`Forbidden`
        (writes off; a host the policy refuses), :class:`Invalid` (a bad URL, one with credentials, a bad
        duration or limit, or a version that is already indexed: refresh it instead) and
        :class:`~docsbot.service.errors.Upstream`."""
        self._require_writes("indexing")
        check_text(url=url, library=library, version=version, refresh=refresh)
        from docsbot.arguments import CrawlArguments, SpiderArgumentError
        from docsbot.store import fleet as fleet_store

        page_cap, depth_cap = self.network_limits
        if max_pages is not None and not 1 <= max_pages <= page_cap:
            raise Invalid(f"max_pages must be between 1 and {page_cap} on this server, got {max_pages}")
        if max_depth is not None and not 0 <= max_depth <= depth_cap:
            raise Invalid(f"max_depth must be between 0 and {depth_cap} on this server, got {max_depth}")
        try:
            args = CrawlArguments.parse(url=url, library=library, version=version, mode="full")
            interval = parse_duration(refresh) if refresh else None
        except (SpiderArgumentError, ValueError) as exc:
            raise Invalid(str(exc).replace("-a ", "")) from None
        if urllib.parse.urlsplit(args.url).username is not None:
            raise Invalid("a root URL with a user name or password is not indexed from the network: pass it without")
        try:
            check_url(args.url, self.network)
        except BlockedAddress as exc:
            raise Forbidden(f"not indexing {args.url}: {exc}") from None
        label = version_label(args.library, args.version)
        limits = {"max_pages": max_pages or page_cap, "max_depth": depth_cap if max_depth is None else max_depth}
        run = {"network": "public", **{k: str(v) for k, v in limits.items()}}
        with self._refresh_lock:
            with self.connection() as conn:
                store.migrate(conn)  # a write: the schema may be new (or behind) here
                existing = store.find_version(conn, args.library, args.version)
                if (
                    existing is not None
                    and conn.execute(
                        "SELECT EXISTS (SELECT 1 FROM pages WHERE version_id = %s)", (existing.id,)
                    ).fetchone()[0]
                ):
                    root = without_credentials(existing.root_url)
                    raise Invalid(f"{label} is already indexed (from {root}); refresh it instead")
                settings = {**limits, "prune": "none", "render": "none", "network": "public"}
                fleet_store.declare_version(
                    conn, args.library, args.version, args.url, settings, interval, "mcp", {"args": run}
                )
                target = store.find_version(conn, args.library, args.version)
                since = store.database_now(conn)
                launch = Launch(f"run-{uuid.uuid4().hex[:12]}", target, since, mode="full", url=args.url, args=run)
                held = self._claim(conn, target, launch)  # declared due at once: no scheduler may start it too
                if held is not None:
                    raise Invalid(f"{label} cannot be indexed now ({held}); try again later")
            message = self._start(launch)
        schedule = f"; then refreshed every {refresh}" if interval else ""
        bounds = f" (at most {limits['max_pages']} pages, {limits['max_depth']} links deep)"
        return RefreshResult(
            run_id=launch.run_id,
            library=target.library,
            version=target.name,
            started=True,
            backend=self.launcher.backend,
            scrapyd_job=launch.scrapyd_job,
            message=message + bounds + schedule + "; follow it with its run_id",
        )

    def runs(self, library: str | None = None, version: str | None = None, limit: int = 20) -> RunList:
        """The latest ``limit`` runs (of a library or version), newest first, running ones included."""
        check_text(library=library, version=version)
        if not 1 <= limit <= 200:
            raise Invalid(f"limit must be between 1 and 200, got {limit}")
        versions = self.searcher.versions(library, version) if library else None
        with self.connection() as conn:
            rows = store.recent_runs(conn, [v.id for v in versions] if versions is not None else None, limit)
            running = store.running_version_ids(conn)
            latest = {row["version_id"]: row["id"] for row in reversed(rows)}
        return RunList(
            runs=[
                run_info(str(row["id"]), row, running if latest.get(row["version_id"]) == row["id"] else set())
                for row in rows
            ]
        )

    def cancel(self, run_id: str) -> CancelResult:
        """Stop a run this server started (a local crawl: SIGTERM; a Scrapyd job: ``cancel.json``). Pages it stored
        stay stored and it deletes nothing. Raises :class:`Forbidden` and :class:`NotFound`; a run started
        elsewhere is :class:`Invalid` (stop it where it runs)."""
        check_text(run_id=run_id)
        self._require_writes("cancelling runs")
        run_id = run_id.strip()
        launch = self._launches.get(run_id)
        if launch is None:
            by_row = next((x for x in self._launches.values() if str(x.crawl_run_id) == run_id), None)
            if by_row is None:
                if run_id.isascii() and run_id.isdigit():
                    raise Invalid(
                        f"run {run_id} was not started by this server: stop it where it runs (SIGTERM to its "
                        "`scrapy crawl`, or Scrapyd's cancel.json)"
                    )
                raise NotFound(f"no run {run_id!r} started by this server")
            launch = by_row
        with self.connection() as conn:
            state = self.launcher.state(launch, conn).state
        if state not in ("starting", "running"):
            return CancelResult(run_id=launch.run_id, cancelled=False, message=f"run {launch.run_id} is {state}")
        return CancelResult(run_id=launch.run_id, cancelled=True, message=self.launcher.cancel(launch))

    def remove(self, library: str, version: str | None = None) -> RemoveResult:
        """Delete a library version (``version=None``: every version, and the library) with its pages, chunks and
        runs, in one transaction, unless a run of it is in progress. Raises :class:`Forbidden`, :class:`NotFound`,
        and :class:`Invalid` when a run holds a version's lock (nothing is deleted then)."""
        check_text(library=library, version=version)
        self._require_writes("remove")
        targets = self.searcher.versions(library, version)
        locks = []
        try:
            for target in targets:
                try:
                    locks.append(store.lock_version(self.dsn, target))
                except store.DatabaseError as exc:
                    raise Invalid(f"{exc}; remove it once the run ends") from None
            with self.connection() as conn:  # the versions resolved and locked ("latest" names one by its number)
                deleted = store.delete_version(conn, library, version, [t.id for t in targets])
        finally:
            for lock in locks:
                lock.close()
        if not deleted:
            raise NotFound(f"nothing indexed as {version_label(library, version) if version is not None else library}")
        store.drop_version_indexes(self.dsn, [t.id for t in targets])
        return RemoveResult(removed=[{"version": label, "pages": pages} for label, pages in deleted])
