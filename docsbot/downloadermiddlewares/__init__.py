"""docsbot's downloader middlewares, one module per component, and the request ``meta`` keys they share with the
docs spider.

- :mod:`~docsbot.downloadermiddlewares.scope` (50): every page download, redirect hops included, in the crawl's scope
  (the root's hops set it);
- :mod:`~docsbot.downloadermiddlewares.robotstxt` (100): Scrapy's robots.txt middleware, every waiting request checked,
  ``Crawl-delay`` honoured;
- :mod:`~docsbot.downloadermiddlewares.credentials` (310): a private docs host's headers, to its host alone;
- :mod:`~docsbot.downloadermiddlewares.retry` (550): Scrapy's retries, honouring ``Retry-After``;
- :mod:`~docsbot.downloadermiddlewares.render` (570): a rendered page that answers 200 to its plain revalidation goes
  to the browser;
- :mod:`~docsbot.downloadermiddlewares.conditional` (580): conditional requests (RFC 9110 §13.1), a 304
  short-circuited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.http import Response

__all__ = [
    "FETCHED_VALIDATORS_META_KEY",
    "PAGE_META_KEY",
    "REEXTRACT_META_KEY",
    "RENDER_ON_200_META_KEY",
    "SEED_FILE_META_KEY",
    "VALIDATORS_META_KEY",
    "header_value",
]

# On a request for a stored page: its stored (etag, last_modified), sent back as If-None-Match / If-Modified-Since.
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


def header_value(response: Response, name: bytes) -> str | None:
    """The last value of the response header ``name``, decoded as Latin-1 (RFC 9110 §5.5), or ``None``."""
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
