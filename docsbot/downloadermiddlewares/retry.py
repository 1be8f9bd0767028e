"""Scrapy's retries, honouring ``Retry-After`` (RFC 9110 §10.2.3) on the statuses that send it (429, 503).

Scrapy's ``RetryMiddleware`` retries a 429 or 503 at once, ``RETRY_TIMES`` times: a server that asks for a few
seconds' pause gets three requests within milliseconds and the page fails; and the other requests to that host go
on as before, so a rate limit (nginx's ``limit_req``) refuses one page after another. :class:`RetryAfterMiddleware`
is that middleware, except that a response carrying ``Retry-After`` (delay-seconds or an HTTP-date) slows the whole
host down (a 429 or 503 asking for a pause of more than 0 s), as RFC 6585 §4 asks of a client told "too many
requests":

- the host's downloader slot sends nothing more until the ``Retry-After`` has passed, and the request is retried
  after it (``RETRY_TIMES``, at least ``DOCSBOT_RETRY_AFTER_TIMES`` (5) times: the server asked for the retry);
- from then on, for the rest of the run, the host gets one request at a time, at least
  ``RETRY_AFTER_MIN_SPACING`` (0.25 s) apart, the spacing doubled at every further such answer, up to the
  ``Retry-After`` itself (no random jitter; a robots.txt ``Crawl-delay`` that asks for more wins).

A delay longer than ``DOCSBOT_RETRY_AFTER_MAX`` seconds (60) is not waited for: the request is not retried, so the
page counts as failed and is kept as stored (stat ``docsbot/retry_after/too_long``). Waits are counted in
``docsbot/retry_after/waited`` (and their seconds in ``docsbot/retry_after/seconds``); the spacing a host ended
with is ``docsbot/retry_after/spacing`` (s).
"""

from __future__ import annotations

import asyncio
import logging
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.utils.httpobj import urlparse_cached

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["RETRY_AFTER_MIN_SPACING", "RetryAfterMiddleware", "retry_after_seconds"]

logger = logging.getLogger(__name__)

RETRY_AFTER_MIN_SPACING = 0.25  # s between requests to a host once it answered Retry-After; doubled at each again
PAUSE_STATUSES = frozenset({429, 503})  # RFC 6585 §4, RFC 9110 §15.6.4: "too many requests", "unavailable for now"


def retry_after_seconds(value: bytes | str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds (``"120"``) or an HTTP-date (seconds from
    ``now``, never negative). ``None`` when absent or malformed."""
    if not value:
        return None
    text = (value.decode("latin-1") if isinstance(value, bytes) else value).strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class RetryAfterMiddleware(RetryMiddleware):
    def __init__(self, settings, stats=None) -> None:  # noqa: ANN001 - Scrapy's BaseSettings / StatsCollector
        super().__init__(settings)
        self.max_delay = settings.getfloat("DOCSBOT_RETRY_AFTER_MAX", 60.0)
        self.retry_after_times = max(self.max_retry_times, settings.getint("DOCSBOT_RETRY_AFTER_TIMES", 5))
        self.stats = stats
        self.crawler: Crawler | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RetryAfterMiddleware:
        middleware = cls(crawler.settings, crawler.stats)
        middleware.crawler = crawler
        return middleware

    async def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> object:
        if request.meta.get("dont_retry", False) or response.status not in self.retry_http_codes:
            return response
        delay = retry_after_seconds(response.headers.get(b"Retry-After"))
        if delay is not None and delay > self.max_delay:
            if self.stats is not None:
                self.stats.inc_value("docsbot/retry_after/too_long")
            return response
        if delay and response.status in PAUSE_STATUSES:  # a pause asked for: the host's, and worth more tries
            request.meta.setdefault("max_retry_times", self.retry_after_times)
            self._slow_down(request, delay)
        if delay and self._retries_left(request):
            if self.stats is not None:
                self.stats.inc_value("docsbot/retry_after/waited")
                self.stats.inc_value("docsbot/retry_after/seconds", delay)
            await asyncio.sleep(delay)
        return super().process_response(request, response)

    def _slow_down(self, request: Request, delay: float) -> None:
        """The host of ``request`` asked for ``delay`` seconds: its downloader slot pauses that long, then sends one
        request at a time, spaced as the module says. Scrapy's slot has no pause of its own: its next request waits
        until ``lastseen`` + ``delay``, so ``lastseen`` is moved to where that is the end of the pause."""
        engine = getattr(self.crawler, "engine", None)
        downloader = getattr(engine, "downloader", None)
        if downloader is None:
            return
        key = downloader.get_slot_key(request)
        slot = downloader.slots.get(key)
        previous = slot.delay if slot is not None else 0.0
        spacing = min(max(RETRY_AFTER_MIN_SPACING, 2 * previous), max(delay, previous))
        settings = downloader.per_slot_settings.setdefault(key, {})
        settings.update({"delay": spacing, "concurrency": 1, "jitter": 0.0})
        if slot is not None:
            slot.delay, slot.concurrency, slot.jitter = spacing, 1, 0.0
            slot.lastseen = max(slot.lastseen, time.monotonic() + delay - spacing)  # Scrapy's clock: monotonic
        if self.stats is not None:
            self.stats.set_value("docsbot/retry_after/spacing", spacing)
        if spacing != previous:
            logger.info("%s asks to wait %s s (Retry-After): pausing it, then one request at a time, %s s apart",
                        urlparse_cached(request).hostname, delay, spacing)  # fmt: skip

    def _retries_left(self, request: Request) -> bool:
        return request.meta.get("retry_times", 0) < request.meta.get("max_retry_times", self.max_retry_times)
