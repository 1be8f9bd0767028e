"""The sections of a stored page: its ATX headings (outside code fences) with their heading paths, the anchor a
heading is linked by, and the Markdown from one heading to the next of the same or a higher level."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from docsbot.content.chunking import markdown_headings

__all__ = [
    "Heading",
    "anchor_section",
    "find_heading",
    "heading_anchors",
    "page_headings",
    "section_markdown",
    "slugify",
]

_SLUG_DROP = re.compile(r"[^\w\s-]")
_SLUG_SPACE = re.compile(r"[\s_-]+")


def slugify(text: str) -> str:
    """``"Getting started"`` → ``"getting-started"``: the anchor Sphinx, MkDocs and GitHub give a heading."""
    return _SLUG_SPACE.sub("-", _SLUG_DROP.sub("", text.lower())).strip("-")


@dataclass(frozen=True)
class Heading:
    offset: int
    level: int
    text: str
    path: tuple[str, ...]  # the heading's text with those of its ancestors, outermost first


def page_headings(markdown: str) -> list[Heading]:
    """ATX headings outside code fences, each with its heading path (the same paths chunks carry)."""
    out: list[Heading] = []
    stack: list[tuple[int, str]] = []
    for offset, level, text in markdown_headings(markdown):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        out.append(Heading(offset, level, text, tuple(t for _, t in stack)))
    return out


def section_markdown(markdown: str, headings: list[Heading], index: int) -> str:
    """From heading ``index`` to the next heading of the same or a higher level (or the end)."""
    start = headings[index]
    end = next((h.offset for h in headings[index + 1 :] if h.level <= start.level), len(markdown))
    return markdown[start.offset : end].strip()


def find_heading(headings: list[Heading], section: str, anchored_path: list[str] | None) -> int | None:
    """Index of the heading ``section`` names: the heading whose path is ``anchored_path`` (the path of the
    chunks carrying that anchor), else the first whose slug or text equals the section's."""
    if anchored_path:
        for i, h in enumerate(headings):
            if list(h.path) == anchored_path:
                return i
    wanted = section.strip().lstrip("#")
    for i, h in enumerate(headings):
        if slugify(h.text) == slugify(wanted) or h.text.lower() == wanted.lower():
            return i
    return None


def _line_end(markdown: str, offset: int) -> int:
    end = markdown.find("\n", offset)
    return len(markdown) if end < 0 else end


def heading_anchors(markdown: str, headings: list[Heading], anchors: list[tuple[int, str]]) -> dict[int, str]:
    """``{heading index: id}`` for the headings an anchor of the page marks (the first anchor whose offset is on the
    heading's line). O((headings + anchors) log anchors): a page of 20,000 headings and 6,000 anchors is answered
    in milliseconds, not seconds."""
    out: dict[int, str] = {}
    ordered = sorted((offset, ident) for offset, ident in anchors)
    offsets = [offset for offset, _ in ordered]
    for i, h in enumerate(headings):
        first = bisect.bisect_left(offsets, h.offset)
        if first < len(offsets) and offsets[first] <= _line_end(markdown, h.offset):
            out[i] = ordered[first][1]
    return out


def anchor_section(markdown: str, headings: list[Heading], offset: int) -> tuple[int | None, str]:
    """The part of ``markdown`` a deep link to the anchor at ``offset`` points at: ``(heading index, text)``. An
    anchor on a heading's line gives that heading's section (:func:`section_markdown`); an anchor inside a section
    (a definition: a Sphinx signature, a Javadoc member) gives the text from the anchor to the end of the section
    that holds it, under that section's heading (``None`` before the first heading)."""
    found = bisect.bisect_right([h.offset for h in headings], offset)
    index = found - 1 if found else None
    if index is not None and offset <= _line_end(markdown, headings[index].offset):
        return index, section_markdown(markdown, headings, index)
    if index is None:
        end = next((h.offset for h in headings if h.offset > offset), len(markdown))
    else:
        level = headings[index].level
        end = next((h.offset for h in headings[index + 1 :] if h.level <= level), len(markdown))
    return index, markdown[offset:end].strip()
