"""Scrapy's HTTP download handler, handing pages to render to scrapy-playwright's.

:class:`DownloadHandler` (``DOWNLOAD_HANDLERS`` for http and https, set by the add-on) is Scrapy's HTTP/1.1 handler
that hands a request marked for rendering (``meta["playwright"]``, :mod:`docsbot.render`) to scrapy-playwright's
handler, built and started on the first such request: a run that renders nothing never starts Playwright, and no
setting has to change once the crawler is built to switch handlers.

**scrapy-playwright's private API, and why.** Its handler starts Playwright in its ``engine_started`` handler
(``_maybe_launch_in_thread``, which awaits ``_launch()``), and offers no public way to start it later: built after
the engine started, it must be started by calling ``_launch()`` as that handler does. The public alternative, its
handler in ``DOWNLOAD_HANDLERS`` from the start, would start Playwright (a Node.js driver process) in every run,
those that render nothing included. Checked with scrapy-playwright 0.0.48 (the newest; pyproject.toml asks for
0.0.44 or later). If it changes, ``tests/test_downloader.py`` fails (it checks that ``engine_started`` still runs
``_launch()``, a coroutine taking nothing), and so do the renders of ``tests/test_render.py``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["DownloadHandler"]


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
                # Private, with no public equivalent: see the module docstring.
                await renderer._launch()
                self._renderer = renderer
        return self._renderer

    async def close(self) -> None:
        await super().close()
        if self._renderer is not None:
            await self._renderer.close()
