"""The service layer: one function per answer, for every interface (CLI, MCP server, web pages).

- :mod:`~docsbot.service.index`: :class:`DocsIndex`, the answers (search, libraries, pages, runs, changes; refresh
  and remove when writes are allowed), made of one part per concern (:mod:`~docsbot.service.core`,
  :mod:`~docsbot.service.reading`, :mod:`~docsbot.service.pages`, :mod:`~docsbot.service.changes`,
  :mod:`~docsbot.service.writes`);
- :mod:`~docsbot.service.search`: :class:`Searcher`, hybrid search with a warm pool and model;
- :mod:`~docsbot.service.models`: the typed results;
- :mod:`~docsbot.service.sections`, :mod:`~docsbot.service.runs`, :mod:`~docsbot.service.scrapyd`: the parts.

It reads and writes through :mod:`docsbot.store` only, and never imports an interface, Scrapy or the crawl.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Names are loaded on first use (PEP 562): `docsbot search` imports docsbot.service.search alone, without pydantic
# and the rest of the service, which would cost every whole-process search its start-up time.
_EXPORTS = {
    "docsbot.service.errors": ("Forbidden", "Invalid", "NotFound", "ServiceError", "Upstream"),
    "docsbot.service.changes": ("parse_since",),
    "docsbot.service.index": ("DocsIndex",),
    "docsbot.service.models": (
        "CancelResult",
        "ChangesResult",
        "DocsResult",
        "LibraryMatches",
        "LibraryVersion",
        "ListLibrariesResult",
        "PageChangeInfo",
        "PageResult",
        "PageSection",
        "RefreshResult",
        "RemoveResult",
        "RunInfo",
        "RunList",
        "SearchDocsResult",
        "SearchHit",
        "SymbolRef",
        "VersionDiff",
    ),
    "docsbot.service.search": ("MAX_QUERY_CHARS", "BadQuery", "Searcher", "UnknownLibrary"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

if TYPE_CHECKING:
    from docsbot.service.changes import parse_since
    from docsbot.service.errors import Forbidden, Invalid, NotFound, ServiceError, Upstream
    from docsbot.service.index import DocsIndex
    from docsbot.service.models import (
        CancelResult,
        ChangesResult,
        DocsResult,
        LibraryMatches,
        LibraryVersion,
        ListLibrariesResult,
        PageChangeInfo,
        PageResult,
        PageSection,
        RefreshResult,
        RemoveResult,
        RunInfo,
        RunList,
        SearchDocsResult,
        SearchHit,
        SymbolRef,
        VersionDiff,
    )
    from docsbot.service.search import MAX_QUERY_CHARS, BadQuery, Searcher, UnknownLibrary


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'docsbot.service' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "MAX_QUERY_CHARS",
    "CancelResult",
    "RunList",
    "ChangesResult",
    "PageChangeInfo",
    "SymbolRef",
    "VersionDiff",
    "parse_since",
    "BadQuery",
    "DocsIndex",
    "DocsResult",
    "Forbidden",
    "LibraryMatches",
    "Invalid",
    "LibraryVersion",
    "ListLibrariesResult",
    "NotFound",
    "PageResult",
    "PageSection",
    "RefreshResult",
    "RemoveResult",
    "RunInfo",
    "SearchDocsResult",
    "SearchHit",
    "Searcher",
    "ServiceError",
    "UnknownLibrary",
    "Upstream",
]
