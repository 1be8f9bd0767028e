"""Definitions in tables (pure): a row whose first cell starts with a name shown as code and whose other cells (or
the cell's own paragraphs) describe it (PostgreSQL's function tables, Python's tables of constants)."""

from __future__ import annotations

from typing import Any

from docsbot.content.markup import text_of
from docsbot.content.symbols.names import code_name, leading_code, names_defined
from docsbot.content.symbols.prose import block_of, in_words, more_code, prose, prose_after, text_beyond

__all__ = ["table_definitions"]


def table_definitions(table) -> dict[Any, tuple[str, Any, str | None]]:  # noqa: ANN001 - an lxml element
    """The rows of ``table`` that define a name: ``{row: (name, code, own id)}``. A row defines the name its first
    cell starts with as code (:func:`leading_code`, :func:`code_name`, :func:`names_defined`) when another cell,
    or the cell's own paragraphs after it (PostgreSQL's one-column function tables: signature, description,
    example), describe it in words. Header rows (``<thead>``, all ``<th>``) are left out, and the whole table when
    its first column is mostly not code, holds a value (``true``, ``None``, ``0``: a table of values), or mostly
    not names (a table of operators or regular expressions)."""
    candidates: list[tuple[Any, str, Any, str | None]] = []
    filled = coded = named = 0
    for row in table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr"):
        if row.getparent().tag == "thead":
            continue
        cells = [c for c in row if c.tag in ("td", "th")]
        if not cells or all(c.tag == "th" for c in cells) or not cells[0].text_content().strip():
            continue  # a header row; a row continuing the one above (gi-docgen's descriptions)
        filled += 1
        lead = leading_code(cells[0])
        if lead is None:
            continue
        coded += 1
        code, ident = lead
        name = code_name(code)
        if name is None:
            return {}
        if not name:
            continue
        named += 1
        ident = row.get("id") or ident
        block = block_of(code, cells[0])
        if len(cells) > 1:  # under an id of its own, any text describes it (Sphinx: PyExc_OSError | OSError)
            described = (
                not text_beyond(block, cells[0])
                and not more_code(code, cells[0])
                and any(in_words(prose(c), text_of(c)) if not ident else text_of(c) for c in cells[1:])
            )
        else:
            described = prose_after(block, cells[0]) > 0
        if described:
            candidates.append((row, name, code, ident))
    if 2 * coded < filled or 2 * named < coded:
        return {}
    return names_defined(candidates)
