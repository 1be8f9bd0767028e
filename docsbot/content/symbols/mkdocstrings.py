"""mkdocstrings (MkDocs): its object headings name the object by their id
(``<h2 id="pkg.module.func" class="doc doc-heading">``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docsbot.content.identifiers import NAME_SHAPE
from docsbot.content.symbols.base import Generator

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["MkDocstrings"]


class MkDocstrings(Generator):
    """An object heading (``doc-heading``) defines the name its id is, when the id is shaped as a name."""

    heading_classes = frozenset({"doc-heading"})

    def anchored(self, el: Any, ident: str, classes: list[str], table: SymbolTable) -> bool:
        if "doc-heading" not in classes:
            return False
        table.add(ident if NAME_SHAPE.fullmatch(ident) else "", ident, at=el)
        return True
