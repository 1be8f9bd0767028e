"""Javadoc: the type of the page (its package + ``<h1 title="Class ArrayList">``, anchored at ``class-description``,
its definition the type signature) and its member details (``<section class="detail" id="add(E)"><h3>add`` →
``java.util.ArrayList.add``); a constant a table row or list item names is defined by its field's detail."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from docsbot.content.markup import text_of
from docsbot.content.symbols.base import Generator

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["Javadoc"]

# A Java constant, qualified or not: LocalTime.with's list of fields it takes ("HOUR_OF_DAY - Returns a LocalTime
# with the specified hour-of-day") names ChronoField.HOUR_OF_DAY, which its own page defines.
_JAVA_CONSTANT = re.compile(r"(?:[A-Za-z_$][\w$]*\.)*[A-Z][A-Z0-9_]*")


def _javadoc_type(main) -> str:  # noqa: ANN001
    """``java.util.ArrayList`` from Javadoc's package sub-title and ``<h1 class="title" title="Class ArrayList">``."""
    h1 = main.xpath(".//h1[contains(@class, 'title')][@title]")
    if not h1:  # most pages: no walk of every element for the sub-title
        return ""
    package = main.xpath(".//*[contains(@class, 'sub-title')][*[contains(@class, 'package-label')]]/a")
    if not package:
        return ""
    name = h1[0].get("title").split()[-1]
    return f"{text_of(package[0])}.{name}" if re.fullmatch(r"[\w$]+", name) else ""


class Javadoc(Generator):
    """On a type's page, the type and its members' details by their ids."""

    def __init__(self, main: Any) -> None:
        self.type = _javadoc_type(main)

    def anchored(self, el: Any, ident: str, classes: list[str], table: SymbolTable) -> bool:
        if not self.type:
            return False
        if ident == "class-description":
            # the type's signature ("public class ArrayList<E> extends ..."); without one, the whole page
            table.add(self.type, ident, at=next(iter(el.xpath(".//div[contains(@class, 'type-signature')]")), None))
            return True
        if el.tag == "section" and "detail" in classes:
            heading = el.find(".//h3")
            member = text_of(heading) if heading is not None else ""
            if re.fullmatch(r"\w+", member) and member != self.type.rpartition(".")[2]:  # not a constructor
                table.add(f"{self.type}.{member}", ident, at=el)
            return True
        return False

    def defined_elsewhere(self, name: str) -> bool:
        # on a type's page a constant is defined by its field's detail, wherever that is
        return bool(self.type) and _JAVA_CONSTANT.fullmatch(name) is not None
