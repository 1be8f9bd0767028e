"""EmbeddingBatcher as a unit: a pure asyncio component, driven with a fake embedder on its real worker thread."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from docsbot.pipelines import EmbeddingBatcher


class FakeEmbedder:
    """Each text's vector is ``[id of the text]``; records every model call. ``hold`` makes the first call wait
    for ``release`` (so that other pages queue up meanwhile); a text in ``poison`` makes a call raise."""

    name = "test/fake"
    dim = 1

    def __init__(self, hold: bool = False, poison: frozenset[str] = frozenset()) -> None:
        self.calls: list[list[str]] = []
        self.ids: dict[str, int] = {}
        self.hold = hold
        self.poison = poison
        self.started = threading.Event()
        self.release = threading.Event()

    def vector(self, text: str) -> list[float]:
        return [float(self.ids.setdefault(text, len(self.ids) + 1))]

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self.hold and len(self.calls) == 1:
            self.started.set()
            assert self.release.wait(30), "the test never released the first call"
        if self.poison & set(texts):
            raise RuntimeError("model failed")
        return np.array([self.vector(t) for t in texts], dtype=np.float32)


def expected(embedder: FakeEmbedder, texts: list[str]) -> list[list[float]]:
    return [embedder.vector(t) for t in texts]


def pages(n: int, first: int = 0) -> list[list[str]]:
    """Page i has texts of decreasing length, so sorting by length reorders them."""
    return [[f"page {i} text {j} " + "x" * (10 - 3 * j) for j in range(3)] for i in range(first, first + n)]


async def wait_for_first_call(embedder: FakeEmbedder) -> None:
    assert await asyncio.to_thread(embedder.started.wait, 30)


def test_pages_waiting_while_the_model_is_busy_are_merged_into_one_call_sorted_by_length_and_restored():
    embedder = FakeEmbedder(hold=True)
    batcher = EmbeddingBatcher(embedder, max_texts=256)
    first, *later = pages(4)

    async def main():
        head = asyncio.ensure_future(batcher.embed(first))
        await wait_for_first_call(embedder)
        tails = [asyncio.ensure_future(batcher.embed(texts)) for texts in later]
        await asyncio.sleep(0)  # the three pages queue their texts while the first call runs
        embedder.release.set()
        return await asyncio.gather(head, *tails)

    try:
        results = asyncio.run(main())
    finally:
        batcher.close()
    assert len(embedder.calls) == 2  # one call for the first page, one for the three that waited
    assert sorted(embedder.calls[1]) == sorted(t for texts in later for t in texts)
    assert [len(t) for t in embedder.calls[1]] == sorted(len(t) for t in embedder.calls[1])
    assert embedder.calls[1] != [t for texts in later for t in texts]  # sorting did reorder them
    for texts, vectors in zip([first, *later], results, strict=True):
        assert vectors.tolist() == expected(embedder, texts)  # each page gets its own vectors, in its order


def test_a_batch_holds_at_most_max_texts_unless_one_page_is_larger():
    embedder = FakeEmbedder(hold=True)
    batcher = EmbeddingBatcher(embedder, max_texts=6)
    first, *later = pages(4)  # 3 texts each: pages 2-3 fit in one call of 6, page 4 goes to the next

    async def main():
        head = asyncio.ensure_future(batcher.embed(first))
        await wait_for_first_call(embedder)
        tails = [asyncio.ensure_future(batcher.embed(texts)) for texts in later]
        big = asyncio.ensure_future(batcher.embed([f"big {i}" for i in range(9)]))
        await asyncio.sleep(0)
        embedder.release.set()
        return await asyncio.gather(head, *tails, big)

    try:
        results = asyncio.run(main())
    finally:
        batcher.close()
    assert [len(call) for call in embedder.calls] == [3, 6, 3, 9]
    for texts, vectors in zip([first, *later, [f"big {i}" for i in range(9)]], results, strict=True):
        assert vectors.tolist() == expected(embedder, texts)


def test_a_model_error_reaches_every_page_of_its_batch_and_the_next_batch_still_runs():
    embedder = FakeEmbedder(hold=True, poison=frozenset({"poison"}))
    batcher = EmbeddingBatcher(embedder, max_texts=256)

    async def main():
        head = asyncio.ensure_future(batcher.embed(["first page"]))
        await wait_for_first_call(embedder)
        doomed = [asyncio.ensure_future(batcher.embed(texts)) for texts in (["a", "poison"], ["b"], ["c", "d"])]
        await asyncio.sleep(0)
        embedder.release.set()
        first = await head
        outcomes = await asyncio.gather(*doomed, return_exceptions=True)
        after = await batcher.embed(["after the failure"])
        return first, outcomes, after

    try:
        first, outcomes, after = asyncio.run(main())
    finally:
        batcher.close()
    assert first.tolist() == expected(embedder, ["first page"])
    assert len(outcomes) == 3
    for outcome in outcomes:
        assert isinstance(outcome, RuntimeError) and str(outcome) == "model failed"
    assert after.tolist() == expected(embedder, ["after the failure"])
    assert embedder.calls[-1] == ["after the failure"]


@pytest.mark.parametrize("texts", [["only one"], ["same", "same", "same"]])
def test_a_single_page_alone(texts):
    embedder = FakeEmbedder()
    batcher = EmbeddingBatcher(embedder)
    try:
        vectors = asyncio.run(batcher.embed(texts))
    finally:
        batcher.close()
    assert vectors.tolist() == expected(embedder, texts)
    assert embedder.calls == [sorted(texts, key=len)]
