"""HTML page → main content as Markdown, title, outgoing links and canonical URL (pure; lxml + html-to-markdown).

The main-content node is the first match of :data:`MAIN_CONTENT_XPATHS` (Sphinx, MkDocs, Read the Docs,
Docusaurus and plain HTML5 layouts), with navigation, headers, footers, sidebars and "edit this page" chrome
removed. Links are taken from the whole page (navigation included: it is how a crawl finds pages).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import html_to_markdown
import lxml.html
from w3lib.encoding import html_to_unicode, resolve_encoding

from docsbot.urls import InvalidURL, canonical_url

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
# the 3,847 pages of make eval's six corpora: 222 headings read otherwise, every chunk's text and offset the same).
EXTRACTOR_VERSION = 9

MAIN_CONTENT_XPATHS = (
    "//*[@itemprop='articleBody']",
    "//article[contains(concat(' ', normalize-space(@class), ' '), ' md-content__inner ')]",
    "//*[@role='main']",
    "//main//article",
    "//main",
    "//article",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' body ')]",
    # AsciiDoc (asciidoc and Asciidoctor): body > #header (the h1 and a man page's NAME section), #content, #footer.
    "//body[div[@id='header'] and div[@id='content']]",
    "//*[@id='content']",
    "//body",
)
# Page chrome that is never content, wherever it sits (is_chrome): one walk over the page's elements. As a union
# of XPath expressions, each `//*[contains(concat(' ', normalize-space(@class), ' '), ...)]` walked the whole tree
# in libxml2's interpreter: a fifth of the Python docs' extraction CPU, 3x this walk, for the same elements (in
# document order) on samples of every corpus of the matrix.
_CHROME_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "nav",
        # A thematic break carries no text, and the Markdown splitter cuts at one before it cuts between
        # paragraphs: Sphinx's "Source code: Lib/x.py" line, then <hr>, became a chunk of its own.
        "hr",
        "footer",
        "form",
        "button",
    }
)
# A <header> is the page's banner only outside sectioning content (HTML-AAM: role=banner); inside <main>,
# <article> or <section> it holds the heading (gi-docgen: <section id="main"><header><h1>). An <aside> beside the
# content (a theme's sidebar, a table of contents drawer) is chrome; inside the main content it is content:
# docutils renders footnotes, topics and sidebars as <aside> (Sphinx, Python docs). Either is content inside an
# element of these tags or with role="main".
_CONTENT_ANCESTORS = {
    "header": frozenset({"main", "article", "section", "aside"}),
    "aside": frozenset({"main", "article"}),
}
# rustdoc's "collapse all" toggle; Doxygen's search box, its results and its navigation tree and path.
_CHROME_IDS = frozenset(
    {"footer", "toggle-all-docs", "MSearchSelectWindow", "MSearchResultsWindow", "nav-tree", "nav-path", "side-nav"}
)
_CHROME_ROLES = frozenset({"navigation", "search", "banner", "contentinfo"})
# Sphinx's sidebar and related-pages bar; rustdoc's version/source/run links (gi-docgen's [src] links too).
_CHROME_CLASSES = frozenset({"sphinxsidebar", "related", "out-of-band", "rightside", "srclink", "test-arrow"})
# Substrings of a class attribute: MkDocs Material's and Read the Docs' "edit this page" and page-source buttons.
# A heading's permalink: Sphinx's ¶ (headerlink), Docusaurus's and VitePress's zero-width space or # (hash-link,
# header-anchor); as text they ended every heading ("## Welcome\u200b").
_PERMALINK_CLASSES = frozenset({"headerlink", "hash-link", "header-anchor"})
_CHROME_CLASS_PARTS = re.compile("edit-this-page|md-content__button|md-source-file|rst-footer-buttons")
_XML_SPACE = re.compile(r"[ \t\n\r]+")  # what XPath's normalize-space() collapses


def is_chrome(el) -> bool:  # noqa: ANN001 - an lxml element
    """Whether ``el`` is page chrome that never counts as content: scripts, navigation, banners, footers, forms,
    sidebars outside the content, ARIA-hidden elements, heading permalinks (Sphinx's ``a.headerlink``,
    Docusaurus's ``a.hash-link``, VitePress's ``a.header-anchor``), rustdoc's
    toggles and source links, gi-docgen's ``summary.hideme``, DocBook XSL's Prev/Up/Next tables, Doxygen's banner
    (``div#top`` holding ``#titlearea``), search box, navigation path, section summary, permalinks and footer."""
    tag = el.tag
    if tag in _CHROME_TAGS:
        return True
    content = _CONTENT_ANCESTORS.get(tag)
    if content is not None and not any(a.tag in content or a.get("role") == "main" for a in el.iterancestors()):
        return True
    ident = el.get("id")
    if ident in _CHROME_IDS or el.get("role") in _CHROME_ROLES or el.get("aria-hidden") == "true":
        return True
    if ident == "top" and tag == "div" and el.find("div[@id='titlearea']") is not None:
        return True  # Doxygen's banner: project name, menu, search box and a project's own header
    cls = el.get("class")
    if not cls:
        return False
    words = _XML_SPACE.split(cls)
    return (
        not _CHROME_CLASSES.isdisjoint(words)
        or (tag == "a" and not _PERMALINK_CLASSES.isdisjoint(words))
        or _CHROME_CLASS_PARTS.search(cls) is not None
        or (tag == "summary" and "hideme" in cls)
        or (tag == "div" and cls in ("navheader", "navfooter"))
        # Doxygen: the heading's "◆" permalink, the header's list of the page's sections, the "Generated by" line
        or (tag == "span" and "permalink" in words)
        or (
            tag == "div" and cls == "summary" and el.getparent() is not None and el.getparent().get("class") == "header"
        )
        or (tag == "address" and "footer" in words)
    )


_LANGUAGE_CLASS = re.compile(r"(?:^|\s)(?:highlight|language|lang)-([\w+#.-]+)")
_BLANK_LINES = re.compile(r"\n{3,}")
_PILCROW = re.compile(r"\s*[¶#]\s*$")
_WORD_CHARS = re.compile(r"\W+")


# A share of control characters (or U+FFFD from undecodable bytes) above this, in the first BINARY_SAMPLE
# characters, means the body is not text: a binary file served as text/html.
BINARY_SAMPLE = 8192
BINARY_SHARE = 0.10
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")
# Characters XML 1.0 forbids (C0 controls but tab, newline and carriage return; U+FFFE, U+FFFF; lone surrogates):
# lxml refuses them in any text or attribute value it is handed ("All strings must be XML compatible"), so one
# such character in a heading (``&#1;``) failed the whole page. They carry nothing readable: removed on decoding.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
# ... and the character references to them (``&#1;``, ``&#x1F;``), which libxml2 would decode into the tree.
_NOT_XML_REFERENCE = re.compile(r"&#(?:0*(?:[1-8]|1[124-9]|2\d|3[01])|[xX]0*(?:[1-8bBcCeEfF]|1[\da-fA-F]));")


class ExtractionError(ValueError):
    """Raised when a document cannot be parsed as HTML at all (empty, binary, or no element to parse)."""


class ConverterFailed(ExtractionError):
    """html-to-markdown failed on a page that parsed (an error or a panic in the library), or skipped part of it.
    Not the page's fault: the spider keeps the stored page as it was and counts it failed (``failed/extract``), as
    for a worker that died, where an :class:`ExtractionError` of the document itself is a skipped page."""


class Anchor(NamedTuple):
    """An HTML id a section or definition of the page can be linked to (``url#id``): ``offset`` is the character
    offset in :attr:`ExtractedPage.markdown` where the heading's or definition's text starts."""

    offset: int
    id: str


class Symbol(NamedTuple):
    """An API name the page defines (a Sphinx ``dt[id]`` signature, a ``module-NAME`` section, a CMake
    ``role:NAME`` target, a term, a table row or list item that starts with the name: :func:`find_symbols`), with
    the HTML id that links to its definition (its own, or the nearest heading's when the definition has none) and
    ``offset``, the character offset in :attr:`ExtractedPage.markdown` where the definition's text starts (its name
    or signature, before the code or emphasis delimiters that open it). ``offset`` is ``None`` when the symbol is
    the whole page (rustdoc's item at ``main-content``, a Javadoc type without a type signature) or its text did
    not reach the Markdown."""

    name: str
    anchor: str
    offset: int | None = None


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


def _code_language(pre) -> str:  # noqa: ANN001 - an lxml element
    """The language of a code block from the classes of ``pre``, its first ``<code>`` and the two elements around
    it (Sphinx: ``<div class="highlight-python3"><div class="highlight"><pre>``); "" if none is named."""
    node = pre
    for _ in range(3):  # <pre>, its <div class="highlight">, Sphinx's <div class="highlight-python3">
        if node is None:
            break
        for candidate in (node, next(node.iter("code"), None) if node is pre else None):
            if candidate is None:
                continue
            match = _LANGUAGE_CLASS.search(candidate.get("class") or "")
            if match and match.group(1) not in ("default", "none", "text"):
                return match.group(1)
        node = node.getparent()
    return ""


# Link targets and images are noise for retrieval: links keep their text, images go. html-to-markdown (Rust) parses
# the serialized main node and writes its Markdown in one call: 1.7 s of CPU for the Python docs' 530 pages, where
# markdownify took about 15 s re-parsing the node into a BeautifulSoup tree and converting it tag by tag in Python
# (extract_page as a whole: 25.1 -> 13.8 s). Its own clean-up is off (its default preprocessing removes <nav> and
# <form> wherever they are; docsbot decided what is chrome: is_chrome), and so is whatever writes text the page
# does not show as text (abbreviation titles, autolinks, blockquote citations, ==marks==). Tables are compact (no
# padding to the column width), bullets "-" at every level.
_CONVERSION = html_to_markdown.ConversionOptions(
    heading_style="atx",
    bullets="-",
    strip_tags=["a"],
    skip_images=True,
    escape_asterisks=False,
    escape_underscores=False,
    escape_misc=False,
    autolinks=False,
    expand_abbreviations=False,
    include_blockquote_citations=False,
    highlight_style="none",
    compact_tables=True,
    extract_metadata=False,
    hidden_content="all",
    preprocessing=html_to_markdown.PreprocessingOptions(enabled=False),
)
# What html-to-markdown reports when it skipped part of its input: text lost, so the page fails instead.
_LOSSY_WARNINGS = (html_to_markdown.WarningKind.DEPTH_LIMIT_EXCEEDED, html_to_markdown.WarningKind.TRUNCATED_INPUT)


def html_to_markdown_text(html: str) -> str:
    """The Markdown of ``html`` (a serialized main-content node) as html-to-markdown writes it with docsbot's
    options. Raises :class:`ConverterFailed` if the library fails (``html_to_markdown.ConversionError`` and its
    subclasses, ``PanicError`` included; a Rust panic that escapes the binding as pyo3's ``PanicException`` too)
    or reports that it skipped part of the input (nesting deeper than its limit of 1,024 elements, which lxml's
    parser, capped at 256, never hands it; truncated input): the page fails rather than losing some of its text."""
    try:
        result = html_to_markdown.convert(html, _CONVERSION)
    except html_to_markdown.ConversionError as exc:
        raise ConverterFailed(f"html-to-markdown failed: {type(exc).__name__}: {exc}") from exc
    except BaseException as exc:  # pyo3's PanicException derives from BaseException, and cannot be imported
        if type(exc).__name__ != "PanicException":
            raise
        raise ConverterFailed(f"html-to-markdown panicked: {exc}") from exc
    for warning in result.warnings:
        if warning.kind in _LOSSY_WARNINGS:
            raise ConverterFailed(f"html-to-markdown skipped content: {warning.message}")
    return result.content or ""


def content_hash(title: str, markdown: str) -> str:
    """SHA-256 (hex, 64 chars) of the extracted title and Markdown: what "the page changed" means to docsbot."""
    return hashlib.sha256(f"{title}\n{markdown}".encode()).hexdigest()


def _text(node) -> str:  # noqa: ANN001
    return " ".join(node.text_content().split())


def decode_html(body: str | bytes, encoding: str | None = None) -> str:
    """The text of ``body``: ``str`` as is; ``bytes`` decoded with ``encoding`` (the response's, as Scrapy's
    ``TextResponse.encoding`` resolves it: HTTP header, then BOM and ``<meta>``/XML declaration, then inference),
    or, without one, detected as Scrapy does (``w3lib.encoding.html_to_unicode``: BOM, declarations, UTF-8).

    Bytes that are invalid in that encoding become U+FFFD (a wrong charset declaration costs characters, never
    the rest of the page); an encoding name Python does not know falls back to detection. Characters XML forbids
    and references to them (``&#1;``) are removed (libxml2 stops at NUL; lxml refuses C0 controls in any text it
    is handed). Raises :class:`ExtractionError` if the body looks binary: more than ``BINARY_SHARE`` control
    characters or U+FFFD among its first ``BINARY_SAMPLE`` characters.
    """
    if isinstance(body, bytes):
        codec = resolve_encoding(encoding) if encoding else None
        if codec is not None:
            text = body.decode(codec, errors="replace")
            if text.startswith("\ufeff"):
                text = text[1:]
        else:
            _, text = html_to_unicode(None, body)
    else:
        text = body
    sample = text[:BINARY_SAMPLE]
    if sample and len(_CONTROL.findall(sample)) > BINARY_SHARE * len(sample):
        raise ExtractionError("binary content, not HTML")
    text = _NOT_XML.sub("", text)
    return _NOT_XML_REFERENCE.sub("", text) if "&#" in text else text


# Every element an lxml.html tree (text_content, drop_tag, drop_tree), chosen in C: lxml.html's own lookup calls a
# Python function for each element object made (to give forms and inputs classes of their own, which nothing here
# uses): 4.1 million calls over the Python docs' 530 pages, whose extraction takes 8.3 s of CPU without them, 9.4 s
# with. The same pages, Markdown, links and symbols on all 13,044 pages of seven local corpora.
_HTML_CLASSES = lxml.etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement,
    comment=lxml.html.HtmlComment,
    pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity,
)


def parse_html(body: str | bytes, encoding: str | None = None) -> lxml.html.HtmlElement:
    """Parse ``body`` (see :func:`decode_html` for ``encoding``) into an lxml HTML tree, as parsel does: the
    decoded text is handed to libxml2 as UTF-8 with the parser's encoding fixed, so that an XML declaration
    (``<?xml version="1.0" encoding="UTF-8"?>``, which XHTML from AsciiDoc and DocBook starts with, and which lxml
    refuses in a ``str``) or a ``<meta charset>`` inside the body cannot override it; libxml2 truncates a document
    at bytes invalid in its declared encoding, Python's codecs replace them. Malformed markup is repaired by
    libxml2's recovering HTML parser. Raises :class:`ExtractionError` for an empty, binary or element-less body.
    """
    text = decode_html(body, encoding)
    if not text.strip():
        raise ExtractionError("empty document")
    parser = lxml.html.HTMLParser(encoding="utf-8", recover=True)
    parser.set_element_class_lookup(_HTML_CLASSES)
    try:
        return lxml.html.document_fromstring(text.encode("utf-8"), parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise ExtractionError(f"unparseable HTML: {exc}") from exc


def extract_page(html: str | bytes, url: str, encoding: str | None = None) -> ExtractedPage:
    """Extract the main content of ``html`` fetched from ``url``: pass the response's bytes and its
    ``encoding`` (``response.body``, ``response.encoding``), or already decoded text (see :func:`parse_html`).

    Raises :class:`ExtractionError` if the body is empty, binary or not parseable as HTML.
    """
    doc = parse_html(html, encoding)

    base = url
    base_href = doc.xpath("//base/@href")
    if base_href:
        try:
            base = canonical_url(base_href[0], url)
        except InvalidURL:
            pass
    links: dict[str, None] = {}
    # A page links few distinct URLs many times (an index: a module page once per name it defines, each with its
    # own #fragment). The fragment, which the canonical URL drops, is cut first and an href already joined is
    # skipped: the same links in the same order, the Python docs' 22,039 for 0.5 s of CPU instead of 1.25 s.
    joined: set[str] = set()
    for href in doc.xpath("//a/@href"):
        href = href.strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:", "data:")):
            continue
        href = href.partition("#")[0]
        if href in joined:
            continue
        joined.add(href)
        try:
            links[canonical_url(href, base)] = None
        except (InvalidURL, ValueError):
            continue
    canonical = None
    for href in doc.xpath("//link[@rel='canonical']/@href"):
        try:
            canonical = canonical_url(href, base)
        except (InvalidURL, ValueError):
            pass
        break

    title_nodes = doc.xpath("//title")
    page_title = _text(title_nodes[0]) if title_nodes else ""

    for chrome in [el for el in doc.iter(lxml.etree.Element) if is_chrome(el)]:
        if chrome.getparent() is not None:
            chrome.drop_tree()
    main = None
    for xpath in MAIN_CONTENT_XPATHS:
        found = doc.xpath(xpath)
        if found:
            main = found[0]
            break
    if main is None:
        return ExtractedPage(page_title, "", list(links), canonical)
    h1 = main.xpath(".//h1")
    if not h1:  # Doxygen's page heading: <div class="headertitle"><div class="title">Json::Value Class Reference
        for heading in main.xpath(".//div[@class='headertitle']/div[@class='title']"):
            for label in heading.findall("div"):  # the groups a page belongs to ("ingroups"): after the heading
                heading.addnext(label)
            heading.tag = "h1"
            h1 = [heading]
            break
    if len(h1) > 1 and page_title:
        # A page with a banner <h1> before its own (Fastify's docs: "Fastify", then "Testing"): the one <title> names
        # ("Testing | Fastify") is the page's.
        named = _WORD_CHARS.sub(" ", re.split(r"\s[|\u2014\u2013-]\s", page_title)[0]).strip().lower()
        h1.sort(key=lambda h: _WORD_CHARS.sub(" ", _text(h)).strip().lower() != named)
    if h1:
        _title_first(h1[0])
        title = _PILCROW.sub("", _text(h1[0]))
    else:  # AsciiDoc howtos and DocBook refentries: no <h1>, sometimes an empty <title>
        heading = next(main.iter(*_HEADING_TAGS), None)
        title = page_title or (_PILCROW.sub("", _text(heading)) if heading is not None else "")
    if _WORD_CHARS.sub("", title) == _WORD_CHARS.sub("", page_title):
        # The same name, but <title> keeps its separators: gi-docgen's <h1> "Gtk/Button/set_label" is drawn with
        # empty <span class="sep">s, its <title> is "Gtk.Button.set_label".
        title = page_title
    share = link_share(main)
    definitions = find_symbols(main)
    _normalize_markup(main)
    ids, marks = _mark_anchors(main, definitions)
    _slim_markup(main)
    markdown = html_to_markdown_text(lxml.html.tostring(main, encoding="unicode"))
    markdown = _BLANK_LINES.sub("\n\n", markdown).strip()
    markdown, anchors, offsets = _take_anchor_marks(markdown.replace(_ASTERISK, "\\*"), ids)
    symbols = [
        Symbol(d.name, d.anchor, offsets.get(mark) if mark is not None else None)
        for d, mark in zip(definitions, marks, strict=True)
    ]
    return ExtractedPage(title or page_title, markdown, list(links), canonical, anchors, symbols, share)


# What the converter reads of the markup besides tags and text (see _slim_markup); a <pre> keeps the class that
# _normalize_markup gave it ("language-X"). Media lose their sources too: html-to-markdown writes a <video src> or an
# <iframe src> as a link ("[video](x.mp4)"), and link targets are noise here.
_READ_ATTRIBUTES = frozenset({"colspan", "rowspan", "start"})

# Text before the <h1> in its parent is moved after it only up to this many characters: a label or a breadcrumb,
# not content.
MAX_LABEL_CHARS = 200


def _title_first(h1) -> None:  # noqa: ANN001 - an lxml element
    """Move the short labels that precede ``h1`` in its parent after it: gi-docgen's kind ("<h3>Constructor</h3>")
    and Javadoc's "Module java.base" / "Package java.util" lines. The page's Markdown then starts with its title
    and a label is chunked with the section it describes, not alone under no heading (62 of 150 sampled JDK pages
    had such a chunk). Headings among them become paragraphs; elements without text (an anchor target) stay."""
    siblings = list(h1.itersiblings(preceding=True))
    if (h1.getparent().text or "").strip() or any((el.tail or "").strip() for el in siblings):
        return  # loose text between the siblings would lose its place: leave such markup alone
    labels = [(el, text) for el in siblings if isinstance(el.tag, str) and (text := _text(el))]
    if not labels or sum(len(text) for _, text in labels) > MAX_LABEL_CHARS:
        return
    for el, _ in labels:  # nearest first: inserting each right after the h1 restores document order
        el.getparent().remove(el)  # with its (blank) tail
        if el.tag in _HEADING_TAGS:
            el.tag = "p"
        h1.addnext(el)


def _normalize_markup(main) -> None:  # noqa: ANN001 - an lxml element
    """Undo markup that converts badly: a ``<pre>`` nested in another (gi-docgen: ``<pre><code><div
    class="highlight"><pre>``) becomes one code block instead of a fence inside a fence, and the empty ``<span
    class="sep">`` that gi-docgen draws between the parts of a heading (``Gtk/Button/set_label``) becomes a dot.

    Then say what html-to-markdown reads differently from the page's markup: a code block's language, which the
    page names on the ``<pre>``, its ``<code>`` or the two elements around it (Sphinx: ``<div
    class="highlight-python3"><div class="highlight"><pre>``), goes on the ``<pre>`` as ``class="language-X"``
    (the converter reads only the ``<pre>``'s and ``<code>``'s own classes); a ``<summary>`` becomes a ``<div>``
    (the converter writes it in bold, and rustdoc's and gi-docgen's hold the member's heading: "**#### fn
    push**" is no heading to a Markdown reader nor to the chunker); an inline ``<code>``'s leading and trailing
    whitespace moves outside it (Javadoc's ``<code>interface&nbsp;</code>`` and ``<code>&nbsp;</code>`` became
    "`interface `" and "` `"); an inline ``<svg>`` becomes its text, which the converter drops."""
    for outer in main.xpath(".//pre[count(.//pre) = 1]"):
        if outer.getparent() is None:
            continue
        inner = outer.xpath(".//pre")[0]
        inner.tail = outer.tail
        outer.getparent().replace(outer, inner)
    # A list whose every item holds a heading is layout, not a list (Javadoc: <ul class="member-list"><li><section>
    # <h3>add</h3>): as a list its headings became "  - ### add", which no Markdown reader (nor the chunker)
    # takes for a heading, and every chunk of the page fell under its title alone.
    headed = " or ".join(f".//{h}" for h in _HEADING_TAGS)
    for layout in main.xpath(f".//*[self::ul or self::ol][li][not(li[not({headed})])]"):
        for item in layout.findall("li"):
            item.drop_tag()
        layout.drop_tag()
    # A table of one row whose cells hold lists is layout too (Sphinx's genindex: the index in two columns). The
    # converter takes it for layout as well, but writes its lists without their escapes and nesting ("- # (hash)"
    # is a heading in a list item to a Markdown reader; sub-entries indented by one space are not nested): the
    # lists are converted as lists, the cells one after the other.
    for table in main.xpath(".//table[count(.//tr) = 1][.//tr/*[self::td or self::th][ul or ol or dl]]"):
        for el in table.xpath(".//tr | .//td | .//th | ./thead | ./tbody | ./tfoot"):
            el.drop_tag()
        table.drop_tag()
    # A table row without text is a separator (Doxygen draws one after every member of its summary tables): in
    # Markdown it is an empty row. (Python's strip, not XPath's normalize-space: their cell holds a no-break space.)
    for row in [r for r in main.iter("tr") if r.getprevious() is not None and not r.text_content().strip()]:
        if not any(el.tag in ("img", "svg", "input") for el in row.iter()):
            row.drop_tree()
    for sep in main.xpath(".//h1//span[@class='sep'][not(normalize-space())]"):
        sep.text = "."
        sep.tail = (sep.tail or "").lstrip()
        previous = sep.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "").rstrip()
        else:
            sep.getparent().text = (sep.getparent().text or "").rstrip()
    pres = list(main.iter("pre"))
    for pre, language in [(pre, _code_language(pre)) for pre in pres]:  # all read before any is changed
        if language:
            pre.set("class", f"language-{language}")
        else:
            pre.attrib.pop("class", None)
        for code in pre.iter("code"):
            code.attrib.pop("class", None)
    for summary in list(main.iter("summary")):
        summary.tag = "div"
    # An asterisk inside emphasis is text (Sphinx's signatures: <em>*</em> for keyword-only, <em>**kwargs</em>), but
    # the converter, which escapes no asterisk (prose keeps "*args" readable), wrote "***" and "***kwargs*", which
    # a Markdown reader takes for delimiters. It is marked here and written escaped (extract_page: "*\**").
    for text in _EMPHASIZED_ASTERISKS(main):
        owner, marked = text.getparent(), text.replace("*", _ASTERISK)
        if text.is_text:
            owner.text = marked
        else:
            owner.tail = marked
    in_pre = {code for pre in pres for code in pre.iter("code")}
    for code in main.iter("code"):
        if code not in in_pre:
            _move_edge_whitespace_out(code)
    for svg in list(main.iter("svg")):
        text = " ".join(svg.text_content().split())
        span = lxml.etree.Element("span")
        span.text = text or None
        span.tail = svg.tail
        svg.getparent().replace(svg, span)


def _move_edge_whitespace_out(el) -> None:  # noqa: ANN001 - an lxml element
    """Move the whitespace at the start and end of ``el``'s text outside it, as one space each."""
    text = el.text or ""
    stripped = text.lstrip()
    if len(stripped) != len(text):
        el.text = stripped or None
        previous = el.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + " "
        elif el.getparent() is not None:
            el.getparent().text = (el.getparent().text or "") + " "
    last = el[-1] if len(el) else None
    text = (last.tail if last is not None else el.text) or ""
    stripped = text.rstrip()
    if len(stripped) != len(text):
        if last is not None:
            last.tail = stripped or None
        else:
            el.text = stripped or None
        el.tail = " " + (el.tail or "")


def _slim_markup(main) -> None:  # noqa: ANN001 - an lxml element
    """Remove what the conversion to Markdown never reads, before the main node is serialized for html-to-markdown:
    less to serialize and parse, and no attribute left that could steer the converter (its heuristics read
    classes, ids, roles and ``hidden``; docsbot has already decided what is chrome). The ``<span>``s inside
    ``<pre>`` and ``<code>`` are unwrapped: a highlighter's tokens (Pygments in Sphinx, rustdoc) and Sphinx's
    ``<span class="pre">`` words, whose text the converter takes as it stands. Attributes go, but for those read:
    a table cell's ``colspan`` and ``rowspan``, a list's ``start`` and the ``class="language-X"`` that
    :func:`_normalize_markup` put on a ``<pre>``."""
    for code in list(main.iter("pre", "code")):
        _unwrap_spans(code)
    for el in main.iter(lxml.etree.Element):
        if not el.attrib:
            continue
        for name in [name for name in el.attrib if name not in _READ_ATTRIBUTES]:
            if name != "class" or el.tag != "pre":
                del el.attrib[name]


def _unwrap_spans(el) -> None:  # noqa: ANN001 - an lxml element
    """Replace every ``<span>`` under ``el`` by its content, as ``drop_tag`` would, in time linear in the size of
    ``el``: a ``drop_tag`` per span appends the span's text to its predecessor's, quadratic on a source listing
    of 100,000 tokens (rustdoc's 3.6 MB ``avx512bw.rs.html`` took 455 s). Other children (and their spans) stay."""
    pieces: list[list[str]] = [[]]  # el.text, then the tail of each child kept
    kept = []

    def walk(node) -> None:  # noqa: ANN001
        if node.text:
            pieces[-1].append(node.text)
        for child in node:
            if child.tag == "span":
                walk(child)
            else:
                if isinstance(child.tag, str):
                    _unwrap_spans(child)
                kept.append(child)
                pieces.append([])
            if child.tail:
                pieces[-1].append(child.tail)

    if not any(True for _ in el.iter("span")):
        return
    walk(el)
    for child in list(el):
        el.remove(child)
    el.text = "".join(pieces[0]) or None
    for child, tail in zip(kept, pieces[1:], strict=True):
        child.tail = "".join(tail) or None
        el.append(child)


def link_share(node) -> float:  # noqa: ANN001 - an lxml element
    """Share of ``node``'s non-blank text characters that sit inside ``<a>`` elements (0.0 for no text)."""
    total = len("".join(node.text_content().split()))
    if not total:
        return 0.0
    linked = sum(len("".join(a.text_content().split())) for a in node.iter("a") if a.getparent() is not None)
    return min(1.0, linked / total)


_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_LAST_PART = re.compile(r"(?:\.|::)([^.:]+)$")
# A Java constant, qualified or not: LocalTime.with's list of fields it takes ("HOUR_OF_DAY - Returns a LocalTime
# with the specified hour-of-day") names ChronoField.HOUR_OF_DAY, which its own page defines.
_JAVA_CONSTANT = re.compile(r"(?:[A-Za-z_$][\w$]*\.)*[A-Z][A-Z0-9_]*")
_ROLE_ID = re.compile(r"^(?!index-)[a-z_]+:(?P<name>[^\s:][^\s]*)$")  # CMake's "command:add_executable"


class Definition(NamedTuple):
    """A name :func:`find_symbols` found: its anchor, the element whose first text starts its definition (``at``:
    the term, the signature, the heading, a table row's or list item's code; its first text, or the first after
    it for an empty target; ``None``: the symbol is the whole page) and whether its anchor is an id of its own that
    no heading or term carries (``anchors``: a table row's or list item's, an :class:`Anchor` of the page too)."""

    name: str
    anchor: str
    at: Any = None
    anchors: bool = False


def find_symbols(main) -> list[Definition]:  # noqa: ANN001 - an lxml element
    """API names defined in ``main``, deduplicated, in document order, from the markup each generator gives them:

    - Sphinx: signatures (``dt[id]`` with class ``sig``: the name as shown, ``sig-prename`` + ``sig-name``),
      module targets (``id="module-NAME"``) and role-qualified targets (``id="role:NAME"``, CMake);
    - rustdoc: the item of the page (``<h1>Struct std::vec::Vec``, anchor ``main-content``) and its members
      (``id="method.push"`` → ``std::vec::Vec::push``);
    - Javadoc: the type of the page (package + ``<h1 title="Class ArrayList">``, anchor ``class-description``) and
      its member details (``<section class="detail" id="add(E)"><h3>add`` → ``java.util.ArrayList.add``);
    - gi-docgen: the symbol of the page (``<section id="main"><header><h1>`` drawn as ``Gtk/Button/set_label`` →
      ``Gtk.Button.set_label``) and the C function its declaration shows (``gtk_button_set_label``);
    - DocBook XSL: a ``refentry``'s names (``<div class="refnamediv"><p>admon.graphics — ...``, at the refentry's
      anchor), a function synopsis's ``fsfunc`` and the term of a definition list entry (``varlistentry``), below;
    - AsciiDoc and Asciidoctor: the terms of labelled lists (``<dt class="hdlist1">core.fileMode``: git's options
      and configuration variables), by the same rule as DocBook's terms;
    - mkdocstrings: its object headings (``<h2 id="pkg.module.func" class="doc doc-heading">``);
    - Markdown-built sites (mdBook, VitePress, Docusaurus, MkDocs): a heading that is all code (``## `useData` ``);
    - Doxygen: its member titles (``<a id="ga..."></a><h2 class="memtitle">◆ mdb_env_create()``);
    - any generator: a table row or a list item that starts with a name shown as code and goes on to describe it
      (PostgreSQL's function tables, ``<code class="function">ceiling</code> ( numeric ) → numeric``, and lists of
      environment variables, ``<code class="envar">PGSYSCONFDIR</code> sets the directory``; gi-docgen's enum
      members; Python's tables of constants): :func:`_table_definitions`, :func:`_list_definitions`.

    The term of a ``<dt>`` (outside Sphinx signatures) is a name when it is marked as one (DocBook's ``varname``,
    ``envar``, ``option``, ``function``, ``command``... classes: ``<code class="varname">work_mem</code>
    (<span class="type">integer</span>)`` is ``work_mem``), when an entry that has an anchor of its own shows it as
    code (DocBook's ``<code class="literal">host</code>`` under ``id="LIBPQ-CONNECT-HOST"``), or when the whole term
    is shaped like an identifier (a dot, an underscore, ``::``, a leading dash, an inner capital or a digit after a
    letter: ``core.fileMode``, ``--dry-run``; not ``true`` or ``color``). Its anchor is the entry's own (an ``id`` on
    the ``<dt>`` or an empty ``<a id|name>`` at its start, DocBook's way), else the nearest heading's before it; a
    name found both ways keeps an anchor of its own (CMake lists ``Matlab_ROOT_DIR`` before its ``variable:``
    entry).
    A term of two to four plain words is a name too when its entry has an anchor of its own (Sphinx's glossary:
    ``magic method``), as is a refentry's ("CREATE TABLE"): such a name is found when the whole query is that term.

    Each comes with the element its definition's text starts at (:class:`Definition`): extract_page marks it and
    turns the mark into :attr:`Symbol.offset`.
    """
    found: dict[str, Definition] = {}
    near: set[str] = set()  # names found at a heading's anchor, not their own: a later anchor of their own wins
    listed: dict[Any, tuple[str, Any, str | None]] = {}  # table rows and list items that define a name
    from_rows: set[str] = set()  # the names found in them

    def add(name: str, anchor: str | None, own: bool = True, at: Any = None, anchors: bool = False) -> None:
        if name and len(name) <= MAX_NAME_CHARS and anchor and (name not in found or (own and name in near)):
            found[name] = Definition(name, anchor, at, anchors)
            from_rows.discard(name)
            (near.discard if own else near.add)(name)

    rust_item = _rustdoc_item(main)
    java_type = _javadoc_type(main)
    doxygen_scope = _doxygen_scope(main)
    last_anchor: str | None = None  # the nearest heading's (or refentry's) anchor so far
    for el in main.iter(lxml.etree.Element):
        tag = el.tag
        classes = (el.get("class") or "").split()
        own = _anchor_id(el) if tag in _HEADING_TAGS or tag == "dt" else None
        if tag in _HEADING_TAGS:
            last_anchor = own or last_anchor
            if "doc-heading" not in classes:  # mkdocstrings: named by its id, below
                add(_code_heading_name(el), own, at=el)
        if tag == "dt" and "sig" not in classes:
            add(_term_name(el, own), own or last_anchor, own=bool(own), at=el)
        elif tag == "table":
            listed.update(_table_definitions(el))
        elif tag in ("ul", "ol"):
            listed.update(_list_definitions(el))
        elif tag in ("tr", "li") and el in listed:
            name, code, ident = listed.pop(el)
            # on a Javadoc type's page a constant is defined by its field's detail, wherever that is
            if not (java_type and _JAVA_CONSTANT.fullmatch(name)):
                add(name, ident or last_anchor, own=bool(ident), at=code, anchors=bool(ident))
            if found.get(name, Definition("", "")).at is code:
                from_rows.add(name)
        elif "refentry" in classes:
            # its id, or the empty <a id|name> DocBook puts among its first children (after a separator's <div>)
            targets = el.xpath("./a[not(@href)][@id or @name][1]")
            anchor = el.get("id") or (targets[0].get("id") or targets[0].get("name") if targets else None)
            for names in el.xpath(".//div[contains(@class, 'refnamediv')]/p[1]"):
                for name in _text(names).partition("\u2014")[0].split(","):
                    if _NAME_SHAPE.fullmatch(name.strip()) or _TERM_WORDS.fullmatch(name.strip()):
                        add(name.strip(), anchor, at=names)
            last_anchor = anchor or last_anchor
        elif "fsfunc" in classes:
            funcdef = el.getparent()  # <code class="funcdef">int <b class="fsfunc">name</b>(: the signature
            at = funcdef if funcdef is not None and "funcdef" in (funcdef.get("class") or "").split() else el
            add(_text(el) if _NAME_SHAPE.fullmatch(_text(el)) else "", last_anchor, own=False, at=at)
        elif "memtitle" in classes:
            name = _DOXYGEN_OVERLOAD.sub("", _text(el).replace("\u25c6", "")).strip().removesuffix("()")
            if _NAME_SHAPE.fullmatch(name):
                add(f"{doxygen_scope}::{name}" if doxygen_scope else name, _anchor_id(el), at=el)
        elif doxygen_scope and el.get("id") == "details":
            add(doxygen_scope, "details", at=el)
        ident = el.get("id")
        if not ident:
            continue
        if "doc-heading" in classes:
            add(ident if _NAME_SHAPE.fullmatch(ident) else "", ident, at=el)
        elif tag == "dt" and "sig" in classes:
            parts = el.xpath(".//*[contains(@class, 'sig-prename') or contains(@class, 'sig-name')]")
            name = "".join("".join(p.text_content().split()) for p in parts) or ident
            ident_name = ident[2:] if ident.startswith("c.") else ident  # Sphinx's C domain: c.PyObject_Call
            # A method shows only "count" inside its class; its id has the whole dotted name.
            if ident_name != name and ident_name.endswith(name) and re.fullmatch(r"[\w.]+", ident_name):
                name = ident_name
            add(name, ident, at=el)
        elif ident.startswith("module-") and len(ident) > 7:
            add(ident[7:], ident, at=el)
        elif rust_item and (m := _RUSTDOC_MEMBER.match(ident)):
            add(f"{rust_item}::{m.group(1)}", ident, at=el)
        elif rust_item and ident == "main-content":
            add(rust_item, ident)  # the page's item: the whole page
        elif java_type and ident == "class-description":
            # the type's signature ("public class ArrayList<E> extends ..."); without one, the whole page
            add(java_type, ident, at=next(iter(el.xpath(".//div[contains(@class, 'type-signature')]")), None))
        elif java_type and tag == "section" and "detail" in (el.get("class") or "").split():
            heading = el.find(".//h3")
            member = _text(heading) if heading is not None else ""
            if re.fullmatch(r"\w+", member) and member != java_type.rpartition(".")[2]:  # not a constructor
                add(f"{java_type}.{member}", ident, at=el)
        elif ident == "main" and tag == "section":
            for name, at in _gidocgen_names(el):
                add(name, ident, at=at)
        elif m := _ROLE_ID.match(ident):
            add(m.group("name"), ident, at=el)
    # A row or item naming a member the page documents under its whole name (Javadoc's "MODE_DEFAULT - The image
    # will be tiled ..." in setTilingMode, for javax.imageio.ImageWriteParam.MODE_DEFAULT) adds no name.
    qualified = {m.group(1) for d in found.values() if d.name not in from_rows and (m := _LAST_PART.search(d.name))}
    return [d for d in found.values() if d.name not in from_rows or d.name not in qualified]


# A longer "name" is text (a blob of letters, a hostile page's dotted name of thousands of parts): each name gives a
# symbol key per suffix, and the same bound keeps it out of the identifier postings (migration 0028), where a key
# over PostgreSQL's B-tree limit (2,704 bytes) failed the page's transaction. make eval's longest name: 71.
MAX_NAME_CHARS = 256
# A name as documentation shows it: an identifier, dotted or ::-joined parts, dashes inside (git-config, add.ignore-
# errors), an option's leading dashes, C++'s ~destructor; one word.
_NAME_SHAPE = re.compile(r"(?:--?|~)?[A-Za-z_$][\w$]*(?:(?:\.|::|-|/)[\w$]+)*(?:\(\))?")
_TERM_WORDS = re.compile(r"[A-Za-z][\w'-]*(?: [A-Za-z0-9][\w'-]*){1,3}")  # 2 to 4 words: "magic method"
# A call's parameter list at the end of a heading: "()", "(name, value, [dependencies])", "(schema | httpPart)".
_CALL_ARGUMENTS = re.compile(r"\((?:[^()]|\([^()]*\))*\)$")
# A heading of plain text naming a member (".statusCode") or a call (".code(statusCode)", "reply.send(data)").
_MEMBER_HEADING = re.compile(r"\.?([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(\((?:[^()]|\([^()]*\))*\))?")
_IDENTIFIER_LIKE = re.compile(r"[._:]|[a-z][A-Z]|^-|[A-Za-z][0-9]")  # as the search SQL tells identifiers (qkeys)
# DocBook's inline elements for names (rendered as <code class="..."> or <span class="...">): a term holding one
# defines that name. Not "literal" (values: <literal>on</literal>) nor "type" (work_mem's "(integer)").
_NAME_CLASSES = frozenset(
    {"varname", "envar", "option", "function", "command", "parameter", "property", "classname", "methodname",
     "constant", "structname", "symbol", "returnvalue", "interfacename", "exceptionname"}
)  # fmt: skip


# Definitions in tables and lists (_table_definitions, _list_definitions). Code that starts a row or an item: a
# <code> or <tt> (Sphinx's <code class="docutils literal"><span class="pre">; DocBook's <code class="function">,
# "envar", "literal"...), or an element of DocBook's name classes (<span class="command">); not code of these
# classes, which shows a type, a return value, a placeholder, a file, a URL or a terminal's text (DocBook).
_CODE_TAGS = frozenset({"code", "tt"})
_NOT_NAME_CLASSES = frozenset(
    {"type", "returnvalue", "replaceable", "filename", "uri", "computeroutput", "userinput", "prompt", "email"}
    | {"file", "samp", "mimetype", "regexp", "guilabel", "menuselection"}  # Sphinx's roles for what is no name
)
# What may hold a row's or item's code before it: blocks, emphasis, a target or a link to itself (gi-docgen's
# enum members: <a id="low" href="#low"><code>GTK_PRINT_QUALITY_LOW</code></a>).
_WRAPPER_TAGS = frozenset({"p", "div", "span", "strong", "b", "em", "i", "a"})
_BLOCK_TAGS = frozenset({"p", "div", "pre", "ul", "ol", "dl", "table", "blockquote", "li", "td", "th", "dd", "dt"})
# Values, never a defined name: a column or list of them is not one of definitions ("true", "None", "0", "0x1f").
_VALUE_WORDS = frozenset({"true", "false", "none", "null", "nil", "yes", "no", "on", "off"})
_NUMBER = re.compile(r"[-+]?(?:0[xX][\da-fA-F]+|\d[\d_.,]*)")
_PUNCTUATION = ".,;:!?()[]{}\"'\u2018\u2019\u201c\u201d"
# A list item's name followed by a separator and its description: "LOCK_UN – unlock", "inc_path - The include
# path", "kw_only: If true, ..." (an aside in parentheses before it: "port (int): ...").
_ITEM_SEPARATOR = re.compile(r"\s*(?:\([^()]*\)\s*)?[:\u2013\u2014-]\s*")
_SENTENCE_START = re.compile(r"\s+(?!(?:and|or)\b)[^\W\d_]")  # "PGSYSCONFDIR sets ...", not "PGHOST and ..."


def _is_code(el) -> bool:  # noqa: ANN001 - an lxml element
    classes = el.get("class")
    if el.tag in _CODE_TAGS:
        return not classes or _NOT_NAME_CLASSES.isdisjoint(classes.split())
    return el.tag == "span" and bool(classes) and not _NAME_CLASSES.isdisjoint(classes.split())


def _marked_name(code) -> bool:  # noqa: ANN001 - an lxml element
    """Whether DocBook marks ``code`` as a name (``<code class="envar">``, ``"function"``, ``"varname"``...)."""
    return not _NAME_CLASSES.isdisjoint((code.get("class") or "").split())


def _target_id(el) -> str | None:  # noqa: ANN001 - an lxml element
    """The id an element without text gives its place (Sphinx's ``<span class="target" id>``, DocBook's empty ``<a
    id|name>``); not an index term's."""
    if "indexterm" in (el.get("class") or "").split():
        return None
    return el.get("id") or (el.get("name") if el.tag == "a" else None)


def _leading_code(el) -> tuple[Any, str | None] | None:  # noqa: ANN001 - an lxml element
    """The code element whose text is the first text of ``el`` (a table cell, a list item), reached through
    blocks, emphasis and targets, and the id met on the way (``el``'s own, an empty target's before the code, a
    wrapper's); ``None`` when ``el`` starts with anything else, or its code is (or holds) a link elsewhere: a
    reference to a name, not its definition."""
    node, ident = el, el.get("id")
    while True:
        if (node.text or "").strip():
            return None
        for child in node:
            if not isinstance(child.tag, str):  # a comment
                if (child.tail or "").strip():
                    return None
                continue
            if not len(child) and not (child.text or "").strip() and child.tag != "br":  # an empty target
                ident = ident or _target_id(child)
                if (child.tail or "").strip():
                    return None
                continue
            href = child.get("href")
            if href is not None and href != f"#{child.get('id') or child.get('name')}":
                return None
            if _is_code(child):
                if any(a.get("href") for a in child.iter("a")) or not child.text_content().strip():
                    return None
                return child, ident or child.get("id")
            classes = child.get("class")
            if child.tag not in _WRAPPER_TAGS or (classes and not _NOT_NAME_CLASSES.isdisjoint(classes.split())):
                return None
            ident = ident or _target_id(child)
            node = child
            break
        else:
            return None


def _code_name(code) -> str | None:  # noqa: ANN001 - an lxml element
    """The name ``code`` shows (a call's without its arguments: ``ceil(x)`` is ``ceil``), "" if it is not shaped
    like a name of at least two characters (nor a path) or goes on as more code or a link (``await loop.foo()``),
    ``None`` if it is a value (``true``, ``None``, ``0``)."""
    text = _text(code)
    if text.lower() in _VALUE_WORDS or _NUMBER.fullmatch(text):
        return None
    name = _CALL_ARGUMENTS.sub("", text).strip()
    if len(name) < 2 or not _NAME_SHAPE.fullmatch(name) or "/" in name:  # not a path: target/debug/app
        return ""
    following = code.getnext()
    if following is not None and not (code.tail or "").strip() and (following.tag == "a" or _is_code(following)):
        return ""
    return name


def _prose(el) -> str:  # noqa: ANN001 - an lxml element
    """The text of ``el`` outside code (its code elements' and code blocks' text left out, their tails kept)."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and child.tag not in ("pre", "kbd", "samp") and not _is_code(child):
            parts.append(_prose(child))
        parts.append(child.tail or "")
    return " ".join(parts)


def _prose_words(text: str) -> int:
    """Words of prose in ``text``: of letters (an inner hyphen or apostrophe), not all capitals (``LOG_CRON``,
    ``GNU``), not camel-cased (``NotImplemented``), not a value (``true``)."""
    words = 0
    for token in text.split():
        word = token.strip(_PUNCTUATION)
        if (
            len(word) > 1
            and word[0].isalpha()
            and word.replace("-", "").replace("'", "").replace("\u2019", "").isalpha()
            and not word.isupper()
            and not _CAMEL.search(word)
            and word.lower() not in _VALUE_WORDS
        ):
            words += 1
    return words


_CAMEL = re.compile(r"[a-z][A-Z]")


def _in_words(prose: str, text: str) -> bool:
    """Whether ``text`` (``prose``: its part outside code) is a description in words: more than half of its tokens
    are words of prose (not a list of flags, "-Wl,-z,rescan-start /path/to/lib1.a", code, "<PREFIX>_RESTRICT
    restrict", nor a pointer to another name, "use PyFrame_GetBuiltins()")."""
    return 2 * _prose_words(prose) > len(text.split()) and not _POINTER.match(text)


# A description that sends the reader to another name, or says the name is gone, is none (porting notes: "f_lasti:
# use PyFrame_GetLasti()", "f_iblock: removed.", "PySet_ClearFreeList(): the set free list has been removed").
_POINTER = re.compile(
    r"\s*(?:use|see|replaced by|renamed to|moved to|removed|deprecated)\b|.*\b(?:has|have) been removed\b",
    re.IGNORECASE | re.DOTALL,
)


def _block_of(code, stop):  # noqa: ANN001, ANN202 - lxml elements
    """The innermost block element holding ``code`` inside ``stop`` (``stop`` itself if none)."""
    for ancestor in code.iterancestors():
        if ancestor is stop or ancestor.tag in _BLOCK_TAGS:
            return ancestor
    return stop


def _text_after(code, block, prose: bool = False) -> str:  # noqa: ANN001 - lxml elements
    """The inline text that follows ``code`` in ``block``, up to the next block element (``prose``: its part
    outside code, :func:`_prose`)."""
    parts: list[str] = []
    node = code
    while node is not block:
        parts.append(node.tail or "")
        for sibling in node.itersiblings():
            if sibling.tag in _BLOCK_TAGS:
                return " ".join(parts)
            if isinstance(sibling.tag, str):
                parts.append(_prose(sibling) if prose else sibling.text_content())
            parts.append(sibling.tail or "")
        node = node.getparent()
    return " ".join(parts)


def _text_beyond(block, stop) -> bool:  # noqa: ANN001 - lxml elements
    """Whether ``stop`` (a cell) has text after its first ``block``: more than the one name it starts with (a cell
    listing several, one a line)."""
    node = block
    while node is not stop and node is not None:
        if any((sibling.tail or "").strip() for sibling in [node, *node.itersiblings()]):
            return True
        if any(isinstance(sibling.tag, str) and sibling.text_content().strip() for sibling in node.itersiblings()):
            return True
        node = node.getparent()
    return False


def _more_code(code, stop) -> bool:  # noqa: ANN001 - lxml elements
    """Whether more code follows ``code`` in ``stop`` (a cell): a cell of several names ("``type::ident``,
    ``<type as trait>::ident``"), not one with its signature (PostgreSQL's types are no names: ``ceiling (
    numeric )``)."""
    node = code
    while node is not stop and node is not None:
        for sibling in node.itersiblings():
            if isinstance(sibling.tag, str) and any(_is_code(el) for el in sibling.iter(lxml.etree.Element)):
                return True
        node = node.getparent()
    return False


def _prose_after(block, stop) -> int:  # noqa: ANN001 - lxml elements
    """Words of prose in ``stop`` (a cell, an item) after its first ``block``: the description paragraphs."""
    words = 0
    node = block
    while node is not stop and node is not None:
        for sibling in node.itersiblings():
            if isinstance(sibling.tag, str):
                words += _prose_words(_prose(sibling))
            words += _prose_words(sibling.tail or "")
        node = node.getparent()
    return words


# As _IDENTIFIER_LIKE, but an inner capital only after a lower-case start (libraryPath): a capitalized name with one
# (SunPro, NumPy, AppleClang) is as often a product's as a name's; with two or more (NoBoundaryInMultipartDefect) it
# is a name.
_NAME_LIKE = re.compile(r"[._:]|^[a-z_$][\w$]*[a-z][A-Z]|^-|[A-Za-z][0-9]")


def _names_defined(candidates: list[tuple[Any, str, Any, str | None]]) -> dict[Any, tuple[str, Any, str | None]]:
    """The candidates (row or item, name, code, own id) whose name is one: shaped like an identifier (a dot, an
    underscore, ``::``, a digit after a letter, a leading dash: as for terms; an inner capital in a name that starts
    in lower case, or two in one that does not: ``libraryPath``, ``NoBoundaryInMultipartDefect``), shown as a call
    (``ceil(x)``), marked as a name by DocBook (``<code class="function">ceiling</code>``), under an id of its own,
    or all capitals sharing its first three characters with another of the same table or list (a family of
    constants: ``EPOLLIN``, ``EPOLLOUT``). Not a plain word: ``simple``, ``Clang``, ``STRING`` are values of a
    setting, which the search would take for names whenever a query has that word."""
    capitals = [name for _, name, _, _ in candidates if name.isupper()]
    out = {}
    for owner, name, code, ident in candidates:
        if (
            _NAME_LIKE.search(name)
            or len(_CAMEL.findall(name)) > 1
            or _marked_name(code)
            or _CALL_ARGUMENTS.search(_text(code))
            or ident
            or (name.isupper() and sum(other[:3] == name[:3] for other in capitals) > 1)
        ):
            out[owner] = (name, code, ident)
    return out


def _table_definitions(table) -> dict[Any, tuple[str, Any, str | None]]:  # noqa: ANN001 - an lxml element
    """The rows of ``table`` that define a name: ``{row: (name, code, own id)}``. A row defines the name its first
    cell starts with as code (:func:`_leading_code`, :func:`_code_name`, :func:`_names_defined`) when another cell,
    or the cell's own paragraphs after it (PostgreSQL's one-column function tables: signature, description,
    example), describe it in words. Header rows (``<thead>``, all ``<th>``) are left out, and the whole table when
    its first column is mostly not code, holds a value (``true``, ``None``, ``0``: a table of values), or mostly
    not names (a table of operators or regular expressions)."""
    candidates: list[tuple[Any, str, Any, str | None]] = []
    filled = coded = named = 0
    for row in table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr"):
        if row.getparent().tag == "thead":
            continue
        cells = [c for c in row if c.tag in ("td", "th")]
        if not cells or all(c.tag == "th" for c in cells) or not cells[0].text_content().strip():
            continue  # a header row; a row continuing the one above (gi-docgen's descriptions)
        filled += 1
        lead = _leading_code(cells[0])
        if lead is None:
            continue
        coded += 1
        code, ident = lead
        name = _code_name(code)
        if name is None:
            return {}
        if not name:
            continue
        named += 1
        ident = row.get("id") or ident
        block = _block_of(code, cells[0])
        if len(cells) > 1:  # under an id of its own, any text describes it (Sphinx: PyExc_OSError | OSError)
            described = (
                not _text_beyond(block, cells[0])
                and not _more_code(code, cells[0])
                and any(_in_words(_prose(c), _text(c)) if not ident else _text(c) for c in cells[1:])
            )
        else:
            described = _prose_after(block, cells[0]) > 0
        if described:
            candidates.append((row, name, code, ident))
    if 2 * coded < filled or 2 * named < coded:
        return {}
    return _names_defined(candidates)


def _list_definitions(lst) -> dict[Any, tuple[str, Any, str | None]]:  # noqa: ANN001 - an lxml element
    """The items of ``lst`` that define a name: ``{item: (name, code, own id)}``. An item defines the name it
    starts with as code (:func:`_leading_code`, :func:`_code_name`, :func:`_names_defined`) when it goes on to
    describe it (:func:`_describes`). Not a list that holds a value (``true``, ``None``, ``0``)."""
    candidates: list[tuple[Any, str, Any, str | None]] = []
    for item in lst:
        if item.tag != "li":
            continue
        lead = _leading_code(item)
        if lead is None:
            continue
        code, ident = lead
        name = _code_name(code)
        if name is None:
            return {}
        if name and _describes(code, _block_of(code, item), item):
            candidates.append((item, name, code, ident))
    return _names_defined(candidates)


def _describes(code, block, item) -> bool:  # noqa: ANN001 - lxml elements
    """Whether list ``item`` goes on to describe the name ``code`` (in ``block``) starts it with: after a separator
    ("``LOCK_UN`` – unlock", "``kw_only``: If true, ..."), in a paragraph of its own after the name, or, for a name
    DocBook marks as one (``envar``, ``varname``, ``function``...), in the sentence it starts ("``PGSYSCONFDIR``
    sets the directory containing ..."). Not a name that starts a list of names ("``a``, ``b`` and ``c``") or a
    sentence about it without a DocBook mark ("``x`` is deprecated")."""
    after = _text_after(code, block)
    separator = _ITEM_SEPARATOR.match(after)
    if separator and after[separator.end() :].strip():
        prose = _text_after(code, block, prose=True)
        return _in_words(prose, after[separator.end() :])
    if not after.strip(" \t\n\r:"):  # "``GHS_BSP_NAME``" or "``name``:", then a paragraph
        return block is not item and _prose_after(block, item) >= 2
    return _marked_name(code) and _SENTENCE_START.match(after) is not None and _prose_words(after) >= 3


def _code_heading_name(heading) -> str:  # noqa: ANN001 - an lxml element
    """The name a heading that is all code defines (Markdown's ``## `useData` ``: mdBook, VitePress, Docusaurus,
    MkDocs pages documenting an API or a configuration key; with its parameters, ``## `decorate(name, value)` ``
    defines ``decorate``), or "". A heading of plain text defines a name when it is shaped as a member or a call:
    ``.statusCode``, ``.code(statusCode)``, ``reply.header(key, value)`` (Fastify's Docusaurus reference; a plain
    word or phrase, or a call without parameters, never is). A permalink's glyph (``¶``, ``#``, a zero-width
    space) after it does not count."""
    text = _PILCROW.sub("", _text(heading).replace("\u200b", "")).strip()
    codes = heading.xpath(".//code")
    if len(codes) == 1 and _text(codes[0]) == text:
        name = _CALL_ARGUMENTS.sub("", text)
        return name if _NAME_SHAPE.fullmatch(name) else ""
    if codes:
        return ""
    member = _MEMBER_HEADING.fullmatch(text)
    if not member or "memtitle" in (heading.get("class") or "").split():  # Doxygen's: qualified in find_symbols
        return ""
    # a call with parameters, or a member; not "Py_RunMain()" (a Sphinx section that its signature names below)
    return member.group(1) if text.startswith(".") or (member.group(2) or "()") != "()" else ""


def _term_name(dt, own_anchor: str | None) -> str:  # noqa: ANN001 - an lxml element
    """The name a definition list's term defines, or "" (the rule is in :func:`find_symbols`; ``own_anchor``: the
    term's own, :func:`_anchor_id`). A term that is a link (Sphinx's lists of ``os.O_RDONLY``-like constants
    defined elsewhere) refers to a name, not defines it."""
    if any(_text(a) for a in dt.iter("a") if a.get("href")):
        return ""
    for el in dt.iter():
        if isinstance(el.tag, str) and _NAME_CLASSES & set((el.get("class") or "").split()):
            name = _text(el)
            return name if _NAME_SHAPE.fullmatch(name) else ""
    if own_anchor:
        for code in dt.iter("code", "tt"):
            name = _text(code)
            return name if _NAME_SHAPE.fullmatch(name) else ""
    term = _text(dt)
    if _NAME_SHAPE.fullmatch(term) and _IDENTIFIER_LIKE.search(term):
        return term
    # A term of plain words under an anchor of its own is a defined term (Sphinx's glossary: <dt id="term-magic-
    # method">magic method</dt>; DocBook's glossary and variable lists): found when a query is that term.
    return term if own_anchor and _TERM_WORDS.fullmatch(term) else ""


_RUSTDOC_ITEM = re.compile(
    r"^(?:Struct|Enum|Trait|Function|Macro|Module|Constant|Static|Type Definition|Union|Primitive Type|Keyword"
    r"|Attribute Macro|Derive Macro|Trait Alias|Type Alias|Crate)\s+(\S+)$"
)
_RUSTDOC_MEMBER = re.compile(
    r"^(?:method|tymethod|structfield|variant|associatedtype|associatedconstant|field)\.(\w+)$"
)
_C_FUNCTION = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _rustdoc_item(main) -> str:  # noqa: ANN001
    """``std::vec::Vec`` from rustdoc's ``<h1 class="fqn">`` (1.63) or ``.main-heading h1``: "Struct std::vec::Vec"."""
    for h1 in main.xpath(".//h1[contains(@class, 'fqn')] | .//*[contains(@class, 'main-heading')]/h1"):
        m = _RUSTDOC_ITEM.match(re.sub(r"\s*::\s*", "::", _text(h1)))
        if m:
            return m.group(1)
    return ""


_DOXYGEN_TITLE = re.compile(
    r"^(\S+?)(?:<.*>)? (?:Class|Struct|Union|Namespace|Interface|Protocol|Category)(?: Template)? Reference$"
)
_DOXYGEN_OVERLOAD = re.compile(r"\s*\[\d+/\d+\]\s*$")  # "operator[]() [1/4]": the 1st of 4 overloads


def _doxygen_scope(main) -> str:  # noqa: ANN001
    """``Json::Value`` from Doxygen's ``<div class="title">Json::Value Class Reference</div>`` (a class, struct,
    union or namespace page: its members are named within it); "" on other pages."""
    for title in main.xpath(".//div[@class='headertitle']/*[@class='title']"):  # an <h1> once extract_page saw it
        m = _DOXYGEN_TITLE.match(" ".join((title.text or "").split()))
        if m and _NAME_SHAPE.fullmatch(m.group(1)):
            return m.group(1)
    return ""


def _javadoc_type(main) -> str:  # noqa: ANN001
    """``java.util.ArrayList`` from Javadoc's package sub-title and ``<h1 class="title" title="Class ArrayList">``."""
    h1 = main.xpath(".//h1[contains(@class, 'title')][@title]")
    package = main.xpath(".//*[contains(@class, 'sub-title')][*[contains(@class, 'package-label')]]/a")
    if not h1 or not package:
        return ""
    name = h1[0].get("title").split()[-1]
    return f"{_text(package[0])}.{name}" if re.fullmatch(r"[\w$]+", name) else ""


def _gidocgen_names(section) -> list[tuple[str, Any]]:  # noqa: ANN001
    """gi-docgen's page symbol from ``<header><h1>``, its parts drawn apart by empty ``<span class="sep">``
    (``Gtk.Button.set_label``), and the C function of its declaration block (``gtk_button_set_label``), each with
    the element its definition starts at: the ``<h1>``, the declaration's code block (the block's parent: the
    outer of gi-docgen's nested ``<pre>`` is replaced by the inner one before the page is marked)."""
    h1 = section.find("header/h1")
    if h1 is None:
        return []
    parts = [h1.text or ""]
    for child in h1:
        parts.append("." if "sep" in (child.get("class") or "").split() else child.text_content())
        parts.append(child.tail or "")
    names = [("".join("".join(parts).split()), h1)]
    if names[0][0].count(".") == 1:  # a type: Gtk.Button is the C type GtkButton
        names.append((names[0][0].replace(".", ""), h1))
    for decl in section.xpath(".//div[contains(@class, 'declaration')]//pre"):
        m = _C_FUNCTION.search(decl.text_content())
        if m:
            names.append((m.group(1), decl.getparent()))
        break
    return [(n, at) for n, at in names if re.fullmatch(r"[\w.:-]+", n)]


# One walk for every asterisk inside emphasis, not one XPath per <em> (Sphinx puts every parameter in one).
_EMPHASIZED_ASTERISKS = lxml.etree.XPath(
    ".//text()[contains(., '*')][ancestor::em or ancestor::i or ancestor::strong or ancestor::b]"
    "[not(ancestor::code or ancestor::pre)]"
)
_ASTERISK = "\U000f0000"  # a private-use character: an asterisk inside emphasis (_normalize_markup)
_MARK = "\uf8ff"  # a private-use character: marks where an anchored element's text starts, then removed
_MARK_BASE = 0xE000
_MAX_MARKS = 0xF8FF - _MARK_BASE
_MARKS = re.compile(f"{_MARK}([\ue000-\uf8fe])")


def _anchor_id(el) -> str | None:  # noqa: ANN001
    """The id a link to ``el`` (a heading, a term, a DocBook refentry) names: its own, an empty ``<a id|name>`` at
    its start (DocBook XSL's ``<h2 class="title"><a id="x"></a>Title``, ``<dt><a id="guc-work-mem"></a>`` and
    ``<div class="refentry"><a name="admon.graphics"></a>``; not an index term's), or, for a heading, its section's
    (Sphinx) or that of an empty target just before it (Doxygen's ``<a id="ga..."></a><h2 class="memtitle">``)."""
    ident = el.get("id")
    if ident:
        return ident
    if not (el.text or "").strip():
        for child in el:
            if not isinstance(child.tag, str):
                continue
            if child.tag == "span" and "term" in (child.get("class") or "").split() and not (child.text or "").strip():
                child = next((c for c in child if isinstance(c.tag, str)), None)  # <dt><span class="term"><a id>
                if child is None:
                    break
            if child.tag == "a" and not child.get("href") and "indexterm" not in (child.get("class") or "").split():
                target = child.get("id") or child.get("name")
                if target and not child.text_content().strip():
                    return target
            break
    if el.tag in _HEADING_TAGS:
        parent = el.getparent()  # Sphinx: <section id="..."><h2>..., the heading its section's first child
        if parent is not None and parent.get("id") and len(parent) and parent[0] is el:
            return parent.get("id")
        prev = el.getprevious()  # <span id="..."></span><h2>...
        if prev is not None and isinstance(prev.tag, str) and not (prev.text_content() or "").strip():
            target = prev.get("id") or (prev.get("name") if prev.tag == "a" else None)
            if target:
                return target
    return None


def _mark_anchors(main, definitions: list[Definition]) -> tuple[list[str | None], list[int | None]]:  # noqa: ANN001
    """Put a two-character mark before the first text of each heading and ``dt`` that has an id (its own, its
    section's, or an empty target just before it), then before the first text of each definition's element
    (:attr:`Definition.at`; an empty target's mark goes before the first text after it) that has none yet.
    Returns the ids, mark ``i`` for ``ids[i]`` (``None`` for a definition's mark that is no anchor: a term without
    an id of its own), and the mark of each definition (``None``: none, the definition is the whole page). The
    headings' and terms' marks come first, numbered as if there were no others: a page's anchors do not depend on
    its definitions."""
    ids: list[str | None] = []
    marked: dict[Any, int] = {}  # element -> its mark
    for el in main.iter(*_HEADING_TAGS, "dt"):
        if len(ids) >= _MAX_MARKS:
            break
        ident = _anchor_id(el)
        if not ident:
            continue
        text = next((t for t in el.xpath(".//text()") if t.strip()), None)
        if text is not None:
            marked[el] = _put_mark(text.getparent(), text.is_text, ids, ident)
    marks: list[int | None] = []
    for definition in definitions:
        at = definition.at
        index = marked.get(at) if at is not None else None
        if at is not None and index is None and len(ids) < _MAX_MARKS:
            found = _first_text(at)
            if found is not None:
                text = (found[0].text if found[1] else found[0].tail).lstrip()
                if text.startswith(_MARK) and len(text) > 1:  # marked already: a heading's, another's
                    index = ord(text[1]) - _MARK_BASE
                else:
                    index = _put_mark(*found, ids, None)
                marked[at] = index
        if index is not None and definition.anchors and ids[index] is None:
            ids[index] = definition.anchor  # a table row's or list item's own id: an anchor of the page
        marks.append(index)
    return ids, marks


def _put_mark(owner, is_text: bool, ids: list[str | None], ident: str | None) -> int:  # noqa: ANN001
    """Write mark ``len(ids)`` before the first non-blank character of ``owner``'s text (``is_text``) or tail and
    append ``ident`` to ``ids``; returns the mark's number."""
    text = owner.text if is_text else owner.tail
    lead = len(text) - len(text.lstrip())
    marked = f"{text[:lead]}{_MARK}{chr(_MARK_BASE + len(ids))}{text[lead:]}"
    if is_text:
        owner.text = marked
    else:
        owner.tail = marked
    ids.append(ident)
    return len(ids) - 1


def _first_text(el, within: bool = False) -> tuple[Any, bool] | None:  # noqa: ANN001 - an lxml element
    """Where the first non-blank text in ``el`` is, as (its owner element, whether it is the owner's text rather
    than its tail), or, unless ``within``, the first after ``el`` in the document (an empty target's definition is
    the text that follows it); ``None`` if there is none. Walks no further than it must (an XPath ``.//text()``
    of a section lists all of its text)."""
    for event, node in lxml.etree.iterwalk(el, events=("start", "end")):
        if event == "start":
            if isinstance(node.tag, str) and node.text and node.text.strip():
                return node, True
        elif node is not el and node.tail and node.tail.strip():
            return node, False
    if within:
        return None
    node = el
    while node is not None:
        if node.tail and node.tail.strip():
            return node, False
        for sibling in node.itersiblings():
            found = _first_text(sibling, within=True)
            if found is not None:
                return found
            if sibling.tail and sibling.tail.strip():
                return sibling, False
        node = node.getparent()
    return None


def _take_anchor_marks(markdown: str, ids: list[str | None]) -> tuple[str, list[Anchor], dict[int, int]]:
    """Remove the marks of :func:`_mark_anchors` from ``markdown``; each becomes an offset, at the place where it
    stood, before the emphasis or code delimiters that open the text there (a Sphinx signature starts inside
    ``<em>``: "*class* asyncio.Task(", whose section read from after the mark began "class*"), and each with an id
    an :class:`Anchor` at that offset. Returns the Markdown, the anchors and ``{mark: offset}``."""
    if not ids:
        return markdown, [], {}
    out: list[str] = []
    anchors: list[Anchor] = []
    offsets: dict[int, int] = {}
    pos = length = 0
    for m in _MARKS.finditer(markdown):
        before = markdown[pos : m.start()]
        out.append(before)
        length += m.start() - pos
        index = ord(m.group(1)) - _MARK_BASE
        if index < len(ids):
            opening = len(before) - len(before.rstrip("*_`"))
            offsets[index] = length - opening
            if ids[index] is not None:
                anchors.append(Anchor(length - opening, ids[index]))
        pos = m.end()
    out.append(markdown[pos:])
    return "".join(out), anchors, offsets
