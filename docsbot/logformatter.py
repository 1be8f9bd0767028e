"""Scrapy's ``LOG_FORMATTER`` for docsbot: an item is named by its URL in the log, never printed whole.

Scrapy's default formatter prints the item with every drop, error and (at DEBUG) every scraped item; a docsbot
``PageItem`` carries its Markdown and every chunk's embedding, about 150 KB of text per line. Here:

- ``dropped``: ``Dropped https://…/page.html: not stored: storing https://…: PoolTimeout: … (gave up after 5
  attempts)`` at the exception's ``log_level`` (Scrapy's ``DropItem(log_level=…)``) or ``DEFAULT_DROPITEM_LOG_LEVEL``;
- ``item_error``: ``Error processing https://…/page.html: KeyError: 'x'`` at ERROR. Scrapy logs item errors with
  ``exc_info``, so an unexpected error (a bug) keeps its traceback after that line; errors docsbot expects (the
  database refusing a page) are turned into drops by the pipelines, which are one line;
- ``scraped``: ``Scraped https://…/page.html`` at DEBUG.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.logformatter import LogFormatter

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure

__all__ = ["DocsbotLogFormatter", "item_label"]


def item_label(item: Any) -> str:
    """The item's ``url`` field, or its type name when it has none (never its content)."""
    try:
        url = ItemAdapter(item).get("url")
    except TypeError:  # not an item type itemadapter knows
        url = getattr(item, "url", None)
    return str(url) if url else type(item).__name__


def _one_line(exception: BaseException) -> str:
    text = " ".join(str(exception).split())
    return text or type(exception).__name__


class DocsbotLogFormatter(LogFormatter):
    def dropped(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)  # keeps Scrapy's choice of level
        return {
            "level": result["level"],
            "msg": "Dropped %(item)s: %(exception)s",
            "args": {"item": item_label(item), "exception": _one_line(exception)},
        }

    def item_error(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        return {
            "level": logging.ERROR,
            "msg": "Error processing %(item)s: %(error)s",
            "args": {"item": item_label(item), "error": f"{type(exception).__name__}: {_one_line(exception)}"},
        }

    def scraped(self, item: Any, response: Response | Failure | None, spider: Spider) -> LogFormatterResult:
        return {"level": logging.DEBUG, "msg": "Scraped %(item)s", "args": {"item": item_label(item)}}
