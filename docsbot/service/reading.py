"""The service's reads of the index: search, a library's name resolved, a library's best sections for a topic, the
indexed versions with their counts and runs, and runs.
"""

from __future__ import annotations

from typing import Any

from docsbot import store
from docsbot.service.core import IndexCore, check_text
from docsbot.service.errors import Invalid, NotFound
from docsbot.service.models import (
    CandidateVersion,
    DocsResult,
    DocsSection,
    LibraryCandidate,
    LibraryMatches,
    LibraryVersion,
    ListLibrariesResult,
    RunInfo,
    RunList,
    SearchDocsResult,
    SearchHit,
)
from docsbot.service.runs import iso, run_info
from docsbot.urls import Scope, without_credentials

__all__ = ["DOCS_PAGES", "Reading"]


def _interval(value: Any) -> str | None:
    """A refresh interval as people write it: ``7d``, ``12h``, ``30m`` (the largest unit that divides it)."""
    if value is None:
        return None
    seconds = int(value.total_seconds())
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


DOCS_PAGES = 30  # get_docs: the pages search ranks for a topic, their sections packed in that order


class Reading(IndexCore):
    """:meth:`search`, :meth:`resolve_library`, :meth:`docs`, :meth:`version_names`, :meth:`libraries`, :meth:`run`
    and :meth:`runs` of :class:`~docsbot.service.index.DocsIndex`."""

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
                    scope=_scope(row["root_url"], row["settings"]),
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


def _scope(root_url: str, settings: dict[str, Any] | None) -> str | None:
    """What a version's crawls cover, in one line (:meth:`docsbot.urls.Scope.describe`); ``None`` for stored settings
    that no longer read."""
    try:
        return Scope.of_version(without_credentials(root_url), settings).describe()
    except ValueError:
        return None
