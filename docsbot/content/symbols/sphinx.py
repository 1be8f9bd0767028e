"""Sphinx: signatures (``<dt class="sig" id="asyncio.create_task">``: the name as shown, ``sig-prename`` +
``sig-name``, or the whole dotted id of a method shown as ``count`` inside its class; the C domain's ``c.`` prefix
dropped) and module targets (``id="module-NAME"``). Its glossary and option lists are definition lists
(:mod:`docsbot.content.symbols.terms`); CMake's roles are :mod:`docsbot.content.symbols.cmake`'s."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from docsbot.content.symbols.base import Generator

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["Sphinx"]


class Sphinx(Generator):
    """A signature's ``<dt>`` (class ``sig``) and a ``module-NAME`` target."""

    term_classes = frozenset({"sig"})  # a signature, named here from its markup and id, not as a term

    def anchored(self, el: Any, ident: str, classes: list[str], table: SymbolTable) -> bool:
        if el.tag == "dt" and "sig" in classes:
            parts = el.xpath(".//*[contains(@class, 'sig-prename') or contains(@class, 'sig-name')]")
            name = "".join("".join(p.text_content().split()) for p in parts) or ident
            ident_name = ident[2:] if ident.startswith("c.") else ident  # Sphinx's C domain: c.PyObject_Call
            # A method shows only "count" inside its class; its id has the whole dotted name.
            if ident_name != name and ident_name.endswith(name) and re.fullmatch(r"[\w.]+", ident_name):
                name = ident_name
            table.add(name, ident, at=el)
            return True
        if ident.startswith("module-") and len(ident) > 7:
            table.add(ident[7:], ident, at=el)
            return True
        return False
