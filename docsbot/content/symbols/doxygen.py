"""Doxygen (LMDB, JsonCpp): its member titles (``<a id="ga..."></a><h2 class="memtitle">◆ mdb_env_create()``, an
overload's ``[1/4]`` dropped), qualified by the page's class, struct, union or namespace (``Json::Value Class
Reference`` → ``Json::Value::isNull``), and that scope itself at its detailed description (``id="details"``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from docsbot.content.anchors import anchor_id
from docsbot.content.identifiers import NAME_SHAPE
from docsbot.content.markup import text_of
from docsbot.content.symbols.base import Generator

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["Doxygen"]

_DOXYGEN_TITLE = re.compile(
    r"^(\S+?)(?:<.*>)? (?:Class|Struct|Union|Namespace|Interface|Protocol|Category)(?: Template)? Reference$"
)
_DOXYGEN_OVERLOAD = re.compile(r"\s*\[\d+/\d+\]\s*$")  # "operator[]() [1/4]": the 1st of 4 overloads


def _doxygen_scope(main) -> str:  # noqa: ANN001
    """``Json::Value`` from Doxygen's ``<div class="title">Json::Value Class Reference</div>`` (a class, struct,
    union or namespace page: its members are named within it); "" on other pages."""
    for title in main.xpath(".//div[@class='headertitle']/*[@class='title']"):  # an <h1> once extract_page saw it
        m = _DOXYGEN_TITLE.match(" ".join((title.text or "").split()))
        if m and NAME_SHAPE.fullmatch(m.group(1)):
            return m.group(1)
    return ""


class Doxygen(Generator):
    """A member title, and on a class's (struct's, union's, namespace's) page the scope at ``#details``."""

    member_title_classes = frozenset({"memtitle"})  # qualified here, not read as a member by the heading rule
    element_classes = frozenset({"memtitle"})
    element_ids = frozenset({"details"})

    def __init__(self, main: Any) -> None:
        self.scope = _doxygen_scope(main)

    def element(self, el: Any, classes: list[str], table: SymbolTable) -> bool:
        if "memtitle" in classes:
            name = _DOXYGEN_OVERLOAD.sub("", text_of(el).replace("\u25c6", "")).strip().removesuffix("()")
            if NAME_SHAPE.fullmatch(name):
                table.add(f"{self.scope}::{name}" if self.scope else name, anchor_id(el), at=el)
            return True
        if self.scope and el.get("id") == "details":
            table.add(self.scope, "details", at=el)
            return True
        return False
