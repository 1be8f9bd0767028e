"""CMake's Sphinx domain: role-qualified targets (``<span id="command:add_executable">``, ``variable:``,
``prop_tgt:``...) define the name after the role; an index entry's (``index-0-command:...``) does not."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from docsbot.content.symbols.base import Generator

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["CMakeRoles"]

_ROLE_ID = re.compile(r"^(?!index-)[a-z_]+:(?P<name>[^\s:][^\s]*)$")  # CMake's "command:add_executable"


class CMakeRoles(Generator):
    """A ``role:NAME`` id."""

    def anchored(self, el: Any, ident: str, classes: list[str], table: SymbolTable) -> bool:
        if m := _ROLE_ID.match(ident):
            table.add(m.group("name"), ident, at=el)
            return True
        return False
