"""Scrapy's downloader, holding a slot's concurrency.

:class:`Downloader` (``DOWNLOADER``) is Scrapy's downloader, with a slot's concurrency
(``CONCURRENT_REQUESTS_PER_DOMAIN``, a robots.txt ``Crawl-delay``'s one at a time, a fleet's share of a host's
budget) held when several requests are queued at once.

Since Scrapy 2.14, ``scrapy.core.downloader.Downloader._process_queue`` sends a request that leaves its slot's
queue as a task, and the task counts itself as transferring (``Slot.transferring``) only when it first runs, on a
later turn of the event loop: the loop that empties the queue while ``Slot.free_transfer_slots()`` is positive sees
the same number every time, and sends every queued request at once. Behind nginx, a run with a per-domain
concurrency of 2 had 6 requests in flight (tests/test_hosts.py). :class:`Downloader` counts a request as
transferring when it leaves the queue; Scrapy's own ``_download`` adds it again (a set: no change) and removes it
when the download ends, as before.

**Scrapy's private API, and why.** Scrapy offers no public hook between a slot's queue and its transfer: the
public ``Slot.free_transfer_slots()`` counts ``Slot.transferring``, which only Scrapy's private ``_download`` fills,
and the queue is emptied by the private ``_process_queue``. So :meth:`Downloader._process_queue` overrides that
method with a copy of Scrapy's, one line added, and the copy calls what Scrapy's calls: the downloader's own
``_latercall`` and ``_wait_for_download``, and ``scrapy.utils.defer._schedule_coro`` (its public sibling
``deferred_from_coro`` returns a Deferred that would then have to be kept and given an errback: a copy that is
Scrapy's method but for one line is the one a reader can check against Scrapy's). Checked: Scrapy 2.13 counted a
request as transferring when it left the queue (nothing to fix); 2.14.0 brought the task; in 2.16.0, 2.17.0,
2.18.0 and 2.19.0 (pyproject.toml allows 2.16 to 2.19) the method is the same, byte for byte. If Scrapy changes
it, ``tests/test_downloader.py`` fails (it compares this copy with Scrapy's method, but for the added line), and
``tests/test_hosts.py``'s ``test_robots_disallow_and_crawl_delay`` and
``test_two_versions_on_one_host_stay_within_its_budget_under_the_scheduler`` fail if requests are no longer held to
a slot's concurrency.
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING

from scrapy.core.downloader import Downloader as ScrapyDownloader
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import _schedule_coro  # private: see the module docstring

if TYPE_CHECKING:
    from scrapy.core.downloader import Slot

__all__ = ["Downloader"]


class Downloader(ScrapyDownloader):
    """``DOWNLOADER`` (docsbot's settings): Scrapy's, with the queue processing below."""

    def _process_queue(self, slot: Slot) -> None:
        # Scrapy 2.16-2.19's method (private: see the module docstring), but for the marked line.
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
