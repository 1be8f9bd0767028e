"""Where a page's Markdown has its headings and its fenced code (docsbot.content.commonmark): the line reader gives
what markdown-it-py's block parser, with the same rules, gives."""

from __future__ import annotations

import random

import pytest

from docsbot.content import commonmark
from docsbot.content.commonmark import Blocks, Fence, Heading, parse


def _parsed_by_markdown_it(text: str) -> Blocks:
    """The :class:`Blocks` of ``text`` from markdown-it-py's tokens (``commonmark._BLOCK``): the reference."""
    starts = commonmark.line_starts(text)
    tokens = commonmark._BLOCK.parse(text.replace("\r", " "))
    headings: list[Heading] = []
    fences: list[Fence] = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            line = token.map[0]
            end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
            content = commonmark.heading_text(tokens[i + 1].content)
            headings.append(Heading(line, starts[line], end, len(token.markup), content))
        elif token.type == "fence":
            start, end = token.map
            closed = end - start > 1 and commonmark._closes(text, starts, start, end)
            fences.append(Fence(start, end, token.markup, closed))
    return Blocks(text, tuple(starts), tuple(headings), tuple(fences))


# Lines that open, close or only look like blocks: heading levels 1-7, closing sequences, indentation by spaces and
# tabs up to and past four columns, fences of both markers and lengths, info strings with a backtick, a NUL (which
# markdown-it-py reads as U+FFFD), a no-break space (not CommonMark whitespace), a \r (read as a space).
LINES = [
    "# H", "## Sub `x`", "###### six", "####### seven", "#hash", "# a #", "# a \\#", "# b ##  ", "#\t", "#", " # h",
    "   # h", "    # h", "\t# h", " \t# h", "```py", "```", "````", "``", "~~~", "~~~~ ruby", "~~~ a ` b", "``` a ` b",
    "   ```", "    ```", "\t```", "  \t```", "```  ", "``` \t", "```x", "~~~  ", "````` ", "x = 1", "",
    " ", "\t", "text", "- item", "> quote", "# a\r", "a\rb", "\x00# n", "# \x00x", "\xa0# nb", "# x\xa0", "\u2003```",
]  # fmt: skip
ENDINGS = ["", "\n", "\n\n", " ", "  \t", "\n ", "\r\n"]


@pytest.mark.parametrize("seed", range(4))
def test_the_line_reader_finds_the_headings_and_fences_markdown_its_parser_finds(seed: int) -> None:
    rng = random.Random(seed)
    found = 0
    for _ in range(2500):
        text = "\n".join(rng.choice(LINES) for _ in range(rng.randint(0, 25))) + rng.choice(ENDINGS)
        blocks = parse.__wrapped__(text)
        assert blocks == _parsed_by_markdown_it(text), text
        found += len(blocks.headings) + len(blocks.fences)
    assert found > 5_000  # the texts hold blocks, not only lines that read as text
    for _ in range(5000):  # any mix of the characters that matter, lines cut anywhere
        text = "".join(rng.choice("##``~~ \t\n\n\nxa-*\\\r\0\xa0") for _ in range(rng.randint(0, 60)))
        assert parse.__wrapped__(text) == _parsed_by_markdown_it(text), text


def test_a_block_no_line_closes_runs_to_the_last_line_and_a_closing_sequence_leaves_the_heading() -> None:
    text = "# Title ##\n\n    # indented: code\n````md\n```\n# not a heading\n``` \n````  \n## Next #\n~~~\nopen"
    blocks = parse.__wrapped__(text)
    assert [(h.line, h.level, h.text) for h in blocks.headings] == [(0, 1, "Title"), (8, 2, "Next")]
    assert blocks.fences == (Fence(3, 8, "````", True), Fence(9, 11, "~~~", False))
