"""What changed on a page, and in a symbol's documentation (pure: no Scrapy, no database).

A refresh that stores a page's new text records how it differs from the text it replaces (:func:`page_diff`): the
sections whose text changed, by heading path and anchor, and a unified diff of the Markdown, cut to a size. The
symbol table records a hash of each symbol's documentation text (:func:`symbol_doc_hashes`), so that two versions of
a library can be compared name by name without reading their pages (``docsbot diff``).

A section is a heading and the text up to the next heading of any level (its subsections are sections of their
own), keyed by its heading path; the text before the first heading is the section with the empty path. Sections
are compared with whitespace collapsed, so that re-wrapped text is not a change.

The comparison is linear in the pages' sizes, whatever a site sends: :mod:`difflib`'s matcher is quadratic in the
lines it compares (a page of 8,000 changed sections took 16 s, one of 20,000 more than an extraction worker's
minute), so it is given at most :data:`DIFF_WORK` line pairs per page. A page whose changed lines need more is
first cut where it is certain (the lines common to both ends, then the lines that occur once in each page, in the
same order: patience diff's anchors), and what lies between is compared by :mod:`difflib` while the budget lasts,
else written as replaced; a diff is never longer than ``max_bytes``, and is produced only that far.
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from docsbot.content.chunking import markdown_headings

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = [
    "DEFAULT_DIFF_BYTES",
    "DIFF_WORK",
    "PageDiff",
    "SectionChange",
    "line_opcodes",
    "page_diff",
    "sections_of",
    "symbol_doc_hashes",
]

DEFAULT_DIFF_BYTES = 16384  # DOCSBOT_CHANGE_DIFF_BYTES: a diff longer than this (UTF-8) is cut at a line
# The line pairs difflib may compare for one page (the product of the lengths of what it is given): 4 million is
# about 0.2 s of CPU on lines that interleave matches (its worst case; 2,000 by 2,000 lines), and more than any
# ordinary page's changes need, so that those diffs are difflib's own.
DIFF_WORK = 4_000_000
CONTEXT = 2  # lines of context around each change in the unified diff


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
    offsets = [offset for offset, _ in anchors]
    changes: list[SectionChange] = []
    for key, start, _, body in after:
        old_body = before.pop(key, None)
        if old_body is not None and _normalized(old_body) == _normalized(body):
            continue
        line_end = new.find("\n", start)
        line_end = len(new) if line_end < 0 else line_end
        anchor = None
        if key:  # the first anchor on the heading's line
            at = bisect.bisect_left(offsets, start)
            anchor = anchors[at][1] if at < len(anchors) and offsets[at] <= line_end else None
        changes.append(SectionChange(list(key), anchor, "added" if old_body is None else "modified"))
    changes += [SectionChange(list(key), None, "removed") for key in before]
    lines = _unified(old.splitlines(), new.splitlines(), max_bytes)
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


def _unified(a: list[str], b: list[str], max_lines: int) -> Iterator[str]:
    """The lines of a unified diff of ``a`` and ``b`` (``before`` → ``after``), as :func:`difflib.unified_diff` writes
    one, from :func:`line_opcodes`, lazily: the caller stops reading at its size. A hunk longer than ``max_lines``
    (more than a diff cut at that many bytes can show) is ended there and the next one begins."""
    started = False
    for group in _grouped(line_opcodes(a, b), max_lines):
        if not started:
            started = True
            yield "--- before"
            yield "+++ after"
        first, last = group[0], group[-1]
        old_range = _range(first[1], last[2])
        new_range = _range(first[3], last[4])
        yield f"@@ -{old_range} +{new_range} @@"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A unified diff's ``start,length`` (difflib's ``_format_range_unified``)."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1  # an empty range starts on the line before
    return f"{beginning},{length}"


Opcode = tuple[str, int, int, int, int]


def _grouped(opcodes: Iterator[Opcode], max_lines: int) -> Iterator[list[Opcode]]:
    """``opcodes`` in hunks with :data:`CONTEXT` lines around each change (``SequenceMatcher.get_grouped_opcodes``,
    over an iterator), each of at most about ``max_lines`` lines."""
    group: list[Opcode] = []
    lines = 0
    for tag, i1, i2, j1, j2 in opcodes:
        if lines > max_lines and any(op[0] != "equal" for op in group):
            yield group  # a hunk no cut diff shows whole: ended here, so that nothing after it is computed
            group, lines = [], 0
        lines += (i2 - i1) + (j2 - j1 if tag != "equal" else 0)
        if tag != "equal":
            group.append((tag, i1, i2, j1, j2))
            continue
        if not group:  # the context before the first change
            start = max(i1, i2 - CONTEXT)
            group.append((tag, start, i2, j1 + start - i1, j2))
            continue
        if i2 - i1 > 2 * CONTEXT:  # a long equal run ends this hunk and starts the next one
            group.append((tag, i1, i1 + CONTEXT, j1, j1 + CONTEXT))
            if any(op[0] != "equal" for op in group):
                yield group
            group, lines = [(tag, i2 - CONTEXT, i2, j2 - CONTEXT, j2)], CONTEXT
        else:
            group.append((tag, i1, i2, j1, j2))
    if group and group[-1][0] == "equal":
        tag, i1, i2, j1, j2 = group[-1]
        group[-1] = (tag, i1, min(i2, i1 + CONTEXT), j1, min(j2, j1 + CONTEXT))
    if any(op[0] != "equal" for op in group):
        yield group


def line_opcodes(a: Sequence[str], b: Sequence[str], work: int | None = None) -> Iterator[Opcode]:
    """Opcodes (``SequenceMatcher.get_opcodes``' shape) that turn the lines ``a`` into ``b``, in order. Pages that fit
    ``work`` line pairs (default :data:`DIFF_WORK`) get difflib's own; others (adjacent equal runs merged) get the
    lines common to both ends set aside, then difflib's for the changed middle if it fits, else the lines unique to
    each page taken in the order they share (a longest increasing subsequence, O(n log n)) and between those what
    difflib compares within the remaining ``work``, or a replacement. Lazy: the caller reads as far as it needs."""
    work = DIFF_WORK if work is None else work
    if len(a) * len(b) <= work:  # an ordinary page: difflib's own diff
        yield from _difflib(a, b, 0, 0, [work])
        return
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    budget = [work]
    pending: list[Opcode] = []

    def merged(ops: Iterator[Opcode]) -> Iterator[Opcode]:
        for op in ops:
            if pending and op[0] == "equal" == pending[0][0]:
                pending[0] = ("equal", pending[0][1], op[2], pending[0][3], op[4])
                continue
            if op[1] == op[2] and op[3] == op[4]:
                continue
            if pending:
                yield pending.pop()
            pending.append(op)

    def all_ops() -> Iterator[Opcode]:
        yield ("equal", 0, head, 0, head)
        middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
        if len(middle_a) * len(middle_b) <= budget[0]:
            yield from _difflib(middle_a, middle_b, head, head, budget)
        else:
            previous = (0, 0)
            for i, j in _unique_anchors(middle_a, middle_b):
                yield from _gap(middle_a[previous[0] : i], middle_b[previous[1] : j], head + previous[0],
                                head + previous[1], budget)  # fmt: skip
                yield ("equal", head + i, head + i + 1, head + j, head + j + 1)
                previous = (i + 1, j + 1)
            yield from _gap(middle_a[previous[0] :], middle_b[previous[1] :], head + previous[0],
                            head + previous[1], budget)  # fmt: skip
        yield ("equal", len(a) - tail, len(a), len(b) - tail, len(b))

    yield from merged(all_ops())
    yield from pending


def _difflib(a: Sequence[str], b: Sequence[str], i0: int, j0: int, budget: list[int]) -> Iterator[Opcode]:
    budget[0] -= len(a) * len(b)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        yield (tag, i0 + i1, i0 + i2, j0 + j1, j0 + j2)


def _gap(a: Sequence[str], b: Sequence[str], i0: int, j0: int, budget: list[int]) -> Iterator[Opcode]:
    """The lines between two anchors: difflib's opcodes while the budget lasts (a single line either side needs
    none), else one replacement."""
    if not a or not b or len(a) * len(b) == 1 or len(a) * len(b) > budget[0]:
        tag = "insert" if not a else "delete" if not b else "replace"
        yield (tag, i0, i0 + len(a), j0, j0 + len(b))
        return
    yield from _difflib(a, b, i0, j0, budget)


def _unique_anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """The ``(i, j)`` pairs of lines that occur exactly once in ``a`` and once in ``b``, the longest run of them in
    the same order in both (patience sorting: O(n log n))."""
    counts: dict[str, list[int]] = {}
    for i, line in enumerate(a):
        entry = counts.setdefault(line, [0, 0, i, -1])
        entry[0] += 1
    for j, line in enumerate(b):
        entry = counts.get(line)
        if entry is not None:
            entry[1] += 1
            entry[3] = j
    pairs = sorted((j, i) for n_a, n_b, i, j in counts.values() if n_a == 1 and n_b == 1)
    tails: list[int] = []  # tails[k]: the smallest i ending an increasing run of k + 1 pairs
    tail_at: list[int] = []  # the pair index of each tail
    back = [-1] * len(pairs)
    for index, (_, i) in enumerate(pairs):
        k = bisect.bisect_left(tails, i)
        if k == len(tails):
            tails.append(i)
            tail_at.append(index)
        else:
            tails[k] = i
            tail_at[k] = index
        back[index] = tail_at[k - 1] if k else -1
    run: list[tuple[int, int]] = []
    index = tail_at[-1] if tail_at else -1
    while index >= 0:
        j, i = pairs[index]
        run.append((i, j))
        index = back[index]
    return run[::-1]


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
