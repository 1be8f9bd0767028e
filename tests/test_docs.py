"""get_docs' packing and resolve_library's matching (docsbot.service.docs): pure, with the real model's tokenizer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from docsbot.service.docs import CUT_MARK, Piece, TokenCounter, cut, fit, name_matches, pack


def model_tokenizer():
    from tokenizers import Tokenizer

    from docsbot.settings import DOCSBOT_MODELS_DIR

    path = Path(DOCSBOT_MODELS_DIR) / "all-MiniLM-L6-v2" / "tokenizer.json"
    if not path.is_file():
        pytest.skip(f"no model tokenizer at {path} (`make model` provisions it)")
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(512)  # as docsbot.embedding.models loads it for the model
    return tokenizer


def section(rng: random.Random, n: int) -> str:
    blocks = []
    for i in range(rng.randint(1, 6)):
        if rng.random() < 0.4:
            body = "\n".join(f"value_{n}_{i}_{j} = compute({j})" for j in range(rng.randint(1, 30)))
            fence = rng.choice(["```", "````", "~~~"])
            inner = "\n```\nnested\n```" if fence == "````" else ""
            blocks.append(f"{fence}python\n{body}{inner}\n\n# not a heading\n{fence}")
        else:
            blocks.append(" ".join(f"word{n}x{k}" for k in range(rng.randint(5, 120))))
    return "\n\n".join(blocks)


def code_blocks(text: str) -> list[str]:
    from docsbot.content.chunking import markdown_blocks

    return [b.rstrip("\n") for b in markdown_blocks(text) if b.lstrip().startswith(("```", "~~~"))]


def test_the_tokens_are_the_models_own_and_not_capped_at_its_input_length():
    tokenizer = model_tokenizer()
    count = TokenCounter(tokenizer)
    text = "asyncio.create_task schedules a coroutine. " * 300
    whole = model_tokenizer()
    whole.no_truncation()
    expected = len(whole.encode(text, add_special_tokens=False).ids)
    assert count(text) == expected > 512  # the model's truncation (512) is off on the counter's copy
    assert tokenizer.truncation is not None  # the model's own tokenizer is left as it was
    assert TokenCounter(None)("x" * 10) == 3  # no tokenizer: characters / 4, rounded up


def test_packed_sections_never_exceed_the_budget_and_cut_a_code_example_only_for_the_top_match():
    count = TokenCounter(model_tokenizer())
    rng = random.Random(7)
    for trial in range(60):
        pieces = [
            Piece(
                f"Page {n}",
                f"https://d/{n}.html",
                f"https://d/{n}.html#s{n % 7}",
                ("Page", f"S{n}"),
                section(rng, n),
                section(rng, n + 1000) if rng.random() < 0.5 else "",
            )  # fmt: skip
            for n in range(rng.randint(1, 12))
        ]
        budget = rng.choice([100, 150, 300, 700, 2000, 5000])
        packed = pack(pieces, budget, count)
        assert sum(tokens for _, _, tokens in packed) <= budget
        assert all(tokens == count(text) for _, text, tokens in packed)
        links = [p.deep_link for p, _, _ in packed]
        assert len(links) == len(set(links))  # one section per deep link
        assert packed[0][0] is pieces[0]  # the top match is always there
        for n, (piece, text, _) in enumerate(packed):
            source = piece.fallback or piece.content
            if text.endswith(CUT_MARK):  # cut inside a block: the top match only, a head of it (a fence closed)
                assert n == 0, (trial, text)
                body = text.removesuffix(CUT_MARK).rstrip()
                assert source.startswith(body) or source.startswith(body.rsplit("\n", 1)[0]), (trial, text)
                continue
            whole = set(code_blocks(piece.content)) | set(code_blocks(piece.fallback))
            assert all(block in whole for block in code_blocks(text)), (trial, text)
            assert text in (piece.content, piece.fallback) or source.startswith(text)
        if len(pieces) > 1:
            assert all(tokens <= max(50, budget // 4) for _, _, tokens in packed[:-1])
            assert all(tokens <= max(50, budget // 8) for _, _, tokens in packed[1:-1])


def test_a_section_that_does_not_fit_is_cut_between_blocks_or_left_out():
    count = TokenCounter(None)
    markdown = "intro " * 20 + "\n\n```\n" + "code line\n" * 50 + "```\n\n" + "after " * 10
    head = fit(markdown, 40, count)
    assert head == ("intro " * 20).rstrip() and count(head) <= 40  # the code block whole, or not at all
    assert fit("```\n" + "x\n" * 400 + "```", 30, count) == ""


@pytest.mark.parametrize(
    ("query", "names", "best"),
    [
        ("Requests", ["requests", "httpx"], ("requests", 1.0)),
        ("scikit_learn", ["scikit-learn", "scipy"], ("scikit-learn", 1.0)),
        ("python-dateutil", ["dateutil", "datetime"], ("dateutil", 0.9)),
        ("lodash", ["lodash.js"], ("lodash.js", 0.9)),
        ("fastapy", ["fastapi", "flask"], ("fastapi", 0.857)),
    ],
)
def test_library_names_are_matched_loosely(query, names, best):
    assert name_matches(query, names)[0] == best


def test_a_name_nothing_indexed_is_close_to_matches_nothing():
    assert name_matches("numpy", ["requests", "flask", "git"]) == []
    assert name_matches("", ["requests"]) == []


def test_the_top_match_is_cut_inside_a_block_rather_than_dropped():
    """Prose by words, code by lines with its fence closed again, a cut head marked; never over the budget."""
    count = TokenCounter(model_tokenizer())
    prose = "## Tasks\n\n" + " ".join(f"word{k}" for k in range(400))
    code = "```python\n" + "\n".join(f"value_{k} = compute({k})" for k in range(200)) + "\n```"
    for budget in (16, 30, 60, 120):
        for markdown in (prose, code, f"{prose}\n\n{code}"):
            text = cut(markdown, budget, count)
            assert text and count(text) <= budget, (budget, text)
            assert text.endswith(CUT_MARK) or markdown.startswith(text)  # inside a block, or between blocks
            if "```" in text:
                assert text.count("```") == 2, text  # a code block cut open is closed again
    assert cut(code, 4, count) == ""  # not even one line of code with its fences fits
    assert cut("short", 10, count) == "short"  # what fits whole is not cut or marked
    # pack: a top match that is one long code example is cut, not left out; the next piece keeps its own rule
    pieces = [
        Piece("A", "https://d/a", "https://d/a#x", ("A",), code),
        Piece("B", "https://d/b", "https://d/b", ("B",), "b"),
    ]
    packed = pack(pieces, 60, count)
    assert packed[0][0].title == "A" and packed[0][1].startswith("```python\nvalue_0") and packed[0][2] <= 60


def test_a_version_without_pages_is_marked_by_its_last_run():
    from datetime import UTC, datetime

    from docsbot.service.states import not_ready_message, version_status

    ended = datetime(2026, 11, 28, tzinfo=UTC)
    failed_root = {"finished_at": ended, "outcome": "failed", "outcome_reason": "the run did not finish (root_failed)",
                   "finish_reason": "root_failed"}  # fmt: skip
    stored_none = {"finished_at": ended, "outcome": "failed", "stats": {"finish_reason": "finished"},
                   "outcome_reason": "the full index stored no page (responses 200: 1)"}  # fmt: skip
    killed = {"finished_at": None, "outcome": "interrupted", "outcome_reason": "the process ended"}
    assert version_status(5, True, failed_root) == ("ready", None)  # pages answer whatever the last run did
    assert version_status(0, True, None)[0] == "indexing"
    assert version_status(0, False, None)[0] == "not_indexed"
    assert version_status(0, False, failed_root) == (
        "failed",
        "its last run failed (the run did not finish (root_failed))",
    )
    assert version_status(0, False, stored_none)[0] == "empty"
    assert "responses 200: 1" in version_status(0, False, stored_none)[1]
    assert version_status(0, False, killed) == ("failed", "its last run was interrupted: the process ended")
    message = not_ready_message("lib@2.0", "indexing", "a run of it is in progress", ["lib@1.0"])
    assert message.startswith("lib@2.0 has no pages (being indexed: a run of it is in progress); try again")
    assert message.endswith("versions with pages: lib@1.0") and "\n" not in message


def test_an_unknown_name_gets_the_nearest_indexed_names():
    from docsbot.service.search import unknown_message
    from docsbot.store import VersionRow

    known = [VersionRow(i, lib, name, "", {}, None, None) for i, (lib, name) in enumerate(
        [("fastapi", "0.110"), ("flask", "3.0"), ("requests", "2.31"), ("requests", "2.32")])]  # fmt: skip
    assert unknown_message(known, "fastapy", None) == (
        "fastapy is not indexed; did you mean fastapi? indexed: fastapi@0.110, flask@3.0, requests@2.31, requests@2.32"
    )
    assert unknown_message(known, "requests", "2.3").startswith(
        "requests@2.3 is not indexed; did you mean requests@2.32, requests@2.31?"  # newest first
    )
    assert unknown_message(known, "numpy", None).startswith("numpy is not indexed; indexed: ")  # nothing close
    many = [VersionRow(i, f"lib{i:02}", "1", "", {}, None, None) for i in range(30)]
    assert unknown_message(many, "zzz", None).endswith("lib19@1 and 10 more")


def test_the_whole_reply_fits_max_tokens_and_holds_the_top_match():
    """get_docs' reply, its Markdown and its JSON together, counted as sent: never over max_tokens, the count
    it states is the count, and the top match is always its first section."""
    from docsbot.service.docs import docs_markdown
    from docsbot.service.errors import Invalid
    from docsbot.service.models import DocsResult
    from docsbot.service.reading import _fit_reply, reply_tokens

    count = TokenCounter(model_tokenizer())
    rng = random.Random(11)
    for trial in range(12):
        pieces = [
            Piece(
                f"Page {n}",
                f"https://docs.example.org/{n}.html",
                f"https://docs.example.org/{n}.html#s{n}",
                ("Page", f"S{n}"),
                section(rng, n),
            )  # fmt: skip
            for n in range(rng.randint(1, 10))
        ]
        budget = rng.choice([300, 500, 1000, 3000])
        empty = DocsResult(library="lib", version="1.0", topic="what", max_tokens=budget, tokens=0, sections=[])
        for forms in (("markdown", "json"), ("markdown",), ("json",)):
            result = _fit_reply(pieces, empty, forms, count)
            counted = reply_tokens(result, forms, count)
            assert counted <= result.tokens <= budget, (trial, forms)
            assert result.tokens - counted <= 2  # exact, or where the count's digits cannot state it, just over
            assert result.sections[0].deep_link == pieces[0].deep_link
        both = count(docs_markdown(result)) + count(result.model_dump_json())
        assert both == reply_tokens(result, ("markdown", "json"), count)
    tiny = DocsResult(library="lib", version="1.0", topic="x " * 400, max_tokens=300, tokens=0, sections=[])
    with pytest.raises(Invalid, match=r"^max_tokens: 300 cannot hold the reply's own fields"):
        _fit_reply(pieces, tiny, ("markdown", "json"), count)
