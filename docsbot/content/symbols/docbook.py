"""DocBook XSL (PostgreSQL, DocBook's own reference): a ``refentry``'s names (``<div class="refnamediv"><p>
admon.graphics — ...``, at the refentry's anchor, which headings after it fall under) and a function synopsis's
``fsfunc`` (its definition the ``funcdef``). The terms of its variable lists, and the names its inline classes mark
(``varname``, ``envar``, ``function``...), are read by the generic rules (:mod:`docsbot.content.symbols.terms`,
:mod:`~docsbot.content.symbols.names`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docsbot.content.identifiers import NAME_SHAPE
from docsbot.content.markup import text_of
from docsbot.content.symbols.base import Generator
from docsbot.content.symbols.names import TERM_WORDS

if TYPE_CHECKING:
    from docsbot.content.symbols.base import SymbolTable

__all__ = ["DocBook"]


class DocBook(Generator):
    """A ``refentry`` and an ``fsfunc``."""

    element_classes = frozenset({"refentry", "fsfunc"})

    def element(self, el: Any, classes: list[str], table: SymbolTable) -> bool:
        if "refentry" in classes:
            # its id, or the empty <a id|name> DocBook puts among its first children (after a separator's <div>)
            targets = el.xpath("./a[not(@href)][@id or @name][1]")
            anchor = el.get("id") or (targets[0].get("id") or targets[0].get("name") if targets else None)
            for names in el.xpath(".//div[contains(@class, 'refnamediv')]/p[1]"):
                for name in text_of(names).partition("\u2014")[0].split(","):
                    if NAME_SHAPE.fullmatch(name.strip()) or TERM_WORDS.fullmatch(name.strip()):
                        table.add(name.strip(), anchor, at=names)
            table.last_anchor = anchor or table.last_anchor
            return True
        if "fsfunc" in classes:
            funcdef = el.getparent()  # <code class="funcdef">int <b class="fsfunc">name</b>(: the signature
            at = funcdef if funcdef is not None and "funcdef" in (funcdef.get("class") or "").split() else el
            name = text_of(el)
            table.add(name if NAME_SHAPE.fullmatch(name) else "", table.last_anchor, own=False, at=at)
            return True
        return False
