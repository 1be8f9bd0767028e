"""A page's main-content node → Markdown (pure): the markup prepared where html-to-markdown reads it worse than a
Markdown reader should (:func:`normalize_markup`), slimmed to what the converter reads (:func:`slim_markup`), and
converted by html-to-markdown (Rust; pinned: its output is what is stored) with docsbot's options
(:func:`html_to_markdown_text`, :func:`main_markdown`)."""

from __future__ import annotations

import re
from itertools import islice

import html_to_markdown
import lxml.etree
import lxml.html

from docsbot.content import ConverterFailed
from docsbot.content.markup import HEADING_TAGS

__all__ = ["ConverterFailed", "html_to_markdown_text", "main_markdown", "normalize_markup", "slim_markup"]

_LANGUAGE_CLASS = re.compile(r"(?:^|\s)(?:highlight|language|lang)-([\w+#.-]+)")
_BLANK_LINES = re.compile(r"\n{3,}")


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


# One walk for every asterisk inside emphasis, not one XPath per <em> (Sphinx puts every parameter in one).
# The text nodes under emphasis elements, not every text node asked for its ancestors: the same nodes (a node-set is
# one of each, in document order) in half the CPU.
_EMPHASIZED_ASTERISKS = lxml.etree.XPath(
    "(.//em | .//i | .//strong | .//b)//text()[contains(., '*')][not(ancestor::code or ancestor::pre)]"
)
_XPATH_BLANKS = " \t\n\r"  # what XPath's normalize-space() strips
_ASTERISK = "\U000f0000"  # a private-use character: an asterisk inside emphasis (normalize_markup)


# What the converter reads of the markup besides tags and text (see slim_markup); a <pre> keeps the class that
# normalize_markup gave it ("language-X"). Media lose their sources too: html-to-markdown writes a <video src> or an
# <iframe src> as a link ("[video](x.mp4)"), and link targets are noise here.
_READ_ATTRIBUTES = frozenset({"colspan", "rowspan", "start"})
# The attributes most frequent in documentation pages, none of them read (samples of the corpus matrix's generators).
_COMMON_ATTRIBUTES = (
    "class", "href", "title", "id", "type", "rel", "src", "open", "align", "name", "valign", "width", "height",
    "accesskey", "role", "aria-label", "aria-hidden", "style", "alt", "summary", "lang", "target", "tabindex",
    "border", "cellpadding", "cellspacing", "dir", "hidden",
)  # fmt: skip
_WITH_ATTRIBUTES = lxml.etree.XPath("descendant-or-self::*[@*]")


def main_markdown(main) -> str:  # noqa: ANN001 - an lxml element
    """The Markdown of ``main`` (prepared by :func:`normalize_markup`): slimmed (:func:`slim_markup`), serialized,
    converted (:func:`html_to_markdown_text`), its runs of blank lines made one, stripped, and the asterisks that
    emphasis holds escaped ("*\\**"). Raises :class:`ConverterFailed` as :func:`html_to_markdown_text` does."""
    slim_markup(main)
    markdown = html_to_markdown_text(lxml.html.tostring(main, encoding="unicode"))
    markdown = _BLANK_LINES.sub("\n\n", markdown).strip()
    return markdown.replace(_ASTERISK, "\\*")


def normalize_markup(main) -> None:  # noqa: ANN001 - an lxml element
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
    # (lxml's tag iterators, walks in C, instead of XPath's: the same elements as the expression each names, in
    # document order, a fifth of the CPU.)
    nested = [pre for pre in main.iterdescendants("pre") if len(list(islice(pre.iterdescendants("pre"), 2))) == 1]
    for outer in nested:  # .//pre[count(.//pre) = 1]
        if outer.getparent() is None:
            continue
        inner = next(outer.iterdescendants("pre"))
        inner.tail = outer.tail
        outer.getparent().replace(outer, inner)
    # A list whose every item holds a heading is layout, not a list (Javadoc: <ul class="member-list"><li><section>
    # <h3>add</h3>): as a list its headings became "  - ### add", which no Markdown reader (nor the chunker)
    # takes for a heading, and every chunk of the page fell under its title alone.
    for layout in _headed_lists(main):
        for item in layout.findall("li"):
            item.drop_tag()
        layout.drop_tag()
    # A table of one row whose cells hold lists is layout too (Sphinx's genindex: the index in two columns). The
    # converter takes it for layout as well, but writes its lists without their escapes and nesting ("- # (hash)"
    # is a heading in a list item to a Markdown reader; sub-entries indented by one space are not nested): the
    # lists are converted as lists, the cells one after the other.
    for table in [t for t in main.iterdescendants("table") if _one_row_of_lists(t)]:
        for el in table.xpath(".//tr | .//td | .//th | ./thead | ./tbody | ./tfoot"):
            el.drop_tag()
        table.drop_tag()
    # A table row without text is a separator (Doxygen draws one after every member of its summary tables): in
    # Markdown it is an empty row. (Python's strip, not XPath's normalize-space: their cell holds a no-break space.)
    # (The row's texts read until one is not blank: text_content() joined every row's whole text first.)
    blank = [r for r in main.iter("tr") if r.getprevious() is not None and not any(t.strip() for t in r.itertext())]
    for row in blank:
        if not any(el.tag in ("img", "svg", "input") for el in row.iter()):
            row.drop_tree()
    seps = {
        span: None  # .//h1//span[@class='sep'][not(normalize-space())], each once (an <h1> in an <h1> holds it twice)
        for h1 in main.iterdescendants("h1")
        for span in h1.iterdescendants("span")
        if span.get("class") == "sep" and not "".join(span.itertext()).strip(_XPATH_BLANKS)
    }
    for sep in seps:
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
    # a Markdown reader takes for delimiters. It is marked here and written escaped (main_markdown: "*\**").
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


def _one_row_of_lists(table) -> bool:  # noqa: ANN001 - an lxml element
    """``table[count(.//tr) = 1][.//tr/*[self::td or self::th][ul or ol or dl]]``: one row, one of whose cells
    holds a list as a child."""
    rows = list(islice(table.iterdescendants("tr"), 2))
    return len(rows) == 1 and any(
        cell.tag in ("td", "th") and any(child.tag in ("ul", "ol", "dl") for child in cell) for cell in rows[0]
    )


def _headed_lists(main) -> list:  # noqa: ANN001 - an lxml element
    """The lists under ``main`` (not ``main`` itself) with items, each of which holds a heading, in document order:
    ``.//*[self::ul or self::ol][li][not(li[not(.//h1 or ... or .//h6)])]``, from the page's headings up instead
    of six searches under every item of every list (0.6 s of the Python docs' extraction, 0.1 s this way)."""
    headed = set()
    for heading in main.iterdescendants(*HEADING_TAGS):
        for ancestor in heading.iterancestors():
            if ancestor is main:
                break
            if ancestor.tag == "li":
                headed.add(ancestor)
    if not headed:
        return []
    out = []
    for layout in main.iterdescendants("ul", "ol"):
        items = layout.findall("li")
        if items and all(item in headed for item in items):
            out.append(layout)
    return out


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


def slim_markup(main) -> None:  # noqa: ANN001 - an lxml element
    """Remove what the conversion to Markdown never reads, before the main node is serialized for html-to-markdown:
    less to serialize and parse, and no attribute left that could steer the converter (its heuristics read
    classes, ids, roles and ``hidden``; docsbot has already decided what is chrome). The ``<span>``s inside
    ``<pre>`` and ``<code>`` are unwrapped: a highlighter's tokens (Pygments in Sphinx, rustdoc) and Sphinx's
    ``<span class="pre">`` words, whose text the converter takes as it stands. Attributes go, but for those read:
    a table cell's ``colspan`` and ``rowspan``, a list's ``start`` and the ``class="language-X"`` that
    :func:`normalize_markup` put on a ``<pre>``."""
    # libxml2's own unwrapping, linear in the spans (200,000 in one <pre>: 0.18 s): a drop_tag per span appends the
    # span's text to its predecessor's, quadratic on a source listing (rustdoc's 3.6 MB avx512bw.rs.html took 455 s),
    # and a walk in Python cost 0.9 s of the Python docs' extraction.
    for code in list(main.iter("pre", "code")):
        lxml.etree.strip_tags(code, "span")
    # The attributes pages use most go in one walk in C (a walk in Python over the Python docs' million elements cost
    # 0.8 s of their extraction); the few other elements that still carry some are then read one by one.
    kept = [(pre, pre.get("class")) for pre in main.iter("pre")]
    lxml.etree.strip_attributes(main, *_COMMON_ATTRIBUTES)
    for pre, cls in kept:
        if cls is not None:
            pre.set("class", cls)
    for el in _WITH_ATTRIBUTES(main):
        for name in [name for name in el.attrib if name not in _READ_ATTRIBUTES]:
            if name != "class" or el.tag != "pre":
                del el.attrib[name]
