"""Anchors (pure): the HTML ids a page's sections and definitions can be linked to (``url#id``), and where each
one's text starts in the page's Markdown. Marks are put in the tree before the conversion (:func:`mark_anchors`) and
taken out of the Markdown after it (:func:`take_anchor_marks`), which turns each into an offset."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import lxml.etree

from docsbot.content.markup import HEADING_TAGS

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Anchor", "anchor_id", "mark_anchors", "take_anchor_marks"]


class Anchor(NamedTuple):
    """An HTML id a section or definition of the page can be linked to (``url#id``): ``offset`` is the character
    offset in :attr:`docsbot.content.extract.ExtractedPage.markdown` where the heading's or definition's text starts."""

    offset: int
    id: str


_MARK = "\uf8ff"  # a private-use character: marks where an anchored element's text starts, then removed
_MARK_BASE = 0xE000
_MAX_MARKS = 0xF8FF - _MARK_BASE
_MARKS = re.compile(f"{_MARK}([\ue000-\uf8fe])")


class Placed(Protocol):
    """What :func:`mark_anchors` reads of a definition (:class:`docsbot.content.symbols.Definition`)."""

    @property
    def anchor(self) -> str: ...

    @property
    def at(self) -> Any: ...

    @property
    def anchors(self) -> bool: ...


_HEADING_WRAPPERS = 3  # DocBook XSL's titlepage: three <div>s between a section and its heading


def anchor_id(el) -> str | None:  # noqa: ANN001
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
    if el.tag in HEADING_TAGS:
        # Sphinx: <section id="..."><h2>..., the heading its section's first child; DocBook XSL (PostgreSQL's):
        # <div class="sect1" id="..."><div class="titlepage"><div><div><h2>..., first inside the wrappers of its
        # section's first child
        node = el
        for _ in range(_HEADING_WRAPPERS + 1):
            parent = node.getparent()
            if parent is None or not len(parent) or parent[0] is not node:
                break
            if parent.get("id"):
                return parent.get("id")
            if parent.tag != "div":
                break
            node = parent
        prev = el.getprevious()  # <span id="..."></span><h2>...
        if prev is not None and isinstance(prev.tag, str) and not (prev.text_content() or "").strip():
            target = prev.get("id") or (prev.get("name") if prev.tag == "a" else None)
            if target:
                return target
    return None


def mark_anchors(main, definitions: Sequence[Placed]) -> tuple[list[str | None], list[int | None]]:  # noqa: ANN001
    """Put a two-character mark before the first text of each heading and ``dt`` that has an id (its own, its
    section's, or an empty target just before it), then before the first text of each definition's element
    (:attr:`~docsbot.content.symbols.Definition.at`; an empty target's mark goes before the first text after it)
    that has none yet.
    Returns the ids, mark ``i`` for ``ids[i]`` (``None`` for a definition's mark that is no anchor: a term without
    an id of its own), and the mark of each definition (``None``: none, the definition is the whole page). The
    headings' and terms' marks come first, numbered as if there were no others: a page's anchors do not depend on
    its definitions."""
    ids: list[str | None] = []
    marked: dict[Any, int] = {}  # element -> its mark
    for el in main.iter(*HEADING_TAGS, "dt"):
        if len(ids) >= _MAX_MARKS:
            break
        ident = anchor_id(el)
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


def take_anchor_marks(markdown: str, ids: list[str | None]) -> tuple[str, list[Anchor], dict[int, int]]:
    """Remove the marks of :func:`mark_anchors` from ``markdown``; each becomes an offset, at the place where it
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
