"""One HNSW graph per version: the vector indexes a search reads (migration 0025).

Each version whose model is bound (``versions.embedding_dim``) gets a partial index of its own::

    documents_embedding_v<ID>_hnsw_idx ON documents USING hnsw ((embedding::vector(DIM)) vector_cosine_ops)
        WHERE version_id = <ID> AND vector_dims(embedding) = DIM

so that a search limited to a version walks a graph of that version's vectors alone (pgvector's advice for
filtering on many distinct values: a partial index or a partition per value). The graph is built once the
version's vectors are in (at most :data:`READY_WAITING` of its chunks waiting: at the end of its first crawl, or of
the ``docsbot embed`` that gave them their vectors) and maintained vector by vector after that. A search names
each version it reads by its id (:mod:`docsbot.store.ranking`), which is what lets the planner prove the index's
predicate. A version without a valid index yet is still searched, exactly, through ``documents_version_idx``;
adding or removing a version never touches the others' graphs.

Everything here is DDL that must not stop readers or writers, so it runs on an autocommit connection, outside any
transaction: ``CREATE INDEX CONCURRENTLY`` (it waits for transactions older than itself, never blocks them), a
backfill in batches, and a ``NOT NULL`` set through a validated ``CHECK`` constraint (no table scan under an
exclusive lock). One process does it at a time (a session advisory lock).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from docsbot.store.connection import connect, one_line
from docsbot.store.locks import VECTOR_INDEX_LOCK
from docsbot.store.queue import waiting_by_version

__all__ = ["VectorIndex", "drop_version_indexes", "ensure_vector_indexes", "index_name", "vector_indexes"]

logger = logging.getLogger(__name__)

BACKFILL_BATCH = 20_000  # chunks tagged with their version per transaction (one id range of the primary key)
# HNSW build memory: the graph of one version (30,000 vectors of 384 dimensions: about 70 MB) must fit, or pgvector
# builds it on disk, several times slower
BUILD_MEMORY = "512MB"
# The graph's shape (pgvector's defaults: m 16, ef_construction 64). With the defaults, a hundred versions of make
# eval's corpora (bench/fleet_scale.py) left a few chunks out of reach for some queries: recall@10 against an exact
# scan 0.80 at worst at hnsw.ef_search 200 (0.90 at 400 and 800); m 24 and ef_construction 128 reach 0.90 at 200
# and 1.0 at 500 (docsbot.store.ranking's ef_search), for about 1.8 times the build time
HNSW_M = 24
HNSW_EF_CONSTRUCTION = 128
DDL_LOCK_TIMEOUT = "5s"  # the brief ACCESS EXCLUSIVE steps give up rather than queue every reader behind them
LOCK_POLL_SECONDS = 0.5  # how often a process waiting for another's graph builds tries the lock again
READY_WAITING = 0.1  # a version's graph is built once at most this share of its chunks waits for a vector

_INDEX = "documents_embedding_v{}_hnsw_idx"
_INDEX_PATTERN = r"^documents_embedding_v([0-9]+)_hnsw_idx$"


def index_name(version_id: int) -> str:
    """The name of a version's HNSW index."""
    return _INDEX.format(int(version_id))


@dataclass(frozen=True)
class VectorIndex:
    """How a version's vectors are indexed: ``state`` is ``"hnsw"`` (its own valid graph), ``"building"`` (a
    ``CREATE INDEX CONCURRENTLY`` has not finished: searched exactly meanwhile), ``"exact"`` (no graph: searched by
    an exact scan of its vectors) or ``"none"`` (no model bound yet); ``bytes``: the index's size on disk."""

    state: str
    dim: int | None = None
    bytes: int = 0


def vector_indexes(conn: psycopg.Connection) -> dict[int, VectorIndex]:
    """:class:`VectorIndex` of every version, by version id (read from the catalog: no lock, no scan)."""
    rows = conn.execute(
        """
        SELECT v.id, v.embedding_dim,
               -- a graph of another dimension (a model switch stopped between its swap and the new graph) is as
               -- good as an interrupted build: it serves no search of the version
               i.indisvalid
                 AND substring(pg_get_indexdef(i.indexrelid) from 'vector\\((\\d+)\\)')::int = v.embedding_dim,
               pg_relation_size(i.indexrelid)
        FROM versions v
        LEFT JOIN pg_class c ON c.relname = 'documents_embedding_v' || v.id || '_hnsw_idx'
             AND c.relnamespace = current_schema()::regnamespace
        LEFT JOIN pg_index i ON i.indexrelid = c.oid
        """
    ).fetchall()
    out = {}
    for version_id, dim, valid, size in rows:
        if dim is None:
            out[version_id] = VectorIndex("none")
        elif valid is None:
            out[version_id] = VectorIndex("exact", dim)
        else:
            out[version_id] = VectorIndex("hnsw" if valid else "building", dim, size or 0)
    return out


def ensure_vector_indexes(dsn: str, wait: float = 0.0) -> bool:
    """Bring the database's vector indexes to what :mod:`docsbot.store.vector_index` describes: tag every chunk
    with its version (the backfill of migration 0025, in batches of :data:`BACKFILL_BATCH`), make
    ``documents.version_id`` NOT NULL, build ``documents_version_idx`` and each version's HNSW index that is missing
    or invalid (an interrupted build), and drop the indexes of versions that no longer exist. A database already
    there costs one catalog query.

    One process does this at a time: another waits up to ``wait`` seconds for it (a run that has just filled its
    version's vectors waits, so that its graph is not left to its next run; a run that is starting does not), then
    returns False, leaving the work to the holder and to later calls. True otherwise. Raises ``psycopg.Error`` on a
    database failure: nothing is half-done by one (each step is a statement of its own, and the next call goes on
    from where this one stopped)."""
    with connect(dsn, autocommit=True) as conn:
        todo = _todo(conn)
        if not todo.any():
            return True
        if not _lock(conn, wait):
            logger.info("another process is building the vector indexes; left to it (waited %.0f s)", wait)
            return False
        try:
            # twice: a version bound while the first pass ran (its run found the lock taken) is built by the second
            for _ in range(2):
                todo = _todo(conn)
                if not todo.any():
                    break
                _build(conn, todo)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (VECTOR_INDEX_LOCK,))
    return True


def _lock(conn: psycopg.Connection, wait: float) -> bool:
    """Take the lock, trying again every :data:`LOCK_POLL_SECONDS` for up to ``wait`` seconds. Never a blocking
    ``pg_advisory_lock``: the holder builds graphs with ``CREATE INDEX CONCURRENTLY``, which waits for every
    transaction whose snapshot is older than its own, and a statement blocked on the lock keeps its snapshot, so the
    two would wait for each other until PostgreSQL's deadlock check cancelled one (two `docsbot reembed` of
    different versions ending together did)."""
    deadline = time.monotonic() + wait
    while not conn.execute("SELECT pg_try_advisory_lock(%s)", (VECTOR_INDEX_LOCK,)).fetchone()[0]:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(LOCK_POLL_SECONDS, left))
    return True


@dataclass
class _Todo:
    untagged: bool  # documents.version_id is not NOT NULL yet: the backfill (and then the constraint) is to do
    version_index: bool
    build: list[tuple[int, int, bool]]  # (version id, dimension, an invalid index exists)
    orphans: list[str]

    def any(self) -> bool:
        return self.untagged or self.version_index or bool(self.build or self.orphans)


def _todo(conn: psycopg.Connection) -> _Todo:
    not_null = conn.execute(
        "SELECT attnotnull FROM pg_attribute WHERE attrelid = 'documents'::regclass AND attname = 'version_id'"
    ).fetchone()[0]
    has_version_index = conn.execute(
        "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass('documents_version_idx')"
    ).fetchone()
    indexes = vector_indexes(conn)
    candidates = {v for v, i in indexes.items() if i.state in ("exact", "building")}
    ready = _ready(conn, candidates) if candidates and not_null else set()
    build = [(v, i.dim, i.state == "building") for v, i in indexes.items() if v in ready]
    known = set(indexes)
    orphans = [
        name
        for name, version_id in conn.execute(
            "SELECT relname, substring(relname from %s)::bigint FROM pg_class "
            "WHERE relkind = 'i' AND relnamespace = current_schema()::regnamespace AND relname ~ %s",
            (_INDEX_PATTERN, _INDEX_PATTERN),
        )
        if version_id not in known
    ]
    return _Todo(
        untagged=not not_null,
        version_index=not (has_version_index and has_version_index[0]),
        build=sorted(build),
        orphans=orphans,
    )


def _ready(conn: psycopg.Connection, version_ids: set[int]) -> set[int]:
    """The versions among ``version_ids`` whose graph is worth building now: some vectors, and at most
    :data:`READY_WAITING` of their chunks still waiting for one. A graph is maintained vector by vector once it
    exists (an HNSW insert: about 1 ms of the server's CPU at m 24), which is what capped ``docsbot embed`` at under
    1,000 chunks/s against an endpoint answering 5,000; built once over the vectors of a first index it costs
    about 0.4 ms a vector, and until then the version is searched by an exact scan (it is ranked by vector only
    once 90% of its chunks have theirs, ``vector_share``)."""
    rows = conn.execute(
        "SELECT v.id, (SELECT count(*) FROM documents d WHERE d.version_id = v.id) FROM unnest(%s::bigint[]) AS v(id)",
        (sorted(version_ids),),
    ).fetchall()
    waiting = waiting_by_version(conn, sorted(version_ids))
    return {v for v, chunks in rows if chunks > waiting.get(v, 0) and waiting.get(v, 0) <= READY_WAITING * chunks}


def _build(conn: psycopg.Connection, todo: _Todo) -> None:
    started = time.perf_counter()
    if todo.untagged:
        _backfill(conn)
        _set_not_null(conn)
    if todo.version_index:
        conn.execute("DROP INDEX CONCURRENTLY IF EXISTS documents_version_idx")  # an interrupted build: invalid
        conn.execute("CREATE INDEX CONCURRENTLY documents_version_idx ON documents (version_id)")
    set_build_session(conn)
    for version_id, dim, invalid in todo.build:
        build_version_index(conn, version_id, dim, replace_invalid=invalid)
    for name in todo.orphans:
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
    logger.info(
        "vector indexes: %d version graph(s) built, %d of removed versions dropped (%.1f s)",
        len(todo.build),
        len(todo.orphans),
        time.perf_counter() - started,
    )


def drop_version_indexes(dsn: str, version_ids: list[int]) -> None:
    """Drop the HNSW indexes of removed versions (``DROP INDEX CONCURRENTLY``: no reader or writer waits). Left
    behind, an empty index costs nothing but a predicate test per chunk written, and the next
    :func:`ensure_vector_indexes` drops it; removing a version drops it at once."""
    with connect(dsn, autocommit=True) as conn:
        for version_id in version_ids:
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(index_name(version_id))))


def set_build_session(conn: psycopg.Connection) -> None:
    """What a graph build's session needs: :data:`BUILD_MEMORY`, and no parallel workers: one backend builds, so
    that a crawl and the searches keep the other cores (on two cores a parallel build made searches 2.4 times
    slower meanwhile; one backend builds 30,000 vectors in about 10 s, beside a model that embeds them in minutes)."""
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(BUILD_MEMORY)))
    conn.execute("SET max_parallel_maintenance_workers = 0")


def build_version_index(conn: psycopg.Connection, version_id: int, dim: int, *, replace_invalid: bool = False) -> None:
    """``CREATE INDEX CONCURRENTLY`` the version's HNSW index (``conn``: autocommit, in no transaction; it waits for
    the transactions older than itself, so the caller's other connections must not hold one open). Does nothing if
    a valid one exists; ``replace_invalid``: drop the invalid leftover of an interrupted build first."""
    name = sql.Identifier(index_name(version_id))
    if replace_invalid:
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(name))
    started = time.perf_counter()
    conn.execute(
        sql.SQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON documents USING hnsw ((embedding::vector({dim})) "
            "vector_cosine_ops) WITH (m = {m}, ef_construction = {ef}) "
            "WHERE version_id = {version} AND vector_dims(embedding) = {dim}"
        ).format(
            name,
            dim=sql.Literal(int(dim)),
            version=sql.Literal(int(version_id)),
            m=sql.Literal(HNSW_M),
            ef=sql.Literal(HNSW_EF_CONSTRUCTION),
        )
    )
    logger.debug("built %s in %.1f s", index_name(version_id), time.perf_counter() - started)


def _backfill(conn: psycopg.Connection) -> None:
    low, high = conn.execute("SELECT min(id), max(id) FROM documents WHERE version_id IS NULL").fetchone()
    if low is None:
        return
    logger.info("tagging chunks with their version (migration 0025), ids %d to %d", low, high)
    for start in range(low, high + 1, BACKFILL_BATCH):
        conn.execute(
            "UPDATE documents d SET version_id = p.version_id FROM pages p "
            "WHERE p.id = d.page_id AND d.id >= %s AND d.id < %s AND d.version_id IS NULL",
            (start, start + BACKFILL_BATCH),
        )


def _set_not_null(conn: psycopg.Connection) -> None:
    """NOT NULL without scanning the table under ACCESS EXCLUSIVE: a NOT VALID check, validated under a lock that
    lets reads and writes go on, lets SET NOT NULL skip its scan (PostgreSQL 12+)."""
    conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(DDL_LOCK_TIMEOUT)))
    try:
        conn.execute(
            "ALTER TABLE documents DROP CONSTRAINT IF EXISTS documents_version_id_set, "
            "ADD CONSTRAINT documents_version_id_set CHECK (version_id IS NOT NULL) NOT VALID"
        )
        conn.execute("ALTER TABLE documents VALIDATE CONSTRAINT documents_version_id_set")
        conn.execute("ALTER TABLE documents ALTER COLUMN version_id SET NOT NULL")
        conn.execute("ALTER TABLE documents DROP CONSTRAINT documents_version_id_set")
    except psycopg.errors.LockNotAvailable as exc:
        logger.warning("documents.version_id stays nullable until the next run: %s", one_line(exc))
    except psycopg.errors.CheckViolation:
        # a chunk written without its version between the backfill and the check (an older docsbot writing): the
        # next call tags it and tries again
        conn.execute("ALTER TABLE documents DROP CONSTRAINT IF EXISTS documents_version_id_set")
        logger.warning("documents.version_id stays nullable until the next run: a chunk was written without it")
    finally:
        conn.execute("RESET lock_timeout")
