"""Words of description (pure): the text around a name shown as code in a table row or list item, and whether it
describes the name in words."""

from __future__ import annotations

import re

import lxml.etree

from docsbot.content.identifiers import CAMEL_CASE
from docsbot.content.symbols.names import VALUE_WORDS, is_code

__all__ = [
    "BLOCK_TAGS",
    "block_of",
    "in_words",
    "more_code",
    "prose",
    "prose_after",
    "prose_words",
    "text_after",
    "text_beyond",
]

BLOCK_TAGS = frozenset({"p", "div", "pre", "ul", "ol", "dl", "table", "blockquote", "li", "td", "th", "dd", "dt"})
_PUNCTUATION = ".,;:!?()[]{}\"'\u2018\u2019\u201c\u201d"


def prose(el) -> str:  # noqa: ANN001 - an lxml element
    """The text of ``el`` outside code (its code elements' and code blocks' text left out, their tails kept)."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and child.tag not in ("pre", "kbd", "samp") and not is_code(child):
            parts.append(prose(child))
        parts.append(child.tail or "")
    return " ".join(parts)


def prose_words(text: str) -> int:
    """Words of prose in ``text``: of letters (an inner hyphen or apostrophe), not all capitals (``LOG_CRON``,
    ``GNU``), not camel-cased (``NotImplemented``), not a value (``true``)."""
    words = 0
    for token in text.split():
        word = token.strip(_PUNCTUATION)
        if (
            len(word) > 1
            and word[0].isalpha()
            and word.replace("-", "").replace("'", "").replace("\u2019", "").isalpha()
            and not word.isupper()
            and not CAMEL_CASE.search(word)
            and word.lower() not in VALUE_WORDS
        ):
            words += 1
    return words


def in_words(outside_code: str, text: str) -> bool:
    """Whether ``text`` (``outside_code``: its part outside code) is a description in words: more than half of its
    tokens are words of prose (not a list of flags, "-Wl,-z,rescan-start /path/to/lib1.a", code, "<PREFIX>_RESTRICT
    restrict", nor a pointer to another name, "use PyFrame_GetBuiltins()")."""
    return 2 * prose_words(outside_code) > len(text.split()) and not _POINTER.match(text)


# A description that sends the reader to another name, or says the name is gone, is none (porting notes: "f_lasti:
# use PyFrame_GetLasti()", "f_iblock: removed.", "PySet_ClearFreeList(): the set free list has been removed").
_POINTER = re.compile(
    r"\s*(?:use|see|replaced by|renamed to|moved to|removed|deprecated)\b|.*\b(?:has|have) been removed\b",
    re.IGNORECASE | re.DOTALL,
)


def block_of(code, stop):  # noqa: ANN001, ANN202 - lxml elements
    """The innermost block element holding ``code`` inside ``stop`` (``stop`` itself if none)."""
    for ancestor in code.iterancestors():
        if ancestor is stop or ancestor.tag in BLOCK_TAGS:
            return ancestor
    return stop


def text_after(code, block, outside_code: bool = False) -> str:  # noqa: ANN001 - lxml elements
    """The inline text that follows ``code`` in ``block``, up to the next block element (``outside_code``: its part
    outside code, :func:`prose`)."""
    parts: list[str] = []
    node = code
    while node is not block:
        parts.append(node.tail or "")
        for sibling in node.itersiblings():
            if sibling.tag in BLOCK_TAGS:
                return " ".join(parts)
            if isinstance(sibling.tag, str):
                parts.append(prose(sibling) if outside_code else sibling.text_content())
            parts.append(sibling.tail or "")
        node = node.getparent()
    return " ".join(parts)


def text_beyond(block, stop) -> bool:  # noqa: ANN001 - lxml elements
    """Whether ``stop`` (a cell) has text after its first ``block``: more than the one name it starts with (a cell
    listing several, one a line)."""
    node = block
    while node is not stop and node is not None:
        if any((sibling.tail or "").strip() for sibling in [node, *node.itersiblings()]):
            return True
        if any(isinstance(sibling.tag, str) and sibling.text_content().strip() for sibling in node.itersiblings()):
            return True
        node = node.getparent()
    return False


def more_code(code, stop) -> bool:  # noqa: ANN001 - lxml elements
    """Whether more code follows ``code`` in ``stop`` (a cell): a cell of several names ("``type::ident``,
    ``<type as trait>::ident``"), not one with its signature (PostgreSQL's types are no names: ``ceiling (
    numeric )``)."""
    node = code
    while node is not stop and node is not None:
        for sibling in node.itersiblings():
            if isinstance(sibling.tag, str) and any(is_code(el) for el in sibling.iter(lxml.etree.Element)):
                return True
        node = node.getparent()
    return False


def prose_after(block, stop) -> int:  # noqa: ANN001 - lxml elements
    """Words of prose in ``stop`` (a cell, an item) after its first ``block``: the description paragraphs."""
    words = 0
    node = block
    while node is not stop and node is not None:
        for sibling in node.itersiblings():
            if isinstance(sibling.tag, str):
                words += prose_words(prose(sibling))
            words += prose_words(sibling.tail or "")
        node = node.getparent()
    return words
