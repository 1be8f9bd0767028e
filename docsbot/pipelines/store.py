"""The store pipeline (500): one transaction per page, text first; a gone page handed to the run's refresh ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING

from docsbot.extensions.context import PageNotStored, index_context
from docsbot.items import PageGone, PageItem
from docsbot.store import StoreUnavailable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["StorePipeline"]


class StorePipeline:
    """Write pages to PostgreSQL, one transaction per page, text first (see
    :meth:`docsbot.store.PageStore.save_page`): the page is searchable by its text the moment it commits, and its
    chunks without a vector wake the run's embedding worker.

    Gone pages (:class:`PageGone`) are not deleted here but handed to the run's refresh ledger: the run extension
    deletes them at the end of a run that completed, within the mass-deletion guard
    (:meth:`docsbot.refresh.RefreshLedger.deletion_plan`).

    Stats: ``docsbot/new``, ``docsbot/modified`` (content other than the stored, or stored by an older extraction),
    ``docsbot/unchanged`` (+ ``/same_content``: a 200 whose content is what is stored, which a full index re-chunks
    and stores again all the same), ``docsbot/gone``, ``docsbot/chunks_written``, ``docsbot/chunks_reused`` (chunks
    that took over a vector stored for their text), ``docsbot/chunks_queued`` (chunks stored without one). A page
    the database still refused after the store's retries is dropped (:class:`PageNotStored`, kind ``store``; one log
    line; the stored copy, if any, is untouched).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.context = index_context(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        return cls(crawler)

    async def process_item(self, item: PageItem | PageGone, spider: object = None) -> PageItem | PageGone:
        stats, context = self.stats, self.context
        if isinstance(item, PageGone):
            if context.ledger.gone(item.page_id, item.url, item.reason):
                stats.inc_value("docsbot/gone")
            return item
        try:
            saved = await context.store.save_page(item, context.run_id)
        except StoreUnavailable as exc:  # counted by the run, so the summary, crawl_runs and the exit code say so
            raise PageNotStored(f"not stored: {exc}", "store") from exc
        context.ledger.stored(saved.id)
        if item.page_id is None:
            stats.inc_value("docsbot/new")
        elif item.changed and item.stored_hash != item.content_hash:
            stats.inc_value("docsbot/modified")
        else:  # a refresh's 200 with the stored content, or a full index re-storing it (re-chunked all the same)
            stats.inc_value("docsbot/unchanged")
            stats.inc_value("docsbot/unchanged/same_content")
        if item.changed:
            stats.inc_value("docsbot/chunks_written", len(item.chunks))
            stats.inc_value("docsbot/chunks_reused", saved.reused)
            stats.inc_value("docsbot/chunks_queued", saved.waiting)
            if saved.waiting:
                context.vectors_waiting()
        return item
