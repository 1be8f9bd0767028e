"""Where a page's Markdown has its headings and its fenced code, as CommonMark reads it (markdown-it-py's tokens).

The chunker, the definitions embedded on their own, ``get_docs``' sections and the change log ask two things of a
page's Markdown: which lines are ATX headings (§4.2), and which lines a fenced code block spans (§4.5), so that a
``# comment`` in a code example is never a section. The rules are markdown-it-py's block parser's with the block
rules that decide them at the top level: indented code, fences, ATX headings, and paragraphs (which a heading or a
fence may interrupt). Inline parsing is off, and so are lists, block quotes, tables, HTML blocks, setext headings,
thematic breaks and link references, which change nothing here: the chunker reads top-level headings only. Under
those rules only a line indented less than four columns whose first character is ``#``, a backtick or ``~`` can
open or close a block, so :func:`parse` reads those lines alone, with the parser's ``heading`` and ``fence`` rules
written out (``_BLOCK``, the parser, stays the reference the tests compare with on random texts, and decides
whether a block that reaches the end was closed). Over the Python docs' 11 MB of Markdown that takes 0.2 s, against
0.7 s for the parser's tokens with these rules, 2.2 s with every block rule and 6.5 s for a whole parse.

A heading's words come from markdown-it-py's inline parser (:func:`heading_text`). Line ends are ``\\n``: a ``\\r``
is read as a space, so line numbers stay those of ``text.split("\\n")``.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import mdTrim

__all__ = ["Blocks", "Fence", "Heading", "fences", "heading_text", "line_starts", "parse"]

_BLOCK = (
    MarkdownIt("commonmark")
    .disable(["inline", "text_join"])
    .disable(["table", "blockquote", "hr", "list", "reference", "html_block", "lheading"], ignoreInvalid=True)
)
_INLINE = MarkdownIt("commonmark")

# markdown-it-py logs a DEBUG record as it enters each block rule on each line (fence, paragraph, heading...): about
# 365,000 records for the Python docs. Scrapy leaves the root logger at DEBUG (its handler filters by LOG_LEVEL), so
# each was built and dropped: 3-4 s of the crawl process's CPU, more than the parse itself.
logging.getLogger("markdown_it").setLevel(logging.INFO)


@dataclass(frozen=True)
class Fence:
    """A fenced code block: lines ``start`` (the opening fence) to ``end`` (exclusive: past the closing fence, or
    the end of the text for a block never closed), the opening ``marker`` (three or more backticks or tildes, which
    :meth:`Blocks.fences` also closes a block with) and whether the text ``closed`` it."""

    start: int
    end: int
    marker: str
    closed: bool

    @property
    def body(self) -> range:
        """The lines inside the fences."""
        return range(self.start + 1, self.end - 1 if self.closed else self.end)


@dataclass(frozen=True)
class Heading:
    """An ATX heading: its ``line``, character ``offset`` and ``end`` (the line's end, without ``\\n``), ``level``
    (1-6) and ``text`` (its words, :func:`heading_text`)."""

    line: int
    offset: int
    end: int
    level: int
    text: str


@dataclass(frozen=True)
class Blocks:
    """The headings and fenced code blocks of a text, in order, and where each of its lines starts."""

    text: str
    line_starts: tuple[int, ...]
    headings: tuple[Heading, ...]
    fences: tuple[Fence, ...]

    def line(self, number: int) -> str:
        """Line ``number`` without its ``\\n``."""
        start = self.line_starts[number]
        end = self.line_starts[number + 1] - 1 if number + 1 < len(self.line_starts) else len(self.text)
        return self.text[start:end]


@lru_cache(maxsize=16)
def parse(text: str) -> Blocks:
    """The :class:`Blocks` of ``text`` (CommonMark 0.31 as markdown-it-py's block parser reads it with the rules
    above; cached for the last 16 texts: the chunker, the definitions and the change log read the same page in
    turn)."""
    starts = line_starts(text)
    if "#" not in text and "```" not in text and "~~~" not in text:  # no heading, no fence: nothing to parse
        return Blocks(text, tuple(starts), (), ())
    headings, fences = _blocks(text, starts)
    return Blocks(text, tuple(starts), tuple(headings), tuple(fences))


# A line that may open or close a block here: at most three columns of spaces and tabs (four or more make it
# indented code or a paragraph's continuation), then "#", "`" or "~". No other line can be a heading or a fence,
# nor end one: with lists, block quotes and HTML blocks off, a paragraph or an indented code block changes nothing
# about the lines after it that these rules read.
_CANDIDATE = re.compile(r"^[ \t]*[#`~]", re.MULTILINE)
_SPACE_OR_TAB = " \t"


def _blocks(text: str, starts: list[int]) -> tuple[list[Heading], list[Fence]]:
    """The ATX headings and fenced code blocks of ``text``, whose lines start at ``starts``, as markdown-it-py's
    block parser finds them with the rules of ``_BLOCK`` (its ``heading`` and ``fence`` rules, read line by line on
    the candidate lines only). Over the
    Python docs' 11 MB of Markdown this takes a tenth of the parser's CPU (its tokens: a state per line, a rule
    call per line and rule)."""
    original = text
    if "\r" in text or "\0" in text:  # markdown-it-py's normalization, one character for one
        text = text.replace("\r", " ").replace("\0", "\ufffd")
    length = len(text)
    line_max = len(starts)  # markdown-it-py drops a last line of spaces and tabs that no line end closes
    if line_max and not text.endswith("\n") and not text[starts[-1] :].strip(_SPACE_OR_TAB):
        line_max -= 1
    candidates: list[tuple[int, int, int, int]] = []  # (line, first character, line end, indent in columns)
    for match in _CANDIDATE.finditer(text):
        begin = match.start()
        first = match.end() - 1
        columns = 0
        for ch in text[begin:first]:
            columns += 4 - columns % 4 if ch == "\t" else 1
        if columns >= 4:
            continue
        line_end = text.find("\n", first)
        candidates.append((bisect_right(starts, begin) - 1, first, length if line_end < 0 else line_end, columns))
    headings: list[Heading] = []
    fences: list[Fence] = []
    i = 0
    while i < len(candidates):
        line, pos, end, _ = candidates[i]
        i += 1
        if line >= line_max:
            break
        marker = text[pos]
        if marker == "#":
            level = 1
            at = pos + 1
            while at < end and text[at] == "#" and level <= 6:
                level += 1
                at += 1
            if level > 6 or (at < end and text[at] not in _SPACE_OR_TAB):
                continue
            stop = end
            while stop > at and text[stop - 1] in _SPACE_OR_TAB:
                stop -= 1
            back = stop
            while back > at and text[back - 1] == "#":
                back -= 1
            if back > at and text[back - 1] in _SPACE_OR_TAB:
                stop = back
            line_end = starts[line + 1] - 1 if line + 1 < len(starts) else length
            headings.append(Heading(line, starts[line], line_end, level, heading_text(mdTrim(text[at:stop]))))
            continue
        run = pos
        while run < end and text[run] == marker:
            run += 1
        size = run - pos
        if size < 3 or (marker == "`" and "`" in text[run:end]):
            continue
        fence_end = line_max  # a block no line closes runs to the end
        while i < len(candidates):
            other, at, other_end, _ = candidates[i]
            i += 1
            if other >= line_max:
                break
            if text[at] != marker:
                continue
            close = at
            while close < other_end and text[close] == marker:
                close += 1
            if close - at >= size and not text[close:other_end].strip(_SPACE_OR_TAB):
                fence_end = other + 1
                break
        closed = fence_end - line > 1 and _closes(original, starts, line, fence_end)
        fences.append(Fence(line, fence_end, text[pos:run], closed=closed))
    return headings, fences


def line_starts(text: str) -> list[int]:
    """The character offset of each line of ``text`` (a ``\\n`` that ends the text starts no line)."""
    starts = [0]
    at = text.find("\n")
    while at >= 0 and at + 1 < len(text):
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def fences(text: str) -> tuple[Fence, ...]:
    """The fenced code blocks of ``text`` (:func:`parse`'s, without parsing a text that holds no fence marker)."""
    return parse(text).fences if "```" in text or "~~~" in text else ()


def _closes(text: str, starts: list[int], start: int, end: int) -> bool:
    """Whether line ``end - 1`` closes the block line ``start`` opens. A block followed by more text was closed;
    one that reaches the end (or blank lines at the end, which markdown-it-py leaves out of it) was if its opening
    and last lines, followed by one more line, make a block that ends before that line."""
    if end < len(starts) and text[starts[end] :].strip():
        return True
    last_end = starts[end] - 1 if end < len(starts) else len(text)
    pair = text[starts[start] : starts[start + 1] - 1] + "\n" + text[starts[end - 1] : last_end].rstrip("\n") + "\nx"
    tokens = _BLOCK.parse(pair.replace("\r", " "))
    return any(t.type == "fence" and t.map == [0, 2] for t in tokens)


def heading_text(markdown: str) -> str:
    """A heading's words, as CommonMark's inline parser reads them: code spans keep what they hold (``__main__``,
    ``*args``), ``*`` emphasis markers go while ``_`` ones stay (``__slots__``, ``__init__``: html-to-markdown does
    not escape underscores), a link keeps its text, what reads as an inline HTML tag (``<LANG>``, a placeholder)
    stays as written, backslash escapes and entities are undone."""
    if not markdown:
        return ""
    out: list[str] = []
    for token in _INLINE.parseInline(markdown)[0].children or ():
        if token.type in ("text", "code_inline"):
            out.append(token.content)
        elif token.type in ("em_open", "em_close", "strong_open", "strong_close") and token.markup[0] == "_":
            out.append(token.markup)  # html-to-markdown leaves underscores unescaped: __slots__ is a name
        elif token.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif token.type in ("image", "html_inline"):  # an image's alt text; a placeholder as written (<LANG>)
            out.append(token.content)
    return "".join(out).strip()
