"""The run's bookkeeping: a Scrapy extension, as Scrapy keeps its per-run services (``scrapy/extensions/``).

:class:`IndexRun` is built by the crawler after the docs spider (``EXTENSIONS``), before any other component:

- **setup** (in ``from_crawler``, synchronous): the embedding model's provisioning checked (files only, no
  load), database migrations, the version's row (created by a full index, required by a refresh), the version's
  run lock, the embedding model bound to the version, the rendering policy, the scope. Any error here
  (:class:`~docsbot.errors.DocsbotError`) stops ``scrapy crawl`` with exit code 1 before anything is written.
- ``spider_opened``: loads the stored pages into a :class:`~docsbot.refresh.RefreshLedger`, records the run in
  ``crawl_runs`` (marking an earlier run of the version that never recorded its end as interrupted), starts the
  run's embedding worker (:mod:`docsbot.embedding.worker`) and, for a full index, the model's loading, which the spider
  awaits before its first request. A database that stays unavailable here closes the run
  (``database_unavailable``) before any request.
- ``spider_idle`` (the first time: every page has been fetched and stored or counted): the crawl is done, so the
  run applies the ledger's deletion plan, marks the pages it checked, refreshes the search statistics and says that
  the site is searchable; then it keeps the spider open while its worker gives the chunks still waiting their
  vectors, and closes it when none is left.
- ``spider_closed``: stops the worker (a stop during the drain rolls back the claims in flight: nothing is lost),
  decides the run's outcome (:func:`docsbot.refresh.run_outcome`), records it in ``crawl_runs``, logs the one-line
  summary, closes the pool and releases the run lock. Every database step is retried alike
  (:class:`docsbot.store.RetryPolicy`); one that still fails makes the run incomplete, never silently.

Pages that were fetched but not stored are counted here, whatever dropped them (``item_dropped``,
``item_error``, ``spider_error``): ``docsbot/failed/<kind>`` (:data:`docsbot.refresh.FAILURE_KINDS`).

The spider, the downloader middlewares and the pipelines get the run's :class:`IndexContext` once, in their
``from_crawler``/``spider_opened``, through ``crawler.get_extension(IndexRun)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from scrapy import signals
from scrapy.exceptions import CloseSpider, DontCloseSpider, DropItem, NotConfigured
from scrapy.utils.misc import load_object

from docsbot import network, store
from docsbot.arguments import CrawlArguments, CrawlSettings, SpiderArgumentError, parse_duration
from docsbot.content.extract import EXTRACTOR_VERSION
from docsbot.embedding.models import EmbeddingModelError, load_embedder
from docsbot.embedding.worker import EmbeddingWorker, FillStats, ModelRunner, describe_progress, when_mostly_written
from docsbot.items import PageItem
from docsbot.refresh import (
    FAILURE_KINDS,
    GONE_STATUSES,
    SKIP_STATUSES,
    SKIPPED_KINDS,
    DeletionPlan,
    RefreshLedger,
    RunOutcome,
    parse_gone_statuses,
    parse_skip_statuses,
    run_outcome,
)
from docsbot.render import RenderPolicy, check_rendering
from docsbot.urls import Scope

if TYPE_CHECKING:
    from datetime import timedelta

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

    from docsbot.embedding.models import Embedder

__all__ = [
    "IndexContext",
    "IndexRun",
    "PageNotStored",
    "RunVectors",
    "count_failure",
    "index_context",
]

logger = logging.getLogger(__name__)
GRAPH_WAIT_SECONDS = 600.0  # at its end, a run waits this long for another process's graph builds, then its own


SKIPPED_LISTED = 100  # URLs of skipped pages a run lists per kind (the count is complete)


@dataclass
class IndexContext:
    """What one crawl of one library version works with. ``ledger`` exists from ``spider_opened`` on."""

    version: store.VersionRow
    args: CrawlArguments
    crawl: CrawlSettings
    store: store.PageStore
    embedder: Embedder
    scope: Scope
    render: RenderPolicy
    render_wait_until: str
    label: str
    gone_statuses: frozenset[int] = GONE_STATUSES
    ledger: RefreshLedger = field(init=False)
    run_id: int | None = None
    vectors: RunVectors | None = None  # the run's embedding worker (None: DOCSBOT_CRAWL_EMBED_WORKERS=0)
    changes_keep: timedelta | None = None  # DOCSBOT_CHANGES_KEEP: how long change log rows are kept (None: off)
    # a refresh's stored sitemaps, llms.txt and Doxygen menu (URL → SeedFile): revalidated, seeded from on a 304
    seed_files: dict[str, store.SeedFile] = field(default_factory=dict)
    # DOCSBOT_SKIP_STATUSES: a page never stored that answers one of these is skipped by the site's rule, not failed
    skip_statuses: frozenset[int] = frozenset({401, 403})
    # the pages skipped by the site's rules, by kind (robots, forbidden, refused): the first SKIPPED_LISTED of each
    skipped: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, kind: str, url: str) -> None:
        """Record ``url`` as skipped by the site's rule ``kind`` (listed in the run's stats, up to a cap)."""
        listed = self.skipped.setdefault(kind, [])
        if len(listed) < SKIPPED_LISTED:
            listed.append(url)

    @property
    def mode(self) -> str:
        return self.args.mode

    @property
    def refresh(self) -> bool:
        return self.args.mode == "refresh"

    def vectors_waiting(self) -> None:
        """The store wrote chunks without a vector: wake the run's embedding worker."""
        if self.vectors is not None:
            self.vectors.worker.wake()

    async def model_ready(self) -> bool:
        """Wait until the model the run embeds with is loaded (a full index loads it before its first request; a
        refresh, which may embed nothing, when its worker first needs it). ``False`` if it could not be loaded:
        the run is then closing (``embedding_model_error``)."""
        if self.vectors is None or self.vectors.loading is None:
            return True
        try:
            await asyncio.shield(self.vectors.loading)
        except EmbeddingModelError:
            return False
        return True


class PageNotStored(DropItem):
    """A fetched page that could not be stored; ``kind`` is its ``docsbot/failed/<kind>`` count
    (:data:`docsbot.refresh.FAILURE_KINDS`). Counted once, by :class:`IndexRun`."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def count_failure(stats: Any, kind: str) -> None:
    """Count a page fetched but not stored: ``docsbot/failed`` and ``docsbot/failed/<kind>``."""
    assert kind in FAILURE_KINDS, kind
    stats.inc_value("docsbot/failed")
    stats.inc_value(f"docsbot/failed/{kind}")


class RunVectors:
    """The run's own embedding worker (:class:`docsbot.embedding.worker.EmbeddingWorker`) over the version's queue, with
    its model on a thread of its own (:class:`docsbot.embedding.worker.ModelRunner`, ``DOCSBOT_EMBED_NICE``).

    By default it starts once the crawl is done (:meth:`drain`: every page stored and searchable by text), then
    empties the queue and returns: on a machine the crawl keeps busy (extraction and chunking in worker
    processes, PostgreSQL writing postings), a model beside it slowed the full index of the Python docs to
    searchable in 61.5 s instead of 49.5 s (2 CPUs), however low its priority (``DOCSBOT_EMBED_NICE``), and
    finished no sooner. ``DOCSBOT_EMBED_DURING_CRAWL`` runs it beside the crawl instead, embedding what the store
    queued as it comes (for a machine with cores the crawl leaves idle, or an endpoint that embeds elsewhere).
    :meth:`stop` (the run was stopped) rolls back its claims in flight. ``loading``: the model's loading, started
    at once for a full index (``load_now``), which embeds for sure."""

    def __init__(
        self, dsn: str, embedder: Embedder, settings: BaseSettings, version: store.VersionRow, label: str
    ) -> None:
        self.runner = ModelRunner(embedder, settings.getint("DOCSBOT_EMBED_NICE", 10))
        self.worker = EmbeddingWorker(
            dsn,
            self.runner,
            model=embedder.name,
            version_ids=[version.id],
            label=label,
            claim=settings.getint("DOCSBOT_EMBED_CLAIM", 256),
            slots=settings.getint("DOCSBOT_CRAWL_EMBED_WORKERS", 1) * max(1, getattr(embedder, "concurrency", 1)),
            retry=store.RetryPolicy.from_settings(settings),
        )
        self.during_crawl = settings.getbool("DOCSBOT_EMBED_DURING_CRAWL", False)
        self.loading: asyncio.Future[None] | None = None
        self._crawling = True
        self._started = False
        self._stopped = False
        self._task: asyncio.Future[FillStats] | None = None

    def start(self, run_id: int | None, load_now: bool) -> None:
        self.worker.run_id = run_id
        self._started = True
        if load_now:
            self.loading = asyncio.ensure_future(self.runner.load())
        if self.during_crawl:
            self._task = asyncio.ensure_future(self.worker.run(follow=lambda: self._crawling))

    async def drain(self) -> FillStats | None:
        """The crawl is done: give every waiting chunk its vector, then return the worker's stats (``None`` if the
        worker was stopped meanwhile)."""
        self._crawling = False
        if self._task is None and self._started and not self._stopped:
            self._task = asyncio.ensure_future(self.worker.run())
        self.worker.wake()
        if self._task is None:
            return None
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            return None

    async def stop(self) -> None:
        """Stop now: the claims in flight are rolled back (their chunks wait for the next worker)."""
        self._crawling = False
        self._stopped = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.runner.aclose()


def index_context(crawler: Crawler) -> IndexContext:
    """The run's context, for components built after the extension; ``NotConfigured`` without it (another
    spider, or docsbot's extension switched off)."""
    run = crawler.get_extension(IndexRun)
    if run is None:
        raise NotConfigured("docsbot components need the docs spider and its IndexRun extension")
    return run.context


class IndexRun:
    """Setup, start, end and outcome of one docs crawl (see the module docstring). Stats: ``docsbot/orphans``,
    ``docsbot/deleted``, ``docsbot/deletion_refused``, ``docsbot/skipped/recently_checked``, ``docsbot/failed``
    and ``docsbot/failed/<kind>``, ``docsbot/chunks_embedded`` (texts the run's worker embedded),
    ``docsbot/chunks_vectors_written`` (chunks it gave a vector), ``docsbot/vectors_waiting`` (chunks of the
    version still without one at the end), ``docsbot/searchable_seconds`` (from the start of the run until every
    page was stored), ``docsbot/outcome`` and ``docsbot/exit_code`` (what ``scrapy crawl`` exits with)."""

    def __init__(self, crawler: Crawler) -> None:
        args = getattr(crawler.spider, "args", None)
        if not isinstance(args, CrawlArguments):
            raise NotConfigured("IndexRun runs with the docs spider only")
        self.crawler = crawler
        self._started = time.monotonic()
        self._lock: psycopg.Connection | None = None
        self._dsn = ""
        self._done: asyncio.Future[None] | None = None  # the end of the crawl: bookkeeping, then the drain
        self._closing = False
        self.crawl_completed = False
        self.lexical_stats_refreshed = False  # at the end of the crawl; else the run's end refreshes them
        self.problems: list[str] = []  # bookkeeping steps that could not be written
        self.vector_stats: FillStats | None = None
        self.outcome: RunOutcome | None = None
        try:
            self.context = self._setup(crawler, args)
        except BaseException:
            self._release_lock()
            raise
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(self.item_error, signal=signals.item_error)
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexRun:
        return cls(crawler)

    # --- setup: a failure here stops `scrapy crawl` (exit code 1) before anything is written ---

    @staticmethod
    def _ensure_vector_indexes(dsn: str, wait: float = 0.0) -> None:
        """The version's own HNSW graph, and any other a database needs (docsbot.store.vector_index; ``wait``:
        seconds to wait for another process building them). Without one a version is searched by an exact scan,
        so a failure here is worth a warning, not the run."""
        try:
            store.ensure_vector_indexes(dsn, wait)
        except psycopg.Error as exc:
            logger.warning("the vector indexes could not be built (%s); searches scan vectors exactly", exc)

    def _setup(self, crawler: Crawler, args: CrawlArguments) -> IndexContext:
        settings = crawler.settings
        embedder = load_embedder(settings)  # raises EmbeddingModelError now if the model is not provisioned
        check = getattr(embedder, "check", None)
        if check is not None:
            check()
        try:
            gone = parse_gone_statuses(settings.getlist("DOCSBOT_GONE_STATUSES", sorted(GONE_STATUSES)))
            skip = parse_skip_statuses(settings.getlist("DOCSBOT_SKIP_STATUSES", sorted(SKIP_STATUSES)), gone)
        except ValueError as exc:
            raise SpiderArgumentError(str(exc)) from None
        try:
            changes_keep = parse_duration(settings.get("DOCSBOT_CHANGES_KEEP", "90d"))
        except ValueError as exc:
            raise SpiderArgumentError(f"DOCSBOT_CHANGES_KEEP: {exc}") from None
        dsn = self._dsn = store.resolve_dsn(settings)
        with store.connect(dsn, retry=store.RetryPolicy.from_settings(settings)) as conn:
            store.migrate(conn)
            existing = store.find_version(conn, args.library, args.version)
            if args.mode == "refresh":
                if existing is None:
                    known = ", ".join(store.version_label(v.library, v.name) for v in store.list_versions(conn))
                    raise store.DatabaseError(
                        f"nothing to refresh: library {args.library!r} version {args.version!r} is not indexed "
                        f"(indexed: {known or 'none'}); index it first with -a url=ROOT_URL"
                    )
                crawl = args.resolve(existing.root_url, existing.settings)
                self._guard_network(settings, crawl)
                render = self._rendering(crawler, crawl.render)
                self._lock = store.lock_version(dsn, existing)
                version = existing
            else:
                crawl = args.resolve()
                self._guard_network(settings, crawl)
                render = self._rendering(crawler, crawl.render)
                if existing is not None:
                    self._lock = store.lock_version(dsn, existing)
                version = store.upsert_version(conn, args.library, args.version, crawl.root_url, crawl.stored())
                if existing is None:
                    self._lock = store.lock_version(dsn, version)
            store.bind_model(conn, version, embedder.name, lambda: embedder.dim)
        # After the connection's transaction ended: a CREATE INDEX CONCURRENTLY waits for every older one
        self._ensure_vector_indexes(dsn)
        label = store.version_label(version.library, version.name)
        context = IndexContext(
            version=version,
            args=args,
            crawl=crawl,
            store=store.PageStore.from_settings(dsn, settings),
            embedder=embedder,
            scope=Scope.from_root(crawl.root_url),
            render=render,
            render_wait_until=settings.get("DOCSBOT_RENDER_WAIT_UNTIL"),
            label=label,
            gone_statuses=gone,
            skip_statuses=skip,
            changes_keep=changes_keep,
        )
        if settings.getint("DOCSBOT_CRAWL_EMBED_WORKERS", 1) > 0:
            context.vectors = RunVectors(dsn, embedder, settings, version, label)
        logger.info(
            "%s of %s from %s (scope %s%s, max_depth=%s, max_pages=%s, prune=%s, render=%s%s)",
            args.mode,
            context.label,
            crawl.root_url,
            context.scope.netloc,
            context.scope.path_prefix,
            crawl.max_depth,
            crawl.max_pages,
            crawl.prune,
            crawl.render if render.all_pages or not render.enabled else "DOCSBOT_RENDER_URLS",
            ", network=public" if crawl.network == "public" else "",
        )
        return context

    @staticmethod
    def _guard_network(settings: BaseSettings, crawl: CrawlSettings) -> None:
        """``-a network=public`` (a crawl started from the network): this process connects only to public addresses
        and ``DOCSBOT_ALLOWED_NETWORKS`` (:mod:`docsbot.network`), enforced by :class:`docsbot.resolver.
        GuardedResolver`, which must be the process's resolver; nothing is rendered (a browser resolves and
        connects on its own). Raises :class:`SpiderArgumentError` when the guard cannot hold."""
        if crawl.network != "public":
            network.restrict(None)
            return
        from docsbot.resolver import GuardedResolver

        try:
            policy = network.NetworkPolicy.public(settings.get("DOCSBOT_ALLOWED_NETWORKS"))
        except ValueError as exc:
            raise SpiderArgumentError(str(exc)) from None
        resolver = load_object(settings.get("TWISTED_DNS_RESOLVER"))
        if not (isinstance(resolver, type) and issubclass(resolver, GuardedResolver)):
            raise SpiderArgumentError(
                f"-a network=public needs TWISTED_DNS_RESOLVER = docsbot.resolver.GuardedResolver (it is "
                f"{settings.get('TWISTED_DNS_RESOLVER')}): only that resolver keeps the crawl off private addresses"
            )
        try:
            render = RenderPolicy.from_settings(crawl.render, settings.get("DOCSBOT_RENDER_URLS"))
        except ValueError as exc:
            raise SpiderArgumentError(str(exc)) from None
        if render.enabled:
            raise SpiderArgumentError(
                "-a network=public renders nothing (a browser resolves and connects on its own): drop -a render=js "
                "and DOCSBOT_RENDER_URLS for this crawl"
            )
        network.restrict(policy)

    @staticmethod
    def _rendering(crawler: Crawler, mode: str) -> RenderPolicy:
        """Which pages go through the browser (docsbot.core.handler.DownloadHandler hands them to scrapy-playwright's
        handler); with any, whether that can work here is checked now, before anything is fetched."""
        settings = crawler.settings
        try:
            policy = RenderPolicy.from_settings(mode, settings.get("DOCSBOT_RENDER_URLS"))
        except ValueError as exc:
            raise SpiderArgumentError(str(exc)) from None
        if policy.enabled:
            check_rendering(settings)
        return policy

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

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
            scope=context.scope,
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

    # --- the crawl is done: bookkeeping, then the vectors ---

    def spider_idle(self, spider: object = None) -> None:
        if self.context.run_id is None:
            return
        if self._done is None:
            self._done = asyncio.ensure_future(self._crawl_done())
        if not self._done.done():
            raise DontCloseSpider

    async def _crawl_done(self) -> None:
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
        await self._mark_checked(plan)
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
            worker = context.vectors.worker
            logger.info(
                "%s: every page stored and searchable by text %.1f s after the start; now the chunks waiting for a "
                "vector get theirs",
                context.label,
                searchable,
            )
            done = asyncio.Event()
            graph = asyncio.ensure_future(self._graph_when_ready(done))
            try:
                self.vector_stats = await context.vectors.drain()
            finally:
                done.set()
                await graph
            if self.vector_stats is not None and self.vector_stats.written:
                logger.info("vectors of %s: %s in %.1f s", context.label,
                            describe_progress(self.vector_stats.written, worker.waiting or 0, None),
                            time.monotonic() - self._started - searchable)  # fmt: skip
        else:
            logger.info(
                "%s: every page stored and searchable by text %.1f s after the start", context.label, searchable
            )
        if not self.problems:
            # a first index's graph, built over its vectors once they are in (blocking DDL: off the event loop)
            await asyncio.get_running_loop().run_in_executor(
                None, self._ensure_vector_indexes, self._dsn, GRAPH_WAIT_SECONDS
            )
        self._close("finished")

    async def _graph_when_ready(self, done: asyncio.Event) -> None:
        """While the queue drains (until ``done``): the version's HNSW graph, if it has none, built once the run's
        worker has written most of the vectors this run queued (:func:`docsbot.embedding.worker.when_mostly_written`;
        ``ensure_vector_indexes`` checks the share in the database again). A failure is a warning, as at the end of
        the run, which builds whatever is still missing."""
        loop = asyncio.get_running_loop()
        if await loop.run_in_executor(None, self._has_graph, self._dsn, self.context.version.id):
            return
        queued = self.crawler.stats.get_value("docsbot/chunks_queued", 0)
        await when_mostly_written(
            self.context.vectors.worker, queued, done, lambda: self._ensure_vector_indexes(self._dsn)
        )

    @staticmethod
    def _has_graph(dsn: str, version_id: int) -> bool:
        """Whether ``version_id`` has its graph or one is being built (True, too, when that cannot be read)."""
        try:
            with store.connect(dsn, autocommit=True) as conn:
                return store.vector_indexes(conn).get(version_id, store.VectorIndex("none")).state != "exact"
        except psycopg.Error:
            return True

    async def _bookkeeping(self, what: str, step: Any) -> bool:
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

    async def _mark_checked(self, plan: DeletionPlan) -> None:
        context = self.context
        await self._bookkeeping(
            "the checked pages were not marked",
            context.store.mark_checked(context.run_id, context.ledger.checked_pages(plan), context.ledger.fresh),
        )

    # --- end of the run ---

    async def spider_closed(self, spider: object = None, reason: str = "finished") -> None:
        """Stop the worker, decide the outcome, record the run, log the summary; always close the pool and release
        the run lock."""
        context = self.context
        self._closing = True
        try:
            if context.vectors is not None:
                await context.vectors.stop()  # a stop during the drain: its claims in flight are rolled back
            if self._done is not None and not self._done.done():
                await self._done  # stopped during the end-of-crawl bookkeeping: let it finish what it started
            if context.run_id is not None:
                if not self.crawl_completed:
                    plan = context.ledger.deletion_plan(completed=False)
                    if plan.kept:
                        logger.warning("the run did not finish (%s): %d gone pages are kept", reason, plan.kept)
                    await self._mark_checked(plan)
                await self._finish(reason)
            else:
                self._decide(reason, waiting=0)
        finally:
            await context.store.close()
            self._release_lock()
        self._log_summary(reason)

    async def _finish(self, reason: str) -> None:
        context = self.context
        if context.store.change_seconds:
            self.crawler.stats.set_value("docsbot/changes/db_seconds", round(context.store.change_seconds, 3))
        waiting = 0
        try:
            waiting = await context.store.vectors_waiting(context.version.id)
        except store.StoreUnavailable as exc:
            self.problems.append(f"the chunks without a vector could not be counted ({exc})")
        outcome = self._decide(reason, waiting)
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
            self._decide(reason, waiting)

    def _decide(self, reason: str, waiting: int) -> RunOutcome:
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

    def _log_summary(self, reason: str) -> None:
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
