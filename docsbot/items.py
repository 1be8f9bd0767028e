"""Items the docs spider yields: plain dataclasses, which Scrapy handles through itemadapter (feed exports,
``scrapy parse``, third-party pipelines); docsbot's own pipelines dispatch on their types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Chunk", "PageChange", "PageGone", "PageItem"]


@dataclass
class Chunk:
    """One retrievable piece of a page: ``content`` is stored with its ``context`` line; ``embed_text`` (context
    line cut to ``context_cut`` characters when longer, blank line, content:
    :func:`docsbot.embedding.texts.embed_text`) is what the model sees. ``embedding`` (float32, shape (dim,)) is
    usually ``None``: the store takes the vector stored for ``embed_hash`` or leaves the chunk to the embedding queue
    (:mod:`docsbot.embedding.worker`)."""

    content: str
    heading_path: list[str]
    context: str  # "title > heading path", see docsbot.embedding.texts.context_line
    embed_text: str
    embed_hash: str = ""  # docsbot.embedding.texts.embed_key(model, embed_text): equal keys give equal vectors
    embedding: Any = None
    anchor: str | None = None  # HTML id of the section or definition (stored as metadata->>'anchor')
    context_cut: int | None = None  # the context line was cut to this many characters (stored in metadata)
    # 0: a chunk of the page's text (BM25 and vectors); 1: a definition embedded on its own (vectors only;
    # docsbot.content.chunking.definitions), named ``name`` (stored as metadata->>'name')
    kind: int = 0
    name: str | None = None


@dataclass
class PageChange:
    """What storing a page changes, for the change log (``page_changes``): ``kind`` ``added`` (a page new to the
    index), ``modified`` (new text) or ``moved`` (a stored page now at another URL, its text new or not);
    ``sections`` and ``diff`` as :class:`docsbot.content.changes.PageDiff` gives them (for new text of a stored
    page)."""

    kind: str
    sections: list[dict[str, Any]] = field(default_factory=list)
    diff: str | None = None


@dataclass
class PageItem:
    """A page fetched with 200 and extracted.

    ``page_id`` is the stored page's id (``None`` for a page new to the index; for a stored page that now
    redirects, the id of the row that moves to ``url``); ``stored_hash`` its stored ``content_hash``.
    ``changed`` is set by the chunk pipeline: ``False`` means the extracted content hashes the same as what is
    stored, so only the validators are written.
    """

    version_id: int
    url: str
    title: str
    markdown: str
    content_hash: str
    depth: int
    links: list[str]
    etag: str | None = None
    last_modified: str | None = None
    content_type: str | None = None
    canonical_url: str | None = None
    page_id: int | None = None
    stored_hash: str | None = None
    changed: bool = True
    chunks: list[Chunk] = field(default_factory=list)
    # From docsbot.content.extract.ExtractedPage: (offset, id) anchors for the chunker, (name, anchor) symbols for the
    # symbol table, and the page's share of text inside links (navigation pages); None when not extracted.
    anchors: list[tuple[int, str]] = field(default_factory=list)
    # (name, anchor), (name, anchor, offset) or (name, anchor, offset, indexed): docsbot.content.symbols.Symbol
    symbols: list[tuple[str, ...]] = field(default_factory=list)
    link_share: float | None = None
    # docsbot.content.extract.EXTRACTOR_VERSION of this extraction (0: unknown; a refresh re-fetches such a page).
    extractor_version: int = 0
    # The stored page's URL when it now answers at ``url`` (a redirect or a canonical URL moved it).
    moved_from: str | None = None
    # {symbol name: hash of its documentation text} (docsbot.content.changes.symbol_doc_hashes), set by the chunk
    # pipeline.
    symbol_hashes: dict[str, str] = field(default_factory=dict)
    # Set by the chunk pipeline when storing the page changes the index (None: a same-content 200).
    change: PageChange | None = None
    # Until when the response is fresh by its HTTP caching headers (docsbot.refresh.freshness; None: stale at once).
    fresh_until: Any = None
    # The HTML the page was extracted from, zlib-compressed, and its encoding: stored (pages.html) so that a newer
    # extraction can run from it. None: keep what is stored (a page re-extracted from it) or keep none.
    html: bytes | None = None
    html_encoding: str | None = None


@dataclass
class PageGone:
    """A stored page that is gone: 404/410, a redirect out of scope, or a duplicate of another stored URL.
    Deleted (chunks by cascade) at the end of a completed run; ``reason`` says why."""

    version_id: int
    page_id: int
    url: str
    reason: str
