"""Definitions in lists (pure): an item that starts with a name shown as code and goes on to describe it (lists of
environment variables, of a function's parameters, of a module's constants)."""

from __future__ import annotations

import re
from typing import Any

from docsbot.content.symbols.names import code_name, leading_code, marked_name, names_defined
from docsbot.content.symbols.prose import block_of, in_words, prose_after, prose_words, text_after

__all__ = ["list_definitions"]

# A list item's name followed by a separator and its description: "LOCK_UN – unlock", "inc_path - The include
# path", "kw_only: If true, ..." (an aside in parentheses before it: "port (int): ...").
_ITEM_SEPARATOR = re.compile(r"\s*(?:\([^()]*\)\s*)?[:\u2013\u2014-]\s*")
_SENTENCE_START = re.compile(r"\s+(?!(?:and|or)\b)[^\W\d_]")  # "PGSYSCONFDIR sets ...", not "PGHOST and ..."


def list_definitions(lst) -> dict[Any, tuple[str, Any, str | None]]:  # noqa: ANN001 - an lxml element
    """The items of ``lst`` that define a name: ``{item: (name, code, own id)}``. An item defines the name it
    starts with as code (:func:`leading_code`, :func:`code_name`, :func:`names_defined`) when it goes on to
    describe it (:func:`_describes`). Not a list that holds a value (``true``, ``None``, ``0``)."""
    candidates: list[tuple[Any, str, Any, str | None]] = []
    for item in lst:
        if item.tag != "li":
            continue
        lead = leading_code(item)
        if lead is None:
            continue
        code, ident = lead
        name = code_name(code)
        if name is None:
            return {}
        if name and _describes(code, block_of(code, item), item):
            candidates.append((item, name, code, ident))
    return names_defined(candidates)


def _describes(code, block, item) -> bool:  # noqa: ANN001 - lxml elements
    """Whether list ``item`` goes on to describe the name ``code`` (in ``block``) starts it with: after a separator
    ("``LOCK_UN`` – unlock", "``kw_only``: If true, ..."), in a paragraph of its own after the name, or, for a name
    DocBook marks as one (``envar``, ``varname``, ``function``...), in the sentence it starts ("``PGSYSCONFDIR``
    sets the directory containing ..."). Not a name that starts a list of names ("``a``, ``b`` and ``c``") or a
    sentence about it without a DocBook mark ("``x`` is deprecated")."""
    after = text_after(code, block)
    separator = _ITEM_SEPARATOR.match(after)
    if separator and after[separator.end() :].strip():
        return in_words(text_after(code, block, outside_code=True), after[separator.end() :])
    if not after.strip(" \t\n\r:"):  # "``GHS_BSP_NAME``" or "``name``:", then a paragraph
        return block is not item and prose_after(block, item) >= 2
    return marked_name(code) and _SENTENCE_START.match(after) is not None and prose_words(after) >= 3
