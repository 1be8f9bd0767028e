"""The limit docsbot is measured against: the leanest plain Scrapy spider doing the same job, with docsbot's
concurrency, no extraction, no database. ``-a record=FILE`` follows links from ``-a url`` and writes every page's
validators to FILE; ``-a revalidate=FILE`` requests exactly those pages with their validators (every page should
answer 304).

Lean on purpose: links are read as raw strings from lxml's tree (no Selector per link), fragments are
dropped and duplicates skipped before ``urljoin``, and nothing is canonicalized; Scrapy's duplicate filter sees each
URL once. An earlier version joined and canonicalized every link of every page (w3lib) and ran about 6x slower on
the Python docs, which flattered every ratio measured against it.

    scrapy runspider bench/bare_spider.py -a url=http://127.0.0.1:8390/index.html -a record=/tmp/v.json
"""

from __future__ import annotations

import json
from urllib.parse import urljoin, urlsplit

import lxml.html
import scrapy


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
        self.seen: set[str] = set()  # URLs requested, as joined

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
        base = response.url
        hrefs = {h.split("#", 1)[0] for h in lxml.html.fromstring(response.body).xpath("//a/@href")}
        for href in hrefs:
            if not href:
                continue
            url = urljoin(base, href)
            if url in self.seen:
                continue
            self.seen.add(url)
            parts = urlsplit(url)
            if parts.netloc == self.netloc and parts.path.startswith(self.prefix):
                yield scrapy.Request(url)

    def closed(self, reason):
        if self.record:
            with open(self.record, "w") as f:
                json.dump(self.validators, f)
