"""HTML page → main content as Markdown, title, outgoing links, canonical URL, anchors and symbol table (pure; lxml +
html-to-markdown): :func:`extract_page`, the one entry point, and what it returns (:class:`ExtractedPage`).

Each step is a module of its own: decoding and parsing (:mod:`~docsbot.content.decoding`), links and the canonical
URL (:mod:`~docsbot.content.links`, read from the whole page: navigation is how a crawl finds pages), chrome
removal and the main-content node (:mod:`~docsbot.content.chrome`), the title (:mod:`~docsbot.content.title`), the
symbol table (:mod:`docsbot.content.symbols`), anchors (:mod:`~docsbot.content.anchors`) and the conversion to
Markdown (:mod:`~docsbot.content.markdown`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from docsbot.content import EXTRACTOR_VERSION, ConverterFailed, ExtractionError, content_hash
from docsbot.content.anchors import Anchor, mark_anchors, take_anchor_marks
from docsbot.content.chrome import is_chrome, main_content
from docsbot.content.decoding import decode_html, parse_html
from docsbot.content.links import link_share, page_links
from docsbot.content.markdown import html_to_markdown_text, main_markdown, normalize_markup
from docsbot.content.symbols import Symbol, find_symbols
from docsbot.content.title import document_title, main_title

__all__ = [
    "EXTRACTOR_VERSION",
    "Anchor",
    "ConverterFailed",
    "ExtractedPage",
    "ExtractionError",
    "Symbol",
    "content_hash",
    "decode_html",
    "extract_page",
    "html_to_markdown_text",
    "is_chrome",
    "link_share",
    "parse_html",
]


@dataclass
class ExtractedPage:
    """What docsbot keeps of a page: ``markdown`` (UTF-8 text), ``links`` (canonical absolute URLs, in page
    order, deduplicated, any host: scope is the caller's business) and ``canonical_url`` from
    ``<link rel="canonical">`` (``None`` if absent or invalid).

    ``anchors`` (document order) and ``symbols`` come from the HTML ids of the main content; ``link_share`` is
    the share of the main content's text that sits inside links (0.0-1.0): an index or table of contents is
    mostly links, a content page is not. ``html``: the HTML it was extracted from, zlib-compressed, when the
    caller keeps it (:func:`docsbot.content.pool.extract_body`).
    """

    title: str
    markdown: str
    links: list[str]
    canonical_url: str | None
    anchors: list[Anchor] = field(default_factory=list)
    symbols: list[Symbol] = field(default_factory=list)
    link_share: float = 0.0
    html: bytes | None = None


def extract_page(html: str | bytes, url: str, encoding: str | None = None) -> ExtractedPage:
    """Extract the main content of ``html`` fetched from ``url``: pass the response's bytes and its
    ``encoding`` (``response.body``, ``response.encoding``), or already decoded text (see :func:`parse_html`).

    Raises :class:`ExtractionError` if the body is empty, binary or not parseable as HTML, and
    :class:`ConverterFailed` (an :class:`ExtractionError`) if the conversion to Markdown fails.
    """
    doc = parse_html(html, encoding)
    links, canonical = page_links(doc, url)
    page_title = document_title(doc)
    main = main_content(doc)
    if main is None:
        return ExtractedPage(page_title, "", links, canonical)
    title = main_title(main, page_title)
    share = link_share(main)
    definitions = find_symbols(main)
    normalize_markup(main)
    ids, marks = mark_anchors(main, definitions)
    markdown, anchors, offsets = take_anchor_marks(main_markdown(main), ids)
    symbols = [
        Symbol(d.name, d.anchor, offsets.get(mark) if mark is not None else None, d.indexed)
        for d, mark in zip(definitions, marks, strict=True)
    ]
    return ExtractedPage(title or page_title, markdown, links, canonical, anchors, symbols, share)
