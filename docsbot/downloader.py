"""Scrapy's downloader and its HTTP download handler, as a docs crawl needs them.

:class:`DownloadHandler` (``DOWNLOAD_HANDLERS`` for http and https, set by the add-on) is Scrapy's HTTP/1.1 handler
that hands a request marked for rendering (``meta["playwright"]``, :mod:`docsbot.render`) to scrapy-playwright's
handler, built and started on the first such request: a run that renders nothing never starts Playwright, and no
setting has to change once the crawler is built to switch handlers.

:class:`Downloader` (``DOWNLOADER``) is Scrapy's downloader, with a slot's concurrency
(``CONCURRENT_REQUESTS_PER_DOMAIN``, a robots.txt ``Crawl-delay``'s one at a time, a fleet's share of a host's
budget) held when several requests are queued at once.

Since Scrapy 2.14 (``scrapy.core.downloader.Downloader._process_queue``, still so in 2.19 and its main branch of
2026-08), a request leaves its slot's queue as a task that counts itself as transferring only when it first runs,
on a later turn of the event loop: the loop that empties the queue while ``free_transfer_slots()`` is positive sees
the same number every time, and sends every queued request at once. Behind nginx, a run with a per-domain
concurrency of 2 had 6 requests in flight (tests/test_hosts.py). :class:`Downloader` counts a request as
transferring when it leaves the queue; Scrapy's own ``_download`` adds it again (a set: no change) and removes it
when the download ends, as before.
"""

from __future__ import annotations

import asyncio
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader import Downloader as ScrapyDownloader
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import _schedule_coro

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["DownloadHandler", "Downloader"]


class DownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 download handler, and scrapy-playwright's for requests with ``meta["playwright"]``: that
    one is built on the first such request and started there (Playwright and its browser), not at engine start as
    when it is the ``DOWNLOAD_HANDLERS`` entry itself; closed with this one. Its own errors (a browser that cannot
    start, a render that times out) fail the request, as they would through scrapy-playwright directly."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)  # keeps it as self.crawler
        self._renderer: Any = None  # scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler, once started
        self._starting: asyncio.Lock | None = None

    async def download_request(self, request: Request) -> Response:
        if request.meta.get("playwright"):
            renderer = self._renderer or await self._start_renderer()
            return await renderer.download_request(request)
        return await super().download_request(request)

    async def _start_renderer(self) -> Any:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._renderer is None:
                from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

                renderer = ScrapyPlaywrightDownloadHandler.from_crawler(self.crawler)
                # What scrapy-playwright runs on engine_started (which has passed): its Playwright manager.
                await renderer._launch()
                self._renderer = renderer
        return self._renderer

    async def close(self) -> None:
        await super().close()
        if self._renderer is not None:
            await self._renderer.close()


class Downloader(ScrapyDownloader):
    """``DOWNLOADER`` (docsbot's settings): Scrapy's, with the queue processing below."""

    def _process_queue(self, slot: Slot) -> None:
        # Scrapy 2.19's method, but for the marked line.
        if slot.latercall:
            return
        now = monotonic()
        delay = slot.download_delay()
        if delay:
            penalty = delay - now + slot.lastseen
            if penalty > 0:
                slot.latercall = call_later(penalty, self._latercall, slot)
                return
        while slot.queue and slot.free_transfer_slots() > 0:
            slot.lastseen = now
            request, queue_dfd = slot.queue.popleft()
            slot.transferring.add(request)  # docsbot: counted now, not when the task first runs
            _schedule_coro(self._wait_for_download(slot, request, queue_dfd))
            if delay:
                self._process_queue(slot)
                break
