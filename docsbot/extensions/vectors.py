"""The run's vectors: its own embedding worker over the version's queue, and the version's HNSW graph.

:class:`RunVectors` is built by the run's setup (unless ``DOCSBOT_CRAWL_EMBED_WORKERS=0``), started at
``spider_opened`` and drained once the crawl is done (:mod:`docsbot.extensions.ending`). The graph a search walks
(:mod:`docsbot.store.vector_index`) is built once most of a version's vectors are in: during the drain
(:func:`graph_when_ready`) and at the end of the run, whatever is still missing (:func:`ensure_vector_indexes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

import psycopg

from docsbot import store
from docsbot.embedding.worker import EmbeddingWorker, FillStats, ModelRunner, when_mostly_written

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from docsbot.embedding.models import Embedder

__all__ = ["GRAPH_WAIT_SECONDS", "RunVectors", "ensure_vector_indexes", "graph_when_ready", "has_graph"]

logger = logging.getLogger("docsbot.extensions.run")  # every line of the run under the extension's name

GRAPH_WAIT_SECONDS = 600.0  # at its end, a run waits this long for another process's graph builds, then its own


class RunVectors:
    """The run's own embedding worker (:class:`docsbot.embedding.worker.EmbeddingWorker`) over the version's queue, with
    its model on a thread of its own (:class:`docsbot.embedding.worker.ModelRunner`, ``DOCSBOT_EMBED_NICE``).

    By default it starts once the crawl is done (:meth:`drain`: every page stored and searchable by text), then
    empties the queue and returns: on a machine the crawl keeps busy (extraction and chunking in worker
    processes, PostgreSQL writing postings), a model beside it slowed the full index of the Python docs to
    searchable in 61.5 s instead of 49.5 s (2 CPUs), however low its priority (``DOCSBOT_EMBED_NICE``), and
    finished no sooner. ``DOCSBOT_EMBED_DURING_CRAWL`` runs it beside the crawl instead, embedding what the store
    queued as it comes (for a machine with cores the crawl leaves idle, or an endpoint that embeds elsewhere).
    :meth:`stop` (the run was stopped) rolls back its claims in flight. ``loading``: the model's loading, started
    at once for a full index (``load_now``), which embeds for sure."""

    def __init__(
        self, dsn: str, embedder: Embedder, settings: BaseSettings, version: store.VersionRow, label: str
    ) -> None:
        self.runner = ModelRunner(embedder, settings.getint("DOCSBOT_EMBED_NICE", 10))
        self.worker = EmbeddingWorker(
            dsn,
            self.runner,
            model=embedder.name,
            version_ids=[version.id],
            label=label,
            claim=settings.getint("DOCSBOT_EMBED_CLAIM", 256),
            slots=settings.getint("DOCSBOT_CRAWL_EMBED_WORKERS", 1) * max(1, getattr(embedder, "concurrency", 1)),
            retry=store.RetryPolicy.from_settings(settings),
        )
        self.during_crawl = settings.getbool("DOCSBOT_EMBED_DURING_CRAWL", False)
        self.loading: asyncio.Future[None] | None = None
        self._crawling = True
        self._started = False
        self._stopped = False
        self._task: asyncio.Future[FillStats] | None = None

    def start(self, run_id: int | None, load_now: bool) -> None:
        self.worker.run_id = run_id
        self._started = True
        if load_now:
            self.loading = asyncio.ensure_future(self.runner.load())
        if self.during_crawl:
            self._task = asyncio.ensure_future(self.worker.run(follow=lambda: self._crawling))

    async def drain(self) -> FillStats | None:
        """The crawl is done: give every waiting chunk its vector, then return the worker's stats (``None`` if the
        worker was stopped meanwhile)."""
        self._crawling = False
        if self._task is None and self._started and not self._stopped:
            self._task = asyncio.ensure_future(self.worker.run())
        self.worker.wake()
        if self._task is None:
            return None
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            return None

    async def stop(self) -> None:
        """Stop now: the claims in flight are rolled back (their chunks wait for the next worker)."""
        self._crawling = False
        self._stopped = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.runner.aclose()


def ensure_vector_indexes(dsn: str, wait: float = 0.0) -> None:
    """The version's own HNSW graph, and any other a database needs (docsbot.store.vector_index; ``wait``:
    seconds to wait for another process building them). Without one a version is searched by an exact scan,
    so a failure here is worth a warning, not the run. Blocking DDL: call it off the event loop."""
    try:
        store.ensure_vector_indexes(dsn, wait)
    except psycopg.Error as exc:
        logger.warning("the vector indexes could not be built (%s); searches scan vectors exactly", exc)


def has_graph(dsn: str, version_id: int) -> bool:
    """Whether ``version_id`` has its graph or one is being built (True, too, when that cannot be read)."""
    try:
        with store.connect(dsn, autocommit=True) as conn:
            return store.vector_indexes(conn).get(version_id, store.VectorIndex("none")).state != "exact"
    except psycopg.Error:
        return True


async def graph_when_ready(vectors: RunVectors, dsn: str, version_id: int, queued: int, done: asyncio.Event) -> None:
    """While the queue drains (until ``done``): the version's HNSW graph, if it has none, built once the run's
    worker has written most of the ``queued`` vectors this run queued
    (:func:`docsbot.embedding.worker.when_mostly_written`; ``ensure_vector_indexes`` checks the share in the database
    again). A failure is a warning, as at the end of the run, which builds whatever is still missing."""
    loop = asyncio.get_running_loop()
    if await loop.run_in_executor(None, has_graph, dsn, version_id):
        return
    await when_mostly_written(vectors.worker, queued, done, lambda: ensure_vector_indexes(dsn))
