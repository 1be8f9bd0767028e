"""``scrapy crawl`` that exits non-zero when the run did not finish, and reports setup errors in one line.

Scrapy's own ``crawl`` exits 1 only when the crawler fails to start (``CrawlerProcess.bootstrap_failed``): a run
that stops because its root URL failed (``root_failed``), the embedding model could not be loaded
(``embedding_model_error``) or the process was told to stop (``shutdown``, SIGINT/SIGTERM) exits 0, so cron,
``make`` and ``&&`` cannot tell it from a good run. This command is Scrapy's, plus two things:

- after the crawl, the spider's close reason (the ``finish_reason`` stat set by Scrapy's CoreStats extension) must
  be ``finished`` or a ``closespider_*`` limit the user asked for; anything else exits 1. What the run kept or
  wrote is unchanged: the reason is in the log and in ``crawl_runs.summary``;
- a :class:`~docsbot.errors.DocsbotError` raised while the run is set up (bad spider argument, unreachable
  database, unknown library, missing model or browser: the spider and :class:`docsbot.run.IndexRun`) is logged
  as its message alone, not as asyncio's "Task exception was never retrieved" with a traceback; the crawl does
  not start and the exit code is 1.

- a run that finished but did not store everything it fetched exits non-zero too (see :func:`run_outcome`).

Exit codes: 0 the run finished and stored every page it fetched; 1 it did not finish (or could not start), or
a full index stored no page at all; 3 it finished, but some fetched pages could not be stored (the database
refused them after the store's retries: ``docsbot/failed/store``); the next refresh fetches them again.

Scrapyd runs jobs through ``scrapy crawl`` too, so there a failed run ends its process with 1 as well. Zyte Scrapy
Cloud starts spiders with its own runner and reports the close reason as the job's outcome.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    import argparse

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger("docsbot")


EXIT_NOT_FINISHED = 1
EXIT_PAGES_NOT_STORED = 3


def run_completed(reason: str | None) -> bool:
    """Whether a close reason means the run did what it was asked: ``finished``, or a ``CLOSESPIDER_*`` limit."""
    return reason == "finished" or (reason or "").startswith("closespider_")


def run_outcome(stats: dict[str, Any], mode: str | None) -> tuple[int, str | None]:
    """``(exit code, one-line reason or None)`` of a run from its Scrapy stats and mode (``full``/``refresh``).

    Not completed (see :func:`run_completed`): 1, no reason (the spider logged it). Pages fetched but not stored
    (``docsbot/failed/store``): 3. A completed full index that stored no page (no ``docsbot/new``, ``modified``
    or ``unchanged``): 1, with what the server answered and what was skipped, so the user sees why.
    """
    if not run_completed(stats.get("finish_reason")):
        return EXIT_NOT_FINISHED, None
    not_stored = stats.get("docsbot/failed/store", 0)
    if not_stored:
        return EXIT_PAGES_NOT_STORED, (
            f"{not_stored} fetched page(s) could not be stored (database unavailable after retries; see the "
            "'Dropped' lines): the next refresh fetches them again"
        )
    stored = sum(stats.get(f"docsbot/{key}", 0) for key in ("new", "modified", "unchanged"))
    if mode == "full" and stored == 0:
        statuses = ", ".join(
            f"{key.rsplit('/', 1)[1]}: {value}"
            for key, value in sorted(stats.items())
            if key.startswith("downloader/response_status_count/")
        )
        skipped = ", ".join(
            f"{key.removeprefix('docsbot/')}: {value}"
            for key, value in sorted(stats.items())
            if key.startswith(("docsbot/skipped/", "docsbot/failed"))
        )
        return EXIT_NOT_FINISHED, (
            f"the full index stored no page (responses {statuses or 'none'}; {skipped or 'nothing skipped'})"
        )
    return 0, None


class Command(ScrapyCrawlCommand):
    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        crawler = self._crawler = super()._create_crawler(spidercls)
        crawl_async = crawler.crawl_async

        async def crawl_async_reporting_setup_errors(*args: Any, **kwargs: Any) -> None:
            try:
                await crawl_async(*args, **kwargs)
            except DocsbotError as exc:
                # A setup error comes from the spider's arguments or the IndexRun extension, before the engine
                # exists (Scrapy documents the underscore attribute as the one to read before the crawl starts).
                if crawler._engine is not None:  # not a setup error: let Scrapy report it as usual
                    raise
                # The message alone; Scrapy still counts a crawler without a spider as a bootstrap failure (exit 1).
                logger.error("%s", exc)

        crawler.crawl_async = crawl_async_reporting_setup_errors
        return crawler

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        self._crawler: Crawler | None = None
        super().run(args, opts)
        if self.exitcode or self._crawler is None or self._crawler.stats is None:
            return
        spider = self._crawler.spider
        mode = getattr(getattr(spider, "args", None), "mode", None)
        self.exitcode, reason = run_outcome(self._crawler.stats.get_stats(), mode)
        if reason:
            logger.error("%s (exit code %d)", reason, self.exitcode)
