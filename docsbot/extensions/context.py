"""What the components of one docs crawl share: the run's :class:`IndexContext`, and how they report a page that was
fetched but not stored.

The spider, the downloader middlewares and the pipelines get the context once, in their ``from_crawler`` or
``spider_opened``, through :func:`index_context`: the :class:`~docsbot.extensions.run.IndexRun` extension builds it
in its setup (:mod:`docsbot.extensions.setup`), before any of them, and the ledger is added at ``spider_opened``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem, NotConfigured

from docsbot.embedding.models import EmbeddingModelError
from docsbot.refresh import FAILURE_KINDS, GONE_STATUSES

if TYPE_CHECKING:
    from datetime import timedelta

    from scrapy.crawler import Crawler

    from docsbot import store
    from docsbot.arguments import CrawlArguments, CrawlSettings, Credentials
    from docsbot.embedding.models import Embedder
    from docsbot.extensions.vectors import RunVectors
    from docsbot.refresh import RefreshLedger
    from docsbot.render import RenderPolicy
    from docsbot.urls import Scope

__all__ = ["SKIPPED_LISTED", "IndexContext", "PageNotStored", "RunExtension", "count_failure", "index_context"]

SKIPPED_LISTED = 100  # URLs of skipped pages a run lists per kind (the count is complete)


@dataclass
class IndexContext:
    """What one crawl of one library version works with. ``ledger`` exists from ``spider_opened`` on."""

    version: store.VersionRow
    args: CrawlArguments
    crawl: CrawlSettings
    store: store.PageStore
    embedder: Embedder
    start_scope: Scope  # from the root URL as given; the ledger's (``scope``) follows the root's redirects
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
    # a private docs host's headers (-a headers, -a http_auth), their values from the environment: never stored
    credentials: Credentials | None = None

    @property
    def scope(self) -> Scope:
        """The crawl's scope now: the ledger's, taken from where the root's redirects led
        (:meth:`docsbot.refresh.RefreshLedger.root_moved`), or the start scope before the ledger exists."""
        try:
            return self.ledger.scope
        except AttributeError:
            return self.start_scope

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
    (:data:`docsbot.refresh.FAILURE_KINDS`). Counted once, by :class:`~docsbot.extensions.run.IndexRun`."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def count_failure(stats: Any, kind: str) -> None:
    """Count a page fetched but not stored: ``docsbot/failed`` and ``docsbot/failed/<kind>``."""
    assert kind in FAILURE_KINDS, kind
    stats.inc_value("docsbot/failed")
    stats.inc_value(f"docsbot/failed/{kind}")


class RunExtension:
    """What :func:`index_context` finds the run's extension by (:class:`~docsbot.extensions.run.IndexRun` is one):
    the extension that holds the run's ``context``."""

    context: IndexContext


def index_context(crawler: Crawler) -> IndexContext:
    """The run's context, for components built after the extension; ``NotConfigured`` without it (another
    spider, or docsbot's extension switched off)."""
    run = crawler.get_extension(RunExtension)
    if run is None:
        raise NotConfigured("docsbot components need the docs spider and its IndexRun extension")
    return run.context
