"""Fleets: the library versions a libraries file declares, when each is due, and who runs it.

A version declared by a libraries file carries its refresh interval and when it is next due (migration 0017).
Schedulers claim due versions with one ``UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)``: two schedulers on
two machines never claim the same version, and a claim is a lease (``claimed_until``), so a claim whose run never
started (a Scrapyd node that lost the job, a scheduler killed between claim and launch) is taken again once it
expires. The run itself records its end (:func:`record_run_end`, in the transaction that finishes its
``crawl_runs`` row): the version is due again an interval later, or, after a run that did not complete, after a
backoff that doubles with each failure in a row (capped by the interval). The per-version run lock
(:func:`docsbot.store.lock_version`) stays the last guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from docsbot.store.locks import CLAIM_LOCK

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "DEFAULT_LEASE",
    "BACKOFF_BASE",
    "DueVersion",
    "claim_due",
    "claim_version",
    "declare_version",
    "declared_settings",
    "declared_versions",
    "next_due_times",
    "release_claim",
    "record_run_end",
    "versions_on_site",
]

BACKOFF_BASE = timedelta(minutes=5)  # after the n-th failure in a row: 5 min × 2^(n-1), at most the interval


@dataclass(frozen=True)
class DueVersion:
    """A version a scheduler claimed: what it needs to start its run. ``indexed``: it has pages (a refresh), else
    it was declared and never indexed (a full index)."""

    id: int
    library: str
    name: str
    root_url: str
    settings: dict[str, Any]
    refresh_interval: timedelta | None
    next_due_at: datetime | None
    failures: int
    indexed: bool
    run_args: dict[str, Any]
    # the per-domain concurrency its run gets (CONCURRENT_REQUESTS_PER_DOMAIN): its share of its host's budget
    concurrency: int | None = None


def declare_version(
    conn: psycopg.Connection,
    library: str,
    version: str,
    root_url: str,
    settings: dict[str, Any],
    interval: timedelta | None,
    source: str,
    run_args: dict[str, Any] | None = None,
    host_concurrency: int | None = None,
) -> tuple[int, bool]:
    """Create or update a version a libraries file declares: its root URL and crawl settings (only for a version not
    indexed yet: an indexed version keeps what its index stored), the arguments and settings of its runs
    (``run_args``: ``{"args": {...}, "settings": {...}}``), its refresh interval and the file (``source``). A new
    version is due at once; a changed interval moves the next due time to the last run's end plus the new
    interval. ``host_concurrency``: the budget of its host, in concurrent requests (``None``: the default). Returns
    ``(id, created)``."""
    with conn.transaction():
        conn.execute("INSERT INTO libraries (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (library,))
        row = conn.execute(
            """
            INSERT INTO versions (library_id, name, root_url, settings, refresh_interval, next_due_at, source,
                                  run_args, host_concurrency)
            SELECT id, %(version)s, %(root)s, %(settings)s, %(interval)s, now(), %(source)s, %(run_args)s,
                   %(host_concurrency)s
            FROM libraries WHERE name = %(library)s
            ON CONFLICT (library_id, name) DO UPDATE SET
                source = EXCLUDED.source,
                run_args = EXCLUDED.run_args,
                host_concurrency = EXCLUDED.host_concurrency,
                refresh_interval = EXCLUDED.refresh_interval,
                root_url = CASE WHEN EXISTS (SELECT 1 FROM pages p WHERE p.version_id = versions.id)
                                THEN versions.root_url ELSE EXCLUDED.root_url END,
                settings = CASE WHEN EXISTS (SELECT 1 FROM pages p WHERE p.version_id = versions.id)
                                THEN versions.settings ELSE EXCLUDED.settings END,
                next_due_at = CASE
                    WHEN versions.refresh_interval IS NOT DISTINCT FROM EXCLUDED.refresh_interval
                         AND versions.next_due_at IS NOT NULL THEN versions.next_due_at
                    WHEN EXCLUDED.refresh_interval IS NULL AND NOT EXISTS (
                        SELECT 1 FROM pages p WHERE p.version_id = versions.id) THEN now()
                    WHEN EXCLUDED.refresh_interval IS NULL THEN NULL
                    ELSE COALESCE((SELECT max(r.finished_at) FROM crawl_runs r WHERE r.version_id = versions.id),
                                  now()) + EXCLUDED.refresh_interval END
            RETURNING id, (xmax = 0) AS created
            """,
            {
                "library": library,
                "version": version,
                "root": root_url,
                "settings": Jsonb(settings),
                "interval": interval,
                "source": source,
                "run_args": Jsonb(run_args or {}),
                "host_concurrency": host_concurrency,
            },
        ).fetchone()
    return row[0], row[1]


def declared_versions(conn: psycopg.Connection, source: str) -> list[dict[str, Any]]:
    """The versions a libraries file declared: ``id, library, version, refresh_interval, next_due_at``."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT v.id, l.name AS library, v.name AS version, v.refresh_interval, v.next_due_at "
            "FROM versions v JOIN libraries l ON l.id = v.library_id WHERE v.source = %s ORDER BY l.name, v.name",
            (source,),
        ).fetchall()


def declared_settings(conn: psycopg.Connection, source: str) -> list[dict[str, Any]]:
    """What the versions declared by ``source`` (``mcp``: network callers) asked for: ``library, version,
    settings`` (their crawl settings, ``max_pages`` among them)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT l.name AS library, v.name AS version, v.settings FROM versions v "
            "JOIN libraries l ON l.id = v.library_id WHERE v.source = %s",
            (source,),
        ).fetchall()


def versions_on_site(conn: psycopg.Connection, origin: str) -> list[dict[str, Any]]:
    """Every version whose root URL starts with ``origin`` (``scheme://host[:port]/``): ``library, version,
    root_url, settings``."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT l.name AS library, v.name AS version, v.root_url, v.settings FROM versions v "
            "JOIN libraries l ON l.id = v.library_id WHERE left(v.root_url, length(%s)) = %s",
            (origin, origin),
        ).fetchall()


def next_due_times(conn: psycopg.Connection, version_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """When each of ``version_ids`` (every version when ``None``) is next due, and where it stands: ``library,
    version, next_due_at`` (``None`` for a version without a refresh interval), ``indexed`` (it has pages),
    ``failures`` (runs in a row that did not complete), ``last_error``, and ``claimed_by``/``claimed_until`` while a
    scheduler holds its claim (else ``None``); by library and version name."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT l.name AS library, v.name AS version, v.next_due_at, "
            "EXISTS (SELECT 1 FROM pages p WHERE p.version_id = v.id) AS indexed, v.failures, v.last_error, "
            "CASE WHEN v.claimed_until > now() THEN v.claimed_by END AS claimed_by, "
            "CASE WHEN v.claimed_until > now() THEN v.claimed_until END AS claimed_until "
            "FROM versions v JOIN libraries l ON l.id = v.library_id "
            "WHERE (%s::bigint[] IS NULL OR v.id = ANY(%s)) ORDER BY l.name, v.name",
            (version_ids, version_ids),
        ).fetchall()


# A claimed version is not claimed again before its run ends or this passes.
DEFAULT_LEASE = timedelta(hours=6)
# A host's budget, in concurrent requests (the libraries file's host_concurrency of any of its versions, the lowest;
# else the default), and how many runs of it may hold a claim at once: the budget over each run's per-domain
# concurrency (at most the budget), at least one.
_HOSTS = """
    budget AS (
        SELECT host, COALESCE(min(host_concurrency), %(host_concurrency)s) AS requests FROM versions GROUP BY host
    ), hosts AS (
        SELECT host, least(requests, %(per_run)s) AS per_run,
               greatest(1, requests / least(requests, %(per_run)s)) AS runs
        FROM budget
    ), busy AS (
        SELECT host, count(*) AS runs FROM versions WHERE claimed_until > now() GROUP BY host
    )
"""
_CLAIM_DUE = f"""
    WITH {_HOSTS}, due AS (
        SELECT id, host, next_due_at,
               row_number() OVER (PARTITION BY host ORDER BY next_due_at, id) AS nth
        FROM versions
        WHERE next_due_at IS NOT NULL AND next_due_at <= now()
          AND (claimed_until IS NULL OR claimed_until < now())
          AND (%(only)s::bigint[] IS NULL OR id = ANY(%(only)s))
    ), allowed AS (
        SELECT d.id FROM due d JOIN hosts h ON h.host IS NOT DISTINCT FROM d.host
        LEFT JOIN busy b ON b.host IS NOT DISTINCT FROM d.host
        WHERE d.nth + COALESCE(b.runs, 0) <= h.runs
    )
    UPDATE versions v SET claimed_until = now() + %(lease)s, claimed_by = %(who)s
    FROM libraries l
    WHERE l.id = v.library_id AND v.id IN (
        SELECT id FROM versions
        WHERE id IN (SELECT id FROM allowed)
        ORDER BY next_due_at, id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    )
    RETURNING v.id, l.name, v.name, v.root_url, v.settings, v.refresh_interval, v.next_due_at, v.failures,
              EXISTS (SELECT 1 FROM pages p WHERE p.version_id = v.id), v.run_args,
              (SELECT h.per_run FROM hosts h WHERE h.host IS NOT DISTINCT FROM v.host)
"""
HOST_CONCURRENCY = 8  # DOCSBOT_HOST_CONCURRENCY's default: one run at Scrapy's per-domain default of 8
PER_RUN_CONCURRENCY = 8  # CONCURRENT_REQUESTS_PER_DOMAIN of a run (docsbot's setting)


def claim_due(
    conn: psycopg.Connection,
    who: str,
    *,
    limit: int,
    lease: timedelta,
    version_ids: list[int] | None = None,
    host_concurrency: int = HOST_CONCURRENCY,
    per_run: int = PER_RUN_CONCURRENCY,
) -> list[DueVersion]:
    """Claim up to ``limit`` due versions (of ``version_ids`` if given), oldest due first, for ``lease``: no other
    claim takes them before the lease ends or their run records its end. A host never has more claimed runs than
    its budget allows (``host_concurrency`` requests, or its versions' own, over ``per_run`` requests a run): a due
    version whose host is at its budget waits for a later claim. Each claimed version says its run's per-domain
    concurrency (``DueVersion.concurrency``). Claims are serialized (an advisory transaction lock), so that two
    schedulers cannot both give a host's last place away; committed at once."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (CLAIM_LOCK,))
        rows = conn.execute(
            _CLAIM_DUE,
            {"who": who, "lease": lease, "limit": limit, "only": version_ids,
             "host_concurrency": host_concurrency, "per_run": per_run},
        ).fetchall()  # fmt: skip
    return [DueVersion(*row) for row in rows]


def claim_version(
    conn: psycopg.Connection,
    version_id: int,
    who: str,
    lease: timedelta,
    host_concurrency: int = HOST_CONCURRENCY,
    per_run: int = PER_RUN_CONCURRENCY,
) -> str | None:
    """Claim one version for a run about to start (a refresh or an index a caller asked for), as schedulers claim
    due versions: no scheduler starts it meanwhile, its host's budget counts it, and the run's end releases the
    claim (:func:`record_run_end`). Returns ``None`` when claimed, else why not, in words: who holds the claim now
    (a scheduler, another server), or that its host is at its budget. Committed at once."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (CLAIM_LOCK,))
        params = {"id": version_id, "who": who, "lease": lease, "host_concurrency": host_concurrency,
                  "per_run": per_run}  # fmt: skip
        held = conn.execute(
            "SELECT claimed_by FROM versions WHERE id = %(id)s AND claimed_until > now()", params
        ).fetchone()
        if held is not None:
            return f"claimed by {held[0] or 'another process'}"
        full = conn.execute(
            f"WITH {_HOSTS} SELECT v.host, b.runs FROM versions v JOIN hosts h ON h.host IS NOT DISTINCT FROM v.host "
            "JOIN busy b ON b.host IS NOT DISTINCT FROM v.host WHERE v.id = %(id)s AND b.runs >= h.runs",
            params,
        ).fetchone()
        if full is not None:
            return f"{full[0]} is at its budget: {full[1]} run(s) of its versions at a time, DOCSBOT_HOST_CONCURRENCY"
        conn.execute(
            "UPDATE versions SET claimed_until = now() + %(lease)s, claimed_by = %(who)s WHERE id = %(id)s", params
        )
    return None


def release_claim(conn: psycopg.Connection, version_id: int, error: str | None = None) -> None:
    """Give a claim back without a run: after ``error`` (the run could not be started), the version is due again
    after the backoff of one more failure; without one, at once."""
    with conn.transaction():
        if error is None:
            conn.execute("UPDATE versions SET claimed_until = NULL, claimed_by = NULL WHERE id = %s", (version_id,))
        else:
            conn.execute(_FAILED, {"version": version_id, "error": error, "base": BACKOFF_BASE})


_FAILED = """
    UPDATE versions SET claimed_until = NULL, claimed_by = NULL, failures = failures + 1, last_error = %(error)s,
        next_due_at = now() + LEAST(COALESCE(refresh_interval, %(base)s * 2 ^ failures), %(base)s * 2 ^ failures)
    WHERE id = %(version)s
"""
_SUCCEEDED = """
    UPDATE versions SET claimed_until = NULL, claimed_by = NULL, failures = 0, last_error = NULL,
        next_due_at = CASE WHEN refresh_interval IS NULL THEN NULL ELSE now() + refresh_interval END
    WHERE id = %(version)s
"""


def record_run_end(conn: Any, version_id: int, completed: bool, reason: str | None) -> Any:
    """In the transaction that finishes a run: the version is due an interval from now after a run that completed
    (``complete`` or ``vectors_pending``: its pages are all stored), or after the backoff of one more failure;
    ``reason``: why it did not complete. Returns the statement's awaitable or result (``conn`` may be an
    asynchronous connection)."""
    if completed:
        return conn.execute(_SUCCEEDED, {"version": version_id})
    return conn.execute(
        _FAILED, {"version": version_id, "error": reason or "the run did not complete", "base": BACKOFF_BASE}
    )
