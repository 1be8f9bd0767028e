"""gi-docgen (GTK, GLib): the symbol of the page (``<section id="main"><header><h1>`` drawn as
``Gtk/Button/set_label`` → ``Gtk.Button.set_label``; a type's C name too, ``GtkButton``) and the C function its
declaration shows (``gtk_button_set_label``). Its enumeration members are table rows
(:mod:`docsbot.content.symbols.tables`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from docsbot.content.symbols.base import Generator

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["GiDocgen"]

_C_FUNCTION = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _gidocgen_names(section) -> list[tuple[str, Any]]:  # noqa: ANN001
    """gi-docgen's page symbol from ``<header><h1>``, its parts drawn apart by empty ``<span class="sep">``
    (``Gtk.Button.set_label``), and the C function of its declaration block (``gtk_button_set_label``), each with
    the element its definition starts at: the ``<h1>``, the declaration's code block (the block's parent: the
    outer of gi-docgen's nested ``<pre>`` is replaced by the inner one before the page is marked)."""
    h1 = section.find("header/h1")
    if h1 is None:
        return []
    parts = [h1.text or ""]
    for child in h1:
        parts.append("." if "sep" in (child.get("class") or "").split() else child.text_content())
        parts.append(child.tail or "")
    names = [("".join("".join(parts).split()), h1)]
    if names[0][0].count(".") == 1:  # a type: Gtk.Button is the C type GtkButton
        names.append((names[0][0].replace(".", ""), h1))
    for decl in section.xpath(".//div[contains(@class, 'declaration')]//pre"):
        m = _C_FUNCTION.search(decl.text_content())
        if m:
            names.append((m.group(1), decl.getparent()))
        break
    return [(n, at) for n, at in names if re.fullmatch(r"[\w.:-]+", n)]


class GiDocgen(Generator):
    """The page's ``<section id="main">``: its symbol's names."""

    def anchored(self, el: Any, ident: str, classes: list[str], table: SymbolTable) -> bool:
        if ident != "main" or el.tag != "section":
            return False
        for name, at in _gidocgen_names(el):
            table.add(name, ident, at=at)
        return True
