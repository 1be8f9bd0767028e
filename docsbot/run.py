"""The run's bookkeeping: a Scrapy extension, as Scrapy keeps its per-run services (``scrapy/extensions/``).

:class:`IndexRun` is built by the crawler after the docs spider (``EXTENSIONS``), before any other component:

- **setup** (in ``from_crawler``, synchronous): database migrations, the version's row (created by a full index,
  required by a refresh), the version's run lock, the embedding model bound to the version, the rendering
  policy, the scope. Any error here (:class:`~docsbot.errors.DocsbotError`) stops ``scrapy crawl`` with exit
  code 1 before anything is written.
- ``spider_opened``: opens the page store, loads the stored pages into a :class:`~docsbot.refresh.RefreshLedger`,
  records the run in ``crawl_runs``.
- ``spider_closed``: applies the ledger's deletion plan (only for a run that completed), marks the pages it
  checked, records the run's statistics in ``crawl_runs``, logs the one-line summary, closes the pool and
  releases the run lock.

The spider, the downloader middlewares and the pipelines get the run's :class:`IndexContext` once, in their
``from_crawler``/``spider_opened``, through ``crawler.get_extension(IndexRun)``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from docsbot import db
from docsbot.arguments import CrawlArguments, CrawlSettings, SpiderArgumentError
from docsbot.embedding import load_embedder
from docsbot.errors import DocsbotError
from docsbot.extract import EXTRACTOR_VERSION
from docsbot.refresh import GONE_STATUSES, DeletionPlan, RefreshLedger
from docsbot.render import RenderPolicy, enable_rendering
from docsbot.urls import Scope

if TYPE_CHECKING:
    import psycopg
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from docsbot.embedding import Embedder

__all__ = ["ComponentError", "IndexContext", "IndexRun", "check_components", "index_context"]

logger = logging.getLogger(__name__)


@dataclass
class IndexContext:
    """What one crawl of one library version works with. ``ledger`` exists from ``spider_opened`` on."""

    version: db.VersionRow
    args: CrawlArguments
    crawl: CrawlSettings
    store: db.PageStore
    embedder: Embedder
    scope: Scope
    render: RenderPolicy
    render_wait_until: str
    label: str
    gone_statuses: frozenset[int] = GONE_STATUSES
    ledger: RefreshLedger = field(init=False)
    run_id: int | None = None

    @property
    def mode(self) -> str:
        return self.args.mode

    @property
    def refresh(self) -> bool:
        return self.args.mode == "refresh"


def _gone_statuses(values: list[Any]) -> frozenset[int]:
    """``DOCSBOT_GONE_STATUSES`` (a list, or ``-s DOCSBOT_GONE_STATUSES=403,404,410``) as status codes; only 4xx
    answers can mean "gone" (a 5xx or a timeout never deletes). Raises :class:`SpiderArgumentError`."""
    try:
        codes = frozenset(int(v) for v in values)
    except (TypeError, ValueError):
        raise SpiderArgumentError(f"DOCSBOT_GONE_STATUSES must be status codes, got {values!r}") from None
    if not codes or any(not 400 <= code < 500 or code in (408, 429) for code in codes):
        raise SpiderArgumentError(f"DOCSBOT_GONE_STATUSES must be 4xx codes other than 408 and 429, got {values!r}")
    return codes


# The components a docs crawl cannot store correctly without, per component setting, in the order they must run.
REQUIRED_COMPONENTS: dict[str, tuple[str, ...]] = {
    "EXTENSIONS": ("docsbot.run.IndexRun",),
    "DOWNLOADER_MIDDLEWARES": (
        "docsbot.middlewares.ScopeMiddleware",
        "docsbot.middlewares.ConditionalRequestMiddleware",
    ),
    "ITEM_PIPELINES": (
        "docsbot.pipelines.ChunkPipeline",
        "docsbot.pipelines.EmbedPipeline",
        "docsbot.pipelines.StorePipeline",
    ),
}


class ComponentError(DocsbotError, RuntimeError):
    """A component docsbot needs is switched off or out of order in the crawl's settings."""


def check_components(settings: BaseSettings) -> None:
    """Raise :class:`ComponentError` unless every :data:`REQUIRED_COMPONENTS` entry (or a subclass of it) is
    enabled, in that order.

    Scrapy merges a component setting with its ``*_BASE`` only: a project or ``-s`` value of ``ITEM_PIPELINES``
    or ``EXTENSIONS`` replaces docsbot's whole dict (docsbot/settings.py). Without this check such a crawl would
    run without storing (pipelines off) or without its run (extension off) and still look like a crawl.
    """
    for setting, required in REQUIRED_COMPONENTS.items():
        enabled = [load_object(c) for c in build_component_list(settings.getwithbase(setting))]
        positions = []
        for path in required:
            cls = load_object(path)
            found = [i for i, c in enumerate(enabled) if isinstance(c, type) and issubclass(c, cls)]
            if not found:
                raise ComponentError(
                    f"{path} is not enabled in {setting}: a {setting} setting replaced docsbot's "
                    f"(docsbot/settings.py); keep docsbot's entries ({', '.join(required)}) beside your own"
                )
            positions.append(found[0])
        if positions != sorted(positions):
            raise ComponentError(f"{setting} must run {', '.join(required)} in this order (docsbot/settings.py)")


def index_context(crawler: Crawler) -> IndexContext:
    """The run's context, for components built after the extension; ``NotConfigured`` without it (another
    spider, or docsbot's extension switched off)."""
    run = crawler.get_extension(IndexRun)
    if run is None:
        raise NotConfigured("docsbot components need the docs spider and its IndexRun extension")
    return run.context


class IndexRun:
    """Setup, start and end of one docs crawl (see the module docstring). Stats: ``docsbot/orphans``,
    ``docsbot/deleted``, ``docsbot/deletion_refused``, ``docsbot/skipped/recently_checked``."""

    def __init__(self, crawler: Crawler) -> None:
        args = getattr(crawler.spider, "args", None)
        if not isinstance(args, CrawlArguments):
            raise NotConfigured("IndexRun runs with the docs spider only")
        self.crawler = crawler
        self._started = time.monotonic()
        self._lock: psycopg.Connection | None = None
        try:
            self.context = self._setup(crawler, args)
        except BaseException:
            self._release_lock()
            raise
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexRun:
        return cls(crawler)

    # --- setup: a failure here stops `scrapy crawl` (exit code 1) before anything is written ---

    def _setup(self, crawler: Crawler, args: CrawlArguments) -> IndexContext:
        settings = crawler.settings
        dsn = db.resolve_dsn(settings)
        embedder = load_embedder(settings)
        with db.connect(dsn) as conn:
            db.migrate(conn)
            existing = db.find_version(conn, args.library, args.version)
            if args.mode == "refresh":
                if existing is None:
                    known = ", ".join(db.version_label(v.library, v.name) for v in db.list_versions(conn))
                    raise db.DatabaseError(
                        f"nothing to refresh: library {args.library!r} version {args.version!r} is not indexed "
                        f"(indexed: {known or 'none'}); index it first with -a url=ROOT_URL"
                    )
                crawl = args.resolve(existing.root_url, existing.settings)
                render = self._rendering(crawler, crawl.render)
                self._lock = db.lock_version(dsn, existing)
                version = existing
            else:
                crawl = args.resolve()
                render = self._rendering(crawler, crawl.render)
                if existing is not None:
                    self._lock = db.lock_version(dsn, existing)
                version = db.upsert_version(conn, args.library, args.version, crawl.root_url, crawl.stored())
                if existing is None:
                    self._lock = db.lock_version(dsn, version)
            db.bind_model(conn, version, embedder.name, lambda: embedder.dim)
        gone = _gone_statuses(settings.getlist("DOCSBOT_GONE_STATUSES", sorted(GONE_STATUSES)))
        # The gone answers must reach the spider: Scrapy's HttpErrorMiddleware (built after this extension, while
        # settings are still open) drops other non-2xx responses.
        allowed = set(settings.getlist("HTTPERROR_ALLOWED_CODES")) | gone
        settings.set("HTTPERROR_ALLOWED_CODES", sorted(int(code) for code in allowed), priority="spider")
        context = IndexContext(
            version=version,
            args=args,
            crawl=crawl,
            store=db.PageStore.from_settings(dsn, settings),
            embedder=embedder,
            scope=Scope.from_root(crawl.root_url),
            render=render,
            render_wait_until=settings.get("DOCSBOT_RENDER_WAIT_UNTIL"),
            label=db.version_label(version.library, version.name),
            gone_statuses=gone,
        )
        logger.info(
            "%s of %s from %s (scope %s%s, max_depth=%s, max_pages=%s, prune=%s, render=%s)",
            args.mode,
            context.label,
            crawl.root_url,
            context.scope.netloc,
            context.scope.path_prefix,
            crawl.max_depth,
            crawl.max_pages,
            crawl.prune,
            crawl.render if render.all_pages or not render.enabled else "DOCSBOT_RENDER_URLS",
        )
        return context

    @staticmethod
    def _rendering(crawler: Crawler, mode: str) -> RenderPolicy:
        """Which pages go through the browser; with any, the download handler becomes scrapy-playwright's (the
        settings are not frozen yet while extensions are built)."""
        settings = crawler.settings
        try:
            policy = RenderPolicy.from_settings(mode, settings.get("DOCSBOT_RENDER_URLS"))
        except ValueError as exc:
            raise SpiderArgumentError(str(exc)) from None
        if policy.enabled:
            enable_rendering(settings)
        return policy

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    # --- start of the run ---

    async def spider_opened(self, spider: object = None) -> None:
        context = self.context
        await context.store.open()
        stored = await context.store.stored_pages(context.version.id)
        crawl = context.crawl
        context.ledger = RefreshLedger(
            crawl.root_url,
            stored.values(),
            refresh=context.refresh,
            max_depth=crawl.max_depth,
            max_pages=crawl.max_pages,
            min_recheck=context.args.min_recheck,
            render=context.render,
            scope=context.scope,
            extractor_version=EXTRACTOR_VERSION,
        )
        context.run_id = await context.store.start_run(context.version.id, context.mode)
        logger.info("%d pages of %s are stored", len(stored), context.label)

    # --- end of the run ---

    async def spider_closed(self, spider: object = None, reason: str = "finished") -> None:
        """Apply the deletion plan if the run completed, mark the pages it checked, record the run in
        ``crawl_runs``, log the one-line summary; always close the pool and release the run lock."""
        context, stats = self.context, self.crawler.stats
        try:
            if context.run_id is not None:
                ledger = context.ledger
                stats.set_value("docsbot/skipped/recently_checked", ledger.skipped_recently_checked)
                plan = ledger.deletion_plan(
                    completed=reason == "finished",
                    prune=context.crawl.prune,
                    mass_delete_share=self.crawler.settings.getfloat("DOCSBOT_MASS_DELETE_SHARE"),
                    allow_mass_delete=context.args.allow_mass_delete,
                )
                await self._apply(plan, reason)
                await context.store.mark_checked(context.run_id, ledger.checked_pages(plan))
                await context.store.finish_run(context.run_id, self._summary(reason))
        finally:
            await context.store.close()
            self._release_lock()
        counts = {k.removeprefix("docsbot/"): v for k, v in stats.get_stats().items() if k.startswith("docsbot/")}
        logger.info(
            "%s of %s: %d unchanged, %d modified, %d new, %d deleted, %d failed in %.1f s (%s)",
            context.mode,
            context.label,
            counts.get("unchanged", 0),
            counts.get("modified", 0),
            counts.get("new", 0),
            counts.get("deleted", 0),
            counts.get("failed", 0),
            time.monotonic() - self._started,
            reason,
        )

    async def _apply(self, plan: DeletionPlan, reason: str) -> None:
        context, stats = self.context, self.crawler.stats
        ledger = context.ledger
        if not plan.completed:
            if plan.kept:
                logger.warning(
                    "the run did not complete (%s): %d gone pages are kept until a complete run", reason, plan.kept
                )
            return
        if not ledger.truncated:
            stats.set_value("docsbot/orphans", len(plan.orphans))
        if plan.orphans:
            sample = ", ".join(sorted(plan.orphans.values())[:5])
            action = "deleting them (prune=orphans)" if context.crawl.prune == "orphans" else "kept; -a prune=orphans"
            logger.info("%d orphan pages no longer linked from the root: %s … (%s)", len(plan.orphans), sample, action)
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
        deleted = await context.store.delete_pages(sorted(plan.delete))
        stats.set_value("docsbot/deleted", deleted)
        for page_id in sorted(ledger.gone_pages):
            if page_id in plan.delete:
                logger.info("deleted %s", ledger.gone_pages[page_id])

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
        return summary
