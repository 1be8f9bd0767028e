"""The schema: ordered migration files (``docsbot/store/migrations/NNNN_name.sql``, read with
``importlib.resources`` so that they work from a zipped egg) applied by writers, and checked without writing by
readers.
"""

from __future__ import annotations

import logging
import re
from importlib.resources import files

import psycopg
from pgvector.psycopg import register_vector

from docsbot.store.connection import DatabaseError, one_line
from docsbot.store.locks import MIGRATION_LOCK

__all__ = ["NoSchema", "SchemaBehind", "check_schema", "has_schema", "migrate"]

logger = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "docsbot.store.migrations"


_MIGRATION_NAME = re.compile(r"^(\d{4})_[\w-]+\.sql$")


def _migrations() -> list[tuple[str, str]]:
    found = []
    for entry in files(MIGRATIONS_PACKAGE).iterdir():
        m = _MIGRATION_NAME.match(entry.name)
        if m:
            found.append((m.group(1), entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply the migrations of ``docsbot/store/migrations`` not yet recorded in ``schema_migrations``, in order, each
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
            f"this database role may not change the schema ({one_line(exc)}): read-only roles can search and show "
            "the status; crawls, deletions and `docsbot db migrate` need a role that owns the schema"
        ) from exc


def _migrate(conn: psycopg.Connection) -> list[str]:
    applied: list[str] = []
    with conn.transaction():
        # Under the lock: two sessions running CREATE TABLE IF NOT EXISTS at once both pass the existence check,
        # and the second fails with UniqueViolation on pg_type (six processes on a new database: 49 of 60 failed).
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
    for version, text in _migrations():
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
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
        which = f"migration {missing[0]} is" if len(missing) == 1 else f"migrations {', '.join(missing)} are"
        raise SchemaBehind(
            f"the database schema is behind this docsbot ({which} not applied): run "
            "`docsbot db migrate` (or any crawl) to bring it up to date"
        )
    newer = sorted(applied - set(known))
    if newer:
        logger.warning("the database has migrations this docsbot does not know (%s): upgrade docsbot", ", ".join(newer))
    register_vector(conn)
