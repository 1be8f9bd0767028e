"""Scrapy's downloader, holding a slot's concurrency.

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

from time import monotonic
from typing import TYPE_CHECKING

from scrapy.core.downloader import Downloader as ScrapyDownloader
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import _schedule_coro

if TYPE_CHECKING:
    from scrapy.core.downloader import Slot

__all__ = ["Downloader"]


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
