"""What one crawl of one library version works with: built by the docs spider, shared by the pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docsbot.db import PageStore, StoredPage, VersionRow
    from docsbot.embedding import Embedder

__all__ = ["IndexContext"]


@dataclass
class IndexContext:
    """The version being crawled, its store and embedder, its stored pages by URL (loaded in ``start``), and
    what the run learned: pages that answered 200/304 (``checked``), pages found gone (``gone``: id → reason),
    deleted only at the end of a completed run."""

    version: VersionRow
    mode: str
    store: PageStore
    embedder: Embedder
    stored: dict[str, StoredPage] = field(default_factory=dict)
    checked: set[int] = field(default_factory=set)
    gone: dict[int, str] = field(default_factory=dict)

    @property
    def refresh(self) -> bool:
        return self.mode == "refresh"

    @property
    def label(self) -> str:
        return f"{self.version.library}@{self.version.name}" if self.version.name else self.version.library
