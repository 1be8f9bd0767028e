"""The embedding queue: the chunks whose ``embedding`` is NULL. What :mod:`docsbot.embedding.worker`' workers claim,
read and write, and what ``embed_workers`` records of them. Claims use ``FOR UPDATE SKIP LOCKED`` (procrastinate's and
pgqueuer's way of sharing a PostgreSQL queue between workers: each row goes to one of them, nobody waits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "claim_waiting",
    "finish_worker",
    "register_worker",
    "stored_vectors",
    "waiting_by_version",
    "waiting_chunks",
    "waiting_chunks_async",
    "write_vectors",
]

# Waiting chunks of the worker's model (and versions), oldest first; rows another worker holds are skipped. Read
# through documents_unembedded_idx in id order, stopping at `limit` (a chunk's version is on its row since
# migration 0025): joined through pages, every waiting chunk was read and sorted for each claim, 35 ms a claim with
# 27,000 waiting, and slower as the queue's dead rows piled up.
_CLAIM = """
    SELECT d.id, d.content, d.context, (d.metadata ->> 'context_cut')::int, d.embed_hash,
           (SELECT v.embedding_dim FROM versions v WHERE v.id = d.version_id)
    FROM documents d
    WHERE d.embedding IS NULL
      AND d.version_id = ANY(ARRAY(SELECT id FROM versions WHERE embedding_model = %(model)s
                                   AND (%(versions)s::bigint[] IS NULL OR id = ANY(%(versions)s))))
    ORDER BY d.id
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED
"""
# A vector already stored for each text key, or NULL (one index probe per key).
STORED_VECTORS = """
    SELECT h, (SELECT d.embedding FROM documents d WHERE d.embed_hash = h AND d.embedding IS NOT NULL LIMIT 1)
    FROM unnest(%s::text[]) AS h
"""
# Every waiting chunk of these texts that no other transaction holds: the claimed ones (held by this one) and
# equal texts elsewhere (another page, version or library). Rows held elsewhere are left to their holder: never
# waited for, so two workers never deadlock. The vectors travel in binary (%b): pgvector's text form formats every
# float, 0.16 ms a 384-dimension vector in Python.
_WRITE = """
    UPDATE documents d SET embedding = u.embedding
    FROM unnest(%(hashes)s::text[], %(vectors)b::vector[]) AS u(embed_hash, embedding)
    WHERE d.embed_hash = u.embed_hash AND d.embedding IS NULL
      AND d.id IN (SELECT id FROM documents WHERE embed_hash = ANY(%(hashes)s) AND embedding IS NULL
                   FOR UPDATE SKIP LOCKED)
"""
# The queue's length: every count of chunks waiting for a vector reads this one statement (the search's own test of
# a version's share, inside its statement in docsbot.store.ranking, excepted: see there). By each chunk's
# version_id, as the claim reads them: what a worker counts is what it can claim.
_WAITING = """
    SELECT d.version_id, count(*) FROM documents d
    JOIN versions v ON v.id = d.version_id
    WHERE d.embedding IS NULL AND (%(model)s::text IS NULL OR v.embedding_model = %(model)s)
      AND (%(versions)s::bigint[] IS NULL OR d.version_id = ANY(%(versions)s))
    GROUP BY d.version_id
"""


def waiting_by_version(
    conn: psycopg.Connection, version_ids: list[int] | None = None, model: str | None = None
) -> dict[int, int]:
    """Chunks still without a vector, by version id, of ``version_ids`` (all versions: ``None``) and ``model``
    (any: ``None``); a version with none waiting is absent."""
    return dict(conn.execute(_WAITING, {"versions": version_ids, "model": model}).fetchall())


def waiting_chunks(conn: psycopg.Connection, version_ids: list[int] | None = None, model: str | None = None) -> int:
    """Chunks still without a vector, of ``version_ids`` (all versions: ``None``) and ``model`` (any: ``None``)."""
    return sum(waiting_by_version(conn, version_ids, model).values())


async def waiting_chunks_async(
    conn: psycopg.AsyncConnection, version_ids: list[int] | None = None, model: str | None = None
) -> int:
    """:func:`waiting_chunks` on an asynchronous connection."""
    cur = await conn.execute(_WAITING, {"versions": version_ids, "model": model})
    return sum(count for _, count in await cur.fetchall())


async def claim_waiting(
    conn: psycopg.AsyncConnection, model: str, version_ids: list[int] | None, limit: int
) -> list[tuple[int, str, str, int | None, str, int | None]]:
    """Lock up to ``limit`` waiting chunks of ``model`` (and ``version_ids``) for the caller's transaction, oldest
    first, skipping rows another transaction holds: ``(id, content, context, context_cut, embed_hash, dim)``."""
    cur = await conn.execute(_CLAIM, {"model": model, "versions": version_ids, "limit": limit})
    return await cur.fetchall()


async def stored_vectors(conn: psycopg.AsyncConnection, keys: list[str]) -> dict[str, Any]:
    """The vector already stored for each of these text keys (``embed_hash``), where one is."""
    cur = await conn.execute(STORED_VECTORS, (keys,))
    return {key: vector for key, vector in await cur.fetchall() if vector is not None}


async def write_vectors(conn: psycopg.AsyncConnection, vectors: dict[str, Any]) -> int:
    """Give every waiting chunk of these text keys that no other transaction holds its vector; returns the
    chunks written."""
    cur = await conn.execute(_WRITE, {"hashes": list(vectors), "vectors": list(vectors.values())})
    return cur.rowcount


async def register_worker(
    conn: psycopg.AsyncConnection, model: str, version_ids: list[int] | None, host: str, pid: int, run_id: int | None
) -> int:
    """Record a worker in ``embed_workers`` (rows older than a week go); returns its row id."""
    await conn.execute("DELETE FROM embed_workers WHERE updated_at < now() - interval '7 days'")
    cur = await conn.execute(
        "INSERT INTO embed_workers (model, version_ids, host, pid, run_id) VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (model, version_ids, host, pid, run_id),
    )
    return (await cur.fetchone())[0]


async def finish_worker(
    conn: psycopg.AsyncConnection,
    row_id: int,
    *,
    embedded: int,
    written: int,
    rate: float | None,
    final: bool,
    error: str | None,
) -> None:
    """Update a worker's ``embed_workers`` row: its counts and rate, and its end when ``final``."""
    await conn.execute(
        "UPDATE embed_workers SET updated_at = now(), embedded = %s, written = %s, rate = %s, "
        "finished_at = CASE WHEN %s THEN now() END, error = %s WHERE id = %s",
        (embedded, written, rate, final, error, row_id),
    )
