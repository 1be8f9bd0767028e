"""Downloader middlewares: how docsbot revalidates, keeps in scope, renders, and obeys robots.txt.

:class:`ConditionalRequestMiddleware` revalidates stored pages with conditional requests (RFC 9110 §13.1).

The spider puts a stored page's validators in ``request.meta["docsbot_validators"]`` as ``(etag, last_modified)``
(either may be ``None``); this middleware sends them back byte for byte as ``If-None-Match`` and
``If-Modified-Since``. A ``304 Not Modified`` answer is short-circuited: :class:`NotModified` (an
``IgnoreRequest``) is raised, so nothing is parsed, chunked, embedded or written; the request's errback sees it
and follows the page's stored links instead.

:class:`ScopeMiddleware` keeps every page download, redirect hops included, inside the crawl's scope;
:class:`RenderMiddleware` turns a 200 to the plain revalidation of a rendered page into its browser request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as _ScrapyRobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred

from docsbot.run import index_context
from docsbot.urls import InvalidURL, canonical_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser
    from scrapy.statscollectors import StatsCollector

    from docsbot.urls import Scope

    Validators = tuple[str | None, str | None]

__all__ = [
    "AlreadyRequested",
    "ConditionalRequestMiddleware",
    "ForbiddenByRobots",
    "NotModified",
    "OutOfScope",
    "RenderMiddleware",
    "RobotsTxtMiddleware",
    "ScopeMiddleware",
    "FETCHED_VALIDATORS_META_KEY",
    "REEXTRACT_META_KEY",
    "PAGE_META_KEY",
    "RENDER_ON_200_META_KEY",
    "SEED_FILE_META_KEY",
    "VALIDATORS_META_KEY",
    "header_value",
    "render_meta",
]

logger = logging.getLogger(__name__)

VALIDATORS_META_KEY = "docsbot_validators"
PAGE_META_KEY = "docsbot_page"  # set on requests for pages (not robots.txt or sitemaps)
# On a request for a file that lists pages (a sitemap, llms.txt, Doxygen's menu): its kind of stat ("sitemap"...).
SEED_FILE_META_KEY = "docsbot_seed_file"
# On a request revalidated over plain HTTP: render the page in the browser if it answers 200.
RENDER_ON_200_META_KEY = "docsbot_render_on_200"
# On a render request that follows such a 200: that response's (etag, last_modified), the ones to store.
FETCHED_VALIDATORS_META_KEY = "docsbot_fetched_validators"
# On a revalidation of a page an older extraction stored, whose HTML is stored: a 304 re-extracts that HTML.
REEXTRACT_META_KEY = "docsbot_reextract"
_CONDITIONAL_HEADERS = (b"If-None-Match", b"If-Modified-Since")


class NotModified(IgnoreRequest):
    """The server answered 304 to a conditional request: the stored page is current."""

    def __init__(self, response: Response) -> None:
        super().__init__(f"304 Not Modified: {response.url}")
        self.response = response


class ForbiddenByRobots(IgnoreRequest):
    """robots.txt disallows the request's URL for docsbot's user agent (Scrapy's ``IgnoreRequest``, told apart): a
    page the site's rules keep from the crawler is skipped, not failed."""


class AlreadyRequested(IgnoreRequest):
    """A redirect hop to a page requested already this run (:meth:`docsbot.refresh.RefreshLedger.redirect_hop`)."""


class ConditionalRequestMiddleware:
    """Adds ``If-None-Match``/``If-Modified-Since`` from the request's stored validators; turns 304 into
    :class:`NotModified`. Stats: ``docsbot/conditional_requests``, ``docsbot/unchanged``,
    ``docsbot/unchanged/304`` (pages only: not for a seed file's 304, a sitemap's, nor for a 304 that re-extracts
    the stored HTML, ``REEXTRACT_META_KEY``: the page is counted by what that stores).

    A redirect target never gets the validators of the URL that redirected: Scrapy copies headers when it follows
    a redirect (``Location`` or ``<meta http-equiv="refresh">``), and the old URL's ETag at the new URL could draw
    a false 304. Validators belong to the target resource (RFC 9110 §8.8): when the target is itself a stored
    page, its *own* stored validators are sent (``stored_validators(url)``), so a root that redirects to the
    real start page (``/`` → ``/en/stable/``, a meta-refresh ``index.html``) costs a 304 there, not a download.
    """

    def __init__(
        self,
        stats: StatsCollector,
        stored_validators: Callable[[str], Validators | None] | None = None,
        redirect_hop: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.stats = stats
        self.stored_validators = stored_validators
        self.redirect_hop = redirect_hop

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalRequestMiddleware:
        try:
            context = index_context(crawler)
        except NotConfigured:
            return cls(crawler.stats)
        # the ledger is the run's, built after the middlewares: looked up at each call
        return cls(
            crawler.stats,
            lambda url: context.ledger.validators_for(url),
            lambda origin, target: context.ledger.redirect_hop(origin, target),
        )

    def process_request(self, request: Request, spider: object = None) -> None:
        if "redirect_urls" in request.meta:
            for header in _CONDITIONAL_HEADERS:
                request.headers.pop(header, None)
            if self.stored_validators is None or not request.meta.get(PAGE_META_KEY):
                return
            try:
                target = canonical_url(request.url)
                origin = canonical_url(request.meta["redirect_urls"][0])
            except InvalidURL:
                return
            if self.redirect_hop is not None and not self.redirect_hop(origin, target):
                self.stats.inc_value("docsbot/skipped/requested_already")
                raise AlreadyRequested(f"{request.url}: requested already (redirected from {origin})")
            validators = self.stored_validators(target)
        else:
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
            # a page's (not a sitemap's...), unless its re-extraction counts it as what that stores
            if request.meta.get(PAGE_META_KEY) and not request.meta.get(REEXTRACT_META_KEY):
                self.stats.inc_value("docsbot/unchanged")
                self.stats.inc_value("docsbot/unchanged/304")
            raise NotModified(response)
        return response


class OutOfScope(IgnoreRequest):
    """A request, typically a redirect hop, left the crawl's scope (host and path prefix)."""


class ScopeMiddleware:
    """Keeps every page download (requests with ``meta["docsbot_page"]``) inside the crawl's scope (host and path
    prefix of the root URL), redirect hops included, and every seed file's (a sitemap, a sitemap index's sitemaps,
    llms.txt, Doxygen's menu: ``meta["docsbot_seed_file"]``) on the scope's host and port, anywhere on it (a site's
    sitemap is often at its root, above the docs' directory): a site's files cannot send the crawler to another
    host or port.

    The docs spider deduplicates requests itself and sends them with ``dont_filter=True`` so that a redirect to
    an already-crawled URL still reaches it (Scrapy's duplicate filter would drop it silently); that also
    switches off Scrapy's ``OffsiteMiddleware``, whose job this middleware takes over, with the path prefix
    included. Raises :class:`OutOfScope`; stats ``docsbot/skipped/out_of_scope``. ``NotConfigured`` without the
    docs spider's run (:func:`docsbot.run.index_context`).
    """

    def __init__(self, scope: Scope, stats: StatsCollector) -> None:
        self.scope = scope
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScopeMiddleware:
        return cls(index_context(crawler).scope, crawler.stats)

    def process_request(self, request: Request, spider: object = None) -> None:
        if request.meta.get(SEED_FILE_META_KEY):
            try:
                inside = self.scope.same_host(canonical_url(request.url))
            except InvalidURL:
                inside = False
        elif not request.meta.get(PAGE_META_KEY) or request.url in self.scope:
            return
        else:
            try:
                inside = canonical_url(request.url) in self.scope
            except InvalidURL:
                inside = False
        if not inside:
            self.stats.inc_value("docsbot/skipped/out_of_scope")
            raise OutOfScope(f"out of scope: {request.url}")


def render_meta(wait_until: str) -> dict[str, Any]:
    """The ``meta`` that sends a request through scrapy-playwright's browser."""
    return {"playwright": True, "playwright_page_goto_kwargs": {"wait_until": wait_until}}


class RenderMiddleware:
    """A stored page that needs JavaScript is revalidated over plain HTTP (a browser cannot send conditional
    requests; see :mod:`docsbot.render`); when that answers 200 (``meta["docsbot_render_on_200"]``), the page
    changed: this returns its browser request instead of the response, keeping the plain response's validators
    (``meta["docsbot_fetched_validators"]``) since a browser navigation's cannot be revalidated later.
    Stats: ``docsbot/render/after_200``. ``NotConfigured`` when the run renders nothing."""

    def __init__(self, wait_until: str, stats: StatsCollector) -> None:
        self.meta = render_meta(wait_until)
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        context = index_context(crawler)
        if not context.render.enabled:
            raise NotConfigured  # no page of this run is rendered (silent: a message would log a warning)
        return cls(context.render_wait_until, crawler.stats)

    def process_response(self, request: Request, response: Response, spider: object = None) -> Request | Response:
        if not request.meta.get(RENDER_ON_200_META_KEY) or response.status != 200:
            return response
        if not isinstance(response, HtmlResponse):
            return response
        self.stats.inc_value("docsbot/render/after_200")
        meta = {
            "depth": request.meta["depth"],
            PAGE_META_KEY: True,
            FETCHED_VALIDATORS_META_KEY: (header_value(response, b"ETag"), header_value(response, b"Last-Modified")),
            **self.meta,
        }
        if request.meta.get("redirect_urls"):
            meta["redirect_urls"] = request.meta["redirect_urls"]
        return request.replace(url=response.url, meta=meta, headers={}, dont_filter=True)


def header_value(response: Response, name: bytes) -> str | None:
    """The last value of the response header ``name``, decoded as Latin-1 (RFC 9110 §5.5), or ``None``."""
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


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
