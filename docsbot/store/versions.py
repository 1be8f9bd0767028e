"""Libraries and their versions: what a version is (root URL, crawl settings, embedding model), its run lock, and
deleting one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from docsbot.store.connection import DatabaseError, connect
from docsbot.store.locks import RUN_LOCK

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg

__all__ = [
    "VersionRow",
    "bind_model",
    "delete_version",
    "find_version",
    "has_pages",
    "list_versions",
    "lock_version",
    "running_version_ids",
    "update_version_settings",
    "upsert_version",
    "version_label",
]


def version_label(library: str, version: str) -> str:
    """``library@version``, or ``library`` for the unversioned one (``version == ''``): how logs, errors and the
    CLI name a version."""
    return f"{library}@{version}" if version else library


@dataclass(frozen=True)
class VersionRow:
    id: int
    library: str
    name: str
    root_url: str
    settings: dict[str, Any]
    embedding_model: str | None
    embedding_dim: int | None
    has_pages: bool = True  # a stored page: indexed, not only declared or being indexed for the first time
    next_model: str | None = None  # the model it is being switched to (docsbot.store.reembed), and its dimension
    next_dim: int | None = None


_VERSION_SELECT = """
    SELECT v.id, l.name AS library, v.name, v.root_url, v.settings, v.embedding_model, v.embedding_dim,
           v.next_model, v.next_dim, EXISTS (SELECT 1 FROM pages p WHERE p.version_id = v.id) AS has_pages
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


def has_pages(conn: psycopg.Connection, version_id: int) -> bool:
    """Whether the version has a stored page: indexed, not only declared (a libraries file declares versions before
    their first index)."""
    return conn.execute("SELECT EXISTS (SELECT 1 FROM pages WHERE version_id = %s)", (version_id,)).fetchone()[0]


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


def update_version_settings(conn: psycopg.Connection, version: VersionRow, settings: dict[str, Any]) -> VersionRow:
    """Merge ``settings`` into the version's stored crawl settings (``versions.settings``, the keys given replaced,
    the others kept); returns the version as it now is."""
    with conn.transaction():
        conn.execute(
            "UPDATE versions SET settings = coalesce(settings, '{}'::jsonb) || %s WHERE id = %s",
            (Jsonb(settings), version.id),
        )
    found = find_version(conn, version.library, version.name)
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
    if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (RUN_LOCK, version.id)).fetchone()[0]:
        return conn
    conn.close()
    raise DatabaseError(
        f"another run of {version_label(version.library, version.name)} is in progress (one run per library "
        "version at a time); nothing was done"
    )


def bind_model(conn: psycopg.Connection, version: VersionRow, model: str, dim: Callable[[], int]) -> None:
    """Record the version's embedding model and vector dimension on its first run, or raise
    :class:`DatabaseError` if its vectors come from another model (one model per index: vectors of two models
    are never mixed; ``docsbot reembed`` switches a version's model). ``dim`` is only called on the first run
    (asking a model its dimension may load it)."""
    if version.embedding_model is None:
        dimension = dim()
        with conn.transaction():
            conn.execute(
                "UPDATE versions SET embedding_model = %s, embedding_dim = %s WHERE id = %s",
                (model, dimension, version.id),
            )
        return
    if version.embedding_model != model:
        label = version_label(version.library, version.name)
        switching = (
            f"; it is being switched to {model!r} (`docsbot reembed {label}`): this model's crawls are accepted once "
            "that completes"
            if version.next_model == model
            else f"; switch it with `docsbot reembed {label} --model NAME_OR_DIR` (searches go on meanwhile)"
        )
        raise DatabaseError(
            f"{label} was indexed with the embedding model {version.embedding_model!r} ({version.embedding_dim} "
            f"dimensions), but this run uses {model!r}: run it with the model the version has{switching}"
        )


def delete_version(
    conn: psycopg.Connection, library: str, version: str | None, ids: list[int] | None = None
) -> list[tuple[str, int]]:
    """Delete a version (``version=None``: every version and the library itself) with its pages, chunks and
    runs, in one transaction; ``ids``: exactly these versions of the library (a loose ``latest`` resolved by the
    caller), whatever ``version`` says. Returns ``(label, pages deleted)`` per version; empty if nothing matched."""
    deleted = []
    with conn.transaction():
        rows = list_versions(conn, library, version if ids is None else None)
        for row in rows if ids is None else [r for r in rows if r.id in ids]:
            (pages,) = conn.execute("SELECT count(*) FROM pages WHERE version_id = %s", (row.id,)).fetchone()
            conn.execute("DELETE FROM versions WHERE id = %s", (row.id,))
            deleted.append((version_label(row.library, row.name), pages))
        if version is None:
            conn.execute("DELETE FROM libraries WHERE name = %s", (library,))
    return deleted


def running_version_ids(conn: psycopg.Connection) -> set[int]:
    """Ids of the versions of this database whose run lock (see :func:`lock_version`) a session holds now, i.e.
    versions being indexed or refreshed. Read from ``pg_locks``, so it never takes or delays the lock itself."""
    rows = conn.execute(
        """
        SELECT objid::bigint FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND classid = %s AND objsubid = 2
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """,
        (RUN_LOCK,),
    ).fetchall()
    return {row[0] for row in rows}
