"""Runs: what each crawl of a version did (``crawl_runs``), its state while it runs and after, and the overview of
every version that ``docsbot status`` and ``list_libraries`` show.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.rows import dict_row

from docsbot.store.versions import running_version_ids

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "latest_runs",
    "recent_runs",
    "crawl_run",
    "database_now",
    "run_of_launch",
    "latest_run_id",
    "pages_written_since",
    "run_state",
    "version_overview",
]


def version_overview(conn: psycopg.Connection, runs: int = 3) -> list[dict[str, Any]]:
    """Per version, by library and version name (``docsbot status`` and the MCP server's ``list_libraries``):
    ``id, library, version, root_url, settings, embedding_model, pages, chunks, definitions, vectors`` (chunks and
    definitions with a vector), ``waiting`` (those without one: the version's embedding queue),
    ``last_updated`` (latest ``pages.updated_at``), ``last_changed`` (latest ``pages.content_changed_at``: when
    text of it last changed), ``last_checked`` (latest ``pages.last_checked_at``: when a run last found a page of
    it, by a 304 or a 200), ``last_refreshed`` (the end of its last run that went through, a full index or a
    refresh: one that ended without failing or being interrupted), ``running`` (a run holds
    the version's lock now), ``refresh_interval, next_due_at, failures, last_error`` (its schedule, when a
    libraries file declares it), ``runs`` (its last ``runs`` runs, newest first: ``id, mode, started_at, finished_at,
    stats, outcome, outcome_reason`` and ``state``, see :func:`run_state`) and ``embedding`` (its active embedding
    workers: ``workers``, ``rate`` in chunks per second, ``None`` when none works on it) and ``model_switch`` (while
    ``docsbot reembed`` switches it to another model: ``model``, ``dim``, ``done`` of ``total`` chunks and
    definitions with their new vector, ``rate`` of its workers or ``None``; ``None`` otherwise)."""
    running = running_version_ids(conn)
    with conn.cursor(row_factory=dict_row) as cur:
        versions = cur.execute(
            """
            SELECT v.id, l.name AS library, v.name AS version, v.root_url, v.settings, v.embedding_model,
                   v.next_model, v.next_dim, counts.next_vectors, next_workers.rate AS next_rate,
                   v.refresh_interval, v.next_due_at, v.failures, v.last_error,
                   counts.pages, counts.chunks, counts.definitions, counts.vectors, counts.last_updated,
                   counts.last_changed, counts.last_checked,
                   (SELECT max(r.finished_at) FROM crawl_runs r WHERE r.version_id = v.id
                      AND r.finished_at IS NOT NULL AND r.outcome IS DISTINCT FROM 'failed'
                      AND r.outcome IS DISTINCT FROM 'interrupted') AS last_refreshed,
                   COALESCE(runs.runs, '[]'::jsonb) AS runs, workers.workers, workers.rate
            FROM versions v
            JOIN libraries l ON l.id = v.library_id
            CROSS JOIN LATERAL (
                SELECT count(DISTINCT p.id) AS pages, count(d.id) FILTER (WHERE d.kind = 0) AS chunks,
                       count(d.id) FILTER (WHERE d.kind = 1) AS definitions, count(d.embedding) AS vectors,
                       count(d.embedding_next) AS next_vectors,
                       max(p.updated_at) AS last_updated, max(p.content_changed_at) AS last_changed,
                       max(p.last_checked_at) AS last_checked
                FROM pages p LEFT JOIN documents d ON d.page_id = p.id
                WHERE p.version_id = v.id
            ) counts
            LEFT JOIN LATERAL (
                SELECT jsonb_agg(to_jsonb(r) ORDER BY r.started_at DESC, r.id DESC) AS runs
                FROM (SELECT id, mode, started_at, finished_at, stats, outcome, outcome_reason FROM crawl_runs
                      WHERE version_id = v.id ORDER BY started_at DESC, id DESC LIMIT %(runs)s) r
            ) runs ON true
            CROSS JOIN LATERAL (
                SELECT count(*) AS workers, sum(w.rate) AS rate FROM embed_workers w
                WHERE w.finished_at IS NULL AND w.updated_at > now() - interval '2 minutes'
                  AND w.model = v.embedding_model AND (w.version_ids IS NULL OR v.id = ANY(w.version_ids))
            ) workers
            LEFT JOIN LATERAL (
                SELECT sum(w.rate) AS rate FROM embed_workers w
                WHERE v.next_model IS NOT NULL AND w.finished_at IS NULL AND w.updated_at > now() - interval '2 minutes'
                  AND w.model = v.next_model AND v.id = ANY(w.version_ids)
            ) next_workers ON true
            ORDER BY l.name, v.name
            """,
            {"runs": runs},
        ).fetchall()
    for v in versions:
        v["running"] = v["id"] in running
        # the queue's length from the counts this statement makes anyway (docsbot.store.queue's would scan again)
        v["waiting"] = v["chunks"] + v["definitions"] - v["vectors"]
        v["embedding"] = {"workers": v.pop("workers"), "rate": v.pop("rate")} if v["workers"] else None
        next_model, next_dim, done, rate = (
            v.pop(key) for key in ("next_model", "next_dim", "next_vectors", "next_rate")
        )
        v["model_switch"] = (
            {"model": next_model, "dim": next_dim, "done": done, "total": v["chunks"] + v["definitions"], "rate": rate}
            if next_model
            else None
        )
        for run in v["runs"]:
            for key in ("started_at", "finished_at"):
                run[key] = datetime.fromisoformat(run[key]) if run[key] else None
        for i, run in enumerate(v["runs"]):
            run["state"] = run_state(run, running=v["running"] and i == 0)
    return versions


def latest_runs(conn: psycopg.Connection, version_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Each of ``version_ids``' most recently started run, by version id (versions never run are absent):
    ``id, mode, started_at, finished_at, outcome, outcome_reason, finish_reason`` (Scrapy's close reason, from its
    stats)."""
    if not version_ids:
        return {}
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            """
            SELECT DISTINCT ON (r.version_id) r.version_id, r.id, r.mode, r.started_at, r.finished_at, r.outcome,
                   r.outcome_reason, r.stats ->> 'finish_reason' AS finish_reason
            FROM crawl_runs r WHERE r.version_id = ANY(%s)
            ORDER BY r.version_id, r.started_at DESC, r.id DESC
            """,
            (version_ids,),
        ).fetchall()
    return {row.pop("version_id"): row for row in rows}


def recent_runs(
    conn: psycopg.Connection, version_ids: list[int] | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """The latest ``limit`` runs (of ``version_ids``, or of every version), newest first, as :func:`crawl_run`
    gives each."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """
            SELECT r.id, r.version_id, l.name AS library, v.name AS version, r.mode, r.started_at, r.finished_at,
                   r.stats, r.outcome, r.outcome_reason
            FROM crawl_runs r JOIN versions v ON v.id = r.version_id JOIN libraries l ON l.id = v.library_id
            WHERE %(versions)s::bigint[] IS NULL OR r.version_id = ANY(%(versions)s)
            ORDER BY r.started_at DESC, r.id DESC LIMIT %(limit)s
            """,
            {"versions": version_ids, "limit": limit},
        ).fetchall()


def run_state(run: dict[str, Any], *, running: bool) -> str:
    """What a ``crawl_runs`` row amounts to: its ``outcome`` once it ended (``complete``, ``incomplete``,
    ``vectors_pending``, ``failed``); ``running`` while its version's run lock is held (``running``: the caller
    checked); otherwise ``interrupted``: its process ended without recording the end (killed, out of memory, the
    machine went down). Rows recorded before outcomes existed: ``complete`` or ``failed`` by their close reason."""
    if run.get("finished_at") is not None:
        if run.get("outcome"):
            return run["outcome"]
        reason = (run.get("stats") or {}).get("finish_reason")
        return "complete" if reason in (None, "finished") else "failed"
    if run.get("outcome") == "interrupted" or not running:
        return "interrupted"
    return "running"


def crawl_run(conn: psycopg.Connection, run_id: int) -> dict[str, Any] | None:
    """One ``crawl_runs`` row with its version: ``id, version_id, library, version, mode, started_at,
    finished_at, stats, outcome, outcome_reason``; ``None`` if there is no such run."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """
            SELECT r.id, r.version_id, l.name AS library, v.name AS version, r.mode, r.started_at, r.finished_at,
                   r.stats, r.outcome, r.outcome_reason
            FROM crawl_runs r JOIN versions v ON v.id = r.version_id JOIN libraries l ON l.id = v.library_id
            WHERE r.id = %s
            """,
            (run_id,),
        ).fetchone()


def run_of_launch(conn: psycopg.Connection, launch: str) -> int | None:
    """Id of the run started with ``-a launch=TOKEN`` (``crawl_runs.launch``), once it has recorded its start."""
    row = conn.execute("SELECT id FROM crawl_runs WHERE launch = %s", (launch,)).fetchone()
    return row[0] if row else None


def latest_run_id(conn: psycopg.Connection, version_id: int) -> int | None:
    """Id of the version's most recently started run, if any."""
    row = conn.execute(
        "SELECT id FROM crawl_runs WHERE version_id = %s ORDER BY started_at DESC, id DESC LIMIT 1", (version_id,)
    ).fetchone()
    return row[0] if row else None


def pages_written_since(conn: psycopg.Connection, version_id: int, since: datetime) -> int:
    """Pages of the version written (new, changed, or their validators updated) at or after ``since``: the
    progress of a run in flight, which records its counts only when it ends."""
    return conn.execute(
        "SELECT count(*) FROM pages WHERE version_id = %s AND updated_at >= %s", (version_id, since)
    ).fetchone()[0]


def database_now(conn: psycopg.Connection) -> datetime:
    """The database server's clock (``clock_timestamp()``), to compare with timestamps it writes."""
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]
