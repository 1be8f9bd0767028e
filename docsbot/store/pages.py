"""Pages and their chunks: the crawl's writes (:class:`PageStore`: one transaction per page, text first, every
step retried alike) and the reads of one stored page.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolClosed

from docsbot.store.connection import RetryPolicy, StoreUnavailable, gave_up
from docsbot.store.fleet import record_run_end
from docsbot.store.queue import STORED_VECTORS, waiting_chunks_async
from docsbot.store.ranking import lexical_stats_statements, symbol_keys

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from datetime import datetime

    from scrapy.settings import BaseSettings

    from docsbot.items import PageItem
    from docsbot.refresh import StoredPage

__all__ = ["STORED_PAGES_BATCH", "PageStore", "SavedPage", "find_pages", "page_chunks"]

logger = logging.getLogger(__name__)

STORED_PAGES_BATCH = 100  # rows per fetch when a refresh loads its stored pages (PageStore.stored_pages)


_INSERT_PAGE = """
    INSERT INTO pages (version_id, url, depth, canonical_url, title, etag, last_modified, content_type,
                       content_hash, links, markdown, anchors, extractor_version, fresh_until, html, html_encoding,
                       link_share)
    VALUES (%(version_id)s, %(url)s, %(depth)s, %(canonical_url)s, %(title)s, %(etag)s, %(last_modified)s,
            %(content_type)s, %(content_hash)s, %(links)s, %(markdown)s, %(anchors)s, %(extractor_version)s,
            %(fresh_until)s, %(html)s, %(html_encoding)s, %(link_share)s)
    ON CONFLICT (version_id, url) DO UPDATE SET
        canonical_url = EXCLUDED.canonical_url, title = EXCLUDED.title, etag = EXCLUDED.etag,
        last_modified = EXCLUDED.last_modified, content_type = EXCLUDED.content_type,
        content_hash = EXCLUDED.content_hash, links = EXCLUDED.links, markdown = EXCLUDED.markdown,
        anchors = EXCLUDED.anchors, extractor_version = EXCLUDED.extractor_version, fresh_until = EXCLUDED.fresh_until,
        html = coalesce(EXCLUDED.html, pages.html),
        html_encoding = CASE WHEN EXCLUDED.html IS NULL THEN pages.html_encoding ELSE EXCLUDED.html_encoding END,
        link_share = coalesce(EXCLUDED.link_share, pages.link_share)
    RETURNING id, xmax = 0
"""


# A stored page keeps its depth; its URL changes only when it moved (redirect).
_UPDATE_PAGE = """
    UPDATE pages SET url = %(url)s, canonical_url = %(canonical_url)s, title = %(title)s, etag = %(etag)s,
        last_modified = %(last_modified)s, content_type = %(content_type)s, content_hash = %(content_hash)s,
        links = %(links)s, markdown = %(markdown)s, anchors = %(anchors)s, extractor_version = %(extractor_version)s,
        fresh_until = %(fresh_until)s, html = coalesce(%(html)s, html),
        html_encoding = CASE WHEN %(html)s::bytea IS NULL THEN html_encoding ELSE %(html_encoding)s END,
        link_share = coalesce(%(link_share)s, link_share)
    WHERE id = %(page_id)s
    RETURNING id, false
"""


@dataclass(frozen=True)
class SeedFile:
    """A stored seed file (migration 0020): a sitemap, llms.txt or Doxygen ``menudata.js`` of the version, the
    validators it last answered 200 with and the links it listed then (canonical URLs; page URLs for ``kind``
    ``"pages"``, sitemap URLs for ``"sitemaps"``, a sitemap index)."""

    url: str
    kind: str
    etag: str | None
    last_modified: str | None
    links: tuple[str, ...]


@dataclass(frozen=True)
class SavedPage:
    """What :meth:`PageStore.save_page` wrote: the page's id, and of its chunks (when its content changed) how
    many took over a vector already stored for their text (``reused``) and how many wait for one (``waiting``)."""

    id: int
    reused: int = 0
    waiting: int = 0


class PageStore:
    """Asynchronous writes of a crawl, through a small connection pool (``pool_size`` connections).

    Every page is written in one transaction: page row with its validators, and its chunks replaced, text first
    (a chunk takes over the vector stored for its text, if any; otherwise it waits in the embedding queue,
    :mod:`docsbot.embedding.worker`). A crash at any point leaves the page as it was before or fully updated. Every
    operation is retried alike, by one :class:`RetryPolicy`, and raises
    :class:`StoreUnavailable` when it still fails.
    """

    def __init__(
        self,
        dsn: str,
        pool_size: int = 4,
        *,
        pool_timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        # check: a connection is tested before it is handed out, so that one broken by a server restart is
        # replaced instead of failing the page (one round trip; a page's transaction costs far more).
        self._pool = AsyncConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            open=False,
            configure=register_vector_async,
            check=AsyncConnectionPool.check_connection,
            timeout=pool_timeout,
            name="docsbot",
        )
        self.retry = retry or RetryPolicy()
        # Seconds the database spent on the change log (reading a page's old text, writing change rows): what
        # recording changes costs a run beside the diff itself (stats docsbot/changes/db_seconds).
        self.change_seconds = 0.0
        # Pages take turns for the pool's connections here, without a time limit: waiting for a turn is not an
        # error. The pool's timeout then only measures what a page holding a turn waits for a connection, which
        # is long only when connections cannot be opened (server down). Without it, hundreds of pages queued on
        # the pool while each transaction's awaits stood behind CPU work on the reactor thread, and waits passed
        # 30 s: 3,291 PoolTimeouts in a 9,116-page index of the GTK docs on a loaded machine.
        self._turns = asyncio.Semaphore(pool_size)

    @classmethod
    def from_settings(cls, dsn: str, settings: BaseSettings) -> PageStore:
        """A store configured by ``DOCSBOT_DB_POOL_SIZE``, ``DOCSBOT_DB_POOL_TIMEOUT`` (seconds a page waits for a
        connection), ``DOCSBOT_DB_RETRIES`` (attempts after the first) and ``DOCSBOT_DB_RETRY_DELAY`` (first
        backoff, seconds; doubled each time up to 8 s)."""
        return cls(
            dsn,
            settings.getint("DOCSBOT_DB_POOL_SIZE"),
            pool_timeout=settings.getfloat("DOCSBOT_DB_POOL_TIMEOUT"),
            retry=RetryPolicy.from_settings(settings),
        )

    @property
    def pool(self) -> AsyncConnectionPool:
        return self._pool

    async def _retrying(self, what: str, operation: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``operation`` (one transaction at most) by the store's :class:`RetryPolicy`. Each attempt is its own
        transaction, so a failed attempt wrote nothing; every operation retried here is idempotent (an upsert keyed
        by URL or page id, then its chunks replaced; a delete by id; an update of a run's row), so an attempt whose
        COMMIT was lost in transit is harmless to repeat. At most ``pool_size`` operations run at once; the others
        wait for their turn (no time limit) before their attempt starts. Raises :class:`StoreUnavailable` once the
        retries are spent; a closed pool (``PoolClosed``: the run is shutting down) is not retried."""
        tries = 0
        try:
            async for attempt in self.retry.async_retrying(what):
                with attempt:
                    tries = attempt.retry_state.attempt_number
                    async with self._turns:
                        return await operation()
        except PoolClosed as exc:
            raise StoreUnavailable(f"{what}: the connection pool is closed") from exc
        except psycopg.OperationalError as exc:
            raise gave_up(what, exc, tries) from exc
        raise AssertionError("unreachable")

    async def open(self) -> None:
        await self._pool.open(wait=False)

    async def close(self) -> None:
        await self._pool.close()

    async def stored_pages(self, version_id: int) -> dict[str, StoredPage]:
        """Every stored page of the version, keyed by URL. Retried; raises :class:`StoreUnavailable`.

        A refresh holds these for the whole run. A page's links are mostly URLs other pages link too, so every URL
        is kept once (``sys.intern``): memory grows with the number of distinct URLs plus 8 bytes per link, not
        with the total text of all links (measured: 20,000 pages × 100 links, 221 MiB as loaded, 19 MiB interned;
        about 100 MB for 100,000 such pages). The rows come from a server-side cursor, ``STORED_PAGES_BATCH`` at a
        time: a client-side result would hold every link as text besides the pages built from it (the GTK docs
        replicated to 100,265 pages: 265 MiB peak loaded at once, 120 MiB streamed).
        """
        from docsbot.refresh import StoredPage

        intern = sys.intern

        async def load() -> dict[str, StoredPage]:
            stored: dict[str, StoredPage] = {}
            async with self._pool.connection() as conn, conn.transaction(), conn.cursor(name="stored_pages") as cur:
                cur.itersize = STORED_PAGES_BATCH
                await cur.execute(
                    "SELECT id, url, etag, last_modified, content_hash, depth, links, last_checked_at, "
                    "extractor_version, fresh_until, html IS NOT NULL FROM pages WHERE version_id = %s "
                    "ORDER BY depth, id",
                    (version_id,),
                )
                async for row in cur:
                    stored[row[1]] = StoredPage(
                        row[0], intern(row[1]), *row[2:6], tuple(map(intern, row[6])), row[7], row[8], row[9], row[10]
                    )
            return stored

        return await self._retrying("loading the stored pages", load)

    async def seed_files(self, version_id: int) -> dict[str, SeedFile]:
        """The version's stored seed files, keyed by URL. Retried; raises :class:`StoreUnavailable`."""

        async def load() -> dict[str, SeedFile]:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT url, kind, etag, last_modified, links FROM seed_files WHERE version_id = %s", (version_id,)
                )
                return {row[0]: SeedFile(*row[:4], tuple(row[4])) for row in await cur.fetchall()}

        return await self._retrying("loading the seed files", load)

    async def save_seed_file(self, version_id: int, seed: SeedFile) -> None:
        """Store a seed file's validators and links (replacing what was stored for its URL); with neither an ETag
        nor a Last-Modified nothing could revalidate it, so its row is deleted instead. Retried; raises
        :class:`StoreUnavailable`."""

        async def save() -> None:
            async with self._pool.connection() as conn:
                if seed.etag is None and seed.last_modified is None:
                    await conn.execute(
                        "DELETE FROM seed_files WHERE version_id = %s AND url = %s", (version_id, seed.url)
                    )
                    return
                await conn.execute(
                    "INSERT INTO seed_files (version_id, url, kind, etag, last_modified, links) "
                    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (version_id, url) DO UPDATE SET kind = excluded.kind, "
                    "etag = excluded.etag, last_modified = excluded.last_modified, links = excluded.links, "
                    "fetched_at = now()",
                    (version_id, seed.url, seed.kind, seed.etag, seed.last_modified, list(seed.links)),
                )

        await self._retrying("storing a seed file", save)

    async def page_html(self, page_id: int) -> tuple[bytes, str | None] | None:
        """A stored page's HTML (decompressed) and the encoding it was read with, or ``None`` when none is stored.
        Retried; raises :class:`StoreUnavailable`."""

        async def read() -> tuple[bytes, str | None] | None:
            async with self._pool.connection() as conn:
                cur = await conn.execute("SELECT html, html_encoding FROM pages WHERE id = %s", (page_id,))
                row = await cur.fetchone()
            if not row or row[0] is None:
                return None
            try:
                return zlib.decompress(row[0]), row[1]
            except zlib.error:  # not what was written: the caller fetches the page again instead
                logger.warning("the stored HTML of page %s does not decompress", page_id)
                return None

        return await self._retrying("reading a stored page's HTML", read)

    async def page_markdown(self, page_id: int) -> str | None:
        """A stored page's Markdown (``None`` for a page stored before docsbot kept it, or gone). Retried."""

        async def read() -> str | None:
            async with self._pool.connection() as conn:
                started = time.perf_counter()
                cur = await conn.execute("SELECT markdown FROM pages WHERE id = %s", (page_id,))
                row = await cur.fetchone()
                self.change_seconds += time.perf_counter() - started
                return row[0] if row else None

        return await self._retrying("reading a stored page", read)

    async def save_page(self, item: PageItem, run_id: int | None = None) -> SavedPage:
        """Upsert the page and, if its content changed, replace its chunks (COPY BINARY), text first: a chunk whose
        ``embed_hash`` (model + embedded text) already has a vector anywhere in the database (any page, version or
        library) takes it over; the others are written without one and wait in the embedding queue
        (:mod:`docsbot.embedding.worker`). One transaction, retried (see :meth:`_retrying`); raises
        :class:`StoreUnavailable` naming the URL when it still cannot be written (the page is then as it was).

        A stored page keeps its stored depth. ``item.change`` (added, modified, moved) becomes a ``page_changes``
        row of run ``run_id`` in the same transaction.
        """
        values = {
            "version_id": item.version_id,
            "url": item.url,
            "canonical_url": item.canonical_url,
            "title": item.title,
            "etag": item.etag,
            "last_modified": item.last_modified,
            "content_type": item.content_type,
            "content_hash": item.content_hash,
            "depth": item.depth,
            "links": item.links,
            "markdown": item.markdown,
            "anchors": Jsonb([list(a) for a in getattr(item, "anchors", ())]),
            "extractor_version": item.extractor_version,
            "fresh_until": getattr(item, "fresh_until", None),
            "html": getattr(item, "html", None),
            "html_encoding": getattr(item, "html_encoding", None),
            "page_id": item.page_id,
            # The navigation share goes with the page's row, as its chunks do: kept as stored when the content did
            # not change (the chunks are then kept too) or when the item has none.
            "link_share": getattr(item, "link_share", None) if item.changed else None,
        }
        return await self._retrying(f"storing {item.url}", lambda: self._save_page(item, values, run_id))

    async def _save_page(self, item: PageItem, values: dict[str, Any], run_id: int | None) -> SavedPage:
        async with self._pool.connection() as conn, conn.transaction():
            if item.page_id is not None:  # a stored page, possibly moving to a new URL after a redirect
                cur = await conn.execute(_UPDATE_PAGE, values)
            else:
                cur = await conn.execute(_INSERT_PAGE, values)
            # `xmax = 0`: the row was inserted, not updated by ON CONFLICT (an updated row version carries the
            # updating transaction's id). A new page has no chunks nor symbols to delete: two statements fewer, and
            # the chunks' delete trigger not run, for each page of a first crawl.
            page_id, inserted = await cur.fetchone()
            change = getattr(item, "change", None)
            if change is not None:
                started = time.perf_counter()
                await conn.execute(
                    _INSERT_CHANGE,
                    (run_id, item.version_id, page_id, change.kind, item.url, getattr(item, "moved_from", None),
                     item.title, Jsonb(change.sections), change.diff),
                )  # fmt: skip
                self.change_seconds += time.perf_counter() - started
            if not item.changed:
                return SavedPage(page_id)
            # Before the page's old chunks go: they may hold the vectors of its unchanged texts.
            hashes = list({c.embed_hash for c in item.chunks if c.embedding is None})
            vectors: dict[str, Any] = {}
            if hashes:
                cur = await conn.execute(STORED_VECTORS, (hashes,))
                vectors = {key: vector for key, vector in await cur.fetchall() if vector is not None}
            if not inserted:
                await conn.execute("DELETE FROM documents WHERE page_id = %s", (page_id,))
            reused = waiting = 0
            async with conn.cursor().copy(
                "COPY documents (page_id, version_id, content, context, metadata, sort_order, embedding, embed_hash, "
                "kind) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["bigint", "bigint", "text", "text", "jsonb", "integer", "vector", "text", "int2"])
                for order, chunk in enumerate(item.chunks):
                    meta: dict[str, Any] = {"heading_path": chunk.heading_path}
                    if getattr(chunk, "anchor", None):
                        meta["anchor"] = chunk.anchor  # a contract: the MCP server and search read it
                    if getattr(chunk, "context_cut", None):
                        meta["context_cut"] = chunk.context_cut  # how the embedded text cut the context line
                    kind = getattr(chunk, "kind", 0)
                    if kind:
                        meta["name"] = chunk.name  # a definition: what it defines
                    vector = chunk.embedding if chunk.embedding is not None else vectors.get(chunk.embed_hash)
                    if vector is None:
                        waiting += 1
                    elif chunk.embedding is None:
                        reused += 1
                    await copy.write_row(
                        (
                            page_id,
                            item.version_id,
                            chunk.content,
                            chunk.context,
                            Jsonb(meta),
                            order,
                            vector,
                            chunk.embed_hash,
                            kind,
                        )
                    )
            await self._save_symbols(conn, item, page_id, inserted)
            return SavedPage(page_id, reused, waiting)

    async def _save_symbols(self, conn: psycopg.AsyncConnection, item: PageItem, page_id: int, new: bool) -> None:
        """The page's symbol table rows, replaced with its chunks (same transaction; a ``new`` page has none to
        delete). A name the page defines twice keeps its first row. The rows go in by one COPY instead of an INSERT
        each: the Python docs' 11,763 rows in 357 page transactions took 0.16 s of the client's CPU instead of
        0.27 s, 0.25 s of wall instead of 0.31 s (same rows)."""
        if not new:
            await conn.execute("DELETE FROM symbols WHERE page_id = %s", (page_id,))
        hashes = getattr(item, "symbol_hashes", None) or {}
        rows: dict[str, tuple[Any, ...]] = {}
        for name, anchor, *rest in getattr(item, "symbols", ()):
            if name not in rows:
                indexed = bool(rest[1:2] and rest[1])
                rows[name] = (page_id, item.version_id, name, anchor, symbol_keys(name), hashes.get(name), indexed)
        if rows:
            async with conn.cursor().copy(
                "COPY symbols (page_id, version_id, name, anchor, keys, doc_hash, indexed) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["bigint", "bigint", "text", "text", "text[]", "text", "bool"])
                for row in rows.values():
                    await copy.write_row(row)

    async def delete_pages(self, page_ids: list[int], run_id: int | None = None, record: bool = True) -> int:
        """Delete pages in one transaction; their chunks go by ``ON DELETE CASCADE``; with ``record``, each becomes
        a ``deleted`` row of run ``run_id``'s change log in the same transaction. Retried; returns the rows
        deleted; raises :class:`StoreUnavailable`."""
        if not page_ids:
            return 0

        async def delete() -> int:
            async with self._pool.connection() as conn, conn.transaction():
                if record:
                    started = time.perf_counter()
                    await conn.execute(_RECORD_DELETED, (run_id, page_ids))
                    self.change_seconds += time.perf_counter() - started
                cur = await conn.execute("DELETE FROM pages WHERE id = ANY(%s)", (page_ids,))
                return cur.rowcount

        return await self._retrying(f"deleting {len(page_ids)} pages", delete)

    async def mark_checked(
        self, run_id: int, page_ids: list[int], fresh: dict[int, datetime | None] | None = None
    ) -> None:
        """Record that ``page_ids`` answered 200/304 in run ``run_id``, and of those that answered 304 (``fresh``)
        the HTTP freshness their headers gave (one statement, at the end of a run; bookkeeping: ``updated_at`` does
        not move)."""
        if not page_ids:
            return
        fresh = fresh or {}
        until = [fresh.get(page_id) for page_id in page_ids]
        known = [page_id in fresh for page_id in page_ids]

        async def mark() -> None:
            async with self._pool.connection() as conn:
                await conn.execute(
                    """
                    UPDATE pages p SET last_seen_run = %s, last_checked_at = now(),
                        fresh_until = CASE WHEN f.known THEN f.until ELSE p.fresh_until END
                    FROM unnest(%s::bigint[], %s::timestamptz[], %s::boolean[]) AS f(id, until, known)
                    WHERE p.id = f.id
                    """,
                    (run_id, page_ids, until, known),
                )

        await self._retrying("marking checked pages", mark)

    async def start_run(self, version_id: int, mode: str, launch: str | None = None) -> int:
        """Record a new run of the version (its ``crawl_runs`` row, known by ``launch``: the token its launcher
        gave it) and return its id. The caller holds the version's run lock, so an earlier run of the version still
        without an end died before it could record one: it is marked ``interrupted`` in the same transaction.
        Retried, and idempotent with a token: a retry after a COMMIT that was lost (applied after all) returns the
        row it wrote."""

        async def start() -> int:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(_MARK_INTERRUPTED, (version_id, launch))
                cur = await conn.execute(
                    "INSERT INTO crawl_runs (version_id, mode, launch) VALUES (%s, %s, %s) "
                    "ON CONFLICT (launch) WHERE launch IS NOT NULL DO NOTHING RETURNING id",
                    (version_id, mode, launch),
                )
                row = await cur.fetchone()
                if row is None:  # this launch's row, written by an attempt whose COMMIT we did not hear
                    cur = await conn.execute("SELECT id FROM crawl_runs WHERE launch = %s", (launch,))
                    row = await cur.fetchone()
                return row[0]

        return await self._retrying("recording the start of the run", start)

    async def refresh_lexical_stats(self, version_id: int, repeats: bool = False) -> None:
        """Recompute the version's BM25 collection statistics (see :func:`search`) and, with ``repeats`` (the run
        stored or deleted pages), which of its pages repeat others (``page_repeats``), in one transaction. A run
        does this once, when its crawl is done (or in :meth:`finish_run` when it was not). Retried."""

        async def refresh() -> None:
            async with self._pool.connection() as conn, conn.transaction():
                await _refresh_lexical_stats(conn, version_id, repeats)

        await self._retrying("refreshing the search statistics", refresh)

    async def vectors_waiting(self, version_id: int) -> int:
        """Chunks of the version still without a vector (the version's embedding queue). Retried."""

        async def count() -> int:
            async with self._pool.connection() as conn:
                return await waiting_chunks_async(conn, [version_id])

        return await self._retrying("counting the chunks without a vector", count)

    async def finish_run(
        self,
        run_id: int,
        stats: dict[str, Any],
        outcome: str,
        reason: str,
        keep_changes: float | None = None,
        *,
        lexical_stats: bool = True,
    ) -> None:
        """Close the run's record: its end, stats and outcome (:func:`docsbot.refresh.run_outcome`), move its
        version's next due time on (:func:`docsbot.store.fleet.record_run_end`), refresh its version's BM25
        statistics unless ``lexical_stats`` is false (the run refreshed them when its crawl was done, and nothing
        they count changed since) and, with ``keep_changes`` (seconds), delete its version's change log rows older
        than that; retried (a busy pool or a restarting server does not cost the run its record); raises
        :class:`StoreUnavailable`."""

        async def finish() -> None:
            async with self._pool.connection() as conn, conn.transaction():
                cur = await conn.execute(
                    "UPDATE crawl_runs SET finished_at = now(), stats = %s, outcome = %s, outcome_reason = %s "
                    "WHERE id = %s RETURNING version_id",
                    (Jsonb(stats), outcome, reason or None, run_id),
                )
                (version_id,) = await cur.fetchone()
                if lexical_stats:
                    await _refresh_lexical_stats(conn, version_id, repeats=False)
                await record_run_end(conn, version_id, outcome in ("complete", "vectors_pending"), reason or None)
                if keep_changes:
                    await conn.execute(
                        "DELETE FROM page_changes WHERE version_id = %s "
                        "AND created_at < now() - make_interval(secs => %s)",
                        (version_id, keep_changes),
                    )

        await self._retrying("recording the end of the run", finish)


async def _refresh_lexical_stats(conn: psycopg.AsyncConnection, version_id: int, repeats: bool) -> None:
    for statement, params in lexical_stats_statements(version_id, repeats):
        await conn.execute(statement, params)


# Idempotent (page_changes_once_idx): a transaction retried after its COMMIT was lost writes the change once.
_ONCE = "ON CONFLICT (run_id, page_id, kind) WHERE run_id IS NOT NULL AND page_id IS NOT NULL DO NOTHING"
_INSERT_CHANGE = f"""
    INSERT INTO page_changes (run_id, version_id, page_id, kind, url, old_url, title, sections, diff)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) {_ONCE}
"""
_RECORD_DELETED = f"""
    INSERT INTO page_changes (run_id, version_id, page_id, kind, url, title)
    SELECT %s, version_id, id, 'deleted', url, title FROM pages WHERE id = ANY(%s) {_ONCE}
"""
_MARK_INTERRUPTED = """
    UPDATE crawl_runs SET outcome = 'interrupted',
        outcome_reason = 'the process ended before the run recorded its end; pages it stored stay stored'
    WHERE version_id = %s AND finished_at IS NULL AND outcome IS NULL AND launch IS DISTINCT FROM %s
"""


def find_pages(conn: psycopg.Connection, url: str) -> list[dict[str, Any]]:
    """Stored pages with this exact URL, newest version first: ``id, version_id, library, version, url, title,
    markdown`` (``None`` for a page stored before migration 0007 and not changed since), ``anchors`` (``[[offset,
    id], …]`` into the Markdown; ``None`` before migration 0016), ``updated_at, last_checked_at, last_modified,
    content_changed_at``."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """
            SELECT p.id, p.version_id, l.name AS library, v.name AS version, p.url, p.title, p.markdown,
                   p.anchors, p.updated_at, p.last_checked_at, p.last_modified, p.content_changed_at
            FROM pages p JOIN versions v ON v.id = p.version_id JOIN libraries l ON l.id = v.library_id
            WHERE p.url = %s ORDER BY p.version_id DESC
            """,
            (url,),
        ).fetchall()


def page_chunks(conn: psycopg.Connection, page_id: int) -> list[tuple[str, list[str], str | None]]:
    """The page's chunks in order (its text; not its definitions' own rows): ``(content, heading_path, anchor)``;
    ``anchor`` is the HTML id of the section the chunk sits under when the crawl recorded one
    (``metadata->>'anchor'``), else ``None``."""
    rows = conn.execute(
        "SELECT content, COALESCE(metadata -> 'heading_path', '[]'::jsonb), NULLIF(metadata ->> 'anchor', '') "
        "FROM documents WHERE page_id = %s AND kind = 0 ORDER BY sort_order, id",
        (page_id,),
    ).fetchall()
    return [(content, list(path), anchor) for content, path, anchor in rows]
