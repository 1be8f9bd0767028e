"""get_docs' packing and resolve_library's matching (docsbot.service.docs): pure, with the real model's tokenizer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from docsbot.service.docs import Piece, TokenCounter, fit, name_matches, pack


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


def test_packed_sections_never_exceed_the_budget_and_never_cut_a_code_example():
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
        for piece, text, _ in packed:
            whole = set(code_blocks(piece.content)) | set(code_blocks(piece.fallback))
            assert all(block in whole for block in code_blocks(text)), (trial, text)
            assert text in (piece.content, piece.fallback) or (piece.fallback or piece.content).startswith(text)
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
