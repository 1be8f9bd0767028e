"""Keeping a fleet of library versions fresh: a libraries file declared into PostgreSQL, due versions claimed
atomically, and their runs started locally (a few at a time) or on Scrapyd nodes.

Every run is the ordinary ``scrapy crawl docs`` (a full index for a version never indexed, a refresh otherwise),
with the entry's spider arguments and settings; a run records its own end and when its version is next due
(:func:`docsbot.store.fleet.record_run_end`). This module decides which versions to run and where, and reports what
each did; it never crawls.

- :meth:`Fleet.declare` writes a file's entries (new versions are due at once) and tells which versions the file no
  longer declares; :meth:`Fleet.remove` deletes them (``docsbot sync --prune``).
- :meth:`Fleet.run_due` claims the due versions (all, or a file's) and runs them: locally, ``jobs`` at a time, waiting
  for each; or as jobs on Scrapyd nodes, each on the node with the fewest running and pending jobs
  (``daemonstatus.json``), without waiting.
- :class:`Scheduler` does that on a timer, for ever (``docsbot scheduler``).

A claim is a lease: a claim whose run never started (a process that could not start, a job a node lost) is given
back with a backoff, or expires, and the version is claimed again on a later tick.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docsbot import store
from docsbot.display import printable
from docsbot.service.errors import Upstream
from docsbot.service.runs import log_tail
from docsbot.service.scrapyd import ScrapydNode
from docsbot.store import fleet as fleet_store

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from datetime import datetime, timedelta

    from docsbot.fleet.libraries import LibraryEntry

__all__ = [
    "DEFAULT_LEASE",
    "SYNC_RESULTS",
    "Fleet",
    "RunReport",
    "Scheduler",
    "SyncPlan",
    "SyncRow",
    "idle_row",
    "sync_table",
]

logger = logging.getLogger(__name__)

DEFAULT_LEASE = fleet_store.DEFAULT_LEASE


@dataclass
class SyncPlan:
    """What declaring a libraries file did: versions ``created`` (new, due at once) and ``updated``, and ``removed``:
    versions the file declared before and no longer does (``library@version``)."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


@dataclass
class RunReport:
    """One version's run as a fleet started it: ``mode`` (``full`` or ``refresh``), ``where`` (``local`` or a
    Scrapyd node), ``outcome`` (the run's, once it ended; ``scheduled`` for a Scrapyd job; ``not started``), the
    run's ``counts`` and ``message``."""

    label: str
    mode: str
    where: str
    outcome: str
    message: str = ""
    counts: dict[str, Any] = field(default_factory=dict)
    crawl_run_id: int | None = None
    exit_code: int | None = None
    log: Path | None = None  # a local run's log

    @property
    def completed(self) -> bool:
        """Whether the run stored every page it should have (``complete``, or ``vectors_pending``: stored, vectors
        still coming)."""
        return self.outcome in ("complete", "vectors_pending")

    def line(self) -> str:
        c = self.counts
        if self.outcome in ("scheduled", "not started"):
            detail = f": {self.message}" if self.message else ""
            return f"{self.label}: {self.mode} {self.outcome} ({self.where}){detail}"
        done = "indexed" if self.mode == "full" else "refreshed"
        counts = (
            f"{c.get('new', 0)} new, {c.get('modified', 0)} modified, {c.get('unchanged', 0)} unchanged, "
            f"{c.get('deleted', 0)} deleted, {c.get('failed', 0)} failed"
        )
        if c.get("reextracted"):
            counts += f", {c['reextracted']} re-extracted from stored HTML"
        if c.get("skipped/fresh"):
            counts += f", {c['skipped/fresh']} not requested (fresh)"
        took = f" in {c['elapsed_seconds']:.1f} s" if c.get("elapsed_seconds") is not None else ""
        tail = f": {self.message}" if self.message and self.outcome not in ("complete",) else ""
        return f"{self.label}: {done}: {counts}{took} ({self.outcome}){tail}"

    def row(self) -> SyncRow:
        """Its row in a sync's table: ``indexed``/``refreshed`` when it completed, ``scheduled`` on Scrapyd, else
        ``failed`` with the reason the run recorded, or the last line of its log."""
        if self.outcome == "scheduled":
            return SyncRow(self.label, "scheduled", f"{self.mode} on {self.where}: {self.message}")
        if self.completed:
            detail = self.line().split(": ", 2)[2]
            return SyncRow(self.label, "indexed" if self.mode == "full" else "refreshed", detail)
        what = "full index" if self.mode == "full" else "refresh"
        reason = _log_error(self.log) or self.message or log_tail(self.log, 1) or "no reason recorded"
        stored = sum(int(self.counts.get(k) or 0) for k in ("new", "modified", "deleted"))
        counts = f"; {self.line().split(': ', 2)[2].split(' (')[0]}" if stored else ""
        log = f" (log: {self.log})" if self.log else ""
        return SyncRow(self.label, "failed", f"{what} {self.outcome}: {reason}{counts}{log}")


def _log_error(log: Path | None) -> str | None:
    """The first error the spider logged in a run's ``log`` (``[spiders.docs] ERROR: the root URL … failed
    (Connection refused)``), which says why more plainly than the run's outcome; ``None`` without one."""
    if log is None or not log.is_file():
        return None
    with log.open("rb") as f:  # its last 64 KiB: the error comes before Scrapy's closing statistics
        f.seek(max(0, log.stat().st_size - 65536))
        text = f.read().decode("utf-8", "replace")
    for line in text.splitlines():
        found = re.search(r"\[spiders\.docs\] ERROR: (.+)$", line)
        if found:
            return found.group(1).strip()
    return None


SYNC_RESULTS = ("indexed", "refreshed", "scheduled", "not due", "failed", "skipped")


@dataclass(frozen=True)
class SyncRow:
    """One entry of a sync's table: ``entry`` (``library@version``, or a dependency as its file writes it),
    ``result`` (one of :data:`SYNC_RESULTS`) and ``detail`` (counts, when it is next due, or why)."""

    entry: str
    result: str
    detail: str = ""


def idle_row(state: dict[str, Any]) -> SyncRow:
    """The row of a declared version this sync did not run, from
    :func:`docsbot.store.fleet.next_due_times`'s ``state``: a version never indexed whose last run failed is
    ``failed`` (with that run's error and the next try), one another scheduler holds is ``skipped``, any other
    ``not due`` (with when it is next due, and a failure it is retrying after)."""
    label = store.version_label(state["library"], state["version"])
    due = state.get("next_due_at")
    when = f"next {due:%Y-%m-%d %H:%M %Z}" if due else "no refresh interval"
    if state.get("claimed_by"):
        return SyncRow(label, "skipped", f"claimed by {state['claimed_by']} until {state['claimed_until']:%H:%M %Z}")
    error = state.get("last_error")
    if not state.get("indexed"):
        if error:
            retried = f"tried again after {due:%Y-%m-%d %H:%M %Z}" if due else "not tried again"
            return SyncRow(label, "failed", f"never indexed: its last run failed: {error} ({retried})")
        return SyncRow(label, "skipped", f"not indexed yet: due, not started in this sync ({when})")
    retry = f"; retrying after {state['failures']} failed run(s): {error}" if error else ""
    return SyncRow(label, "not due", when + retry)


def sync_table(rows: list[SyncRow]) -> str:
    """``rows`` as a table (entry, result, detail; one line each) and a last line whose counts add up to the
    entries: ``5 entries: 2 indexed, 0 refreshed, 1 not due, 1 failed, 1 skipped`` (``scheduled`` only when there
    are any)."""
    entries = [printable(r.entry) for r in rows]  # one line each, whatever a name or an error holds
    width = min(36, max([len("entry")] + [len(e) for e in entries]))
    lines = [f"{'entry':<{width}}  {'result':<9}  detail"]
    for entry, row in zip(entries, rows, strict=True):
        lines.append(f"{entry:<{width}}  {row.result:<9}  {printable(row.detail)}".rstrip())
    counts = {result: sum(1 for r in rows if r.result == result) for result in SYNC_RESULTS}
    shown = [f"{n} {result}" for result, n in counts.items() if n or result != "scheduled"]
    lines.append(f"{len(rows)} {'entry' if len(rows) == 1 else 'entries'}: {', '.join(shown)}")
    return "\n".join(lines)


class Fleet:
    """The fleet of the database at ``dsn``. ``jobs``: local runs at once; ``scrapyd``: Scrapyd URLs to run on
    instead; ``who``: this scheduler's name in claims; ``env``: the environment of local runs (this process's by
    default); ``log_dir``: where local runs log (``RUN.log``). ``host_concurrency``: a host's budget of concurrent
    requests across the fleet's runs (``DOCSBOT_HOST_CONCURRENCY``; a libraries file's ``host_concurrency`` for
    its host); ``per_run``: a run's own per-domain concurrency (``CONCURRENT_REQUESTS_PER_DOMAIN``): a host has at
    most budget / per_run runs at once (at least one), each sent with its share."""

    def __init__(
        self,
        dsn: str,
        *,
        jobs: int = 2,
        scrapyd: Iterable[str] = (),
        who: str | None = None,
        lease: timedelta = DEFAULT_LEASE,
        env: dict[str, str] | None = None,
        log_dir: Path | None = None,
        retry: store.RetryPolicy | None = None,
        host_concurrency: int = fleet_store.HOST_CONCURRENCY,
        per_run: int = fleet_store.PER_RUN_CONCURRENCY,
    ) -> None:
        self.dsn = dsn
        self.host_concurrency = host_concurrency
        self.per_run = per_run
        self.jobs = max(1, jobs)
        self.nodes = [ScrapydNode(url) for url in scrapyd]
        self._next_node = 0  # where _pick_node starts: ties go round the nodes
        self.who = who or f"{socket.gethostname()}:{os.getpid()}"
        self.lease = lease
        self.env = dict(env if env is not None else os.environ)
        self.log_dir = log_dir or Path(self.env.get("DOCSBOT_DATA_DIR", ".")).expanduser() / "fleet-runs"
        self.retry = retry or store.RetryPolicy()

    def _connect(self) -> Any:
        return store.connect(self.dsn, retry=self.retry)

    def run_env(self) -> dict[str, str]:
        """The environment of a local run: this process's, the database, and with several jobs each run's share of
        the cores for ONNX Runtime (``DOCSBOT_EMBED_THREADS``: the cores this process may use over ``jobs``, at
        least one) unless it is set: two runs each using every core slowed both (one thread a run was measured
        1.16x faster beside another crawl)."""
        env = {**self.env, "SCRAPY_SETTINGS_MODULE": "docsbot.settings", "DATABASE_URL": self.dsn}
        if self.jobs > 1 and env.get("DOCSBOT_EMBED_THREADS", "0") in ("", "0"):
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
            env["DOCSBOT_EMBED_THREADS"] = str(max(1, cores // self.jobs))
        return env

    # --- the libraries file ---

    def declare(self, entries: list[LibraryEntry], source: str) -> SyncPlan:
        """Write the file's entries to the database (each version with its root URL, interval and run arguments)
        and tell which versions it declared before and declares no more (nothing is deleted here)."""
        plan = SyncPlan()
        with self._connect() as conn:
            store.migrate(conn)
            for entry in entries:
                settings = {"max_depth": None, "max_pages": None, "prune": "none", "render": "none"}
                for name in ("max_depth", "max_pages"):
                    if name in entry.args:
                        settings[name] = int(entry.args[name])
                for name in ("prune", "render"):
                    if name in entry.args:
                        settings[name] = entry.args[name]
                settings["freshness"] = entry.freshness
                run_args = {"args": {**entry.args, **({"freshness": entry.freshness} if entry.freshness != "validators"
                                                      else {})}, "settings": entry.settings()}  # fmt: skip
                _, created = fleet_store.declare_version(
                    conn,
                    entry.name,
                    entry.version,
                    entry.url,
                    settings,
                    entry.refresh,
                    source,
                    run_args,
                    entry.host_concurrency,
                )
                (plan.created if created else plan.updated).append(entry.label)
            declared = {entry.label for entry in entries}
            for row in fleet_store.declared_versions(conn, source):
                label = store.version_label(row["library"], row["version"])
                if label not in declared:
                    plan.removed.append(label)
        return plan

    def remove(self, labels: list[str]) -> list[str]:
        """Delete these versions (``library@version``) with their pages, chunks and runs, each in one transaction,
        unless a run of it holds its lock (then it is kept and named in the returned problems)."""
        problems = []
        with self._connect() as conn:
            for label in labels:
                library, _, version = label.partition("@")
                found = store.find_version(conn, library, version)
                if found is None:
                    continue
                try:
                    lock = store.lock_version(self.dsn, found)
                except store.DatabaseError as exc:
                    problems.append(f"{label} kept: {exc}")
                    continue
                try:
                    store.delete_version(conn, library, version)
                finally:
                    lock.close()
                conn.commit()
                store.drop_version_indexes(self.dsn, [found.id])
        return problems

    # --- due runs ---

    def claim(self, limit: int, version_ids: list[int] | None = None) -> list[fleet_store.DueVersion]:
        with self._connect() as conn:
            return fleet_store.claim_due(
                conn, self.who, limit=limit, lease=self.lease, version_ids=version_ids,
                host_concurrency=self.host_concurrency, per_run=self.per_run,
            )  # fmt: skip

    def run_due(
        self,
        version_ids: list[int] | None = None,
        watch: Callable[[list[RunReport], list[tuple[str, int, datetime]]], None] | None = None,
    ) -> list[RunReport]:
        """Claim every due version (of ``version_ids``) and run it: on Scrapyd nodes (scheduled, not awaited) or
        locally, ``jobs`` at a time, waiting until each has ended. Returns one report per version claimed.
        ``watch(reports, running)``, if given, is called every half second while local runs go on (and once at the
        end): the reports so far, and each running version's ``(label, version id, when its run started)`` by the
        database's clock (a terminal's progress bars, ``docsbot sync``)."""
        reports: list[RunReport] = []
        if self.nodes:
            while due := self.claim(50, version_ids):
                reports += [self._schedule(version) for version in due]
            return reports
        running: list[tuple[fleet_store.DueVersion, _Local]] = []
        while True:
            for version, local in list(running):
                if local.process.poll() is not None:
                    running.remove((version, local))
                    reports.append(self._finished(version, local))
            free = self.jobs - len(running)
            due = self.claim(free, version_ids) if free > 0 else []
            for version in due:
                local = self._start(version)
                if isinstance(local, RunReport):
                    reports.append(local)
                else:
                    running.append((version, local))
            if watch is not None:
                watch(reports, [(store.version_label(v.library, v.name), v.id, local.since) for v, local in running])
            if not running and not due:
                return reports
            time.sleep(0.5)

    # --- local runs ---

    @staticmethod
    def _arguments(version: fleet_store.DueVersion) -> tuple[str, dict[str, str], dict[str, str]]:
        """``(mode, spider arguments, settings)`` of the version's run: a full index of a version never indexed,
        else a refresh; with the arguments and settings its libraries file gave."""
        mode = "refresh" if version.indexed else "full"
        args = {"library": version.library, "version": version.name, "mode": mode}
        if mode == "full":
            args["url"] = version.root_url
        args.update({k: str(v) for k, v in (version.run_args.get("args") or {}).items()})
        args["launch"] = f"fleet-{uuid.uuid4().hex}"  # the run is found by it (crawl_runs.launch), not by time
        settings = {k: str(v) for k, v in (version.run_args.get("settings") or {}).items()}
        if version.concurrency:  # its share of its host's budget
            settings.setdefault("CONCURRENT_REQUESTS_PER_DOMAIN", str(version.concurrency))
        return mode, args, settings

    def _command(self, version: fleet_store.DueVersion) -> tuple[list[str], str, str]:
        mode, args, settings = self._arguments(version)
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs"]
        for key, value in args.items():
            cmd += ["-a", f"{key}={value}"]
        for key, value in settings.items():
            cmd += ["-s", f"{key}={value}"]
        return cmd, mode, args["launch"]

    def _start(self, version: fleet_store.DueVersion) -> _Local | RunReport:
        label = store.version_label(version.library, version.name)
        cmd, mode, launch = self._command(version)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{label.replace('/', '_')}-{uuid.uuid4().hex[:8]}.log"
        env = self.run_env()
        with self._connect() as conn:
            since = store.database_now(conn)
        try:
            with log.open("wb") as out:
                process = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )
        except OSError as exc:
            with self._connect() as conn:
                fleet_store.release_claim(conn, version.id, f"the crawl could not start: {exc}")
            return RunReport(label, mode, "local", "not started", str(exc))
        logger.info("%s: %s started (process %d, log %s)", label, mode, process.pid, log)
        return _Local(process, log, since, mode, launch)

    def _finished(self, version: fleet_store.DueVersion, local: _Local) -> RunReport:
        label = store.version_label(version.library, version.name)
        code = local.process.returncode
        with self._connect() as conn:
            run_id = store.run_of_launch(conn, local.launch)
            row = store.crawl_run(conn, run_id) if run_id is not None else None
            if row is None or row["finished_at"] is None:
                # It never recorded its end (it could not start, or died): give the claim back with a backoff.
                reason = f"the crawl exited with code {code} without recording its end: " + (
                    log_tail(local.log, 1) or "no output"
                )
                fleet_store.release_claim(conn, version.id, reason)
                return RunReport(label, local.mode, "local", "failed", reason, exit_code=code, log=local.log)
        stats = row["stats"] or {}
        return RunReport(
            label,
            local.mode,
            "local",
            row["outcome"] or "failed",
            row.get("outcome_reason") or "",
            stats,
            row["id"],
            code,
            local.log,
        )

    # --- Scrapyd ---

    def _pick_node(self) -> ScrapydNode:
        """The node with the fewest running and pending jobs (``daemonstatus.json``), ties going round the nodes
        (after the node picked last), so that short jobs that are over by the next pick do not all land on the
        first node; nodes that do not answer are passed over. Raises :class:`Upstream` when none answers."""
        best, best_load, errors = None, None, []
        count = len(self.nodes)
        for step in range(count):
            index = (self._next_node + step) % count
            try:
                status = self.nodes[index].daemonstatus()
            except Upstream as exc:
                errors.append(str(exc))
                continue
            load = int(status.get("running", 0)) + int(status.get("pending", 0))
            if best_load is None or load < best_load:
                best, best_load = index, load
        if best is None:
            raise Upstream("no Scrapyd node answered: " + "; ".join(errors))
        self._next_node = (best + 1) % count
        return self.nodes[best]

    def _schedule(self, version: fleet_store.DueVersion) -> RunReport:
        label = store.version_label(version.library, version.name)
        mode, args, settings = self._arguments(version)
        try:
            node = self._pick_node()
            job = node.schedule("docs", args, settings=settings)
        except Upstream as exc:
            with self._connect() as conn:
                fleet_store.release_claim(conn, version.id, str(exc))
            return RunReport(label, mode, "scrapyd", "not started", str(exc))
        logger.info("%s: %s scheduled on %s as job %s", label, mode, node.url, job)
        return RunReport(label, mode, node.url, "scheduled", f"job {job}")


@dataclass
class _Local:
    process: subprocess.Popen
    log: Path
    since: Any
    mode: str
    launch: str  # the run's token (-a launch): its crawl_runs row is found by it


class Scheduler:
    """``docsbot scheduler``: every ``interval`` seconds, claim the versions that are due and run them (see
    :meth:`Fleet.run_due`: on Scrapyd nodes, or locally ``jobs`` at a time). Runs until :meth:`stop`."""

    def __init__(self, fleet: Fleet, interval: float = 60.0) -> None:
        self.fleet = fleet
        self.interval = interval
        self._stopping = False

    def stop(self) -> None:
        self._stopping = True

    def run(self, ticks: int | None = None) -> list[RunReport]:
        """Tick until stopped (or ``ticks`` times); returns every report."""
        reports: list[RunReport] = []
        count = 0
        while not self._stopping and (ticks is None or count < ticks):
            count += 1
            try:
                done = self.fleet.run_due()
            except store.DatabaseError as exc:
                logger.warning("scheduler tick: %s; next tick in %.0f s", exc, self.interval)
                done = []
            for report in done:
                logger.info("%s", report.line())
            reports += done
            deadline = time.monotonic() + self.interval
            while not self._stopping and time.monotonic() < deadline and (ticks is None or count < ticks):
                time.sleep(min(1.0, self.interval))
        return reports
