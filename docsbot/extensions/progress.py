"""A crawl's progress bars on a terminal: pages done of pages known, then the run's vectors done of those waiting.

:class:`CrawlProgress` is built only where a person watches (:func:`docsbot.progress.progress_wanted`: stderr is a
terminal, no ``LOG_FILE``, no Scrapyd or Scrapy Cloud job; ``DOCSBOT_PROGRESS`` overrides): everywhere else it
raises ``NotConfigured`` and the crawl logs exactly what it logged without it. Its counts are Scrapy's own, read
every quarter of a second:

- **pages known**: the requests the scheduler took (``scheduler/enqueued``; a request the duplicate filter dropped
  never counts), so the total grows as the crawl finds links, sitemaps and seeds;
- **pages done**: those it handed on (``scheduler/dequeued``) that are no longer in the downloader
  (``engine.downloader.active``: answered, failed, or refused by a middleware such as robots.txt's);
- **vectors**: chunks the run stored without a vector (``docsbot/chunks_queued``) and those its own worker has given
  one (:class:`docsbot.extensions.vectors.RunVectors`), drawn once the first is queued.

While the bars are drawn, the console's log lines go through ``tqdm.write`` (:func:`docsbot.progress.log_past_bars`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from docsbot.display import printable
from docsbot.extensions.context import index_context
from docsbot.progress import advance, bar, log_past_bars, progress_wanted

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docsbot.extensions.context import IndexContext

__all__ = ["CrawlProgress"]

REDRAW_SECONDS = 0.25


class CrawlProgress:
    """The bars of one crawl (see the module docstring): drawn from ``spider_opened`` to ``spider_closed``."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.context: IndexContext | None = None  # the run's, looked up once every extension is built
        self.pages: Any = None
        self.vectors: Any = None
        self._logging = contextlib.ExitStack()
        self._task: asyncio.Task[None] | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlProgress:
        settings = crawler.settings
        job = getattr(crawler.spider, "_job", None)  # Scrapyd's own spider argument
        if not progress_wanted(settings.get("DOCSBOT_PROGRESS", "auto"), log_file=settings.get("LOG_FILE"), job=job):
            raise NotConfigured("no progress bars: stderr is not a terminal a person watches (DOCSBOT_PROGRESS)")
        return cls(crawler)

    def spider_opened(self, spider: object = None) -> None:
        self.context = index_context(self.crawler)
        self._logging.enter_context(log_past_bars())
        self.pages = bar(f"{printable(self.context.label)} pages", "page", total=0)
        self._task = asyncio.ensure_future(self._redraw())

    async def _redraw(self) -> None:
        while True:
            self.update()
            await asyncio.sleep(REDRAW_SECONDS)

    def update(self) -> None:
        """Draw the bars with the counts as they are now."""
        stats = self.crawler.stats
        if not self.pages.disable:  # still crawling
            known = int(stats.get_value("scheduler/enqueued", 0) or 0)
            handed = int(stats.get_value("scheduler/dequeued", 0) or 0)
            engine = self.crawler.engine
            active = len(getattr(getattr(engine, "downloader", None), "active", ()) or ())
            advance(self.pages, max(0, handed - active), known)
        queued = int(stats.get_value("docsbot/chunks_queued", 0) or 0)
        context = self.context
        vectors = context.vectors if context is not None else None
        if queued and vectors is not None and context is not None:
            if self.vectors is None:
                self.vectors = bar(f"{printable(context.label)} vectors", "vector", total=queued, position=1)
            written = vectors.worker.stats.written
            advance(self.vectors, written, queued)

    def spider_idle(self, spider: object = None) -> None:
        """Every page fetched (the run then drains its vectors, keeping the spider open): the pages bar is drawn a
        last time and left as it is, its time and rate those of the crawl."""
        if self.pages is not None and not self.pages.disable:
            self.update()
            self.pages.close()

    async def spider_closed(self, spider: object = None, reason: str = "") -> None:
        if self.pages is None:  # closed before it opened (the database unavailable)
            return
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.update()
        for drawn in (self.pages, self.vectors):
            if drawn is not None:
                drawn.close()
        self._logging.close()
