"""Crawl scope: :class:`ScopeMiddleware` keeps every page download, redirect hops included, inside the crawl's scope."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from docsbot.downloadermiddlewares import PAGE_META_KEY, SEED_FILE_META_KEY
from docsbot.extensions.context import index_context
from docsbot.urls import InvalidURL, canonical_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from docsbot.urls import Scope

__all__ = ["OutOfScope", "ScopeMiddleware"]


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
    docs spider's run (:func:`docsbot.extensions.context.index_context`).
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
