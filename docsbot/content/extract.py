"""HTML page → main content as Markdown, title, outgoing links, canonical URL, anchors and symbol table (pure; lxml +
html-to-markdown): :func:`extract_page`, the one entry point, and what it returns (:class:`ExtractedPage`).

Each step is a module of its own: decoding and parsing (:mod:`~docsbot.content.decoding`), links and the canonical
URL (:mod:`~docsbot.content.links`, read from the whole page: navigation is how a crawl finds pages), chrome
removal and the main-content node (:mod:`~docsbot.content.chrome`), the title (:mod:`~docsbot.content.title`), the
symbol table (:mod:`docsbot.content.symbols`), anchors (:mod:`~docsbot.content.anchors`) and the conversion to
Markdown (:mod:`~docsbot.content.markdown`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from docsbot.content.anchors import Anchor, mark_anchors, take_anchor_marks
from docsbot.content.chrome import is_chrome, main_content
from docsbot.content.decoding import ExtractionError, decode_html, parse_html
from docsbot.content.links import link_share, page_links
from docsbot.content.markdown import ConverterFailed, html_to_markdown_text, main_markdown, normalize_markup
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


# The version of what extract_page returns and the chunker makes of it. Bump it with any change that alters the
# Markdown, title, anchors, symbols, link share or chunks of some pages: a refresh re-fetches (without validators,
# once) every stored page extracted by an older version and stores it as a full index would, reusing the vectors
# of chunks whose text is the same (pages.extractor_version, migration 0011); the chunker runs only on what a
# refresh fetched. 1: everything before it; 2: gi-docgen headers, AsciiDoc #header, DocBook and rustdoc chrome,
# nested <pre>, rustdoc/Javadoc/gi-docgen symbols, docutils asides (footnotes) kept; 3: labels before the <h1>
# follow it, <hr> dropped, a page without <h1> or <title> titled by its first heading, lists of headed sections
# (Javadoc's member lists) unwrapped, chunks without text (a heading and a thematic break) dropped; 4: converted by
# html-to-markdown instead of markdownify (definition lists as plain blocks, no ":   " and indentation; tables
# compact, a first row without <th> as their header, rowspan honoured; paragraphs reflowed around inline elements;
# line-start Markdown characters escaped; fences longer than the backticks inside; <summary> a plain block; inline
# code's edge whitespace outside it; an inline <svg> as its text; a one-row table of lists as its lists); 5:
# definitions of DocBook (terms, refentries, function synopses), AsciiDoc (labelled lists), mkdocstrings, Doxygen
# and all-code headings are symbols; DocBook's anchors inside headings and terms are anchors; Doxygen's banner,
# permalinks and footer are chrome, its title the <h1>; table rows without text dropped; an asterisk inside
# emphasis escaped; 6: headings of plain text shaped as a member or a call (Docusaurus: ".code(statusCode)") and
# all-code headings with parameters ("decorate(name, value)") are symbols; 7: symbols carry the offset of their
# definition's text (Symbol.offset; terms without an id of their own too), and table rows and list items that start
# with a name shown as code and describe it are symbols (PostgreSQL's function tables and environment variables,
# gi-docgen's enum members with their ids as anchors, Python's tables of constants); Markdown unchanged; 8: the chunker
# reads code fences by CommonMark's rules (a ```` block, which html-to-markdown writes around code holding ```, is
# not closed by a ``` line, nor a block by a line with an info string): a heading inside such a block is code, not a
# section; Markdown unchanged; 9: headings read by markdown-it-py (docsbot.content.commonmark): a heading path keeps the
# names its headings show (__slots__, _thread, CMAKE_<LANG>_FLAGS, pack-*.idx, "N * 4 bytes"), which the regular
# expressions had cut ("_slots_", "thread", "CMAKE<LANG>FLAGS"); chunk boundaries and Markdown unchanged (checked on
# the 3,847 pages of make eval's six corpora: 222 headings read otherwise, every chunk's text and offset the same);
# 10: a symbol whose definition the site's own index points to (DocBook's indexterm) is marked so (Symbol.indexed);
# Markdown and chunks unchanged.
EXTRACTOR_VERSION = 10


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


def content_hash(title: str, markdown: str) -> str:
    """SHA-256 (hex, 64 chars) of the extracted title and Markdown: what "the page changed" means to docsbot."""
    return hashlib.sha256(f"{title}\n{markdown}".encode()).hexdigest()


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
