"""The limit docsbot is measured against: a plain Scrapy spider with docsbot's concurrency, no extraction, no
database. ``-a record=FILE`` follows links from ``-a url`` and writes every page's validators to FILE;
``-a revalidate=FILE`` requests exactly those pages with their validators (every page should answer 304).

    scrapy runspider bench/bare_spider.py -a url=http://127.0.0.1:8390/index.html -a record=/tmp/v.json
"""

from __future__ import annotations

import json
from urllib.parse import urljoin, urlsplit

import scrapy
from w3lib.url import canonicalize_url


class BareSpider(scrapy.Spider):
    name = "bare"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "HTTPERROR_ALLOWED_CODES": [304],
    }

    def __init__(self, url: str = "", record: str = "", revalidate: str = "", **kwargs):
        super().__init__(**kwargs)
        self.root = url
        parts = urlsplit(url)
        self.netloc, self.prefix = parts.netloc, parts.path[: parts.path.rfind("/") + 1]
        self.record, self.revalidate = record, revalidate
        self.validators: dict[str, list[str | None]] = {}

    async def start(self):
        if self.revalidate:
            with open(self.revalidate) as f:
                for url, (etag, last_modified) in json.load(f).items():
                    headers = {k: v for k, v in (("If-None-Match", etag), ("If-Modified-Since", last_modified)) if v}
                    yield scrapy.Request(url, headers=headers, callback=self.parse_304)
        else:
            yield scrapy.Request(self.root)

    def parse_304(self, response):
        return None

    def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        self.validators[response.url] = [
            (response.headers.get(h) or b"").decode() or None for h in (b"ETag", b"Last-Modified")
        ]
        for href in response.css("a::attr(href)").getall():
            url = canonicalize_url(urljoin(response.url, href), keep_fragments=False)
            parts = urlsplit(url)
            if parts.netloc == self.netloc and parts.path.startswith(self.prefix):
                yield scrapy.Request(url)

    def closed(self, reason):
        if self.record:
            with open(self.record, "w") as f:
                json.dump(self.validators, f)
