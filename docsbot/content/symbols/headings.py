"""Definitions in headings (pure): a heading that is all code (Markdown's ``## `useData` ``: mdBook, VitePress,
Docusaurus, MkDocs) or plain text shaped as a member or a call (``.code(statusCode)``)."""

from __future__ import annotations

import re

from docsbot.content.identifiers import NAME_SHAPE
from docsbot.content.markup import PERMALINK_GLYPH, text_of
from docsbot.content.symbols.names import CALL_ARGUMENTS

__all__ = ["code_heading_name"]

# A heading of plain text naming a member (".statusCode") or a call (".code(statusCode)", "reply.send(data)").
_MEMBER_HEADING = re.compile(r"\.?([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(\((?:[^()]|\([^()]*\))*\))?")


def code_heading_name(heading, member_titles: frozenset[str] = frozenset()) -> str:  # noqa: ANN001 - an lxml element
    """The name a heading that is all code defines (Markdown's ``## `useData` ``: mdBook, VitePress, Docusaurus,
    MkDocs pages documenting an API or a configuration key; with its parameters, ``## `decorate(name, value)` ``
    defines ``decorate``), or "". A heading of plain text defines a name when it is shaped as a member or a call:
    ``.statusCode``, ``.code(statusCode)``, ``reply.header(key, value)`` (Fastify's Docusaurus reference; a plain
    word or phrase, or a call without parameters, never is), unless the heading has a class of ``member_titles``
    (Doxygen's ``memtitle``: a member title its generator qualifies). A permalink's glyph (``¶``, ``#``, a
    zero-width space) after it does not count."""
    text = PERMALINK_GLYPH.sub("", text_of(heading).replace("\u200b", "")).strip()
    codes = heading.xpath(".//code")
    if len(codes) == 1 and text_of(codes[0]) == text:
        name = CALL_ARGUMENTS.sub("", text)
        return name if NAME_SHAPE.fullmatch(name) else ""
    if codes:
        return ""
    member = _MEMBER_HEADING.fullmatch(text)
    if not member or not member_titles.isdisjoint((heading.get("class") or "").split()):
        return ""
    # a call with parameters, or a member; not "Py_RunMain()" (a Sphinx section that its signature names below)
    return member.group(1) if text.startswith(".") or (member.group(2) or "()") != "()" else ""
