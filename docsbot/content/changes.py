"""What changed on a page, and in a symbol's documentation (pure: no Scrapy, no database).

A refresh that stores a page's new text records how it differs from the text it replaces (:func:`page_diff`): the
sections whose text changed, by heading path and anchor, and a unified diff of the Markdown, cut to a size. The
symbol table records a hash of each symbol's documentation text (:func:`symbol_doc_hashes`), so that two versions of
a library can be compared name by name without reading their pages (``docsbot diff``).

A section is a heading and the text up to the next heading of any level (its subsections are sections of their
own), keyed by its heading path; the text before the first heading is the section with the empty path. Sections
are compared with whitespace collapsed, so that re-wrapped text is not a change.
"""

from __future__ import annotations

import difflib
import hashlib
import time
from dataclasses import dataclass, field
from typing import Literal

from docsbot.content.chunking import markdown_headings

__all__ = ["DEFAULT_DIFF_BYTES", "PageDiff", "SectionChange", "page_diff", "sections_of", "symbol_doc_hashes"]

DEFAULT_DIFF_BYTES = 16384  # DOCSBOT_CHANGE_DIFF_BYTES: a diff longer than this (UTF-8) is cut at a line


@dataclass(frozen=True)
class SectionChange:
    """A section whose text changed: ``heading_path`` (outermost first; ``[]`` for the text before the first
    heading), ``anchor`` (the HTML id of its heading on the new page, when the page gave one) and ``change``."""

    heading_path: list[str]
    anchor: str | None
    change: Literal["modified", "added", "removed"]

    def as_dict(self) -> dict[str, object]:
        return {"heading_path": self.heading_path, "anchor": self.anchor, "change": self.change}


@dataclass(frozen=True)
class PageDiff:
    """How a page's new Markdown differs from its old: the changed ``sections`` in the new page's order (removed
    ones where they stood in the old), and ``diff``, a unified diff (old → new, 2 lines of context) of at most
    ``max_bytes`` bytes; ``cut`` says it was shortened."""

    sections: list[SectionChange] = field(default_factory=list)
    diff: str = ""
    cut: bool = False
    seconds: float = 0.0  # CPU seconds the comparison took


def sections_of(markdown: str) -> list[tuple[tuple[str, ...], int, int, str]]:
    """``(heading path, start offset, end offset, own text)`` of each section of ``markdown``, in order. The own
    text runs from the heading line (excluded) to the next heading; a path seen twice gets ``#2``, ``#3``… on its
    last part, so that every key is unique."""
    headings = markdown_headings(markdown)
    out: list[tuple[tuple[str, ...], int, int, str]] = []
    stack: list[tuple[int, str]] = []
    seen: dict[tuple[str, ...], int] = {}
    starts = [(0, 0, None)] + [(offset, level, text) for offset, level, text in headings]
    for i, (offset, level, text) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(markdown)
        if text is None:
            path: tuple[str, ...] = ()
            body = markdown[:end]
            if not body.strip():
                continue
        else:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            path = tuple(t for _, t in stack)
            line_end = markdown.find("\n", offset, end)
            body = markdown[line_end + 1 if line_end >= 0 else end : end]
        count = seen[path] = seen.get(path, 0) + 1
        key = path if count == 1 else (*path[:-1], f"{path[-1] if path else ''}#{count}")
        out.append((key, offset, end, body))
    return out


def _normalized(text: str) -> str:
    return " ".join(text.split())


def page_diff(
    old: str, new: str, anchors: list[tuple[int, str]] | None = None, max_bytes: int = DEFAULT_DIFF_BYTES
) -> PageDiff:
    """The sections whose text differs between ``old`` and ``new`` Markdown and a unified diff of the two.
    ``anchors``: the new page's ``(offset, id)`` anchors (:attr:`docsbot.content.extract.ExtractedPage.anchors`), which
    name a changed section by the id of its heading. Linear in the pages' sizes but for the diff itself
    (:mod:`difflib`, on lines)."""
    started = time.process_time()
    before = {key: body for key, _, _, body in sections_of(old)}
    after = sections_of(new)
    anchors = sorted(anchors or [])
    changes: list[SectionChange] = []
    for key, start, _, body in after:
        old_body = before.pop(key, None)
        if old_body is not None and _normalized(old_body) == _normalized(body):
            continue
        line_end = new.find("\n", start)
        line_end = len(new) if line_end < 0 else line_end
        anchor = next((ident for offset, ident in anchors if start <= offset <= line_end), None) if key else None
        changes.append(SectionChange(list(key), anchor, "added" if old_body is None else "modified"))
    changes += [SectionChange(list(key), None, "removed") for key in before]
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), "before", "after", n=2, lineterm="")
    out: list[str] = []
    size = 0
    cut = False
    for line in lines:
        size += len(line.encode()) + 1
        if size > max_bytes:
            cut = True
            break
        out.append(line)
    if cut:
        out.append("… (diff cut at DOCSBOT_CHANGE_DIFF_BYTES)")
    return PageDiff(changes, "\n".join(out), cut, time.process_time() - started)


def symbol_doc_hashes(markdown: str, anchors: list[tuple[int, str]], symbols: list[tuple[str, ...]]) -> dict[str, str]:
    """``{symbol name: sha256 hex}`` of each symbol's documentation text: the Markdown from its anchor's offset to
    the next anchor's (whitespace collapsed). A symbol whose anchor is not one of ``anchors`` (the page's item, such
    as rustdoc's ``main-content``) is documented by the whole page."""
    ordered = sorted(anchors)
    spans: dict[str, tuple[int, int]] = {}
    for i, (offset, ident) in enumerate(ordered):
        if ident not in spans:
            spans[ident] = (offset, ordered[i + 1][0] if i + 1 < len(ordered) else len(markdown))
    out = {}
    for name, anchor, *_ in symbols:
        start, end = spans.get(anchor, (0, len(markdown)))
        out[name] = hashlib.sha256(_normalized(markdown[start:end]).encode()).hexdigest()
    return out
