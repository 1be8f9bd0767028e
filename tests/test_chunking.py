from __future__ import annotations

import json
import random
import string

import pytest
from tokenizers import Tokenizer

from docsbot.content import commonmark
from docsbot.content.chunking import (
    Chunker,
    _TokenCounts,
    _words_are_local,
    _WordTokens,
    markdown_headings,
)
from docsbot.embedding.texts import context_line, embed_text

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


def test_the_blocks_of_a_text_with_code_blocks_split_are_what_a_parse_of_it_gives():
    """The chunker moves the headings and code blocks of the Markdown it split code blocks in instead of parsing the
    new text again: on texts made of lines that open, close and indent fences, headings and what interrupts them,
    ending with no line end, one or several (which the last line keeps), the moved blocks equal a parse's."""
    lines = ["# H", "## Sub `x`", "```py", "```", "````", "~~~", "~~~~ ruby", "   ```", "    ```", "\t```", "```  "]
    lines += ["x = 1", "code line with several words in it", "", "text", "- item", "> quote", "#", "# a\r", "   # h"]
    chunker = Chunker(24)
    rng = random.Random(7)
    split = 0
    for _ in range(3000):
        md = "\n".join(rng.choice(lines) for _ in range(rng.randint(1, 30)))
        md += rng.choice(["", "\n", "\n\n", "\n\n\n", "\r\n"])
        text, blocks = chunker._split_long_code_blocks(md)
        assert blocks == commonmark.parse.__wrapped__(text), md
        split += text.count("\n\n```py\n") > md.count("\n\n```py\n")
    assert split > 100  # blocks were cut, not only closed


def test_fences_open_and_close_as_commonmark_says():
    """CommonMark §4.5: a ```` block holds ``` lines (a Markdown example inside Markdown docs), a closing fence has no
    info string, tildes close tildes; a heading inside any of them is code, not a heading. The regular expressions
    had closed a ```` block at its first ``` line, so the example's '# Title' became a section of the page."""
    md = (
        "# Page\n\nIntro.\n\n"
        "````markdown\n```python\nx = 1\n```\n# Not a heading\n````\n\n"
        "## Real\n\n" + "Text of the real section. " * 12 + "\n\n"
        "~~~\n```\n# Also code\n~~~~\n\n"
        "```python\nprint(1)\n```python\n# still code\n```\n\n## Last\n\nEnd."
    )
    assert [h[2] for h in markdown_headings(md)] == ["Page", "Real", "Last"]
    # up to three spaces before a fence or a heading; four make indented code; a backtick fence's info string
    # holds no backtick; a closing fence is as long or longer, of the same character, without an info string
    edges = "   ```py\n# a\n```\n\n    ```\n# b\n\n``` `x`\n# c\n  ## d"
    assert [h[2] for h in markdown_headings(edges)] == ["b", "c", "d"]
    assert [h[2] for h in markdown_headings("```\n# a\n````\n# b")] == ["b"]
    assert markdown_headings("````\n# a\n```\n# b") == [] and markdown_headings("```\n```py\n# a") == []
    assert markdown_headings("```\n~~~\n# a") == [] and markdown_headings("## C#\n")[0][2] == "C#"
    paths = {c.heading_path for c in Chunker(64).chunks(md)}
    assert ("Page", "Not a heading") not in paths and ("Page", "Real") in paths
    # a long ```` block is cut between lines and each piece fenced with ```` again
    long_block = "# T\n\n````\n" + "\n".join(f"```{i}\nline {i} of code here\n```" for i in range(60)) + "\n````\n"
    pieces = [c.content for c in Chunker(64).chunks(long_block) if "of code" in c.content]
    assert len(pieces) > 1 and all(p.count("````") == 2 for p in pieces), pieces


def test_a_definitions_first_paragraphs_keep_a_code_block_whole_and_a_cut_one_closed_with_its_own_fence():
    from docsbot.content.chunking import _cut, _first_paragraphs

    text = "sig(x)\n\n````\n```\n\ninner\n```\n````\n\nThird paragraph."
    assert _first_paragraphs(text, 2) == "sig(x)\n\n````\n```\n\ninner\n```\n````"
    cut = _cut("sig(x)\n\n````\n" + "\n".join(f"line {i}" for i in range(200)), 120)
    assert cut.endswith("\n````") and cut.count("````") == 2


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
    anchors = [
        (md.index("Title"), "top"),
        (md.index("First"), "first"),
        (md.index("Second"), "second"),
        (md.index("Third"), "third"),
    ]
    chunks = Chunker(64).chunks(md, anchors)
    by_heading = {c.heading_path[-1]: c.anchor for c in chunks}
    assert by_heading == {"Title": "top", "First": "first", "Second": "second", "Third": "third"}
    assert len([c for c in chunks if c.heading_path[-1] == "Second"]) > 1  # code pre-split moved offsets
    assert all(c.anchor is None for c in Chunker(64).chunks(md))


def _wordpiece(normalizer: dict | None = None, pre_tokenizer: dict | None = None) -> Tokenizer:
    """A BERT-style tokenizer (BertNormalizer, BertPreTokenizer, WordPiece) whose vocabulary makes words of
    several pieces ("asyncio" is as ##yn ##cio), with padding and truncation on, as model tokenizers ship."""
    pieces = ["as", "##yn", "##cio", "task", "##s", "create", "gather", "run", "##ner", "中", "文", "é"]
    letters = list(string.ascii_lowercase + string.digits + string.punctuation)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *pieces, *letters, *(f"##{c}" for c in letters)]
    return Tokenizer.from_str(
        json.dumps(
            {
                "version": "1.0",
                "truncation": {"max_length": 16, "strategy": "LongestFirst", "stride": 0, "direction": "Right"},
                "padding": {
                    "strategy": {"Fixed": 16},
                    "direction": "Right",
                    "pad_to_multiple_of": None,
                    "pad_id": 0,
                    "pad_type_id": 0,
                    "pad_token": "[PAD]",
                },
                "added_tokens": [],
                "normalizer": normalizer
                or {
                    "type": "BertNormalizer",
                    "clean_text": True,
                    "handle_chinese_chars": True,
                    "strip_accents": None,
                    "lowercase": True,
                },
                "pre_tokenizer": pre_tokenizer or {"type": "BertPreTokenizer"},
                "post_processor": None,
                "decoder": None,
                "model": {
                    "type": "WordPiece",
                    "unk_token": "[UNK]",
                    "continuing_subword_prefix": "##",
                    "max_input_chars_per_word": 100,
                    "vocab": {w: i for i, w in enumerate(vocab)},
                },
            }
        )
    )


NASTY = (
    "# Asyncio tasks\n\nCreate tasks with `asyncio.create_task(coro)`; gather them: asyncio.gather(*aws).\n\n"
    "    - an indented item about runners\n    - another, with ÉCOLE and café\n\n"
    "中文 text beside asyncio\n\n"
    + "asyncio " * 40
    + "\n\n"
    + "x" * 900
    + "\n\n## Tasks\n\n"
    + "runner tasks run. " * 30
    + "\n\n| a | b |\n| --- | --- |\n| create_task | gather |\n"
)


def test_token_counts_of_substrings_are_the_tokenizers_own():
    """_TokenCounts answers the size of any substring from the counts of the text's pieces between spaces and
    newlines: exactly what the tokenizer says of the substring alone, cut between words and inside one (the parts
    of a cut piece are tokenized alone), with the pieces' counts cached or not."""
    tokenizer = _wordpiece()
    tokenizer.no_truncation()
    tokenizer.no_padding()
    words = _WordTokens(tokenizer)
    words.counts(["asyncio", "create_task", "run."])  # counted before, as on an earlier page
    counts = _TokenCounts(words, NASTY)
    rng = random.Random(5)
    spans = [(0, len(NASTY))] + [tuple(sorted(rng.sample(range(len(NASTY) + 1), 2))) for _ in range(3000)]
    for a, b in spans:
        assert counts.count(a, b) == len(tokenizer.encode(NASTY[a:b], add_special_tokens=False).ids), (a, b)
    assert counts.count(5, 5) == 0
    small = _TokenCounts(_WordTokens(tokenizer, limit=8), NASTY)  # the cache starts over on nearly every page
    assert [small.count(a, b) for a, b in spans[:300]] == [counts.count(a, b) for a, b in spans[:300]]


def test_pieces_counted_from_their_words_are_the_tokenizers_own_counts():
    """With BERT's pre-tokenizer a new piece of printable ASCII is counted as the sum of its words (runs of letters
    and digits, each other character alone), the words cached across pieces: exactly the tokenizer's count of the
    piece, also for a piece holding an added token's text (matched before pre-tokenizing: "[SEP]" is one token, not
    three), a word too long for WordPiece, and pieces of other characters (tokenized whole)."""
    tokenizer = _wordpiece()
    tokenizer.add_special_tokens(["[SEP]", "[CLS]"])
    tokenizer.no_truncation()
    tokenizer.no_padding()
    rng = random.Random(7)
    printable = string.ascii_letters + string.digits + string.punctuation
    pieces = [
        *("os.path.join(a,", "asyncio.gather(*aws).", "__init__()", "C++", "1.5e-3", "create_task", "tasks,"),
        *("[SEP]", "x[SEP]y", "[CLS][SEP]", "[sep]", "tasks\t", "café,", "中文.", "ÉCOLE!", "\x00ctl", "\u00a0a"),
        *("x" * 150, "a" * 60 + "." + "a" * 60, "asyncio" * 20, ""),
        *("".join(rng.choices(printable, k=rng.randint(1, 40))) for _ in range(2000)),
    ]
    expected = [len(tokenizer.encode(p, add_special_tokens=False).ids) for p in pieces]
    words = _WordTokens(tokenizer)
    assert sorted(words._added or ()) == ["[CLS]", "[SEP]"]  # counted from words
    assert words.counts(pieces) == expected
    assert words.counts(pieces[::-1]) == expected[::-1]  # from the cache
    assert _WordTokens(tokenizer, limit=50).counts(pieces) == expected  # the cache starting over on the way
    whitespace = _wordpiece(pre_tokenizer={"type": "Whitespace"})  # cuts "os.path" otherwise: counted whole
    whitespace.no_truncation()
    whitespace.no_padding()
    words = _WordTokens(whitespace)
    assert words._added is None
    assert words.counts(pieces) == [len(whitespace.encode(p, add_special_tokens=False).ids) for p in pieces]


def test_word_counts_starting_over_under_threads_stay_exact():
    """DOCSBOT_EXTRACT_POOL=thread shares one chunker, so one cache of word counts, between threads; the tokenizer
    lets go of the GIL while it encodes. A cache that starts over (here on nearly every call) must not lose a word
    another thread has just looked up: every count stays the tokenizer's own."""
    import threading

    tokenizer = _wordpiece()
    tokenizer.no_truncation()
    tokenizer.no_padding()
    words = _WordTokens(tokenizer, limit=24)
    vocabulary = [f"{w}{i}" for i in range(60) for w in ("asyncio", "task", "x" * 120, "中文", "a.b")]
    expected = {w: len(tokenizer.encode(w, add_special_tokens=False).ids) for w in vocabulary}
    failures: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(300):
                pieces = rng.sample(vocabulary, 20)
                assert words.counts(pieces) == [expected[p] for p in pieces]
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_counted_sizes_make_the_same_chunks_as_the_splitters_own():
    """Sizing by one encoding per page changes no chunk: a tokenizer whose normalizer reaches across words (a
    Replace normalizer, here replacing a string the text does not hold) is sized by the splitter itself."""
    local = _wordpiece()
    bert = {
        "type": "BertNormalizer",
        "clean_text": True,
        "handle_chinese_chars": True,
        "strip_accents": None,
        "lowercase": True,
    }
    replace = {"type": "Replace", "pattern": {"String": "@@never@@"}, "content": "x"}
    sized_by_splitter = _wordpiece(normalizer={"type": "Sequence", "normalizers": [bert, replace]})
    assert _words_are_local(local)
    assert not _words_are_local(sized_by_splitter)
    markdown = MD + "\n\n" + NASTY + "\n\n" + NASTY.replace("# Asyncio", "## Again")
    for limit in (16, 24, 64, 200):
        fast = Chunker(limit, local).chunks(markdown)
        slow = Chunker(limit, sized_by_splitter).chunks(markdown)
        assert [(c.content, c.heading_path, c.offset) for c in fast] == [
            (c.content, c.heading_path, c.offset) for c in slow
        ]
        assert len(fast) > 3


def test_tokenizers_that_fold_spaces_into_words_are_sized_by_the_splitter():
    """Byte-level BPE and SentencePiece put the space before a word into its first token: a word's tokens then
    depend on what precedes it, and the substring counts would be wrong."""
    assert not _words_are_local(
        _wordpiece(
            pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
        )
    )
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    tokenizer = _wordpiece(pre_tokenizer=metaspace)
    assert not _words_are_local(tokenizer)
    assert _words_are_local(_wordpiece(pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}]}))
    # Punctuation alone cuts no line at its spaces: a line is one word, its pieces' counts no guide
    assert not _words_are_local(_wordpiece(pre_tokenizer={"type": "Punctuation", "behavior": "Isolated"}))
    chunks = Chunker(32, tokenizer).chunks(NASTY)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    assert all(len(tokenizer.encode(c.content, add_special_tokens=False).ids) <= 32 for c in chunks)


def test_heading_paths_keep_the_names_headings_show_and_drop_emphasis():
    """Headings as CommonMark's inline parser reads them. html-to-markdown leaves underscores and placeholders
    unescaped, so ``__slots__`` and ``CMAKE_<LANG>_FLAGS`` are names, not emphasis or HTML: the regular expressions
    had read them as "_slots_" and "CMAKE<LANG>FLAGS", and a lone ``*`` (``pack-*.idx``) as a marker to drop."""
    from docsbot.content.commonmark import heading_text

    assert heading_text("`__main__` — Top-level code environment") == "__main__ — Top-level code environment"
    assert heading_text("**Bold** and *emphasis* in os.path_join") == "Bold and emphasis in os.path_join"
    assert heading_text("`*args` and ``a`b``") == "*args and a`b"
    assert heading_text(r"\# (hash)") == "# (hash)"
    assert heading_text("3.3.2.4. __slots__") == "3.3.2.4. __slots__"
    assert heading_text("_thread — Low-level threading API") == "_thread — Low-level threading API"
    assert heading_text("CMAKE_<LANG>_LINKER_LAUNCHER") == "CMAKE_<LANG>_LINKER_LAUNCHER"
    assert heading_text("Version 2 pack-*.idx files (N * 4 bytes)") == "Version 2 pack-*.idx files (N * 4 bytes)"
    assert heading_text("[`os.path`](os.path.html) &amp; more") == "os.path & more"


def test_a_fence_is_closed_only_by_its_closing_line_whatever_follows_it():
    """markdown-it-py leaves blank lines at the end of a text out of a block that never closes; the chunker closes
    such a block when it cuts one (a definition's text), so closed and open must still be told apart there."""
    from docsbot.content.commonmark import fences

    def closed(text: str) -> list[bool]:
        return [f.closed for f in fences(text)]

    assert closed("```\na\n```") == [True] and closed("```\na\n```\n\n  ") == [True]
    assert closed("```\na\n```\nafter\n~~~\nb") == [True, False]
    assert closed("```\na") == [False] and closed("```\na\n\n   ") == [False] and closed("````\n```") == [False]
    assert closed("```\r\na\r\n```\r\n") == [True] and fences("no fence here") == ()
    assert [h[2] for h in markdown_headings("# One\r\n\r\n## Two\r\n")] == ["One", "Two"]
