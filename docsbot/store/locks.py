"""Every PostgreSQL advisory lock docsbot takes: its key, its scope, and what it serializes.

An advisory lock means only what its takers agree it means, and every docsbot process sharing a database agrees
through these keys: a process of an older docsbot still running beside a newer one takes the same key for the same
job. So no value here may change (``tests/test_db.py`` pins them), and a new lock takes a key no other one uses.

PostgreSQL keeps two key spaces that never collide: one ``bigint`` key (``pg_advisory_lock(key)``, shown in
``pg_locks`` with ``objsubid = 1``) and a pair of ``int4`` keys (``pg_advisory_lock(key, id)``, ``objsubid = 2``).
A **session** lock is held until it is released or its connection closes (a process that dies releases it with its
connection); a **transaction** lock (``pg_advisory_xact_lock``) until the transaction that took it ends.

- :data:`MIGRATION_LOCK`: transaction, one key. Applying migrations: one process migrates at a time
  (:func:`docsbot.store.schema.migrate`).
- :data:`RUN_LOCK`: session, a pair (the key, the version's id). Runs of one version: one at a time, held by the run
  on a connection of its own for its whole life (:func:`docsbot.store.versions.lock_version`).
- :data:`VECTOR_INDEX_LOCK`: session, one key. Building the per-version HNSW graphs (and dropping those of removed
  versions): one process at a time (:func:`docsbot.store.vector_index.ensure_vector_indexes`).
- :data:`CLAIM_LOCK`: transaction, one key. Claims of due versions: one claim decides at a time, so that two never
  overrun a host's budget together (:mod:`docsbot.store.fleet`).
"""

from __future__ import annotations

__all__ = ["CLAIM_LOCK", "MIGRATION_LOCK", "RUN_LOCK", "VECTOR_INDEX_LOCK"]

# Transaction lock, (key): every step of a migration, creating schema_migrations included, runs under it.
MIGRATION_LOCK = 4_242_001
# Session lock, (key, version id): the run of a version holds it on a connection of its own until it ends;
# docsbot.store.running_version_ids reads the holders from pg_locks (classid = this key, objsubid = 2).
RUN_LOCK = 4_242_002
# Session lock, (key): the process building vector indexes holds it for the build (others wait or leave it).
VECTOR_INDEX_LOCK = 4_242_003
# Transaction lock, (key): a claim of a due version, decided against every claim already held on its host.
CLAIM_LOCK = 0x646F_6373_636C
