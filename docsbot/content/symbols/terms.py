"""Definitions in definition lists (pure): the name a ``<dt>`` defines (DocBook's variable lists, AsciiDoc's
labelled lists, Sphinx's glossary and option lists...)."""

from __future__ import annotations

from docsbot.content.identifiers import IDENTIFIER_LIKE, NAME_SHAPE
from docsbot.content.markup import text_of
from docsbot.content.symbols.names import NAME_CLASSES, TERM_WORDS

__all__ = ["term_name"]


def term_name(dt, own_anchor: str | None) -> str:  # noqa: ANN001 - an lxml element
    """The name a definition list's term defines, or "" (the rule is in
    :func:`docsbot.content.symbols.find_symbols`; ``own_anchor``: the term's own,
    :func:`docsbot.content.anchors.anchor_id`). A term that is a link (Sphinx's lists of ``os.O_RDONLY``-like
    constants defined elsewhere) refers to a name, not defines it."""
    if any(text_of(a) for a in dt.iter("a") if a.get("href")):
        return ""
    for el in dt.iter():
        if isinstance(el.tag, str) and NAME_CLASSES & set((el.get("class") or "").split()):
            name = text_of(el)
            return name if NAME_SHAPE.fullmatch(name) else ""
    if own_anchor:
        for code in dt.iter("code", "tt"):
            name = text_of(code)
            return name if NAME_SHAPE.fullmatch(name) else ""
    term = text_of(dt)
    if NAME_SHAPE.fullmatch(term) and IDENTIFIER_LIKE.search(term):
        return term
    # A term of plain words under an anchor of its own is a defined term (Sphinx's glossary: <dt id="term-magic-
    # method">magic method</dt>; DocBook's glossary and variable lists), as is one the book's index points to
    # (DocBook's <a class="indexterm" id> inside the term: PostgreSQL's "phantom read"): found when a query is
    # that term.
    indexed = any("indexterm" in (a.get("class") or "").split() for a in dt.iter("a"))
    return term if (own_anchor or indexed) and TERM_WORDS.fullmatch(term) else ""
