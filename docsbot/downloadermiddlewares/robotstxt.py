"""robots.txt: Scrapy's ``RobotsTxtMiddleware`` with every waiting request checked and ``Crawl-delay`` honoured."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as _ScrapyRobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

__all__ = ["ForbiddenByRobots", "RobotsTxtMiddleware"]

logger = logging.getLogger(__name__)


class ForbiddenByRobots(IgnoreRequest):
    """robots.txt disallows the request's URL for docsbot's user agent (Scrapy's ``IgnoreRequest``, told apart): a
    page the site's rules keep from the crawler is skipped, not failed."""


class _NetworkErrorsOnOneLine(logging.Filter):
    """Drops the traceback from a log record whose exception is a network condition (one of Scrapy's
    ``RETRY_EXCEPTIONS``: refused, timed out, DNS...), not a bug: the message already names it. Scrapy's robots.txt
    middleware logs a failed robots.txt download with ``exc_info``, 40 lines before docsbot's one-line reason."""

    def __init__(self, exceptions: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.exceptions = exceptions

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], self.exceptions):
            record.exc_info = None
            record.exc_text = None
        return True


class RobotsTxtMiddleware(_ScrapyRobotsTxtMiddleware):
    """Scrapy's robots.txt middleware (``ROBOTSTXT_OBEY``), with every waiting request checked.

    In Scrapy 2.19 each request that arrives while a host's robots.txt is downloading awaits the same
    ``Deferred`` as an asyncio future; Twisted's ``Deferred.asFuture`` replaces the result with ``None`` for the
    callbacks after it, so every waiter but the first got no parser and went out unchecked (seen here: a refresh
    revalidated a disallowed page).

    Here only the first request for a host calls Scrapy's public ``robot_parser`` while robots.txt is in flight;
    the others wait on a ``Deferred`` of their own that docsbot fires with the same parser (``None`` when robots.txt
    could not be fetched, as in Scrapy). Once a host's call has returned, every later request goes straight to
    Scrapy's ``robot_parser``, which answers from its cache without awaiting anything. Relies on Scrapy's
    ``robot_parser`` being a coroutine function that ``process_request`` calls through ``self`` and that downloads
    robots.txt once per host (``tests/test_robots.py`` checks both; docs/how-to/deploy.md gives the supported range).
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._in_flight: dict[str, list[Deferred[RobotParser | None]]] = {}  # netloc -> waiters
        self._answered: set[str] = set()  # netlocs whose robots.txt Scrapy has parsed or given up on
        scrapy_logger = logging.getLogger(_ScrapyRobotsTxtMiddleware.__module__)
        if not any(isinstance(f, _NetworkErrorsOnOneLine) for f in scrapy_logger.filters):
            network = tuple(
                load_object(e) if isinstance(e, str) else e for e in crawler.settings.getlist("RETRY_EXCEPTIONS")
            )
            scrapy_logger.addFilter(_NetworkErrorsOnOneLine(network))

    async def robot_parser(self, request: Request) -> RobotParser | None:
        netloc = urlparse_cached(request).netloc
        if netloc in self._answered:
            return await super().robot_parser(request)
        return await self._first_parser(request, netloc)

    def _honour_crawl_delay(self, request: Request, parser: RobotParser | None) -> None:
        """robots.txt's ``Crawl-delay`` for docsbot's user agent: the host's downloader slot sends one request at a
        time, that many seconds apart, without Scrapy's random jitter (at most ``DOCSBOT_CRAWL_DELAY_MAX``; a longer
        one is capped and said). Scrapy itself reads no Crawl-delay. Stats: ``docsbot/crawl_delay`` (the seconds
        applied)."""
        if parser is None:
            return
        agent = self._robotstxt_useragent or request.headers.get(b"User-Agent", self._default_useragent)
        try:
            delay = parser.crawl_delay(agent)
        except (AttributeError, TypeError, ValueError):
            return
        if not delay or delay <= 0:
            return
        cap = self.crawler.settings.getfloat("DOCSBOT_CRAWL_DELAY_MAX", 30.0)
        host = urlparse_cached(request).hostname or ""
        if delay > cap:
            logger.warning("%s asks for a Crawl-delay of %s s; docsbot waits %s s (DOCSBOT_CRAWL_DELAY_MAX)", host,
                           delay, cap)  # fmt: skip
            delay = cap
        downloader = self.crawler.engine.downloader
        downloader.per_slot_settings.setdefault(host, {}).update(
            {"delay": float(delay), "concurrency": 1, "jitter": 0.0}
        )
        slot = downloader.slots.get(host)
        if slot is not None:
            slot.delay, slot.concurrency, slot.jitter = max(slot.delay, float(delay)), 1, 0.0
        self.crawler.stats.set_value("docsbot/crawl_delay", float(delay))
        logger.info("%s: robots.txt asks for a Crawl-delay of %s s: one request at a time, that far apart", host,
                    delay)  # fmt: skip

    async def _first_parser(self, request: Request, netloc: str) -> RobotParser | None:
        waiters = self._in_flight.get(netloc)
        if waiters is not None:
            waiter: Deferred[RobotParser | None] = Deferred()
            waiters.append(waiter)
            return await maybe_deferred_to_future(waiter)
        self._in_flight[netloc] = []
        try:
            parser = await super().robot_parser(request)
        except BaseException as exc:  # cancelled with the crawl: the waiters must not wait forever
            for waiter in self._answered_now(netloc):
                waiter.errback(exc)
            raise
        self._honour_crawl_delay(request, parser)  # once per host: before the requests that waited go on
        for waiter in self._answered_now(netloc):
            waiter.callback(parser)
        return parser

    def process_request_2(self, rp: RobotParser | None, request: Request) -> None:
        """Scrapy's check, its refusal raised as :class:`ForbiddenByRobots`."""
        try:
            super().process_request_2(rp, request)
        except IgnoreRequest as exc:
            raise ForbiddenByRobots(str(exc)) from None

    def _answered_now(self, netloc: str) -> list[Deferred[RobotParser | None]]:
        """Marks the host answered; returns the requests that waited for it."""
        self._answered.add(netloc)
        return self._in_flight.pop(netloc)
