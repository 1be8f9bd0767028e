"""Conditional requests (RFC 9110 §13.1): :class:`ConditionalRequestMiddleware` revalidates stored pages.

The spider puts a stored page's validators in ``request.meta["docsbot_validators"]`` as ``(etag, last_modified)``
(either may be ``None``); this middleware sends them back byte for byte as ``If-None-Match`` and
``If-Modified-Since``. A ``304 Not Modified`` answer is short-circuited: :class:`NotModified` (an
``IgnoreRequest``) is raised, so nothing is parsed, chunked, embedded or written; the request's errback sees it
and follows the page's stored links instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

from docsbot.downloadermiddlewares import PAGE_META_KEY, REEXTRACT_META_KEY, VALIDATORS_META_KEY
from docsbot.extensions.context import index_context
from docsbot.urls import InvalidURL, canonical_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

    Validators = tuple[str | None, str | None]

__all__ = ["AlreadyRequested", "ConditionalRequestMiddleware", "NotModified"]

_CONDITIONAL_HEADERS = (b"If-None-Match", b"If-Modified-Since")


class NotModified(IgnoreRequest):
    """The server answered 304 to a conditional request: the stored page is current."""

    def __init__(self, response: Response) -> None:
        super().__init__(f"304 Not Modified: {response.url}")
        self.response = response


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
