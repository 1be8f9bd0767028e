"""rustdoc: the item of the page (``<h1>Struct std::vec::Vec``, anchored at ``main-content``: the whole page) and
its members (``id="method.push"`` → ``std::vec::Vec::push``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from docsbot.content.markup import text_of
from docsbot.content.symbols.base import Generator

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["Rustdoc"]

_RUSTDOC_ITEM = re.compile(
    r"^(?:Struct|Enum|Trait|Function|Macro|Module|Constant|Static|Type Definition|Union|Primitive Type|Keyword"
    r"|Attribute Macro|Derive Macro|Trait Alias|Type Alias|Crate)\s+(\S+)$"
)
_RUSTDOC_MEMBER = re.compile(
    r"^(?:method|tymethod|structfield|variant|associatedtype|associatedconstant|field)\.(\w+)$"
)


def _rustdoc_item(main) -> str:  # noqa: ANN001
    """``std::vec::Vec`` from rustdoc's ``<h1 class="fqn">`` (1.63) or ``.main-heading h1``: "Struct std::vec::Vec"."""
    # .//h1[contains(@class, 'fqn')] | .//*[contains(@class, 'main-heading')]/h1, read from the page's few <h1>s
    # instead of an XPath test of every element's class
    for h1 in main.iterdescendants("h1"):
        parent = h1.getparent()
        if "fqn" not in (h1.get("class") or "") and (
            parent is main or "main-heading" not in (parent.get("class") or "")
        ):
            continue
        m = _RUSTDOC_ITEM.match(re.sub(r"\s*::\s*", "::", text_of(h1)))
        if m:
            return m.group(1)
    return ""


class Rustdoc(Generator):
    """On an item's page, the item and its members by their ids."""

    def __init__(self, main: Any) -> None:
        self.item = _rustdoc_item(main)

    def anchored(self, el: Any, ident: str, classes: list[str], table: SymbolTable) -> bool:
        if not self.item:
            return False
        if m := _RUSTDOC_MEMBER.match(ident):
            table.add(f"{self.item}::{m.group(1)}", ident, at=el)
            return True
        if ident == "main-content":
            table.add(self.item, ident)  # the page's item: the whole page
            return True
        return False
