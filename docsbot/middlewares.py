"""Downloader middleware that revalidates stored pages with conditional requests (RFC 9110 §13.1).

The spider puts a stored page's validators in ``request.meta["docsbot_validators"]`` as ``(etag, last_modified)``
(either may be ``None``); this middleware sends them back byte for byte as ``If-None-Match`` and
``If-Modified-Since``. A ``304 Not Modified`` answer is short-circuited: :class:`NotModified` (an
``IgnoreRequest``) is raised, so nothing is parsed, chunked, embedded or written; the request's errback sees it
and follows the page's stored links instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as _ScrapyRobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser
    from scrapy.statscollectors import StatsCollector

__all__ = [
    "ConditionalRequestMiddleware",
    "NotModified",
    "OutOfScope",
    "RobotsTxtMiddleware",
    "ScopeMiddleware",
    "PAGE_META_KEY",
    "VALIDATORS_META_KEY",
]

VALIDATORS_META_KEY = "docsbot_validators"
PAGE_META_KEY = "docsbot_page"  # set on requests for pages (not robots.txt or sitemaps)
_CONDITIONAL_HEADERS = (b"If-None-Match", b"If-Modified-Since")


class NotModified(IgnoreRequest):
    """The server answered 304 to a conditional request: the stored page is current."""

    def __init__(self, response: Response) -> None:
        super().__init__(f"304 Not Modified: {response.url}")
        self.response = response


class ConditionalRequestMiddleware:
    """Adds ``If-None-Match``/``If-Modified-Since`` from the request's stored validators; turns 304 into
    :class:`NotModified`. Stats: ``docsbot/conditional_requests``, ``docsbot/unchanged``,
    ``docsbot/unchanged/304``.

    Validators are never sent to a redirect target: Scrapy copies headers when it follows a redirect, and the
    old URL's ETag at the new URL could draw a false 304.
    """

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalRequestMiddleware:
        return cls(crawler.stats)

    def process_request(self, request: Request, spider: object = None) -> None:
        if "redirect_urls" in request.meta:
            for header in _CONDITIONAL_HEADERS:
                request.headers.pop(header, None)
            return
        validators = request.meta.get(VALIDATORS_META_KEY)
        if not validators:
            return
        etag, last_modified = validators
        if etag:
            request.headers[b"If-None-Match"] = etag
        if last_modified:
            request.headers[b"If-Modified-Since"] = last_modified
        if etag or last_modified:
            self.stats.inc_value("docsbot/conditional_requests")

    def process_response(self, request: Request, response: Response, spider: object = None) -> Response:
        if response.status == 304 and any(h in request.headers for h in _CONDITIONAL_HEADERS):
            self.stats.inc_value("docsbot/unchanged")
            self.stats.inc_value("docsbot/unchanged/304")
            raise NotModified(response)
        return response


class OutOfScope(IgnoreRequest):
    """A request, typically a redirect hop, left the crawl's scope (host and path prefix)."""


class ScopeMiddleware:
    """Downloader middleware that keeps every page download (requests with ``meta["docsbot_page"]``) inside the
    spider's ``scope`` (``url in spider.scope``), redirect hops included.

    The docs spider deduplicates requests itself and sends them with ``dont_filter=True`` so that a redirect to
    an already-crawled URL still reaches it (Scrapy's duplicate filter would drop it silently); that also
    switches off Scrapy's ``OffsiteMiddleware``, whose job this middleware takes over, with the path prefix
    included. Raises :class:`OutOfScope`; stats ``docsbot/skipped/out_of_scope``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScopeMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: object = None) -> None:
        scope = getattr(self.crawler.spider, "scope", None)
        if scope is None or not request.meta.get(PAGE_META_KEY) or request.url in scope:
            return
        from docsbot.urls import InvalidURL, canonical_url

        try:
            inside = canonical_url(request.url) in scope
        except InvalidURL:
            inside = False
        if not inside:
            self.crawler.stats.inc_value("docsbot/skipped/out_of_scope")
            raise OutOfScope(f"out of scope: {request.url}")


class RobotsTxtMiddleware(_ScrapyRobotsTxtMiddleware):
    """Scrapy's robots.txt middleware (``ROBOTSTXT_OBEY``), with every waiting request checked.

    In Scrapy 2.19 each request that arrives while a host's robots.txt is downloading awaits the same
    ``Deferred`` as an asyncio future; Twisted's ``Deferred.asFuture`` replaces the result with ``None`` for the
    callbacks after it, so every waiter but the first got no parser and went out unchecked (seen here: a refresh
    revalidated a disallowed page). Here each waiter gets its own ``Deferred``, fed by a callback that passes the
    parser on, as Scrapy did before its middleware became ``async``.
    """

    async def robot_parser(self, request: Request) -> RobotParser | None:
        pending = self._parsers.get(urlparse_cached(request).netloc)
        if not isinstance(pending, Deferred):
            return await super().robot_parser(request)  # parsed already, or this request starts the download
        waiter: Deferred[RobotParser | None] = Deferred()

        def relay(parser: RobotParser | None) -> RobotParser | None:
            waiter.callback(parser)
            return parser

        pending.addCallback(relay)
        return await maybe_deferred_to_future(waiter)
