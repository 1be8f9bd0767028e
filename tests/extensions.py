"""Scrapy components that tests enable in a crawl (``-s EXTENSIONS=...``, ``-s ITEM_PIPELINES=...``) to observe it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class QueueProbe:
    """Records in the stats the most requests Scrapy's scheduler held (``probe/scheduler_max``), sampled whenever
    a request is scheduled or a response arrives."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.most = 0
        crawler.signals.connect(self.sample, signal=signals.request_scheduled)
        crawler.signals.connect(self.sample, signal=signals.response_received)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> QueueProbe:
        return cls(crawler)

    def sample(self, request: Request, spider: Spider, response: Response | None = None) -> None:
        scheduler = self.crawler.engine.scheduler  # None before the spider has started
        if scheduler is not None:
            self.most = max(self.most, len(scheduler))  # Scrapy's default Scheduler counts its enqueued requests

    def closed(self, spider: Spider) -> None:
        self.crawler.stats.set_value("probe/scheduler_max", self.most)


class CountingPipeline:
    """A project's own item pipeline, after docsbot's: counts the items that reach it and logs the count at the end
    (``tests.extensions.CountingPipeline: N items``)."""

    def __init__(self) -> None:
        self.items = 0

    def process_item(self, item: object) -> object:
        self.items += 1
        return item

    def close_spider(self) -> None:
        import logging

        logging.getLogger(__name__).info("tests.extensions.CountingPipeline: %d items", self.items)
