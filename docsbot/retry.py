"""Scrapy's retries, honouring ``Retry-After`` (RFC 9110 §10.2.3) on the statuses that send it (429, 503).

Scrapy's ``RetryMiddleware`` retries a 429 or 503 at once, ``RETRY_TIMES`` times: a server that asks for a few
seconds' pause gets three requests within milliseconds and the page fails. :class:`RetryAfterMiddleware` is that
middleware, except that before retrying a response carrying ``Retry-After`` (delay-seconds or an HTTP-date) it
waits that long, without holding the reactor: other requests go on. A delay longer than
``DOCSBOT_RETRY_AFTER_MAX`` seconds (60) is not waited for: the request is not retried, so the page counts as
failed and is kept as stored (stat ``docsbot/retry_after/too_long``). Waits are counted in
``docsbot/retry_after/waited`` (and their seconds in ``docsbot/retry_after/seconds``).
"""

from __future__ import annotations

import asyncio
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.retry import RetryMiddleware

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["RetryAfterMiddleware", "retry_after_seconds"]


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
        self.stats = stats

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
        if delay and self._retries_left(request):
            if self.stats is not None:
                self.stats.inc_value("docsbot/retry_after/waited")
                self.stats.inc_value("docsbot/retry_after/seconds", delay)
            await asyncio.sleep(delay)
        return super().process_response(request, response)

    def _retries_left(self, request: Request) -> bool:
        return request.meta.get("retry_times", 0) < request.meta.get("max_retry_times", self.max_retry_times)
