"""Crawl scope: :class:`ScopeMiddleware` keeps every page download, redirect hops included, inside the crawl's scope."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from docsbot.downloadermiddlewares import PAGE_META_KEY, SEED_FILE_META_KEY
from docsbot.extensions.context import index_context
from docsbot.urls import InvalidURL, canonical_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from docsbot.urls import Scope

__all__ = ["OutOfScope", "ScopeMiddleware"]


class OutOfScope(IgnoreRequest):
    """A request, typically a redirect hop, left the crawl's scope (its reach, or its include/exclude patterns)."""


class ScopeMiddleware:
    """Keeps every page download (requests with ``meta["docsbot_page"]``) inside the crawl's scope
    (:class:`docsbot.urls.Scope`: its reach from the root, and its include/exclude patterns), redirect hops included,
    and every seed file's (a sitemap, a sitemap index's sitemaps, llms.txt, Doxygen's menu:
    ``meta["docsbot_seed_file"]``) on the scope's hosts, anywhere on them (a site's sitemap is often at its root,
    above the docs' directory): a site's files cannot send the crawler to another host or port.

    The root's request and its redirect hops are always let through: where the root's redirects lead is where the
    scope is taken from (:meth:`docsbot.refresh.RefreshLedger.root_moved`, told by the conditional-request
    middleware at each hop). The scope is read at each request (``scope()``), since the root's redirects change it.

    The docs spider deduplicates requests itself and sends them with ``dont_filter=True`` so that a redirect to
    an already-crawled URL still reaches it (Scrapy's duplicate filter would drop it silently); that also
    switches off Scrapy's ``OffsiteMiddleware``, whose job this middleware takes over, with the path prefix and
    patterns included. Raises :class:`OutOfScope`; stats ``docsbot/skipped/out_of_scope``. ``NotConfigured``
    without the docs spider's run (:func:`docsbot.extensions.context.index_context`).
    """

    def __init__(
        self, scope: Callable[[], Scope], stats: StatsCollector, is_root: Callable[[str], bool] = lambda url: False
    ) -> None:
        self.scope = scope
        self.stats = stats
        self.is_root = is_root

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScopeMiddleware:
        context = index_context(crawler)
        # the ledger is the run's, built after the middlewares: looked up at each call
        return cls(lambda: context.scope, crawler.stats, lambda url: context.ledger.is_root(url))

    def process_request(self, request: Request, spider: object = None) -> None:
        scope = self.scope()
        if request.meta.get(SEED_FILE_META_KEY):
            try:
                inside = scope.same_site(canonical_url(request.url))
            except InvalidURL:
                inside = False
        elif not request.meta.get(PAGE_META_KEY) or request.url in scope:
            return
        else:
            try:
                url = canonical_url(request.url)
                origin = canonical_url((request.meta.get("redirect_urls") or [url])[0])
            except InvalidURL:
                inside = False
            else:
                inside = url in scope or self.is_root(origin)
        if not inside:
            self.stats.inc_value("docsbot/skipped/out_of_scope")
            raise OutOfScope(f"out of scope: {request.url}")
