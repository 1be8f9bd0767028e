"""The embedding queue (docsbot/embedding/worker.py) against a real PostgreSQL + pgvector: chunks without a vector are
the queue; workers claim them with FOR UPDATE SKIP LOCKED, embed each text once, and lose nothing when stopped."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import numpy as np
import pytest

from docsbot import store
from docsbot.embedding.models import EmbeddingModelError
from docsbot.embedding.texts import embed_key, embed_text
from docsbot.embedding.worker import EmbeddingWorker, ModelRunner
from tests.embedders import HashingEmbedder

MODEL = HashingEmbedder.name


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder that records every text it embeds. With ``hold``, call number ``hold`` (1-based) sets
    ``held`` and waits until ``gate`` is set."""

    def __init__(self, gate: threading.Event | None = None, dim: int = 384, hold: int | None = None) -> None:
        self.texts: list[str] = []
        self.gate = gate
        self.hold = hold
        self.calls = 0
        self.held = threading.Event()
        self.threads: set[int] = set()
        self.out_dim = dim

    def embed(self, texts):
        self.threads.add(threading.get_native_id())
        self.calls += 1
        if self.gate is not None and (self.hold is None or self.calls == self.hold):
            self.held.set()
            assert self.gate.wait(30), "the test never opened the gate"
        self.texts.extend(texts)
        vectors = super().embed(texts)
        return vectors[:, : self.out_dim] if self.out_dim != 384 else vectors


@pytest.fixture
def conn(database_url):
    with store.connect(database_url, autocommit=True) as conn:
        store.migrate(conn)
        yield conn


def add_version(conn, name: str) -> int:
    row = store.upsert_version(conn, "lib", name, "http://h/docs/", {})
    store.bind_model(conn, row, MODEL, lambda: 384)
    return row.id


def add_page(conn, version_id: int, path: str, texts: list[str], context: str = "Page") -> int:
    """A stored page whose chunks wait for their vectors (as the store writes them when no vector is stored)."""
    (page_id,) = conn.execute(
        "INSERT INTO pages (version_id, url, depth) VALUES (%s, %s, 1) RETURNING id",
        (version_id, f"http://h/docs/{path}"),
    ).fetchone()
    for order, content in enumerate(texts):
        key = embed_key(MODEL, embed_text(context, content, None))
        conn.execute(
            "INSERT INTO documents (page_id, version_id, content, context, sort_order, embed_hash) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (page_id, version_id, content, context, order, key),
        )
    return page_id


def vectors(conn) -> dict[int, np.ndarray | None]:
    return dict(conn.execute("SELECT id, embedding FROM documents ORDER BY id").fetchall())


def drain(database_url, embedder, **kwargs) -> tuple:
    runner = ModelRunner(embedder, nice=kwargs.pop("nice", 0))
    worker = EmbeddingWorker(database_url, runner, model=MODEL, **kwargs)
    try:
        return asyncio.run(worker.run()), worker
    finally:
        runner.close()


def test_a_worker_embeds_each_text_once_and_gives_every_chunk_of_it_its_vector(conn, database_url):
    v1, v2 = add_version(conn, "1"), add_version(conn, "2")
    shared = ["Availability: Unix.", "Returns the task object."]
    add_page(conn, v1, "a.html", ["Create a task.", *shared])
    add_page(conn, v1, "b.html", [*shared, "Gather awaitables."])
    add_page(conn, v2, "a.html", ["Create a task.", "New in version 2."])  # another version, same model
    embedder = CountingEmbedder()
    stats, worker = drain(database_url, embedder, claim=3)
    distinct = {"Create a task.", *shared, "Gather awaitables.", "New in version 2."}
    assert sorted(t.split("\n\n", 1)[1] for t in embedder.texts) == sorted(distinct)  # each text once
    assert stats.embedded == len(distinct) and stats.written == 8 and stats.error is None
    stored = vectors(conn)
    assert all(v is not None for v in stored.values())
    expected = HashingEmbedder().embed([embed_text("Page", "Returns the task object.", None)])[0]
    rows = conn.execute("SELECT embedding FROM documents WHERE content = 'Returns the task object.'").fetchall()
    assert len(rows) == 2 and all(np.allclose(r[0].to_numpy(), expected) for r in rows)
    assert store.waiting_chunks(conn) == 0 and worker.waiting == 0
    (row,) = conn.execute("SELECT model, embedded, written, finished_at IS NOT NULL FROM embed_workers").fetchall()
    assert row == (MODEL, len(distinct), 8, True)


def test_a_text_whose_vector_is_stored_already_is_not_embedded_again(conn, database_url):
    version = add_version(conn, "1")
    add_page(conn, version, "a.html", ["Old text."])
    drain(database_url, CountingEmbedder())
    add_page(conn, version, "b.html", ["Old text.", "New text."])  # a page stored before the vector was there
    embedder = CountingEmbedder()
    stats, _ = drain(database_url, embedder)
    assert [t.split("\n\n", 1)[1] for t in embedder.texts] == ["New text."]
    assert (stats.embedded, stats.copied, stats.written) == (1, 1, 2)


def test_only_the_versions_asked_for_are_embedded(conn, database_url):
    v1, v2 = add_version(conn, "1"), add_version(conn, "2")
    add_page(conn, v1, "a.html", ["one"])
    add_page(conn, v2, "a.html", ["two"])
    drain(database_url, CountingEmbedder(), version_ids=[v2])
    assert store.waiting_chunks(conn, [v1]) == 1 and store.waiting_chunks(conn, [v2]) == 0
    assert store.waiting_chunks(conn, model="another/model") == 0


def test_the_queue_is_counted_by_one_statement_whoever_asks(conn, database_url):
    """The CLI and the workers (waiting_chunks), the run's end (PageStore.vectors_waiting), the graph builder
    (waiting_by_version) and the overview of every version read the same count."""
    v1, v2 = add_version(conn, "1"), add_version(conn, "2")
    add_page(conn, v1, "a.html", ["one", "two", "three"])
    add_page(conn, v2, "a.html", ["four"])
    drain(database_url, CountingEmbedder(), version_ids=[v2])
    add_page(conn, v2, "b.html", ["five", "six"])

    async def at_the_runs_end(version_id: int) -> int:
        pages = store.PageStore(database_url, 1)
        await pages.open()
        try:
            return await pages.vectors_waiting(version_id)
        finally:
            await pages.close()

    assert store.queue.waiting_by_version(conn) == {v1: 3, v2: 2}
    assert [store.waiting_chunks(conn, [v]) for v in (v1, v2)] == [3, 2] and store.waiting_chunks(conn) == 5
    assert [asyncio.run(at_the_runs_end(v)) for v in (v1, v2)] == [3, 2]
    assert {row["id"]: row["waiting"] for row in store.version_overview(conn)} == {v1: 3, v2: 2}


def test_two_workers_share_the_queue_and_no_text_is_embedded_twice(conn, database_url):
    version = add_version(conn, "1")
    for i in range(12):
        add_page(conn, version, f"p{i}.html", [f"page {i} text {j}" for j in range(20)])
    first, second = CountingEmbedder(), CountingEmbedder()

    async def both():
        runners = [ModelRunner(first, nice=0), ModelRunner(second, nice=0)]
        workers = [EmbeddingWorker(database_url, r, model=MODEL, claim=16) for r in runners]
        try:
            return await asyncio.gather(*(w.run() for w in workers))
        finally:
            for r in runners:
                r.close()

    a, b = asyncio.run(both())
    assert a.written + b.written == 240 and a.embedded and b.embedded  # both worked
    assert not set(first.texts) & set(second.texts)  # SKIP LOCKED: every claim went to one worker
    assert len(first.texts) + len(second.texts) == 240
    assert store.waiting_chunks(conn) == 0


def test_a_worker_stopped_mid_batch_loses_nothing_and_the_next_one_embeds_the_rest_once(conn, database_url):
    """The in-process version of SIGKILL (tests/test_faults.py kills a real `docsbot embed`): the claim in flight
    is rolled back; what was committed before is never embedded again."""
    version = add_version(conn, "1")
    for i in range(6):
        add_page(conn, version, f"p{i}.html", [f"page {i} text {j}" for j in range(10)])
    gate = threading.Event()
    killed = CountingEmbedder(gate, hold=2)

    async def stop_in_second_batch():
        runner = ModelRunner(killed, nice=0)
        worker = EmbeddingWorker(database_url, runner, model=MODEL, claim=20)
        task = asyncio.ensure_future(worker.run())
        assert await asyncio.to_thread(killed.held.wait, 30)  # the second batch is being embedded
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()
        runner.close()
        return worker.stats

    stats = asyncio.run(stop_in_second_batch())
    assert stats.written == 20
    assert store.waiting_chunks(conn) == 40  # the cancelled claim was rolled back: its rows wait again, unlocked
    committed = {t for t in killed.texts[:20]}
    resumed = CountingEmbedder()
    rest, _ = drain(database_url, resumed)
    assert rest.written == 40 and store.waiting_chunks(conn) == 0
    assert not committed & set(resumed.texts)  # nothing committed is embedded twice
    assert len(set(resumed.texts)) == len(resumed.texts) == 40


def test_a_model_that_cannot_load_or_answers_the_wrong_dimension_writes_nothing(conn, database_url):
    version = add_version(conn, "1")
    add_page(conn, version, "a.html", ["text"])

    class Broken(HashingEmbedder):
        def load(self):
            raise EmbeddingModelError("cannot load embedding model 'broken': model.onnx is truncated")

    stats, _ = drain(database_url, Broken())
    assert stats.error and "model.onnx is truncated" in stats.error and stats.written == 0
    stats, _ = drain(database_url, CountingEmbedder(dim=12))
    assert stats.error and "12-dimensional" in stats.error and "384" in stats.error
    assert store.waiting_chunks(conn) == 1


def test_the_model_runs_on_a_daemon_thread_at_a_lower_priority():
    embedder = CountingEmbedder()
    runner = ModelRunner(embedder, nice=7)

    async def go():
        await runner.embed(["a", "b"])

    asyncio.run(go())
    (tid,) = embedder.threads
    assert tid != threading.get_native_id()
    assert runner._thread.daemon  # noqa: SLF001 - a stopped process never waits for the model
    if hasattr(os, "getpriority"):
        assert os.getpriority(os.PRIO_PROCESS, tid) >= 7
    runner.close()


def test_a_waiting_caller_is_not_held_by_a_slow_model_call_after_it_gives_up():
    """A caller cancelled while the model works (the crawl stopping) returns at once; the thread finishes alone."""
    gate = threading.Event()
    runner = ModelRunner(CountingEmbedder(gate), nice=0)

    async def go():
        task = asyncio.ensure_future(runner.embed(["x"]))
        assert await asyncio.to_thread(runner.embedder.held.wait, 30)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    assert asyncio.run(go()) < 1.0
    gate.set()
    runner.close()
