"""Main-content detection and chrome removal (pure): which element of a page holds its content
(:data:`MAIN_CONTENT_XPATHS`: Sphinx, MkDocs, Read the Docs, Docusaurus, AsciiDoc and plain HTML5 layouts), and what
is page chrome wherever it sits (:func:`is_chrome`: navigation, headers, footers, sidebars, "edit this page"
buttons, permalinks)."""

from __future__ import annotations

import re

import lxml.etree

__all__ = ["MAIN_CONTENT_XPATHS", "is_chrome", "main_content"]

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
_TAGS_WITH_RULES = _CHROME_TAGS | _CONTENT_ANCESTORS.keys()  # chrome by the tag alone, or by its ancestors
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
    # Most elements carry no attribute or a class alone (<span class="pre">, <em>): one call to learn that, not
    # one per attribute below.
    names = el.keys()
    if not names:
        return False
    if names == ["class"]:
        return _class_rules(el, tag, el.get("class"))
    ident = el.get("id")
    if ident in _CHROME_IDS or el.get("role") in _CHROME_ROLES or el.get("aria-hidden") == "true":
        return True
    if ident == "top" and tag == "div" and el.find("div[@id='titlearea']") is not None:
        return True  # Doxygen's banner: project name, menu, search box and a project's own header
    return _class_rules(el, tag, el.get("class"))


def _class_rules(el, tag: str, cls: str | None) -> bool:  # noqa: ANN001 - an lxml element
    """:func:`is_chrome`'s rules that read the class attribute ``cls`` of ``el`` (whose tag is ``tag``)."""
    if not cls:
        return False
    if tag == "div" and cls == "summary":  # Doxygen's list of the page's sections, in its header
        return el.getparent() is not None and el.getparent().get("class") == "header"
    chrome = _CLASS_IS_CHROME.get((tag, cls))
    if chrome is None:
        chrome = _class_is_chrome(tag, cls)
        if len(_CLASS_IS_CHROME) >= _CLASS_CACHE_SIZE:
            _CLASS_IS_CHROME.clear()
        _CLASS_IS_CHROME[tag, cls] = chrome
    return chrome


# What a tag and class attribute say, remembered per worker: a page repeats a few hundred of them over thousands of
# elements (the Python docs: 1,065,078 elements, most of them <span class="pre">, <a class="reference internal">).
_CLASS_IS_CHROME: dict[tuple[str, str], bool] = {}
_CLASS_CACHE_SIZE = 1 << 14


def _class_is_chrome(tag: str, cls: str) -> bool:
    """Whether an element of ``tag`` whose class attribute is ``cls`` is chrome by its class alone."""
    words = _XML_SPACE.split(cls)
    return (
        not _CHROME_CLASSES.isdisjoint(words)
        or (tag == "a" and not _PERMALINK_CLASSES.isdisjoint(words))
        or _CHROME_CLASS_PARTS.search(cls) is not None
        or (tag == "summary" and "hideme" in cls)
        or (tag == "div" and cls in ("navheader", "navfooter"))
        # Doxygen: the heading's "◆" permalink, the "Generated by" line
        or (tag == "span" and "permalink" in words)
        or (tag == "address" and "footer" in words)
    )


def main_content(doc):  # noqa: ANN001, ANN201 - lxml elements
    """Remove the chrome (:func:`is_chrome`) from ``doc``, a parsed page, and return its main-content node: the
    first match of :data:`MAIN_CONTENT_XPATHS`, or ``None`` if there is none (a page whose ``<body>`` was chrome).

    The rules are not evaluated as XPath: each ``//*[@attr=…]`` rule scanned the whole tree in libxml2 (the first
    alone 0.78 s over the Python docs' 526 pages, a third of the chrome walk), so the chrome walk, which visits every
    element anyway, notes the elements those rules name, and the tag rules read lxml's C-level tag iterators. The
    same node as the XPath expressions on every page of the benchmark corpora (BENCHMARKS.md)."""
    chrome, marked = _chrome_walk(doc)
    for el in chrome:
        if el.getparent() is not None:
            el.drop_tree()
    return _first_rule_match(doc, marked)


def _chrome_walk(doc) -> tuple[list, dict[str, list]]:  # noqa: ANN001 - lxml elements
    """The elements of ``doc`` that :func:`is_chrome` takes for chrome, in document order, and those that the
    attribute rules of :data:`MAIN_CONTENT_XPATHS` name (``itemprop``, ``role`` and ``id``: attribute name → the
    elements whose attribute has the rule's value, in document order). An element without attributes, or with a
    class alone whose verdict is remembered as "not chrome", is passed over here without the call (it names no
    rule either): the same elements for a sixth of the walk's CPU less (the Python docs' 1,065,078 elements, most
    of them such)."""
    special = _TAGS_WITH_RULES
    remembered = _CLASS_IS_CHROME
    ruled = _RULE_ATTRIBUTES
    out = []
    marked: dict[str, list] = {name: [] for name in ruled}
    for el in doc.iter(lxml.etree.Element):
        tag = el.tag
        names = el.keys()
        if tag not in special and (
            not names or (names == ["class"] and remembered.get((tag, el.get("class"))) is False)
        ):
            continue
        if not ruled.keys().isdisjoint(names):
            for name, value in ruled.items():
                if el.get(name) == value:
                    marked[name].append(el)
        if is_chrome(el):
            out.append(el)
    return out, marked


# The attribute rules of MAIN_CONTENT_XPATHS: attribute name → value (itemprop first, then role, then id).
_RULE_ATTRIBUTES = {"itemprop": "articleBody", "role": "main", "id": "content"}


def _attached(el, doc) -> bool:  # noqa: ANN001 - lxml elements
    """Whether ``el`` is still in ``doc`` (not inside a chrome subtree that was dropped)."""
    return el is doc or any(a is doc for a in el.iterancestors())


def _first_rule_match(doc, marked: dict[str, list]):  # noqa: ANN001, ANN202 - lxml elements
    """The first match of :data:`MAIN_CONTENT_XPATHS` in rule order, each rule's first element in document order,
    from the walk's ``marked`` elements and lxml's tag iterators."""

    def first_marked(name: str):  # noqa: ANN202
        return next((el for el in marked[name] if _attached(el, doc)), None)

    def class_has(el, word: str) -> bool:  # noqa: ANN001 - contains(concat(' ', normalize-space(@class), ' '), ' w ')
        cls = el.get("class")
        return cls is not None and word in _XML_SPACE.split(cls)

    found = first_marked("itemprop")
    if found is not None:
        return found
    articles = list(doc.iter("article"))
    found = next((el for el in articles if class_has(el, "md-content__inner")), None)
    if found is None:
        found = first_marked("role")
    if found is not None:
        return found
    mains = list(doc.iter("main"))
    if mains:
        found = next((el for el in articles if any(a.tag == "main" for a in el.iterancestors())), None)
        return found if found is not None else mains[0]
    if articles:
        return articles[0]
    found = next((el for el in doc.iter("div") if class_has(el, "body")), None)
    if found is not None:
        return found
    bodies = list(doc.iter("body"))
    for body in bodies:
        ids = [child.get("id") for child in body.iterchildren("div")]
        if "header" in ids and "content" in ids:
            return body
    found = first_marked("id")
    if found is not None:
        return found
    return bodies[0] if bodies else None
