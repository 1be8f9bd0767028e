"""``scrapy crawl`` that exits non-zero when the run did not finish.

Scrapy's own ``crawl`` exits 1 only when the crawler fails to start (``CrawlerProcess.bootstrap_failed``): a run
that stops because its root URL failed (``root_failed``), the embedding model could not be loaded
(``embedding_model_error``) or the process was told to stop (``shutdown``, SIGINT/SIGTERM) exits 0, so cron,
``make`` and ``&&`` cannot tell it from a good run. This command is Scrapy's, plus one check: after the crawl, the
spider's close reason (the ``finish_reason`` stat set by Scrapy's CoreStats extension) must be ``finished`` or a
``closespider_*`` limit the user asked for; anything else exits 1. What the run kept or wrote is unchanged: the
reason is in the log and in ``crawl_runs.summary``.

Scrapyd runs jobs through ``scrapy crawl`` too, so there a failed run ends its process with 1 as well. Zyte Scrapy
Cloud starts spiders with its own runner and reports the close reason as the job's outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

if TYPE_CHECKING:
    import argparse

    from scrapy import Spider
    from scrapy.crawler import Crawler


def run_completed(reason: str | None) -> bool:
    """Whether a close reason means the run did what it was asked: ``finished``, or a ``CLOSESPIDER_*`` limit."""
    return reason == "finished" or (reason or "").startswith("closespider_")


class Command(ScrapyCrawlCommand):
    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        self._crawler = super()._create_crawler(spidercls)
        return self._crawler

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        self._crawler = None
        super().run(args, opts)
        if self.exitcode or self._crawler is None or self._crawler.stats is None:
            return
        reason = self._crawler.stats.get_value("finish_reason")
        if not run_completed(reason):
            self.exitcode = 1
