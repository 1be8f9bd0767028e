"""Item log lines name the page, never print the item (a PageItem with embeddings is ~150 KB of text)."""

from __future__ import annotations

import logging

import numpy as np
from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from docsbot.items import Chunk, PageGone, PageItem
from docsbot.logformatter import DocsbotLogFormatter


def big_item() -> PageItem:
    chunks = [Chunk("x" * 900, ["A"], "A", "x" * 900, "k", np.ones(384, dtype=np.float32)) for _ in range(40)]
    return PageItem(
        version_id=1, url="http://h/docs/big.html", title="Big", markdown="x" * 40_000, content_hash="h", depth=1,
        links=[], chunks=chunks,
    )  # fmt: skip


def formatted(result: dict) -> str:
    return result["msg"] % result["args"]


def test_item_errors_drops_and_scraped_items_are_one_short_line_naming_the_url():
    crawler = get_crawler(Spider, {"LOG_FORMATTER": "docsbot.logformatter.DocsbotLogFormatter"})
    spider = Spider("docs")
    spider.crawler = crawler
    formatter = DocsbotLogFormatter.from_crawler(crawler)
    item = big_item()
    error = formatter.item_error(item, RuntimeError("pool timeout\nafter 30 s"), None, spider)
    dropped = formatter.dropped(item, DropItem("not stored: the database is down"), None, spider)
    scraped = formatter.scraped(item, None, spider)
    assert formatted(error) == "Error processing http://h/docs/big.html: RuntimeError: pool timeout after 30 s"
    assert error["level"] == logging.ERROR
    assert formatted(dropped) == "Dropped http://h/docs/big.html: not stored: the database is down"
    assert dropped["level"] == logging.WARNING  # Scrapy's DEFAULT_DROPITEM_LOG_LEVEL
    assert formatted(scraped) == "Scraped http://h/docs/big.html" and scraped["level"] == logging.DEBUG
    gone = formatter.dropped(PageGone(1, 2, "http://h/docs/old.html", "404"), DropItem("x"), None, spider)
    assert formatted(gone) == "Dropped http://h/docs/old.html: x"
