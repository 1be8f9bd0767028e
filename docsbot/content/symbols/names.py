"""What markup shows as a name (pure): DocBook's and Sphinx's classes for names and for what is no name, the code
element a table row or list item starts with, the name it shows, and which such names are definitions."""

from __future__ import annotations

import re
from typing import Any

from docsbot.content.identifiers import CAMEL_CASE, NAME_LIKE, NAME_SHAPE
from docsbot.content.markup import text_of

__all__ = [
    "CALL_ARGUMENTS",
    "NAME_CLASSES",
    "NOT_NAME_CLASSES",
    "TERM_WORDS",
    "VALUE_WORDS",
    "code_name",
    "is_code",
    "leading_code",
    "marked_name",
    "names_defined",
    "target_id",
]

TERM_WORDS = re.compile(r"[A-Za-z][\w'-]*(?: [A-Za-z0-9][\w'-]*){1,3}")  # 2 to 4 words: "magic method"
# A call's parameter list at the end of a heading: "()", "(name, value, [dependencies])", "(schema | httpPart)".
CALL_ARGUMENTS = re.compile(r"\((?:[^()]|\([^()]*\))*\)$")
# DocBook's inline elements for names (rendered as <code class="..."> or <span class="...">): a term holding one
# defines that name. Not "literal" (values: <literal>on</literal>) nor "type" (work_mem's "(integer)").
NAME_CLASSES = frozenset(
    {"varname", "envar", "option", "function", "command", "parameter", "property", "classname", "methodname",
     "constant", "structname", "symbol", "returnvalue", "interfacename", "exceptionname"}
)  # fmt: skip

# Definitions in tables and lists (docsbot.content.symbols.tables, .lists). Code that starts a row or an item: a
# <code> or <tt> (Sphinx's <code class="docutils literal"><span class="pre">; DocBook's <code class="function">,
# "envar", "literal"...), or an element of DocBook's name classes (<span class="command">); not code of these
# classes, which shows a type, a return value, a placeholder, a file, a URL or a terminal's text (DocBook).
_CODE_TAGS = frozenset({"code", "tt"})
NOT_NAME_CLASSES = frozenset(
    {"type", "returnvalue", "replaceable", "filename", "uri", "computeroutput", "userinput", "prompt", "email"}
    | {"file", "samp", "mimetype", "regexp", "guilabel", "menuselection"}  # Sphinx's roles for what is no name
)
# What may hold a row's or item's code before it: blocks, emphasis, a target or a link to itself (gi-docgen's
# enum members: <a id="low" href="#low"><code>GTK_PRINT_QUALITY_LOW</code></a>).
_WRAPPER_TAGS = frozenset({"p", "div", "span", "strong", "b", "em", "i", "a"})
# Values, never a defined name: a column or list of them is not one of definitions ("true", "None", "0", "0x1f").
VALUE_WORDS = frozenset({"true", "false", "none", "null", "nil", "yes", "no", "on", "off"})
_NUMBER = re.compile(r"[-+]?(?:0[xX][\da-fA-F]+|\d[\d_.,]*)")


def is_code(el) -> bool:  # noqa: ANN001 - an lxml element
    """Whether ``el`` shows code that may be a name: a ``<code>`` or ``<tt>`` of no class that shows what is no name
    (:data:`NOT_NAME_CLASSES`), or a ``<span>`` of a name class (:data:`NAME_CLASSES`)."""
    classes = el.get("class")
    if el.tag in _CODE_TAGS:
        return not classes or NOT_NAME_CLASSES.isdisjoint(classes.split())
    return el.tag == "span" and bool(classes) and not NAME_CLASSES.isdisjoint(classes.split())


def marked_name(code) -> bool:  # noqa: ANN001 - an lxml element
    """Whether DocBook marks ``code`` as a name (``<code class="envar">``, ``"function"``, ``"varname"``...)."""
    return not NAME_CLASSES.isdisjoint((code.get("class") or "").split())


def target_id(el) -> str | None:  # noqa: ANN001 - an lxml element
    """The id an element without text gives its place (Sphinx's ``<span class="target" id>``, DocBook's empty ``<a
    id|name>``); not an index term's."""
    if "indexterm" in (el.get("class") or "").split():
        return None
    return el.get("id") or (el.get("name") if el.tag == "a" else None)


def leading_code(el) -> tuple[Any, str | None] | None:  # noqa: ANN001 - an lxml element
    """The code element whose text is the first text of ``el`` (a table cell, a list item), reached through
    blocks, emphasis and targets, and the id met on the way (``el``'s own, an empty target's before the code, a
    wrapper's); ``None`` when ``el`` starts with anything else, or its code is (or holds) a link elsewhere: a
    reference to a name, not its definition."""
    node, ident = el, el.get("id")
    while True:
        if (node.text or "").strip():
            return None
        for child in node:
            if not isinstance(child.tag, str):  # a comment
                if (child.tail or "").strip():
                    return None
                continue
            if not len(child) and not (child.text or "").strip() and child.tag != "br":  # an empty target
                ident = ident or target_id(child)
                if (child.tail or "").strip():
                    return None
                continue
            href = child.get("href")
            if href is not None and href != f"#{child.get('id') or child.get('name')}":
                return None
            if is_code(child):
                if any(a.get("href") for a in child.iter("a")) or not child.text_content().strip():
                    return None
                return child, ident or child.get("id")
            classes = child.get("class")
            if child.tag not in _WRAPPER_TAGS or (classes and not NOT_NAME_CLASSES.isdisjoint(classes.split())):
                return None
            ident = ident or target_id(child)
            node = child
            break
        else:
            return None


def code_name(code) -> str | None:  # noqa: ANN001 - an lxml element
    """The name ``code`` shows (a call's without its arguments: ``ceil(x)`` is ``ceil``), "" if it is not shaped
    like a name of at least two characters (nor a path) or goes on as more code or a link (``await loop.foo()``),
    ``None`` if it is a value (``true``, ``None``, ``0``)."""
    text = text_of(code)
    if text.lower() in VALUE_WORDS or _NUMBER.fullmatch(text):
        return None
    name = CALL_ARGUMENTS.sub("", text).strip()
    if len(name) < 2 or not NAME_SHAPE.fullmatch(name) or "/" in name:  # not a path: target/debug/app
        return ""
    following = code.getnext()
    if following is not None and not (code.tail or "").strip() and (following.tag == "a" or is_code(following)):
        return ""
    return name


def names_defined(candidates: list[tuple[Any, str, Any, str | None]]) -> dict[Any, tuple[str, Any, str | None]]:
    """The candidates (row or item, name, code, own id) whose name is one: shaped like an identifier (a dot, an
    underscore, ``::``, a digit after a letter, a leading dash: as for terms; an inner capital in a name that starts
    in lower case, or two in one that does not: ``libraryPath``, ``NoBoundaryInMultipartDefect``), shown as a call
    (``ceil(x)``), marked as a name by DocBook (``<code class="function">ceiling</code>``), under an id of its own,
    or all capitals sharing its first three characters with another of the same table or list (a family of
    constants: ``EPOLLIN``, ``EPOLLOUT``). Not a plain word: ``simple``, ``Clang``, ``STRING`` are values of a
    setting, which the search would take for names whenever a query has that word."""
    capitals = [name for _, name, _, _ in candidates if name.isupper()]
    out = {}
    for owner, name, code, ident in candidates:
        if (
            NAME_LIKE.search(name)
            or len(CAMEL_CASE.findall(name)) > 1
            or marked_name(code)
            or CALL_ARGUMENTS.search(text_of(code))
            or ident
            or (name.isupper() and sum(other[:3] == name[:3] for other in capitals) > 1)
        ):
            out[owner] = (name, code, ident)
    return out
