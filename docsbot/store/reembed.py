"""Switching a version's embedding model: a migration beside the index (migration 0029), never a new index.

A version being switched names its next model (``versions.next_model``, ``next_dim``). Each of its chunks gets a
second vector, ``documents.embedding_next`` (with its text key ``embed_hash_next``, :func:`docsbot.content.chunking.
embed_key` of the next model), from :class:`docsbot.embedding.migration.ReembedWorker`, which claims the chunks still
without one in id order (``FOR UPDATE SKIP LOCKED``, as the embedding queue does). Searches read ``embedding``, the
old model's vectors, all along. A worker killed at any moment loses only its uncommitted claim: what it committed is
never embedded again, and the next run claims the rest.

Crawls of the version go on meanwhile, with the old model (the version is still bound to it): a chunk they write is
a new row without ``embedding_next``, so the migration embeds it too before it completes. Once no chunk of the
version lacks its next vector, :func:`swap` holds the version's run lock (so that no crawl writes a chunk between
the check and the commit; a running crawl is waited for) and, in one transaction, moves every ``embedding_next`` into
``embedding`` (and ``embed_hash_next`` into ``embed_hash``, so that no other version ever takes a vector of one model
for a text of the other), and binds the version to the next model.

The version's HNSW graph is built again for the new vectors, in bulk, right after the swap
(:func:`docsbot.store.vector_index.ensure_vector_indexes`: ``CREATE INDEX CONCURRENTLY``, the version searched
exactly meanwhile). A graph that took the new vectors one by one in the swap's ``UPDATE`` (a new graph prepared empty
before it, or the old one when the dimension stays) held the swap's transaction 344 s for 20,000 vectors of 512
dimensions here, against 1.6 s for the swap and 85 s for the build in bulk (random vectors on a loaded machine: the
ratio is what counts). So a new dimension keeps the old graph through the swap (its predicate takes none of the new
vectors) and the same dimension drops it just before (:func:`drop_index_before_swap`); after the swap the version's
graph is of the wrong dimension, or missing, which ``ensure_vector_indexes`` (called by the swap's command, every
crawl, ``docsbot embed`` and ``docsbot db migrate``) builds again, so a process killed in between leaves nothing
undone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from psycopg import sql

from docsbot.store.connection import DatabaseError
from docsbot.store.locks import RUN_LOCK
from docsbot.store.vector_index import index_name
from docsbot.store.versions import VersionRow, version_label

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "MAX_INDEX_DIM",
    "Migration",
    "cancel_migration",
    "claim_next",
    "drop_index_before_swap",
    "migrations",
    "start_migration",
    "swap",
    "waiting_next",
    "waiting_next_async",
    "write_next",
]

logger = logging.getLogger(__name__)

# pgvector's HNSW index takes vectors of at most 2,000 dimensions (halfvec: 4,000); a version's vectors are searched
# through one, so a model answering more cannot be migrated to
MAX_INDEX_DIM = 2000
_WAITING = "SELECT count(*) FROM documents WHERE version_id = %s AND embedding_next IS NULL"


@dataclass(frozen=True)
class Migration:
    """A version being switched to ``model`` (``dim`` dimensions): ``done`` of its ``total`` chunks and definitions
    have their next vector."""

    version_id: int
    model: str
    dim: int
    done: int
    total: int


def migrations(conn: psycopg.Connection, version_ids: list[int] | None = None) -> dict[int, Migration]:
    """The migrations under way, by version id (of ``version_ids``; all: ``None``). Counts the version's chunks."""
    rows = conn.execute(
        """
        SELECT v.id, v.next_model, v.next_dim, count(d.embedding_next), count(d.id)
        FROM versions v LEFT JOIN documents d ON d.version_id = v.id
        WHERE v.next_model IS NOT NULL AND (%(ids)s::bigint[] IS NULL OR v.id = ANY(%(ids)s))
        GROUP BY v.id
        """,
        {"ids": version_ids},
    ).fetchall()
    return {row[0]: Migration(*row) for row in rows}


def waiting_next(conn: psycopg.Connection, version_id: int) -> int:
    """The version's chunks and definitions still without their next vector."""
    return conn.execute(_WAITING, (version_id,)).fetchone()[0]


async def waiting_next_async(conn: psycopg.AsyncConnection, version_id: int) -> int:
    """:func:`waiting_next` on an asynchronous connection."""
    cur = await conn.execute(_WAITING, (version_id,))
    return (await cur.fetchone())[0]


def start_migration(conn: psycopg.Connection, version: VersionRow, model: str, dim: int) -> bool:
    """Record that ``version`` is to be switched to ``model`` (``dim`` dimensions); True if a migration to it was
    already under way (it is resumed: nothing done is done again). Raises :class:`DatabaseError`, changing nothing,
    when the version has no model yet (nothing to switch: a crawl binds it), already uses ``model``, is being
    switched to another model (cancel that first), or ``dim`` is not one an HNSW index takes."""
    label = version_label(version.library, version.name)
    if version.embedding_model is None:
        raise DatabaseError(f"{label} has no vectors yet: a crawl with the model you want binds it to that model")
    if version.embedding_model == model:
        raise DatabaseError(f"{label} is already embedded with {model!r}; nothing to do")
    if not 0 < dim <= MAX_INDEX_DIM:
        raise DatabaseError(
            f"{model!r} answers {dim}-dimensional vectors; a version's HNSW index takes 1 to {MAX_INDEX_DIM}"
        )
    with conn.transaction():
        row = conn.execute(
            "SELECT next_model, next_dim FROM versions WHERE id = %s FOR UPDATE", (version.id,)
        ).fetchone()
        if row is None:
            raise DatabaseError(f"{label} was deleted meanwhile")
        if row[0] == model and row[1] == dim:
            return True
        if row[0] is not None:
            raise DatabaseError(
                f"{label} is being switched to {row[0]!r} already; finish it (docsbot reembed {label} --model ...) "
                f"or cancel it (docsbot reembed {label} --cancel) first"
            )
        conn.execute("UPDATE versions SET next_model = %s, next_dim = %s WHERE id = %s", (model, dim, version.id))
    return False


def cancel_migration(conn: psycopg.Connection, version: VersionRow, batch: int = 20_000) -> int:
    """Forget ``version``'s migration (``conn``: not in a transaction): its next model and its next vectors (in
    batches of ``batch`` chunks, each its own transaction). Searches never read them, so nothing a user sees
    changes. Returns the next vectors dropped."""
    dropped = 0
    conn.execute("UPDATE versions SET next_model = NULL, next_dim = NULL WHERE id = %s", (version.id,))
    conn.commit()
    while True:
        cur = conn.execute(
            "UPDATE documents SET embedding_next = NULL, embed_hash_next = NULL WHERE id IN (SELECT id FROM documents "
            "WHERE version_id = %s AND embed_hash_next IS NOT NULL LIMIT %s)",
            (version.id, batch),
        )
        conn.commit()
        dropped += cur.rowcount
        if cur.rowcount < batch:
            break
    return dropped


# The version's chunks still without a next vector, oldest first; rows another worker holds are skipped. Through
# documents_version_idx: the version's rows, filtered (no index of its own: it would hold every chunk outside a
# migration too)
_CLAIM = """
    SELECT d.id, d.content, d.context, (d.metadata ->> 'context_cut')::int
    FROM documents d
    WHERE d.version_id = %(version)s AND d.embedding_next IS NULL
    ORDER BY d.id
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED
"""
_WRITE = """
    UPDATE documents d SET embedding_next = u.embedding, embed_hash_next = u.embed_hash
    FROM unnest(%(ids)s::bigint[], %(hashes)s::text[], %(vectors)b::vector[]) AS u(id, embed_hash, embedding)
    WHERE d.id = u.id
"""
# The next model's vector already stored for a text key: a version bound to that model holds it
_STORED = """
    SELECT h, (SELECT d.embedding FROM documents d WHERE d.embed_hash = h AND d.embedding IS NOT NULL
               AND d.version_id IN (SELECT id FROM versions WHERE embedding_model = %(model)s) LIMIT 1)
    FROM unnest(%(keys)s::text[]) AS h
"""


async def claim_next(
    conn: psycopg.AsyncConnection, version_id: int, limit: int
) -> list[tuple[int, str, str, int | None]]:
    """Lock up to ``limit`` chunks of the version still without a next vector for the caller's transaction,
    oldest first: ``(id, content, context, context_cut)``."""
    cur = await conn.execute(_CLAIM, {"version": version_id, "limit": limit})
    return await cur.fetchall()


async def stored_next(conn: psycopg.AsyncConnection, model: str, keys: list[str]) -> dict[str, Any]:
    """The vector of ``model`` already stored for each of these text keys (by a version bound to it), where one is."""
    cur = await conn.execute(_STORED, {"model": model, "keys": keys})
    return {key: vector for key, vector in await cur.fetchall() if vector is not None}


async def write_next(conn: psycopg.AsyncConnection, rows: list[tuple[int, str, Any]]) -> int:
    """Give each claimed chunk ``(id, text key, vector)`` its next vector; returns the chunks written."""
    cur = await conn.execute(
        _WRITE,
        {"ids": [r[0] for r in rows], "hashes": [r[1] for r in rows], "vectors": [r[2] for r in rows]},
    )
    return cur.rowcount


def drop_index_before_swap(conn: psycopg.Connection, version: VersionRow, dim: int) -> None:
    """Before the swap of a version whose dimension stays (``conn``: autocommit): drop its graph
    (``DROP INDEX CONCURRENTLY``: no reader or writer waits), which would otherwise take each new vector one by one
    inside the swap's transaction; the version is searched exactly until its graph is built again. Nothing to do for a
    new dimension (the old graph's predicate takes none of the new vectors)."""
    if version.embedding_dim == dim:
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(index_name(version.id))))


def swap(conn: psycopg.Connection, version: VersionRow, model: str, dim: int) -> int | None:
    """Make the next vectors the version's, in one transaction (``conn``: not in a transaction): if the version's
    run lock is free and every chunk has its next vector, move ``embedding_next``/``embed_hash_next`` into
    ``embedding``/``embed_hash``, bind the version to ``model`` and ``dim`` and end its migration. Returns the
    chunks swapped, or ``None`` when it cannot yet: a run holds the lock (a crawl writing chunks) or a chunk still
    waits (one a crawl wrote meanwhile). Raises :class:`DatabaseError` when the migration is no longer
    ``model``'s (cancelled or replaced meanwhile)."""
    with conn.transaction():
        if not conn.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", (RUN_LOCK, version.id)).fetchone()[0]:
            return None
        row = conn.execute("SELECT next_model, next_dim FROM versions WHERE id = %s FOR UPDATE", (version.id,))
        found = row.fetchone()
        if found is None or tuple(found) != (model, dim):
            raise DatabaseError(
                f"the migration of {version_label(version.library, version.name)} to {model!r} was cancelled or "
                "replaced meanwhile; nothing was swapped"
            )
        if conn.execute(
            "SELECT EXISTS (SELECT 1 FROM documents WHERE version_id = %s AND embedding_next IS NULL)", (version.id,)
        ).fetchone()[0]:
            return None
        cur = conn.execute(
            "UPDATE documents SET embedding = embedding_next, embed_hash = embed_hash_next, embedding_next = NULL, "
            "embed_hash_next = NULL WHERE version_id = %s",
            (version.id,),
        )
        conn.execute(
            "UPDATE versions SET embedding_model = next_model, embedding_dim = next_dim, next_model = NULL, "
            "next_dim = NULL WHERE id = %s",
            (version.id,),
        )
        return cur.rowcount
