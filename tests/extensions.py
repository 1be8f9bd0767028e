"""Scrapy extensions that tests enable in a crawl (``-s EXTENSIONS=...``) to observe the engine from outside."""

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
