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
    """The version being crawled, its store and embedder, and (after ``start``) its stored pages by URL."""

    version: VersionRow
    mode: str
    store: PageStore
    embedder: Embedder
    stored: dict[str, StoredPage] = field(default_factory=dict)

    @property
    def refresh(self) -> bool:
        return self.mode == "refresh"

    @property
    def label(self) -> str:
        return f"{self.version.library}@{self.version.name}" if self.version.name else self.version.library
