"""What every ``docsbot`` command shares: the project's settings, a database connection whose schema is checked (or
migrated), the service over it, and ``LIBRARY@VERSION`` arguments.

docsbot.store (psycopg, numpy: about 0.3 s) and docsbot.service are imported inside these functions, as in the
commands: `docsbot search` starts loading the query model on a thread first, and its imports run while the model
loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docsbot.project_settings import ProjectSettings

if TYPE_CHECKING:
    import psycopg

    from docsbot.service import DocsIndex

__all__ = ["database", "docs_index", "library_version", "project_settings"]


def project_settings() -> ProjectSettings:
    """docsbot's settings (``docsbot.settings``: the environment, validated), read without Scrapy: importing scrapy
    costs about 0.4 s of every `docsbot search`."""
    return ProjectSettings("docsbot.settings")


def database(*, write: bool = False) -> psycopg.Connection:
    """A connection to the configured (or embedded) database. ``write``: its schema is migrated first (commands
    that write); otherwise it is only checked (:func:`docsbot.store.check_schema`: raises ``NoSchema`` or
    ``SchemaBehind``), so that read-only commands work with a role that may only ``SELECT``."""
    from docsbot import store

    settings = project_settings()
    conn = store.connect(store.resolve_dsn(settings), retry=store.RetryPolicy.from_settings(settings))
    try:
        if write:
            store.migrate(conn)
        else:
            store.check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def docs_index(*, write: bool = False) -> DocsIndex:
    """The service over the configured (or embedded) database, with no query model (these commands do not
    search); its schema migrated first when ``write``, else checked (see :func:`database`)."""
    from docsbot import store
    from docsbot.service import DocsIndex

    settings = project_settings()
    database(write=write).close()
    return DocsIndex(settings, store.resolve_dsn(settings), allow_writes=write, pool_size=1)


def library_version(text: str) -> tuple[str, str | None]:
    """``LIBRARY`` or ``LIBRARY@VERSION`` (``LIBRARY@`` names the unversioned one)."""
    library, sep, version = text.partition("@")
    return library, (version if sep else None)
