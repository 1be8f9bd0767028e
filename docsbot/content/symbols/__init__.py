"""The symbol table of a page (pure): the API names its main content defines, each with the anchor that links to its
definition and the element where the definition's text starts (:func:`find_symbols`).

Generic rules read what any generator writes: headings (:mod:`~docsbot.content.symbols.headings`: all code, or
shaped as a member or a call), definition lists (:mod:`~docsbot.content.symbols.terms`: DocBook's variable lists,
AsciiDoc's labelled lists, Sphinx's glossary), table rows and list items that start with a name shown as code
(:mod:`~docsbot.content.symbols.tables`, :mod:`~docsbot.content.symbols.lists`, with
:mod:`~docsbot.content.symbols.names` and :mod:`~docsbot.content.symbols.prose`). What counts as an identifier is
:mod:`docsbot.content.identifiers`'s; anchors are :mod:`docsbot.content.anchors`'.

A generator's own markup is one module each, listed in :data:`GENERATORS`: adding a generator is adding a module
with a :class:`~docsbot.content.symbols.base.Generator` and its line there.
"""

from __future__ import annotations

from typing import Any

import lxml.etree

from docsbot.content.anchors import anchor_id
from docsbot.content.markup import HEADING_TAGS
from docsbot.content.symbols.base import Definition, Generator, Symbol, SymbolTable
from docsbot.content.symbols.cmake import CMakeRoles
from docsbot.content.symbols.docbook import DocBook
from docsbot.content.symbols.doxygen import Doxygen
from docsbot.content.symbols.gidocgen import GiDocgen
from docsbot.content.symbols.headings import code_heading_name
from docsbot.content.symbols.javadoc import Javadoc
from docsbot.content.symbols.lists import list_definitions
from docsbot.content.symbols.mkdocstrings import MkDocstrings
from docsbot.content.symbols.rustdoc import Rustdoc
from docsbot.content.symbols.sphinx import Sphinx
from docsbot.content.symbols.tables import table_definitions
from docsbot.content.symbols.terms import term_name

__all__ = ["GENERATORS", "Definition", "Generator", "Symbol", "find_symbols", "index_points_here"]

# The generators whose markup the symbol table reads, in the order each element is offered to them (the first that
# takes it wins): the order decides which definition of a name comes first, and so its anchor and chunk.
GENERATORS: tuple[type[Generator], ...] = (
    MkDocstrings,
    Sphinx,
    Rustdoc,
    Javadoc,
    GiDocgen,
    CMakeRoles,
    DocBook,
    Doxygen,
)

_HEADING_CLASSES = frozenset().union(*(g.heading_classes for g in GENERATORS))
_MEMBER_TITLE_CLASSES = frozenset().union(*(g.member_title_classes for g in GENERATORS))
_TERM_CLASSES = frozenset().union(*(g.term_classes for g in GENERATORS))
_READ_TAGS = frozenset(HEADING_TAGS) | {"dt", "table", "ul", "ol", "tr", "li"}  # what find_symbols reads by its tag


def find_symbols(main) -> list[Definition]:  # noqa: ANN001 - an lxml element
    """API names defined in ``main``, deduplicated, in document order, with the element each one's definition
    starts at (:class:`Definition`: ``extract_page`` marks it and turns the mark into :attr:`Symbol.offset`).

    Each element is read by the generic rules, then offered to the :data:`GENERATORS`:

    - a heading: the name it shows when it is all code (``## `useData` ``), or plain text shaped as a member or a
      call (``.code(statusCode)``), at its anchor; it is also the anchor of what follows without one of its own;
    - a definition list's term (:func:`~docsbot.content.symbols.terms.term_name`): a name when it is marked as one
      (DocBook's ``varname``, ``envar``, ``option``, ``function``... classes: ``<code class="varname">work_mem</code>
      (<span class="type">integer</span>)`` is ``work_mem``), when an entry that has an anchor of its own shows it
      as code (DocBook's ``<code class="literal">host</code>`` under ``id="LIBPQ-CONNECT-HOST"``), or when the
      whole term is shaped like an identifier (:data:`~docsbot.content.identifiers.IDENTIFIER_LIKE`:
      ``core.fileMode``, ``--dry-run``; not ``true`` or ``color``). Its anchor is the entry's own (an ``id`` on the
      ``<dt>`` or an empty ``<a id|name>`` at its start, DocBook's way), else the nearest heading's before it; a
      name found both ways keeps an anchor of its own (CMake lists ``Matlab_ROOT_DIR`` before its ``variable:``
      entry). A term of two to four plain words is a name too when its entry has an anchor of its own (Sphinx's
      glossary: ``magic method``), as is a refentry's ("CREATE TABLE"): found when the whole query is that term;
    - a table row or a list item that starts with a name shown as code and goes on to describe it (PostgreSQL's
      function tables, ``<code class="function">ceiling</code> ( numeric ) → numeric``, and lists of environment
      variables, ``<code class="envar">PGSYSCONFDIR</code> sets the directory``; gi-docgen's enum members;
      Python's tables of constants), unless a generator defines that name in its own markup;
    - then, in order, each generator's own markup (its module's docstring says which).
    """
    table = SymbolTable()
    generators = [generator(main) for generator in GENERATORS]
    element_hooks = [g.element for g in generators if type(g).element is not Generator.element]
    element_classes = frozenset().union(*(g.element_classes for g in generators))
    element_ids = frozenset().union(*(g.element_ids for g in generators))
    anchored_hooks = [g.anchored for g in generators if type(g).anchored is not Generator.anchored]
    elsewhere = [
        g.defined_elsewhere for g in generators if type(g).defined_elsewhere is not Generator.defined_elsewhere
    ]
    listed: dict[Any, tuple[str, Any, str | None]] = {}  # table rows and list items that define a name
    offered: dict[str, bool] = {}  # whether a class attribute holds a class some generator reads
    for el in main.iter(lxml.etree.Element):
        tag = el.tag
        ident = el.get("id")
        cls = el.get("class")
        # Most elements (a code listing's spans, links, paragraphs) have no tag, id or class any rule reads: told
        # apart here by a look-up per class attribute, not its words' sets per element.
        if not ident and tag not in _READ_TAGS:
            if not cls:
                continue
            hit = offered.get(cls)
            if hit is None:
                hit = offered[cls] = not element_classes.isdisjoint(cls.split())
            if not hit:
                continue
        classes = (cls or "").split()
        own = anchor_id(el) if tag in HEADING_TAGS or tag == "dt" else None
        if tag in HEADING_TAGS:
            table.last_anchor = own or table.last_anchor
            if _HEADING_CLASSES.isdisjoint(classes):
                table.add(code_heading_name(el, _MEMBER_TITLE_CLASSES), own, at=el)
        if tag == "dt" and _TERM_CLASSES.isdisjoint(classes):
            table.add(term_name(el, own), own or table.last_anchor, own=bool(own), at=el)
        elif tag == "table":
            listed.update(table_definitions(el))
        elif tag in ("ul", "ol"):
            listed.update(list_definitions(el))
        elif tag in ("tr", "li") and el in listed:
            name, code, row_id = listed.pop(el)
            table.add_listed(name, code, row_id, any(defined(name) for defined in elsewhere))
        elif ident in element_ids or not element_classes.isdisjoint(classes):
            for hook in element_hooks:
                if hook(el, classes, table):
                    break
        if not ident:
            continue
        for hook in anchored_hooks:
            if hook(el, ident, classes, table):
                break
    return [d._replace(indexed=True) if index_points_here(d.at) else d for d in table.definitions()]


# Where a definition's own text sits: the term, or the paragraph, cell or item that a row's or item's name starts.
_DEFINITION_BLOCKS = frozenset(("dt", "p", "td", "th", "li"))


def index_points_here(at) -> bool:  # noqa: ANN001 - an lxml element or None
    """Whether the site's own index points to the definition that starts at ``at``: an index entry's target
    (DocBook's empty ``<a class="indexterm" id>``, which the book index links to) in the same term, or before the
    name in the same paragraph, cell or item. A name that several pages define (PostgreSQL's ``PGDATABASE``: in
    libpq's list of environment variables and in the Environment section of each tool that reads it) has one such
    place, the one the index names; the ranking prefers it (:mod:`docsbot.store.ranking`)."""
    if at is None or at.tag in HEADING_TAGS:
        return False
    block = at
    while block is not None and block.tag not in _DEFINITION_BLOCKS:
        block = block.getparent()
    if block is None:
        return False
    if block.tag == "dt":
        return any(_is_index_target(a) for a in block.iter("a"))
    for el in block.iter():  # document order: an index target before the name
        if el is at:
            return False
        if el.tag == "a" and _is_index_target(el):
            return True
    return False


def _is_index_target(a) -> bool:  # noqa: ANN001 - an lxml element
    return "indexterm" in (a.get("class") or "").split() and not a.get("href")
