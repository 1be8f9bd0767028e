"""What every part of the symbol table shares (pure): a found :class:`Definition`, the :class:`SymbolTable` one walk
over a page fills, and the :class:`Generator` a generator's module subclasses."""

from __future__ import annotations

import re
from typing import Any, ClassVar, NamedTuple

from docsbot.content.identifiers import MAX_NAME_CHARS

__all__ = ["Definition", "Generator", "Symbol", "SymbolTable"]


class Symbol(NamedTuple):
    """An API name the page defines (a Sphinx ``dt[id]`` signature, a ``module-NAME`` section, a CMake
    ``role:NAME`` target, a term, a table row or list item that starts with the name:
    :func:`~docsbot.content.symbols.find_symbols`), with the HTML id that links to its definition (its own, or the
    nearest heading's when the definition has none) and ``offset``, the character offset in
    :attr:`~docsbot.content.extract.ExtractedPage.markdown` where the definition's text starts (its name or
    signature, before the code or emphasis delimiters that open it). ``offset`` is ``None`` when the symbol is the
    whole page (rustdoc's item at ``main-content``, a Javadoc type without a type signature) or its text did not
    reach the Markdown."""

    name: str
    anchor: str
    offset: int | None = None
    indexed: bool = False  # the site's own index points here (DocBook's indexterm): the name's primary definition


class Definition(NamedTuple):
    """A name :func:`~docsbot.content.symbols.find_symbols` found: its anchor, the element whose first text starts
    its definition (``at``: the term, the signature, the heading, a table row's or list item's code; its first text,
    or the first after it for an empty target; ``None``: the symbol is the whole page) and whether its anchor is an
    id of its own that no heading or term carries (``anchors``: a table row's or list item's, an
    :class:`~docsbot.content.anchors.Anchor` of the page too) and whether the site's own index points to it
    (``indexed``: :func:`~docsbot.content.symbols.index_points_here`)."""

    name: str
    anchor: str
    at: Any = None
    anchors: bool = False
    indexed: bool = False


_LAST_PART = re.compile(r"(?:\.|::)([^.:]+)$")


class SymbolTable:
    """The names found so far on one page, in the order found, each once (:meth:`add`), and the anchor of the
    nearest heading (or DocBook refentry) so far (``last_anchor``), which a definition without an id of its own
    links to."""

    def __init__(self) -> None:
        self.found: dict[str, Definition] = {}
        self.last_anchor: str | None = None
        self._near: set[str] = set()  # names found at a heading's anchor, not their own: a later anchor of theirs wins
        self._from_rows: set[str] = set()  # names found in table rows and list items

    def add(self, name: str, anchor: str | None, own: bool = True, at: Any = None, anchors: bool = False) -> None:
        """Add ``name`` (not "", at most :data:`~docsbot.content.identifiers.MAX_NAME_CHARS` characters) defined at
        ``anchor`` (not ``None``), an id of its own (``own``) or the nearest heading's, its definition's text
        starting at element ``at``. A name found already keeps its first place, but for one found at a heading's
        anchor and now under an anchor of its own (CMake lists ``Matlab_ROOT_DIR`` before its ``variable:``
        entry), which takes the later definition."""
        if name and len(name) <= MAX_NAME_CHARS and anchor and (name not in self.found or (own and name in self._near)):
            self.found[name] = Definition(name, anchor, at, anchors)
            self._from_rows.discard(name)
            (self._near.discard if own else self._near.add)(name)

    def add_listed(self, name: str, code: Any, ident: str | None, defined_elsewhere: bool) -> None:
        """Add the name a table row or list item defines (its leading ``code``, under its own id ``ident`` or the
        nearest heading's), unless it is ``defined_elsewhere`` on the page (:meth:`Generator.defined_elsewhere`);
        either way, a name whose definition is that row or item is marked as found in one (:meth:`definitions`)."""
        if not defined_elsewhere:
            self.add(name, ident or self.last_anchor, own=bool(ident), at=code, anchors=bool(ident))
        if self.found.get(name, Definition("", "")).at is code:
            self._from_rows.add(name)

    def definitions(self) -> list[Definition]:
        """The definitions found, in order, but for a table row's or list item's name that another definition of
        the page names as its last part: a row or item naming a member the page documents under its whole name
        (Javadoc's "MODE_DEFAULT - The image will be tiled ..." in setTilingMode, for
        javax.imageio.ImageWriteParam.MODE_DEFAULT) adds no name."""
        found = self.found.values()
        qualified = {m.group(1) for d in found if d.name not in self._from_rows and (m := _LAST_PART.search(d.name))}
        return [d for d in found if d.name not in self._from_rows or d.name not in qualified]


class Generator:
    """The names one documentation generator defines in markup of its own (Sphinx's signatures, rustdoc's members,
    Javadoc's details...). A module of :mod:`docsbot.content.symbols` subclasses it and is listed in
    :data:`docsbot.content.symbols.GENERATORS`; :func:`~docsbot.content.symbols.find_symbols` builds one per page
    from its main node (``__init__`` reads what the whole page says: rustdoc's item, a Javadoc type, a Doxygen
    class) and calls its hooks as it walks the page's elements in document order, after the generic rules
    (headings, definition lists, tables, lists) have read each.

    A hook returns whether it took the element: the generators after it in :data:`GENERATORS` are not asked.
    """

    #: Headings of these classes are the generator's own definitions: the generic heading rule leaves them.
    heading_classes: ClassVar[frozenset[str]] = frozenset()
    #: Headings of these classes are the generator's member titles, which it qualifies itself: the generic heading
    #: rule does not read their plain text as a member or a call (a heading that is all code it still reads).
    member_title_classes: ClassVar[frozenset[str]] = frozenset()
    #: Terms (``<dt>``) of these classes are the generator's own: the generic term rule leaves them.
    term_classes: ClassVar[frozenset[str]] = frozenset()
    #: :meth:`element` is called for the elements that no generic rule took and that have one of these classes...
    element_classes: ClassVar[frozenset[str]] = frozenset()
    #: ... or one of these ids.
    element_ids: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, main: Any) -> None:  # noqa: B027 - a generator that reads nothing of the whole page
        """Read what the whole page (``main``, its main-content node) tells this generator."""

    def element(self, el: Any, classes: list[str], table: SymbolTable) -> bool:
        """Add what ``el`` (with its ``classes``, :attr:`element_classes` or :attr:`element_ids`) defines to
        ``table``; whether ``el`` was this generator's."""
        return False

    def anchored(self, el: Any, ident: str, classes: list[str], table: SymbolTable) -> bool:
        """Add what ``el``, an element with the id ``ident``, defines to ``table``; whether it was this generator's.
        Called for every element with an id, whatever the rules before did with it."""
        return False

    def defined_elsewhere(self, name: str) -> bool:
        """Whether ``name``, which a table row or list item of the page defines, is defined by this generator's own
        markup instead (then the row or item adds nothing)."""
        return False
