"""``docsbot delete``, ``db stop`` and ``db migrate``: a version's data removed, the embedded PostgreSQL stopped, the
schema brought up to date."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from docsbot.cli.common import docs_index, project_settings
from docsbot.display import printable

if TYPE_CHECKING:
    import argparse

__all__ = ["cmd_db_migrate", "cmd_db_stop", "cmd_delete"]


def cmd_delete(args: argparse.Namespace) -> int:
    from docsbot.service import NotFound

    try:
        with docs_index(write=True) as index:
            removed = index.remove(args.library, args.version).removed
    except NotFound:
        which = f"{args.library}@{args.version}" if args.version is not None else args.library
        print(f"docsbot: nothing indexed as {printable(which)}", file=sys.stderr)
        return 1
    for version in removed:
        print(f"deleted {printable(version['version'])}: {version['pages']} pages with their chunks and runs")
    return 0


def cmd_db_stop(args: argparse.Namespace) -> int:
    from pathlib import Path

    from docsbot.store import embedded

    settings = project_settings()
    if settings.get("DATABASE_URL"):
        print("docsbot: DATABASE_URL is set; docsbot does not manage that server", file=sys.stderr)
        return 2
    pgdata = Path(settings.get("DOCSBOT_PGDATA")).expanduser().resolve()
    if not (pgdata / "PG_VERSION").is_file():
        print(f"no embedded PostgreSQL in {pgdata}")
        return 0
    stopped = embedded.stop(pgdata)
    print(f"{'stopped' if stopped else 'not running:'} the embedded PostgreSQL in {pgdata}")
    return 0


def cmd_db_migrate(args: argparse.Namespace) -> int:
    from docsbot import store

    settings = project_settings()
    dsn = store.resolve_dsn(settings)
    with store.connect(dsn, retry=store.RetryPolicy.from_settings(settings)) as conn:
        applied = store.migrate(conn)
    store.ensure_vector_indexes(dsn)
    print(f"applied migrations {', '.join(applied)}" if applied else "the database schema is up to date")
    return 0
