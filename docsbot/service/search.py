"""One search function for every interface: ``docsbot search`` (CLI), the MCP server and the web pages.

A :class:`Searcher` lives as long as its process: it keeps a connection pool (psycopg_pool, thread-safe) and the
embedding model warm, so a long-running server pays for neither per query. The CLI builds one per process.
Ranking itself (SQL) lives in :func:`docsbot.store.ranking.search`.
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

from psycopg_pool import ConnectionPool

from docsbot import store
from docsbot.embedding.models import embed_query
from docsbot.service.errors import Invalid, NotFound
from docsbot.service.models import SearchHit
from docsbot.store import version_label

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import psycopg

    from docsbot.embedding.models import Embedder
    from docsbot.service.reranking import Reranker

__all__ = [
    "MAX_QUERY_CHARS",
    "BadQuery",
    "Searcher",
    "UnknownLibrary",
    "VersionNotReady",
    "resolve_version",
    "version_key",
]

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000


class UnknownLibrary(NotFound):
    """The library or version asked for is not indexed; the message names the nearest indexed names and lists
    what is indexed."""


class VersionNotReady(NotFound):
    """The version asked for is known but has no page to answer from (being indexed, empty, failed, never indexed:
    :mod:`docsbot.service.states`); the message says which and what to do."""


class BadQuery(Invalid):
    """An empty or oversized query, or a ``limit`` out of bounds."""


class Searcher:
    """Hybrid search over the index at ``dsn`` with ``embedder`` (which must be the model the versions were
    indexed with; versions of another model are skipped with a warning).

    Thread-safe: :meth:`search` may be called from several threads at once (the pool hands each its own
    connection; the embedder serializes model calls). Raises :class:`UnknownLibrary` for a library/version that
    is not indexed, :class:`BadQuery` for bad arguments, :class:`docsbot.store.DatabaseError` when the database
    cannot be reached.

    With a ``reranker`` (:func:`docsbot.service.reranking.load_reranker`), the first ``rerank_candidates`` fused
    results are re-scored by it and sorted by its score; the rest follow in the fused order. A reranker that fails
    leaves the fused order (a warning is logged, and an explanation says so).
    """

    def __init__(
        self,
        dsn: str,
        embedder: Embedder,
        pool_size: int = 4,
        *,
        reranker: Reranker | None = None,
        rerank_candidates: int = 30,
    ) -> None:
        self.embedder = embedder
        # The reranking stage (docsbot.service.reranking), None when off: then a search does no more work than
        # without it.
        self.reranker = reranker
        self.rerank_candidates = rerank_candidates
        # Ranking knobs passed to docsbot.store.ranking (names of store.SEARCH_DEFAULTS); `make eval` tunes them.
        self.tuning: dict[str, Any] = {}
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            open=False,
            configure=store.configure_connection,
            check=ConnectionPool.check_connection,  # a connection broken by a server restart is replaced
            name="docsbot-search",
        )

    def open(self, timeout: float = 30.0) -> Searcher:
        self._pool.open(wait=True, timeout=timeout)
        return self

    def close(self) -> None:
        self._pool.close()

    def warm_up(self) -> None:
        """Load the query model (and a local reranker) now rather than on the first search (a long-running server
        calls this once). A reranker that cannot load is logged; searches then answer in the fused order."""
        embed_query(self.embedder, ["warm up"])
        if self.reranker is not None and hasattr(self.reranker, "load"):
            try:
                self.reranker.load()
            except Exception as exc:  # the searches will say so too
                logger.warning("the reranker %s cannot load: %s", getattr(self.reranker, "name", "?"), exc)

    def __enter__(self) -> Searcher:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(self) -> AbstractContextManager[psycopg.Connection]:
        """``with searcher.connection() as conn``: a connection of the pool for other read-only queries of the same
        process (the MCP server's page and run lookups), given back when the block ends. Blocks up to the pool's
        timeout (30 s) when every connection is busy; a connection broken by a server restart is replaced first."""
        return self._pool.connection()

    def versions(self, library: str | None = None, version: str | None = None) -> list[store.VersionRow]:
        """Indexed versions matching ``library``/``version``; raises :class:`UnknownLibrary` if none does.

        A version is asked for exactly, or loosely (:func:`resolve_version`): ``latest`` is the library's newest
        version with pages, ``3`` or ``3.x`` its newest ``3.…`` one; the row returned names the version it resolved
        to. The error names the nearest indexed libraries (or versions of the library) first: ``fastapy is not
        indexed; did you mean fastapi? indexed: …``."""
        with self._pool.connection() as conn:
            if not store.has_schema(conn):
                raise UnknownLibrary("nothing is indexed yet; index a site with `scrapy crawl docs -a url=URL`")
            found = store.list_versions(conn, library, version)
            if found or (library is None and version is None):
                return found
            if library is not None and version is not None:
                loose = resolve_version(store.list_versions(conn, library), version)
                if loose is not None:
                    return [loose]
            known = store.list_versions(conn)
        raise UnknownLibrary(unknown_message(known, library, version))

    def readable(self, versions: list[store.VersionRow]) -> list[store.VersionRow]:
        """Those of ``versions`` (one library's, as :meth:`versions` found them) that have pages; raises
        :class:`VersionNotReady` naming the newest one's state (:func:`docsbot.service.states.version_status`) and
        the library's versions with pages when none of them has any."""
        ready = [v for v in versions if v.has_pages]
        if ready or not versions:
            return ready
        from docsbot.service.states import not_ready_message, version_status

        target = max(versions, key=lambda v: version_key(v.name))
        with self._pool.connection() as conn:
            last = store.latest_runs(conn, [target.id]).get(target.id)
            running = target.id in store.running_version_ids(conn)
            others = [v for v in store.list_versions(conn, target.library) if v.has_pages]
        status, reason = version_status(0, running, last)
        if status == "indexing" and last is not None and last.get("started_at") is not None:
            reason = f"a run started at {_iso(last['started_at'])} is in progress"
        labels = [version_label(v.library, v.name) for v in sorted(others, key=lambda v: version_key(v.name))[::-1]]
        raise VersionNotReady(not_ready_message(version_label(target.library, target.name), status, reason, labels))

    def search(
        self,
        query: str,
        library: str | None = None,
        version: str | None = None,
        limit: int = 5,
        *,
        chunks: bool = False,
        kind: str | None = None,
        explain: bool = False,
    ) -> list[SearchHit]:
        """The ``limit`` best results for ``query``: one per page (default) or raw chunks (``chunks=True``);
        ``kind``: only pages of that kind (``docs``, ``changelog`` or ``index``: ``pages.kind``). Raises
        :class:`BadQuery` for an empty or long query, a limit outside 1-50 or an unknown kind. Each result is a
        :class:`~docsbot.service.models.SearchHit` (one per page: its best-matching section or definition); with
        ``explain``, each carries why it ranks there (:mod:`docsbot.store.explaining`), from the same query, and
        with a reranker its ``rerank`` entry: ``reranker``, ``score``, ``rank_before`` and ``rank_after`` (1-based),
        or ``error`` when the reranker failed. ``score`` stays the fused score."""
        query = " ".join((query or "").split())
        if not query:
            raise BadQuery("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise BadQuery(f"the query is {len(query)} characters long; at most {MAX_QUERY_CHARS}")
        if not 1 <= limit <= 50:
            raise BadQuery(f"limit must be between 1 and 50, got {limit}")
        if kind is not None and kind not in store.SEARCH_KINDS:
            raise BadQuery(f"kind must be one of {', '.join(store.SEARCH_KINDS)}, got {kind!r}")
        versions = self.versions(library, version)
        if library is not None:
            versions = self.readable(versions)
        usable = [v for v in versions if v.embedding_model == self.embedder.name]
        for v in versions:
            if v not in usable and v.embedding_model:
                logger.warning(
                    "skipping %s: indexed with %s, not %s",
                    version_label(v.library, v.name),
                    v.embedding_model,
                    self.embedder.name,
                )
        if not usable:
            return []
        vector = embed_query(self.embedder, [query])[0]
        labels = {v.id: (v.library, v.name) for v in usable}
        with self._pool.connection() as conn:
            hits = store.search(
                conn,
                query,
                vector,
                list(labels),
                k=max(limit, self.rerank_candidates) if self.reranker is not None else limit,
                per_page=not chunks,
                page_kind=kind,
                explain=explain,
                **self.tuning,
            )
            fresh = store.page_freshness(conn, list({h.page_id for h in hits})) if hits else {}
        results = [
            SearchHit(
                url=h.url,
                deep_link=h.deep_link or h.url,
                title=h.title,
                heading_path=h.heading_path,
                score=round(h.score, 6),
                content=h.content,
                library=labels.get(h.version_id, ("", ""))[0],
                version=labels.get(h.version_id, ("", ""))[1],
                last_checked_at=_iso(fresh.get(h.page_id, {}).get("last_checked_at")),
                last_modified=fresh.get(h.page_id, {}).get("last_modified"),
                changed_at=_iso(fresh.get(h.page_id, {}).get("content_changed_at")),
                explanation=h.explanation,
            )
            for h in hits
        ]
        if self.reranker is not None:
            results = self._rerank(query, results)
        return results[:limit]

    def _rerank(self, query: str, hits: list[SearchHit]) -> list[SearchHit]:
        """``hits`` with their first :attr:`rerank_candidates` in the reranker's order (ties keep the fused order),
        the rest after them; unchanged when the reranker fails. Explanations get their ``rerank`` entry."""
        from docsbot.service.reranking import rerank_text

        assert self.reranker is not None
        name = getattr(self.reranker, "name", type(self.reranker).__name__)
        head, tail = hits[: self.rerank_candidates], hits[self.rerank_candidates :]
        started = time.perf_counter()
        try:
            scores = self.reranker.score(query, [rerank_text(h.title, h.heading_path, h.content) for h in head])
            if len(scores) != len(head):
                raise ValueError(f"{len(scores)} scores for {len(head)} texts")
        except Exception as exc:  # whatever the reranker raises, the search answers
            logger.warning("the reranker %s failed; results in the fused order: %s", name, exc)
            for hit in hits:
                if hit.explanation is not None:
                    hit.explanation["rerank"] = {"reranker": name, "error": str(exc)}
            return hits
        logger.debug("reranked %d results with %s in %.1f ms", len(head), name, (time.perf_counter() - started) * 1e3)
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        for after, before in enumerate(order, 1):
            if head[before].explanation is not None:
                head[before].explanation["rerank"] = {
                    "reranker": name,
                    "score": round(float(scores[before]), 6),
                    "rank_before": before + 1,
                    "rank_after": after,
                }
        return [head[i] for i in order] + tail


_PARTS = re.compile(r"(\d+)|(\D+)")


def version_key(name: str) -> tuple:
    """A version name as it sorts naturally: numbers as numbers (``3.10`` after ``3.9``), a release before its
    pre-releases' letters (``2.0`` after ``2.0rc1``)."""
    key: list[tuple[int, int | str]] = []
    for number, text in _PARTS.findall(name):
        key.append((1, int(number)) if number else (0, text))
    return (*key, (2, ""))


def resolve_version(candidates: list[store.VersionRow], wanted: str) -> store.VersionRow | None:
    """The newest of ``candidates`` (one library's versions) that ``wanted`` names loosely: ``latest`` (or
    ``stable``) for the newest; ``3``, ``3.x`` or ``3.*`` for the newest ``3`` or ``3.…``; a version with pages
    before one without (being indexed, empty, failed), so that ``latest`` answers while a new version is indexed.
    ``None`` if none."""
    wanted = wanted.strip().lower()
    if wanted in ("latest", "stable", "newest"):
        matching = list(candidates)
    else:
        prefix = re.sub(r"\.(x|\*)$", "", wanted)
        if not prefix or not re.fullmatch(r"[\w.+-]+", prefix):
            return None
        matching = [v for v in candidates if v.name.lower() == prefix or v.name.lower().startswith(prefix + ".")]
    return max(matching, key=lambda v: (v.has_pages, version_key(v.name)), default=None)


LISTED = 20  # an unknown name's error lists at most this many indexed versions


def unknown_message(known: list[store.VersionRow], library: str | None, version: str | None) -> str:
    """One line for a library or version that is not among ``known`` (every indexed version): what was asked,
    the nearest names (:func:`docsbot.service.docs.name_matches` for a library: case, separators, affixes, close
    spellings; ``difflib`` for a version of a known library), then what is indexed (the first :data:`LISTED`)."""
    import difflib

    from docsbot.service.docs import name_matches

    libraries = sorted({v.library for v in known})
    wanted = version_label(library or "*", version) if version is not None else (library or "*")
    if library is not None and library not in libraries:  # the library is what is unknown, whatever the version
        wanted = library
    elif version == "":
        wanted = f"{library} without a version"
    near: list[str] = []
    if library is not None and library not in libraries:
        near = [name for name, _ in name_matches(library, libraries, 3)]
        if not near:
            near = difflib.get_close_matches(library.lower(), libraries, n=3, cutoff=0.5)
    elif library is not None and version is not None:
        names = sorted((v.name for v in known if v.library == library), key=version_key, reverse=True)
        close = difflib.get_close_matches(version, names, n=3, cutoff=0.5) or names[:3]
        near = [version_label(library, name) for name in close]
    labels = [version_label(v.library, v.name) for v in known]
    indexed = ", ".join(labels[:LISTED]) + (f" and {len(labels) - LISTED} more" if len(labels) > LISTED else "")
    guess = f"did you mean {', '.join(near)}? " if near else ""
    return f"{wanted} is not indexed; {guess}indexed: {indexed or 'nothing yet'}"


def _iso(value: Any) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None
