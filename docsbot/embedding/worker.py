"""The embedding queue and its workers: every chunk gets a vector, each text is embedded once per model.

Pages are stored text first (:meth:`docsbot.store.PageStore.save_page`): a chunk takes over the vector already
stored for its text (``documents.embed_hash``: sha256 of the model's name and the embedded text, so equal keys
mean equal vectors, on any page of any version or library) or is written without one. **The chunks whose
``embedding`` is NULL are the queue**: no broker, nothing to keep in step. An :class:`EmbeddingWorker` drains it:

1. claim up to ``claim`` waiting chunks of its model (and versions), in id order, ``FOR UPDATE SKIP LOCKED``
   (procrastinate's and pgqueuer's way of sharing a PostgreSQL queue between workers: each row goes to one of them,
   nobody waits for another);
2. take the vector already stored for each distinct text, if another worker wrote one meanwhile; embed the others
   once each (sorted by length, so the model's sub-batches pad little);
3. write every waiting chunk of those texts, the claimed ones and the others not locked elsewhere, in one
   ``UPDATE``, and commit.

A worker killed at any moment loses nothing: its transaction is rolled back, its rows are unlocked, and the next
worker (or the next run) claims them again; a text whose vector was committed is never embedded again. Workers on
several machines (Scrapyd nodes, a GPU box) share one database; the crawl runs one of its own
(:class:`docsbot.extensions.run.IndexRun`) and ``docsbot embed`` runs one anywhere.

The model runs on a thread of its own (:class:`ModelRunner`), at a lower CPU priority than the crawl, so that
storing pages (what makes them searchable) comes first on a busy machine; an embedder that speaks HTTP
(:class:`docsbot.embedding.models.OpenAIEmbedder`) runs on the event loop with several requests in flight instead.

Each worker records what it does in ``embed_workers`` (texts embedded, chunks written, rate), which
``docsbot status`` and the MCP server's ``list_libraries`` read to show progress and time left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg_pool import AsyncConnectionPool

from docsbot.embedding.models import EmbeddingModelError
from docsbot.embedding.texts import embed_key, embed_text
from docsbot.store import READY_WAITING, RetryPolicy
from docsbot.store import queue as chunk_queue
from docsbot.store.connection import gave_up

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from docsbot.embedding.models import Embedder

__all__ = ["EmbeddingWorker", "FillStats", "ModelRunner", "describe_progress", "when_mostly_written"]

logger = logging.getLogger(__name__)
# While a queue drains, how often the worker's progress is looked at by when_mostly_written
GRAPH_POLL_SECONDS = 0.5


def describe_progress(done: int, waiting: int, rate: float | None) -> str:
    """``"5,120 embedded, 16,099 waiting, 24.8 chunks/s, about 11 min left"``: a backfill as a person reads it."""
    text = f"{done:,} done, {waiting:,} waiting"
    if rate:
        left = waiting / rate
        when = f"{left:.0f} s" if left < 90 else f"{left / 60:.0f} min" if left < 5400 else f"{left / 3600:.1f} h"
        text += f", {rate:.1f} chunks/s, about {when} left"
    return text


async def when_mostly_written(
    worker: EmbeddingWorker, queued: int, done: asyncio.Event, build: Callable[[], object]
) -> None:
    """While a queue drains (until ``done``): once ``worker`` has written all but ``READY_WAITING``
    (docsbot.store.vector_index) of the ``queued`` vectors, run ``build`` once, blocking, in the default executor.
    A crawl's run and ``docsbot embed`` build the HNSW graphs so: on the server, beside the model embedding the last
    tenth, whose vectors join the graph as they are written (about 1 ms each), instead of after the last one.
    ``build`` is not run if ``queued`` is 0 or ``done`` comes first."""
    loop = asyncio.get_running_loop()
    while not done.is_set():
        if queued and worker.stats.written >= (1 - READY_WAITING) * queued:
            await loop.run_in_executor(None, build)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), GRAPH_POLL_SECONDS)


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class ModelRunner:
    """An embedder's model, loaded and called on one daemon thread of its own.

    - The thread runs at ``nice`` (Linux: a thread's nice value, which the threads onnxruntime starts from it
      inherit), so on a machine with every core busy the crawl, which stores pages and so makes them
      searchable, goes first, and the model takes what CPU is left. ``0`` keeps the process's priority.
    - It is a daemon thread: a process that is told to stop (SIGTERM while a model loads, or while a batch is
      embedded) ends without waiting for the model. Callers await futures on the event loop, never the thread:
      Scrapy's signals and shutdown keep working at any moment.
    - An embedder with ``aembed`` (an HTTP backend) is awaited on the event loop instead.

    :meth:`load` loads the model once (``embedder.load()`` when the embedder has one) and raises
    :class:`~docsbot.embedding.models.EmbeddingModelError` when it cannot; :meth:`embed` returns float32 vectors of
    shape (len(texts), dim).
    """

    def __init__(self, embedder: Embedder, nice: int = 10) -> None:
        self.embedder = embedder
        self.nice = nice
        self._jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Any, Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loaded: asyncio.Future[None] | None = None

    def _serve(self) -> None:
        if self.nice > 0 and hasattr(os, "setpriority"):
            tid = threading.get_native_id()
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, max(self.nice, os.getpriority(os.PRIO_PROCESS, tid)))
        while (job := self._jobs.get()) is not None:
            fn, args, loop, future = job
            try:
                result = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody waits any more
                    loop.call_soon_threadsafe(_set_exception, future, exc)
            else:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_set_result, future, result)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="docsbot-model", daemon=True)
            self._thread.start()
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((fn, args, loop, future))
        return await future

    def _load_model(self) -> None:
        load = getattr(self.embedder, "load", None)
        if load is not None:
            load()

    async def load(self) -> None:
        """Load the model (once; later calls wait for the same load). Raises ``EmbeddingModelError``."""
        if self._loaded is None:
            self._loaded = asyncio.ensure_future(self._call(self._load_model))
        await asyncio.shield(self._loaded)

    async def embed(self, texts: list[str]) -> np.ndarray:
        await self.load()
        aembed = getattr(self.embedder, "aembed", None)
        if aembed is not None:
            return await aembed(texts)
        return await self._call(self.embedder.embed, texts)

    def close(self) -> None:
        """Let the thread end after its current call (a daemon: it never holds the process)."""
        if self._thread is not None:
            self._jobs.put(None)

    async def aclose(self) -> None:
        """:meth:`close`, and the connections of an embedder that embeds on the event loop (its ``aclose()``,
        awaited here: call this on the loop :meth:`embed` ran on, before it ends)."""
        self.close()
        aclose = getattr(self.embedder, "aclose", None)
        if aclose is not None:
            await aclose()


@dataclass
class FillStats:
    """What a worker did: ``embedded`` texts it computed vectors for, ``written`` chunks it gave a vector (its
    own texts' and equal texts' elsewhere), ``copied`` chunks that took a vector another worker wrote meanwhile,
    ``batches`` claims, ``error`` why it stopped early (``None``: it drained its queue or was told to stop)."""

    embedded: int = 0
    written: int = 0
    copied: int = 0
    batches: int = 0
    error: str | None = None


class EmbeddingWorker:
    """Drains the embedding queue of ``model`` (chunks of versions bound to it; only ``version_ids`` if given).

    ``claim``: chunks per claim (and per transaction; with the CPU model, 256 is about 10 s of work, the longest
    a refresh that replaces one of those pages waits for the rows); ``slots``: claims in flight at once (defaults
    to the embedder's ``concurrency``, else 1); ``retry``: how a database error is retried (each claim is its own
    transaction: a failed one wrote nothing); ``run_id``: the crawl run it serves, recorded in ``embed_workers``;
    ``label``: what it embeds, for its log lines; ``progress_every``: seconds between progress lines and
    ``embed_workers`` updates.

    :meth:`run` drains the queue and returns; while ``follow()`` is true an empty queue is waited on
    (:meth:`wake`, or a poll every second) instead. :meth:`stop` makes it return after its current claims;
    cancelling :meth:`run` rolls back the claims in flight.
    """

    def __init__(
        self,
        dsn: str,
        runner: ModelRunner,
        *,
        model: str,
        version_ids: list[int] | None = None,
        label: str = "",
        claim: int = 256,
        slots: int | None = None,
        retry: RetryPolicy | None = None,
        run_id: int | None = None,
        progress_every: float = 30.0,
    ) -> None:
        self.runner = runner
        self.model = model
        self.version_ids = version_ids
        self.label = label or model
        self.claim = max(1, claim)
        self.slots = max(1, slots or getattr(runner.embedder, "concurrency", 1))
        self.retry = retry or RetryPolicy()
        self.run_id = run_id
        self.progress_every = progress_every
        self.stats = FillStats()
        self.waiting: int | None = None  # at the last progress check
        self._pool = AsyncConnectionPool(
            dsn,
            min_size=1,
            max_size=self.slots + 1,
            open=False,
            configure=register_vector_async,
            check=AsyncConnectionPool.check_connection,
            name="docsbot-vectors",
        )
        self._wake = asyncio.Event()
        self._stopping = False
        self._follow: Callable[[], bool] = lambda: False
        self._row_id: int | None = None
        self._samples: deque[tuple[float, int]] = deque(maxlen=64)
        self._last_report = 0.0
        self._started = 0.0
        self._warned_hash = False

    # --- control ---

    def wake(self) -> None:
        """New chunks may be waiting (the crawl stored a page)."""
        self._wake.set()

    def stop(self) -> None:
        """Return from :meth:`run` once the claims in flight are written."""
        self._stopping = True
        self._wake.set()

    @property
    def rate(self) -> float | None:
        """Chunks given a vector per second over the last minute or so; ``None`` before two samples."""
        if len(self._samples) < 2:
            return None
        (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else None

    # --- the loop ---

    async def run(self, follow: Callable[[], bool] = lambda: False) -> FillStats:
        """Drain the queue (see the class docstring). Returns the worker's stats; ``stats.error`` says why it
        stopped early: the model could not be loaded or answered wrong (``EmbeddingModelError``), or the database
        stayed unavailable through the retries. Never raises those."""
        self._follow = follow
        self._started = time.monotonic()
        self._samples.append((self._started, 0))
        await self._pool.open(wait=False)
        try:
            await self._register()
            slots = [asyncio.ensure_future(self._slot()) for _ in range(self.slots)]
            try:
                done = await asyncio.gather(*slots)
            finally:
                for slot in slots:
                    slot.cancel()
            self.stats.error = next((error for error in done if error), None)
            await self._report(final=True)
        finally:
            await self._pool.close()
        return self.stats

    async def _slot(self) -> str | None:
        while not self._stopping:
            tries = 0
            try:  # a claim whose connection failed was rolled back: it is retried by the store's policy
                async for attempt in self.retry.async_retrying(f"embedding {self.label}", until=lambda: self._stopping):
                    with attempt:
                        tries = attempt.retry_state.attempt_number
                        claimed = await self._batch()
            except EmbeddingModelError as exc:
                self.stop()
                return str(exc)
            except psycopg.OperationalError as exc:  # PoolTimeout included
                if self._stopping:
                    return None
                self.stop()
                return str(gave_up(f"embedding {self.label}", exc, tries))
            if claimed:
                await self._report()
                continue
            if not self._follow():
                return None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)
        return None

    async def _batch(self) -> int:
        """One claim: embed and write its texts, commit. Returns the chunks claimed (0: nothing waits)."""
        async with self._pool.connection() as conn, conn.transaction():
            rows = await chunk_queue.claim_waiting(conn, self.model, self.version_ids, self.claim)
            if not rows:
                return 0
            texts: dict[str, str] = {}
            dims = set()
            for _, content, context, cut, key, dim in rows:
                text = embed_text(context, content, cut)
                if key not in texts:
                    texts[key] = text
                    if not self._warned_hash and embed_key(self.model, text) != key:
                        self._warned_hash = True
                        logger.warning("a chunk's stored text does not hash to its embed_hash (%s); embedding it", key)
                dims.add(dim)
            vectors = await chunk_queue.stored_vectors(conn, list(texts))
            todo = await self._embed_missing(texts, vectors, dims)
            written = await chunk_queue.write_vectors(conn, vectors)
        self._count(len(texts), len(todo), written)
        return len(rows)

    async def _embed_missing(self, texts: dict[str, str], vectors: dict[str, Any], dims: set[int | None]) -> list[str]:
        """Embed the ``texts`` (key → text) that ``vectors`` (key → vector, stored already) lacks, shortest first
        (a batch pads each text to its longest), into ``vectors``; the keys embedded. Raises
        :class:`EmbeddingModelError` when the model answers another shape or one of ``dims``' others."""
        todo = [key for key in texts if key not in vectors]
        if todo:
            order = sorted(range(len(todo)), key=lambda i: len(texts[todo[i]]))
            computed = await self.runner.embed([texts[todo[i]] for i in order])
            self._check(computed, len(todo), dims)
            for position, i in enumerate(order):
                vectors[todo[i]] = computed[position]
        return todo

    def _count(self, texts: int, embedded: int, written: int) -> None:
        """One batch's stats: ``texts`` distinct texts, ``embedded`` of them by the model, ``written`` vectors."""
        self.stats.batches += 1
        self.stats.embedded += embedded
        self.stats.copied += texts - embedded
        self.stats.written += written
        self._samples.append((time.monotonic(), self.stats.written))

    def _check(self, vectors: np.ndarray, count: int, dims: set[int | None]) -> None:
        shape = getattr(vectors, "shape", None)
        if shape is None or len(shape) != 2 or shape[0] != count:
            raise EmbeddingModelError(f"the embedding model returned {shape} for {count} texts")
        expected = {d for d in dims if d}
        if expected and {shape[1]} != expected:
            raise EmbeddingModelError(
                f"the embedding model {self.model!r} answers {shape[1]}-dimensional vectors, but {self.label} holds "
                f"{', '.join(map(str, sorted(expected)))}-dimensional ones: is DOCSBOT_EMBEDDING_MODEL the model the "
                "version was indexed with?"
            )

    # --- progress ---

    async def _register(self) -> None:
        with contextlib.suppress(psycopg.Error):
            async with self._pool.connection() as conn:
                self._row_id = await chunk_queue.register_worker(
                    conn, self.model, self.version_ids, socket.gethostname(), os.getpid(), self.run_id
                )

    async def _waiting(self, conn: psycopg.AsyncConnection) -> int:
        """What is left to do: the chunks of the worker's versions waiting for a vector of its model."""
        return await chunk_queue.waiting_chunks_async(conn, self.version_ids, self.model)

    async def _report(self, final: bool = False) -> None:
        """Every ``progress_every`` seconds (and at the end): count what waits, log a progress line, update the
        worker's ``embed_workers`` row. Best effort: a failure here never stops the worker."""
        now = time.monotonic()
        if not final and now - self._last_report < self.progress_every:
            return
        self._last_report = now
        try:
            async with self._pool.connection() as conn:
                self.waiting = await self._waiting(conn)
                if self._row_id is not None:
                    await chunk_queue.finish_worker(
                        conn,
                        self._row_id,
                        embedded=self.stats.embedded,
                        written=self.stats.written,
                        rate=self.rate,
                        final=final,
                        error=self.stats.error,
                    )
        except psycopg.Error as exc:
            logger.debug("progress of %s not recorded: %s", self.label, exc)
            return
        if not final and self.stats.written:
            logger.info("vectors of %s: %s", self.label, describe_progress(self.stats.written, self.waiting, self.rate))
