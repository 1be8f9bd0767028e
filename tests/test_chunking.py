from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer

from docsbot.chunking import Chunker, context_line, embed_text

MD = (
    """# Tasks

Intro paragraph about tasks.

## Creating tasks

"""
    + " ".join(f"word{i}" for i in range(300))
    + """

```python
"""
    + "\n".join(f"value_{i} = compute({i}, {i + 1})" for i in range(120))
    + """
```

### Details

Short details.

# Other

Closing words.
"""
)


def test_chunks_fit_the_limit_and_carry_their_heading_path():
    chunker = Chunker(64)
    chunks = chunker.chunks(MD)
    assert all(len(c.content) <= 64 * 4 for c in chunks)
    assert chunks[0].heading_path == ("Tasks",) and chunks[0].content.startswith("# Tasks")
    paths = {c.heading_path for c in chunks}
    assert ("Tasks", "Creating tasks") in paths
    assert any(c.content.startswith("# Other") for c in chunks) or ("Other",) in paths
    # no chunk is only a heading
    assert not any(c.content.strip() == "## Creating tasks" for c in chunks)


def test_long_code_blocks_are_split_between_lines_and_refenced():
    chunks = Chunker(64).chunks(MD)
    code = [c.content for c in chunks if "value_" in c.content]
    assert len(code) > 1
    for text in code:
        assert text.count("```") % 2 == 0, text
        for line in text.splitlines():
            assert line.startswith(("```", "value_")) or not line.strip(), line
    joined = "\n".join(line for text in code for line in text.splitlines() if line.startswith("value_"))
    assert joined.splitlines() == [f"value_{i} = compute({i}, {i + 1})" for i in range(120)]


def test_token_sizing_with_a_real_tokenizer():
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, **{f"w{i}": i + 3 for i in range(50)}}
    tokenizer = Tokenizer.from_str(
        json.dumps(
            {
                "version": "1.0",
                "truncation": {"max_length": 8, "strategy": "LongestFirst", "stride": 0, "direction": "Right"},
                "padding": None,
                "added_tokens": [],
                "normalizer": None,
                "pre_tokenizer": {"type": "Whitespace"},
                "post_processor": None,
                "decoder": None,
                "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
            }
        )
    )
    text = " ".join(f"w{i % 50}" for i in range(200))
    chunks = Chunker(32, tokenizer).chunks(text)
    sizes = [len(c.content.split()) for c in chunks]
    assert sum(sizes) == 200
    assert max(sizes) <= 32  # the tokenizer's truncation at 8 was switched off for sizing
    assert max(sizes) > 8


def test_embed_text_puts_title_and_path_in_front():
    assert context_line("asyncio", ["asyncio", "Tasks"]) == "asyncio > Tasks"
    assert embed_text(context_line("asyncio", ["asyncio", "Tasks"]), "Returns the task.", 200) == (
        "asyncio > Tasks\n\nReturns the task."
    )
    assert embed_text("", "x", 10) == "x"
    assert embed_text("T" * 50, "x", 10).startswith("TTTTTTTTT…\n\n")


def test_tiny_limits_are_rejected():
    with pytest.raises(ValueError, match="max_tokens"):
        Chunker(4)


def test_sections_join_their_subsections_but_never_their_siblings():
    md = "intro\n\n# A\n\ntext a\n\n## A1\n\nsub\n\n## A2\n\nsub2\n\n# B\n\nb"
    chunks = Chunker(64).chunks(md)
    assert [(c.heading_path, c.content) for c in chunks] == [
        ((), "intro"),
        (("A",), "# A\n\ntext a\n\n## A1\n\nsub\n\n## A2\n\nsub2"),
        (("B",), "# B\n\nb"),
    ]


def test_chunks_without_text_outside_headings_are_dropped_but_a_bare_title_keeps_one():
    big = "word " * 300
    md = f"# Module\n\n---\n\n{big}\n\n## Index\n\n|  |  |\n| --- | --- |\n\n{big}"
    chunks = Chunker(64).chunks(md)
    assert chunks and all(any(ch.isalnum() for ch in c.content.replace("#", "")) for c in chunks)
    assert not any(c.content.startswith("# Module") for c in chunks)  # heading + thematic break alone
    assert {c.heading_path for c in chunks} == {("Module",), ("Module", "Index")}
    assert [c.content for c in Chunker(64).chunks("# Only a title")] == ["# Only a title"]


def test_chunks_carry_the_anchor_of_the_heading_or_definition_they_sit_under():
    md = (
        "# Title\n\nintro\n\n## First\n\n"
        + "alpha " * 60
        + "\n\n## Second\n\nbeta text\n\n```\n"
        + "\n".join(f"x = {i}" for i in range(200))
        + "\n```\n\n### Third\n\ngamma"
    )
    anchors = [(md.index("Title"), "top"), (md.index("First"), "first"), (md.index("Second"), "second"),
               (md.index("Third"), "third")]  # fmt: skip
    chunks = Chunker(64).chunks(md, anchors)
    by_heading = {c.heading_path[-1]: c.anchor for c in chunks}
    assert by_heading == {"Title": "top", "First": "first", "Second": "second", "Third": "third"}
    assert len([c for c in chunks if c.heading_path[-1] == "Second"]) > 1  # code pre-split moved offsets
    assert all(c.anchor is None for c in Chunker(64).chunks(md))
