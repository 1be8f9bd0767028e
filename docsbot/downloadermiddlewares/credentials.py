"""Private docs: :class:`CredentialsMiddleware` sends a library's request headers (``-a headers``, ``-a http_auth``)
to its host, and to no other."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import NotConfigured

from docsbot.extensions.context import index_context
from docsbot.urls import InvalidURL, canonical_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from docsbot.arguments import Credentials
    from docsbot.urls import Scope

__all__ = ["CredentialsMiddleware"]


class CredentialsMiddleware:
    """Adds the run's :class:`~docsbot.arguments.Credentials` (header values read from the environment when the run
    was set up) to every request for the root URL's host and port: pages, redirect hops, robots.txt, sitemaps. Over
    the root's scheme or https only (an https root's headers never go out over plain http), and only while the
    crawl's scope is on that host: a root that redirects to another host leaves its headers behind.

    Any other host gets none: a request whose header a redirect copied from the library's host (Scrapy's redirect
    middleware copies every header, and drops only ``Authorization`` and ``Cookie`` on a change of host) has it
    taken off again. Stats: ``docsbot/private/requests``.

    Not Scrapy's ``HttpAuthMiddleware``: its ``HTTPAUTH_DOMAIN`` matches the domain's subdomains too, on any port
    (``scrapy.utils.url.url_is_from_any_domain``), where a private docs host's credentials belong to that host
    alone; and it sends no other header. ``NotConfigured`` when the run has no credentials.
    """

    def __init__(self, credentials: Credentials, scope: Callable[[], Scope], stats: StatsCollector) -> None:
        self.credentials = credentials
        self.scope = scope
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CredentialsMiddleware:
        context = index_context(crawler)
        if context.credentials is None:
            raise NotConfigured("no private docs headers for this run")
        return cls(context.credentials, lambda: context.scope, crawler.stats)

    def process_request(self, request: Request, spider: object = None) -> None:
        try:
            parts = urlsplit(canonical_url(request.url))
        except InvalidURL:
            parts = None
        own = (
            parts is not None
            and parts.netloc == self.credentials.netloc
            and parts.netloc == self.scope().netloc
            and parts.scheme in (self.credentials.scheme, "https")
        )
        for name, value in self.credentials.headers:
            if own:
                request.headers[name] = value
            elif request.headers.get(name) == value:
                del request.headers[name]
        if own:
            self.stats.inc_value("docsbot/private/requests")
