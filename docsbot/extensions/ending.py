"""The end of a run: when its crawl is done, the deletions, the check marks, the search statistics and the vectors;
when it closes, its outcome, its ``crawl_runs`` record and the summary line.

:class:`RunEnd` keeps what the end decides from (the steps that could not be written, whether the crawl completed)
for :class:`~docsbot.extensions.run.IndexRun`, which calls it from ``spider_idle`` and ``spider_closed``. Every
database step is retried alike (:class:`docsbot.store.RetryPolicy`); one that still fails makes the run incomplete,
never silently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from docsbot import store
from docsbot.embedding.worker import FillStats, describe_progress
from docsbot.extensions.vectors import GRAPH_WAIT_SECONDS, ensure_vector_indexes, graph_when_ready
from docsbot.refresh import SKIPPED_KINDS, RunOutcome, run_outcome

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.crawler import Crawler

    from docsbot.extensions.context import IndexContext
    from docsbot.refresh import DeletionPlan

__all__ = ["RunEnd"]

logger = logging.getLogger("docsbot.extensions.run")  # every line of the run under the extension's name


class RunEnd:
    """The end of the run of ``context`` (started at ``started``, :func:`time.monotonic`); ``close(reason)`` closes
    the spider. ``problems``: bookkeeping steps that could not be written; ``outcome``: once decided."""

    def __init__(
        self, crawler: Crawler, context: IndexContext, dsn: str, started: float, close: Callable[[str], None]
    ) -> None:
        self.crawler = crawler
        self.context = context
        self._dsn = dsn
        self._started = started
        self._close = close
        self.crawl_completed = False
        self.lexical_stats_refreshed = False  # at the end of the crawl; else the run's end refreshes them
        self.problems: list[str] = []
        self.vector_stats: FillStats | None = None
        self.outcome: RunOutcome | None = None

    # --- the crawl is done: bookkeeping, then the vectors ---

    async def crawl_done(self) -> None:
        """Every page was fetched and stored or counted: apply the deletions, mark the checked pages, refresh the
        search statistics (the site is searchable by text now), let the worker give the waiting chunks their
        vectors, then close the spider."""
        context, stats = self.context, self.crawler.stats
        self.crawl_completed = True
        ledger = context.ledger
        stats.set_value("docsbot/skipped/recently_checked", ledger.skipped_recently_checked)
        stats.set_value("docsbot/skipped/fresh", ledger.skipped_fresh)
        plan = ledger.deletion_plan(
            completed=True,
            prune=context.crawl.prune,
            mass_delete_share=self.crawler.settings.getfloat("DOCSBOT_MASS_DELETE_SHARE"),
            allow_mass_delete=context.args.allow_mass_delete,
        )
        await self._apply(plan)
        await self.mark_checked(plan)
        changed = any(stats.get_value(f"docsbot/{key}", 0) for key in ("chunks_written", "deleted", "gone"))
        self.lexical_stats_refreshed = await self._bookkeeping(
            "search statistics not refreshed", context.store.refresh_lexical_stats(context.version.id, changed)
        )
        searchable = time.monotonic() - self._started
        stats.set_value("docsbot/searchable_seconds", round(searchable, 3))
        if context.vectors is not None and self.problems:
            # a bookkeeping step failed through the retries: the database is not there for a worker either
            logger.warning("%s: the database is unavailable; the chunks waiting for a vector are left to the next "
                           "run or `docsbot embed`", context.label)  # fmt: skip
        elif context.vectors is not None:
            await self._drain(searchable)
        else:
            logger.info(
                "%s: every page stored and searchable by text %.1f s after the start", context.label, searchable
            )
        if not self.problems:
            # a first index's graph, built over its vectors once they are in (blocking DDL: off the event loop)
            await asyncio.get_running_loop().run_in_executor(None, ensure_vector_indexes, self._dsn, GRAPH_WAIT_SECONDS)
        self._close("finished")

    async def _drain(self, searchable: float) -> None:
        """The run's worker gives every waiting chunk its vector; meanwhile the version's graph is built once most
        of them are in (:func:`~docsbot.extensions.vectors.graph_when_ready`)."""
        context = self.context
        vectors = context.vectors
        assert vectors is not None
        logger.info(
            "%s: every page stored and searchable by text %.1f s after the start; now the chunks waiting for a "
            "vector get theirs",
            context.label,
            searchable,
        )
        done = asyncio.Event()
        queued = self.crawler.stats.get_value("docsbot/chunks_queued", 0)
        graph = asyncio.ensure_future(graph_when_ready(vectors, self._dsn, context.version.id, queued, done))
        try:
            self.vector_stats = await vectors.drain()
        finally:
            done.set()
            await graph
        if self.vector_stats is not None and self.vector_stats.written:
            logger.info("vectors of %s: %s in %.1f s", context.label,
                        describe_progress(self.vector_stats.written, vectors.worker.waiting or 0, None),
                        time.monotonic() - self._started - searchable)  # fmt: skip

    async def _bookkeeping(self, what: str, step: Awaitable[Any]) -> bool:
        """Await a bookkeeping step; if the database refuses it through the retries, remember ``what`` (the run
        is then incomplete) instead of raising."""
        try:
            await step
        except store.StoreUnavailable as exc:
            logger.error("%s: %s", what, exc)
            self.problems.append(f"{what} ({exc})")
            return False
        return True

    async def _apply(self, plan: DeletionPlan) -> None:
        context, stats = self.context, self.crawler.stats
        ledger = context.ledger
        if not ledger.truncated:
            stats.set_value("docsbot/orphans", len(plan.orphans))
        if plan.orphans:
            sample = ", ".join(sorted(plan.orphans.values())[:5])
            action = "deleting them (prune=orphans)" if context.crawl.prune == "orphans" else "kept; -a prune=orphans"
            logger.info("%d orphan pages no longer linked from the root: %s … (%s)", len(plan.orphans), sample, action)
        if plan.out_of_scope:
            stats.set_value("docsbot/left_scope", len(plan.out_of_scope))
            logger.info(
                "%d stored pages are out of the scope now (%s): %s …%s",
                len(plan.out_of_scope),
                ledger.scope.describe(),
                ", ".join(sorted(plan.out_of_scope.values())[:5]),
                "" if plan.completed and not plan.refused else " (kept)",
            )
        if not plan.completed:
            if plan.kept:
                logger.warning("the root did not answer: %d gone pages are kept until a complete run", plan.kept)
            return
        if plan.refused:
            stats.set_value("docsbot/deletion_refused", plan.refused)
            logger.warning(
                "not deleting %d of %d pages of %s (more than %.0f%%): if the site really lost them, rerun with "
                "-a allow_mass_delete=1",
                plan.refused,
                max(len(ledger.pages), 1),
                context.label,
                100 * self.crawler.settings.getfloat("DOCSBOT_MASS_DELETE_SHARE"),
            )
            return
        if not plan.delete:
            return
        try:
            deleted = await context.store.delete_pages(
                sorted(plan.delete), context.run_id, record=context.changes_keep is not None
            )
        except store.StoreUnavailable as exc:
            logger.error("%s: %d pages to delete are kept: %s", context.label, len(plan.delete), exc)
            self.problems.append(f"{len(plan.delete)} deletions not applied ({exc})")
            plan.delete.clear()  # kept: still stored, so still checked
            return
        stats.set_value("docsbot/deleted", deleted)
        for page_id in sorted(ledger.gone_pages):
            if page_id in plan.delete:
                logger.info("deleted %s", ledger.gone_pages[page_id])

    async def mark_checked(self, plan: DeletionPlan) -> None:
        """Record the pages the run checked (those the plan keeps), and the HTTP freshness of those that answered
        304."""
        context = self.context
        await self._bookkeeping(
            "the checked pages were not marked",
            context.store.mark_checked(context.run_id, context.ledger.checked_pages(plan), context.ledger.fresh),
        )

    # --- the run closes ---

    async def finish(self, reason: str) -> None:
        """Count the chunks still waiting, decide the outcome and write the run's record (``crawl_runs``); a record
        that cannot be written makes the run incomplete."""
        context = self.context
        if context.store.change_seconds:
            self.crawler.stats.set_value("docsbot/changes/db_seconds", round(context.store.change_seconds, 3))
        waiting = 0
        try:
            waiting = await context.store.vectors_waiting(context.version.id)
        except store.StoreUnavailable as exc:
            self.problems.append(f"the chunks without a vector could not be counted ({exc})")
        outcome = self.decide(reason, waiting)
        try:
            keep = context.changes_keep.total_seconds() if context.changes_keep else None
            await context.store.finish_run(
                context.run_id,
                self._summary(reason),
                outcome.state,
                outcome.reason,
                keep_changes=keep,
                lexical_stats=not self.lexical_stats_refreshed,
            )
        except store.StoreUnavailable as exc:
            logger.error("%s: the run's record could not be written: %s", context.label, exc)
            self.problems.append(f"the run's record was not written ({exc})")
            self.decide(reason, waiting)

    def decide(self, reason: str, waiting: int) -> RunOutcome:
        """The run's outcome (:func:`docsbot.refresh.run_outcome`), into the stats ``scrapy crawl`` reads."""
        stats = self.crawler.stats
        all_stats = stats.get_stats()
        counts = {k.removeprefix("docsbot/"): v for k, v in all_stats.items() if k.startswith("docsbot/")}
        completed = self.crawl_completed or reason.startswith("closespider_")
        note = ""
        if waiting:
            worker = self.context.vectors.worker if self.context.vectors is not None else None
            if worker is None:
                note = "DOCSBOT_CRAWL_EMBED_WORKERS=0"
            elif worker.stats.error:
                note = worker.stats.error
            elif reason != "finished":
                note = f"stopped while embedding ({reason})"
        if self.vector_stats is not None or self.context.vectors is not None:
            fill = self.context.vectors.worker.stats if self.context.vectors is not None else FillStats()
            stats.set_value("docsbot/chunks_embedded", fill.embedded)
            stats.set_value("docsbot/chunks_vectors_written", fill.written)
        stats.set_value("docsbot/vectors_waiting", waiting)
        self.outcome = run_outcome(
            counts,
            mode=self.context.mode,
            crawl_completed=completed,
            stop_reason=all_stats.get("docsbot/stopped") or reason,
            problems=self.problems,
            vectors_waiting=waiting,
            vectors_note=note,
            responses={
                k.rsplit("/", 1)[1]: v
                for k, v in all_stats.items()
                if k.startswith("downloader/response_status_count/")
            },
        )
        stats.set_value("docsbot/outcome", self.outcome.state)
        stats.set_value("docsbot/exit_code", self.outcome.exit_code)
        return self.outcome

    def log_summary(self, reason: str) -> None:
        """The run's one line (``refresh of lib@1: 512 unchanged, 7 modified, …``), and its outcome's reason."""
        context, stats = self.context, self.crawler.stats
        counts = {k.removeprefix("docsbot/"): v for k, v in stats.get_stats().items() if k.startswith("docsbot/")}
        outcome = self.outcome or RunOutcome("failed", 1, reason)
        vectors = ""
        if context.run_id is not None:
            waiting = counts.get("vectors_waiting", 0)
            done = f"{counts.get('chunks_embedded', 0)} embedded, {counts.get('chunks_reused', 0)} reused"
            vectors = f"; vectors {'complete' if not waiting else f'{waiting} waiting'} ({done})"
        # a page re-extracted from its stored HTML (its 304, a newer extraction) is counted as what it stores
        reextracted = counts.get("reextracted", 0)
        skipped = ", ".join(
            f"{key.removeprefix('skipped/')} {n}"
            for key, n in sorted(counts.items())
            if key.removeprefix("skipped/") in SKIPPED_KINDS and key.startswith("skipped/") and n
        )
        logger.info(
            "%s of %s: %d unchanged, %d modified%s, %d new, %d deleted, %d failed%s%s in %.1f s (%s)",
            context.mode,
            context.label,
            counts.get("unchanged", 0),
            counts.get("modified", 0),
            f" ({reextracted} re-extracted from stored HTML, not downloaded)" if reextracted else "",
            counts.get("new", 0),
            counts.get("deleted", 0),
            counts.get("failed", 0),
            f", skipped by the site's rules ({skipped})" if skipped else "",
            vectors,
            time.monotonic() - self._started,
            outcome.state if outcome.state != "failed" else f"failed: {reason}",
        )
        if outcome.reason:
            log = logger.warning if outcome.state == "vectors_pending" else logger.error
            log("%s: %s (exit code %d)", context.label, outcome.reason, outcome.exit_code)

    def _summary(self, reason: str) -> dict[str, Any]:
        all_stats = self.crawler.stats.get_stats()
        summary: dict[str, Any] = {
            k.removeprefix("docsbot/"): v for k, v in all_stats.items() if k.startswith("docsbot/")
        }
        summary["responses_by_status"] = {
            k.rsplit("/", 1)[1]: v for k, v in all_stats.items() if k.startswith("downloader/response_status_count/")
        }
        summary["bytes_downloaded"] = all_stats.get("downloader/response_bytes", 0)
        summary["requests"] = all_stats.get("downloader/request_count", 0)
        summary["elapsed_seconds"] = round(time.monotonic() - self._started, 3)
        summary["finish_reason"] = reason
        summary["arguments"] = self.context.args.as_json()
        if self.context.skipped:
            summary["skipped_pages"] = self.context.skipped  # {kind: [URL, ...]}, at most SKIPPED_LISTED each
        return summary
