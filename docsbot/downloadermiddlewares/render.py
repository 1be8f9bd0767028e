"""Rendering after a 200: :class:`RenderMiddleware` turns a 200 to the plain revalidation of a rendered page into its
browser request (the rendering policy itself: :mod:`docsbot.render`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse

from docsbot.downloadermiddlewares import (
    FETCHED_VALIDATORS_META_KEY,
    PAGE_META_KEY,
    RENDER_ON_200_META_KEY,
    header_value,
)
from docsbot.extensions.context import index_context

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

__all__ = ["RenderMiddleware", "render_meta"]


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
