"""The run's bookkeeping: a Scrapy extension, as Scrapy keeps its per-run services (``scrapy/extensions/``).

:class:`IndexRun` is built by the crawler after the docs spider (``EXTENSIONS``), before any other component, and
wires Scrapy's signals to the run's parts, one module each:

- **setup** (in ``from_crawler``, synchronous; :mod:`docsbot.extensions.setup`): the embedding model's provisioning
  checked (files only, no load), database migrations, the version's row (created by a full index, required by a
  refresh), the version's run lock, the embedding model bound to the version, the rendering policy, the scope, and
  the run's :class:`~docsbot.extensions.context.IndexContext` (:mod:`docsbot.extensions.context`), which the other
  components look up. Any error here (:class:`~docsbot.errors.DocsbotError`) stops ``scrapy crawl`` with exit code
  1 before anything is written.
- ``spider_opened``: loads the stored pages into a :class:`~docsbot.refresh.RefreshLedger`, records the run in
  ``crawl_runs`` (marking an earlier run of the version that never recorded its end as interrupted), starts the
  run's embedding worker (:mod:`docsbot.extensions.vectors`) and, for a full index, the model's loading, which the
  spider awaits before its first request. A database that stays unavailable here closes the run
  (``database_unavailable``) before any request.
- ``spider_idle`` (the first time: every page has been fetched and stored or counted): the crawl is done, so the
  run applies the ledger's deletion plan, marks the pages it checked, refreshes the search statistics and says that
  the site is searchable; then it keeps the spider open while its worker gives the chunks still waiting their
  vectors, and closes it when none is left (:mod:`docsbot.extensions.ending`).
- ``spider_closed``: stops the worker (a stop during the drain rolls back the claims in flight: nothing is lost),
  decides the run's outcome (:func:`docsbot.refresh.run_outcome`), records it in ``crawl_runs``, logs the one-line
  summary, closes the pool and releases the run lock. Every database step is retried alike
  (:class:`docsbot.store.RetryPolicy`); one that still fails makes the run incomplete, never silently.

Pages that were fetched but not stored are counted here, whatever dropped them (``item_dropped``,
``item_error``, ``spider_error``): ``docsbot/failed/<kind>`` (:data:`docsbot.refresh.FAILURE_KINDS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import CloseSpider, DontCloseSpider, NotConfigured

from docsbot import store
from docsbot.arguments import CrawlArguments
from docsbot.content import EXTRACTOR_VERSION
from docsbot.extensions.context import PageNotStored, RunExtension, count_failure
from docsbot.extensions.ending import RunEnd
from docsbot.extensions.setup import set_up
from docsbot.items import PageItem
from docsbot.refresh import RefreshLedger

if TYPE_CHECKING:
    import psycopg
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

__all__ = ["IndexRun"]

logger = logging.getLogger(__name__)


class IndexRun(RunExtension):
    """Setup, start, end and outcome of one docs crawl (see the module docstring). Stats: ``docsbot/orphans``,
    ``docsbot/left_scope`` (stored pages the run's scope no longer covers), ``docsbot/deleted``,
    ``docsbot/deletion_refused``, ``docsbot/skipped/recently_checked``, ``docsbot/failed`` and
    ``docsbot/failed/<kind>``, ``docsbot/chunks_embedded`` (texts the run's worker embedded),
    ``docsbot/chunks_vectors_written`` (chunks it gave a vector), ``docsbot/vectors_waiting`` (chunks of the
    version still without one at the end), ``docsbot/searchable_seconds`` (from the start of the run until every
    page was stored), ``docsbot/outcome`` and ``docsbot/exit_code`` (what ``scrapy crawl`` exits with)."""

    def __init__(self, crawler: Crawler) -> None:
        args = getattr(crawler.spider, "args", None)
        if not isinstance(args, CrawlArguments):
            raise NotConfigured("IndexRun runs with the docs spider only")
        self.crawler = crawler
        started = time.monotonic()
        self._done: asyncio.Future[None] | None = None  # the end of the crawl: bookkeeping, then the drain
        self._closing = False
        setup = set_up(crawler, args)
        self.context = setup.context
        self._lock: psycopg.Connection | None = setup.lock
        self.end = RunEnd(crawler, self.context, setup.dsn, started, self._close)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(self.item_error, signal=signals.item_error)
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexRun:
        return cls(crawler)

    # --- start of the run ---

    async def spider_opened(self, spider: object = None) -> None:
        """Stored pages, the run's row, the embedding worker. Raises ``CloseSpider("database_unavailable")`` (Scrapy
        then closes the spider before its first request) when the database stays unavailable through the retries."""
        context = self.context
        variant = getattr(context.embedder, "variant", None)
        if variant:  # which graph of the model made the run's vectors (the version records the model)
            self.crawler.stats.set_value("docsbot/embedding_variant", variant)
        await context.store.open()
        try:
            stored = await context.store.stored_pages(context.version.id)
            if context.refresh:
                context.seed_files = await context.store.seed_files(context.version.id)
            launch = context.args.launch or f"crawl-{uuid.uuid4().hex}"  # known by it; its start recorded once
            context.run_id = await context.store.start_run(context.version.id, context.mode, launch)
        except store.StoreUnavailable as exc:
            logger.error("%s: the run cannot start: %s", context.label, exc)
            raise CloseSpider("database_unavailable") from exc
        crawl = context.crawl
        context.ledger = RefreshLedger(
            crawl.root_url,
            stored.values(),
            refresh=context.refresh,
            max_depth=crawl.max_depth,
            max_pages=crawl.max_pages,
            min_recheck=context.args.min_recheck,
            http_freshness=crawl.freshness == "http",
            render=context.render,
            scope=context.start_scope,
            extractor_version=EXTRACTOR_VERSION,
        )
        logger.info("%d pages of %s are stored", len(stored), context.label)
        if context.vectors is not None:
            context.vectors.start(context.run_id, load_now=not context.refresh)
            if context.vectors.loading is not None:
                context.vectors.loading.add_done_callback(self._model_loaded)

    def _model_loaded(self, loading: asyncio.Future[None]) -> None:
        """A full index loads its model before its first request: if it cannot, the run stops at once."""
        if loading.cancelled() or loading.exception() is None:
            return
        logger.error("%s", loading.exception())
        self.crawler.stats.set_value("docsbot/stopped", "embedding_model_error")
        self._close("embedding_model_error")

    def _close(self, reason: str) -> None:
        """Close the spider (in a task of its own: closing runs spider_closed, which may wait for the caller)."""
        if self._closing:
            return
        self._closing = True

        async def close() -> None:
            with contextlib.suppress(RuntimeError):  # the engine closed meanwhile
                await self.crawler.engine.close_spider_async(reason=reason)

        asyncio.ensure_future(close())

    # --- pages fetched but not stored ---

    def item_dropped(self, item: Any, response: object, exception: BaseException, spider: object = None) -> None:
        if isinstance(item, PageItem):
            count_failure(self.crawler.stats, exception.kind if isinstance(exception, PageNotStored) else "dropped")

    def item_error(self, item: Any, response: object, spider: object = None, failure: Failure | None = None) -> None:
        if isinstance(item, PageItem):
            count_failure(self.crawler.stats, "error")

    def spider_error(self, failure: Failure, response: Any, spider: object = None) -> None:
        """A callback crashed (a bug): the page it was handling is not stored this run."""
        count_failure(self.crawler.stats, "error")

    # --- the crawl is done: bookkeeping, then the vectors (docsbot.extensions.ending) ---

    def spider_idle(self, spider: object = None) -> None:
        if self.context.run_id is None:
            return
        if self._done is None:
            self._done = asyncio.ensure_future(self.end.crawl_done())
        if not self._done.done():
            raise DontCloseSpider

    # --- end of the run ---

    async def spider_closed(self, spider: object = None, reason: str = "finished") -> None:
        """Stop the worker, decide the outcome, record the run, log the summary; always close the pool and release
        the run lock."""
        context, end = self.context, self.end
        self._closing = True
        try:
            if context.vectors is not None:
                await context.vectors.stop()  # a stop during the drain: its claims in flight are rolled back
            if self._done is not None and not self._done.done():
                await self._done  # stopped during the end-of-crawl bookkeeping: let it finish what it started
            if context.run_id is not None:
                if not end.crawl_completed:
                    plan = context.ledger.deletion_plan(completed=False)
                    if plan.kept:
                        logger.warning("the run did not finish (%s): %d gone pages are kept", reason, plan.kept)
                    await end.mark_checked(plan)
                await end.finish(reason)
            else:
                end.decide(reason, waiting=0)
        finally:
            await context.store.close()
            self._release_lock()
        end.log_summary(reason)

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None
