"""Runs as the service reports them (:class:`~docsbot.service.models.RunInfo`), and starting refreshes.

A refresh is always the ordinary ``scrapy crawl docs -a library=… -a version=… -a mode=refresh``: started here as a
child process with this process's environment and database, or scheduled as a job on a Scrapyd node. There is one
refresh path; nothing here crawls.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from docsbot import store
from docsbot.refresh import SKIPPED_KINDS
from docsbot.service.models import RunInfo, RunState
from docsbot.service.scrapyd import SCRAPYD_PROJECT, ScrapydNode

if TYPE_CHECKING:
    from pathlib import Path

    import psycopg

__all__ = ["Launch", "Launcher", "iso", "log_tail", "run_counts", "run_info"]

_COUNTS = ("unchanged", "modified", "new", "deleted", "failed", "chunks_embedded")


def iso(value: datetime | str | None) -> str | None:
    """ISO 8601 to the second; ``value`` may be a timestamp as ``to_jsonb`` writes it."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.isoformat(timespec="seconds")


def run_counts(stats: dict[str, Any]) -> dict[str, int]:
    """The numbers of a finished run's stats, the usual ones present even when 0 (a run records only what
    happened); ``{}`` before it ends."""
    if not stats:
        return {}
    found = {k: v for k, v in stats.items() if isinstance(v, int) and not isinstance(v, bool)}
    return {**dict.fromkeys(_COUNTS, 0), **found}


def run_skipped(stats: dict[str, Any]) -> dict[str, int]:
    """The pages a run's site kept from it by its rules (robots.txt, 401/403…), by reason, those it had only."""
    return {kind: n for kind in SKIPPED_KINDS if isinstance(n := stats.get(f"skipped/{kind}"), int) and n}


def log_tail(path: Path | None, lines: int = 5) -> str:
    """The last ``lines`` lines of a log file (at most its last 8 KiB); ``""`` without one."""
    if path is None or not path.is_file():
        return ""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 8192))
        text = f.read().decode("utf-8", "replace")
    return "\n".join(text.strip().splitlines()[-lines:])


def run_info(run_id: str, row: dict[str, Any], running: set[int], *, process_alive: bool = False) -> RunInfo:
    """A ``crawl_runs`` row (with ``library`` and ``version``) as :class:`RunInfo`; ``running``: the ids of the
    versions whose run lock is held now (:func:`docsbot.store.running_version_ids`)."""
    stats = row.get("stats") or {}
    outcome = store.run_state(row, running=row["version_id"] in running or process_alive)
    state: RunState
    if row["finished_at"] is not None:
        state = "failed" if outcome == "failed" else "finished"
        message = f"ended: {outcome}" + (f" ({row['outcome_reason']})" if row.get("outcome_reason") else "")
    elif outcome == "running":
        state, message = "running", "in progress"
    else:
        state, message = "interrupted", "the run never recorded an end (killed); pages it stored stay stored"
    return RunInfo(
        run_id=run_id,
        crawl_run_id=row["id"],
        library=row["library"],
        version=row["version"],
        mode=row["mode"],
        state=state,
        started_at=iso(row["started_at"]),
        finished_at=iso(row["finished_at"]),
        finish_reason=stats.get("finish_reason"),
        outcome=outcome if outcome != "running" else None,
        outcome_reason=row.get("outcome_reason"),
        elapsed_seconds=stats.get("elapsed_seconds"),
        counts=run_counts(stats),
        skipped=run_skipped(stats),
        skipped_pages={k: list(v) for k, v in (stats.get("skipped_pages") or {}).items() if k in SKIPPED_KINDS},
        message=message,
    )


@dataclass
class Launch:
    """A refresh this process started: a child process, or a Scrapyd job."""

    run_id: str
    version: store.VersionRow
    since: datetime  # database clock just before the launch
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    scrapyd_job: str | None = None
    crawl_run_id: int | None = None
    mode: str = "refresh"  # or "full": an index (with ``url``)
    url: str | None = None
    args: dict[str, str] = field(default_factory=dict)  # more spider arguments (``network``, ``max_pages``...)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


# What a crawl started on a caller's behalf does not inherit from the server's environment: the server's own secret.
_SERVER_ONLY_ENV = ("DOCSBOT_MCP_TOKEN",)


class Launcher:
    """Starts refreshes for a long-running process (the MCP server, the web pages) and tells what became of them.

    ``scrapyd_url`` (``SCRAPYD_URL``): schedule on that Scrapyd node instead of running a child process. Child
    processes log to ``log_dir/RUN_ID.log`` and run with ``SCRAPY_SETTINGS_MODULE=docsbot.settings`` (so any
    working directory does), ``DATABASE_URL=dsn`` and this process's environment but ``DOCSBOT_MCP_TOKEN``.
    ``allowed_networks``: the ``DOCSBOT_ALLOWED_NETWORKS`` every run started here gets (a child's environment, a
    Scrapyd job's ``setting=``), so that the server's allowance is the one its crawls apply.
    """

    def __init__(self, dsn: str, log_dir: Path, scrapyd_url: str = "", allowed_networks: str = "") -> None:
        self.dsn = dsn
        self.log_dir = log_dir
        self.scrapyd = ScrapydNode(scrapyd_url) if scrapyd_url else None
        self.allowed_networks = allowed_networks

    @property
    def backend(self) -> str:
        return "scrapyd" if self.scrapyd is not None else "local"

    def start(self, launch: Launch) -> str:
        """Start ``launch``'s run (a refresh, or a full index of ``launch.url``); returns a line saying where.
        Raises :class:`~docsbot.service.errors.Upstream` when Scrapyd refuses or does not answer."""
        version = launch.version
        label = store.version_label(version.library, version.name)
        args = {"library": version.library, "version": version.name, "mode": launch.mode}
        if launch.mode == "full":
            args["url"] = launch.url or version.root_url
        args.update(launch.args)
        args["launch"] = launch.run_id  # the crawl records it: its row is found by it, not by time
        settings = {"DOCSBOT_ALLOWED_NETWORKS": self.allowed_networks} if self.allowed_networks else {}
        what = "index" if launch.mode == "full" else "refresh"
        if self.scrapyd is not None:
            launch.scrapyd_job = self.scrapyd.schedule("docs", args, settings=settings)
            return f"{what} of {label} scheduled on Scrapyd as job {launch.scrapyd_job}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        launch.log_path = self.log_dir / f"{launch.run_id}.log"
        env = {k: v for k, v in os.environ.items() if k not in _SERVER_ONLY_ENV}
        env.update(settings, SCRAPY_SETTINGS_MODULE="docsbot.settings", DATABASE_URL=self.dsn)
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs"]
        for key, value in args.items():
            cmd += ["-a", f"{key}={value}"]
        with launch.log_path.open("wb") as log:
            launch.process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        return f"{what} of {label} started (process {launch.process.pid})"

    def cancel(self, launch: Launch) -> str:
        """Stop ``launch``'s run: SIGTERM to a local crawl (Scrapy stops cleanly: pages stored stay stored, nothing
        is deleted), ``cancel.json`` for a Scrapyd job (which sends the same). Returns what was done."""
        if launch.process is not None:
            if launch.process.poll() is not None:
                return f"run {launch.run_id} had already ended"
            launch.process.terminate()
            return f"run {launch.run_id} stopped (SIGTERM to process {launch.process.pid}): pages stored stay stored"
        if launch.scrapyd_job is not None and self.scrapyd is not None:
            before = self.scrapyd.cancel(launch.scrapyd_job)
            return f"Scrapyd job {launch.scrapyd_job} cancelled (it was {before})"
        return f"run {launch.run_id} has nothing to stop"

    def state(self, launch: Launch, conn: psycopg.Connection) -> RunInfo:
        """What became of ``launch``: its ``crawl_runs`` row once the crawl recorded one (the one recorded under the
        launch's token, ``-a launch=RUN_ID``), with pages written so far while it runs; before that, whether the
        process or job is starting or already failed."""
        version = launch.version
        alive = launch.alive
        if launch.crawl_run_id is None:
            launch.crawl_run_id = store.run_of_launch(conn, launch.run_id)
        row = store.crawl_run(conn, launch.crawl_run_id) if launch.crawl_run_id is not None else None
        if row is not None:
            running = store.running_version_ids(conn)
            info = run_info(launch.run_id, row, running, process_alive=alive)
            if row["finished_at"] is None:
                info.progress = {
                    "pages_written": store.pages_written_since(conn, version.id, row["started_at"]),
                    "elapsed_seconds": round((store.database_now(conn) - row["started_at"]).total_seconds(), 1),
                }
            if info.state in ("failed", "interrupted"):
                info.message = "\n".join(filter(None, [info.message, log_tail(launch.log_path)]))
            return info
        base = {"run_id": launch.run_id, "library": version.library, "version": version.name, "mode": launch.mode}
        if launch.process is not None and not alive:
            return RunInfo(
                **base,
                state="failed",
                message=f"the crawl exited with code {launch.process.returncode} before it started: "
                + (log_tail(launch.log_path, 2) or "no output"),
            )
        if launch.scrapyd_job is not None and self.scrapyd is not None:
            try:
                state = self.scrapyd.job_state(launch.scrapyd_job)
            except Exception as exc:  # noqa: BLE001 - an Upstream error is the state to report
                state = str(exc)
            if state == "finished":
                return RunInfo(
                    **base,
                    state="failed",
                    message=f"Scrapyd job {launch.scrapyd_job} ended without recording a run; see its log "
                    f"(logs/{SCRAPYD_PROJECT}/docs/{launch.scrapyd_job}.log on the Scrapyd node)",
                )
            return RunInfo(**base, state="starting", message=f"Scrapyd job {launch.scrapyd_job}: {state}")
        return RunInfo(**base, state="starting", message="the crawl process is starting")

    @staticmethod
    def stop(launches: list[Launch]) -> None:
        """Stop the child processes of ``launches`` still running (SIGTERM: Scrapy stops cleanly; pages stored stay
        stored; SIGKILL after 20 s)."""
        for launch in launches:
            if launch.alive:
                launch.process.terminate()
        for launch in launches:
            if launch.process is not None:
                try:
                    launch.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    launch.process.kill()
                    launch.process.wait()
