"""Item pipelines, in order: chunk (300) → embed (400) → store (500).

Each gets the run's :class:`docsbot.run.IndexContext` (version, page store, embedder, refresh ledger) once, when
it is built (``NotConfigured`` without the docs spider); a 304 never reaches them (see
:mod:`docsbot.middlewares`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
from scrapy.exceptions import DropItem

from docsbot.chunking import Chunker, context_line, embed_text
from docsbot.db import StoreUnavailable
from docsbot.embedding import EmbeddingModelError
from docsbot.items import Chunk, PageGone, PageItem
from docsbot.refresh import content_unchanged
from docsbot.run import index_context

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docsbot.embedding import Embedder

__all__ = ["ChunkPipeline", "EmbedPipeline", "StorePipeline", "EmbeddingBatcher"]

logger = logging.getLogger(__name__)


class ChunkPipeline:
    """Split a changed page's Markdown into chunks (``DOCSBOT_CONTEXT_TOKENS`` fewer tokens than the model's
    limit, leaving room for the title/heading context line each chunk is embedded with; ``DOCSBOT_CHUNK_TOKENS``
    caps them lower).

    A page whose extracted content hashes the same as the stored ``content_hash`` is marked unchanged
    (``item.changed = False``) and not chunked: only its validators will be written.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.context = index_context(crawler)
        self.context_tokens = crawler.settings.getint("DOCSBOT_CONTEXT_TOKENS")
        self.chunk_tokens = crawler.settings.getint("DOCSBOT_CHUNK_TOKENS")
        self._chunker: Chunker | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChunkPipeline:
        return cls(crawler)

    def chunker(self) -> Chunker:
        """Built on the first changed page (loading the tokenizer is not free; an unchanged refresh needs none)."""
        if self._chunker is None:
            embedder = self.context.embedder
            tokenizer = embedder.tokenizer()
            room = embedder.max_tokens - self.context_tokens
            self._chunker = Chunker(min(room, self.chunk_tokens) if self.chunk_tokens > 0 else room, tokenizer)
        return self._chunker

    def process_item(self, item: PageItem | PageGone, spider: object = None) -> PageItem | PageGone:
        if not isinstance(item, PageItem):
            return item
        if item.page_id is not None and self.context.refresh and content_unchanged(item.stored_hash, item.content_hash):
            item.changed = False
            return item
        context_chars = self.context_tokens * 4
        model = self.context.embedder.name
        item.chunks = []
        for c in self.chunker().chunks(item.markdown, item.anchors):
            context = context_line(item.title, c.heading_path)
            text = embed_text(context, c.content, context_chars)
            key = hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()
            item.chunks.append(Chunk(c.content, list(c.heading_path), context, text, key, anchor=c.anchor))
        return item


class EmbeddingBatcher:
    """Embeds texts of many pages together, on one worker thread, while the reactor keeps crawling.

    Callers ``await embed(texts)``; texts waiting while the model is busy are merged into the next call (up to
    ``max_texts``), so batches fill up across pages, and sorted by length so that each of the model's
    sub-batches pads little. Model errors are raised to every caller of that batch.
    """

    def __init__(self, embedder: Embedder, max_texts: int = 256) -> None:
        self.embedder = embedder
        self.max_texts = max_texts
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="docsbot-embed")
        self._pending: list[tuple[list[str], asyncio.Future[np.ndarray]]] = []
        self._worker: asyncio.Task[None] | None = None

    async def embed(self, texts: list[str]) -> np.ndarray:
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._pending.append((texts, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._run())
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            await asyncio.sleep(0)  # let pages that are ready queue their chunks too
            batch: list[tuple[list[str], asyncio.Future[np.ndarray]]] = []
            count = 0
            while self._pending and (not batch or count + len(self._pending[0][0]) <= self.max_texts):
                texts, future = self._pending.pop(0)
                batch.append((texts, future))
                count += len(texts)
            texts = [t for texts, _ in batch for t in texts]
            # Sorted by length, the model's sub-batches hold texts of similar length: less padding to compute.
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            try:
                ordered = await loop.run_in_executor(self._executor, self.embedder.embed, [texts[i] for i in order])
                vectors = np.empty_like(ordered)
                vectors[order] = ordered
            except Exception as exc:  # noqa: BLE001 - handed to the waiting pages
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for texts, future in batch:
                if not future.done():
                    future.set_result(vectors[start : start + len(texts)])
                start += len(texts)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class EmbedPipeline:
    """Embed the chunks of changed pages (batched across pages, off the reactor thread).

    A chunk whose embedded text is already in the index (same ``embed_hash``: model + text, on any page of any
    version) reuses the stored vector instead: a one-paragraph edit on a long page embeds about one chunk, and
    indexing a new version of a library embeds only what changed since the last one.

    Stats: ``docsbot/chunks_embedded``, ``docsbot/chunks_reused``. If the model cannot be loaded the crawl is
    closed with reason ``embedding_model_error`` and no page is written (each dropped page counts in
    ``docsbot/failed`` and ``docsbot/failed/embed``).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.context = index_context(crawler)
        self.max_texts = 8 * crawler.settings.getint("DOCSBOT_EMBED_BATCH_SIZE")
        self._batcher: EmbeddingBatcher | None = None
        self._closing: asyncio.Future[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> EmbedPipeline:
        return cls(crawler)

    async def process_item(self, item: PageItem | PageGone, spider: object = None) -> PageItem | PageGone:
        if not isinstance(item, PageItem) or not item.changed or not item.chunks:
            return item
        context = self.context
        try:
            stored = await context.store.stored_embeddings(list({c.embed_hash for c in item.chunks}))
        except StoreUnavailable as exc:  # reuse is an optimization: embed everything, the store retries again
            logger.warning("%s: embedding every chunk of %s", exc, item.url)
            stored = {}
        for chunk in item.chunks:
            chunk.embedding = stored.get(chunk.embed_hash)
        todo = [c for c in item.chunks if c.embedding is None]
        self.crawler.stats.inc_value("docsbot/chunks_reused", len(item.chunks) - len(todo))
        if not todo:
            return item
        if self._batcher is None:
            self._batcher = EmbeddingBatcher(context.embedder, self.max_texts)
        try:
            vectors = await self._batcher.embed([c.embed_text for c in todo])
        except EmbeddingModelError as exc:
            if self._closing is None:
                logger.error("%s", exc)
                # Scheduled, not awaited: closing waits for the items in progress, this one included (Scrapy's
                # CloseSpider extension schedules its close the same way).
                self._closing = asyncio.ensure_future(
                    self.crawler.engine.close_spider_async(reason="embedding_model_error")
                )
            self.crawler.stats.inc_value("docsbot/failed")
            self.crawler.stats.inc_value("docsbot/failed/embed")
            raise DropItem(f"not stored, no embedding model: {item.url}") from exc
        for chunk, vector in zip(todo, vectors, strict=True):
            chunk.embedding = vector
        self.crawler.stats.inc_value("docsbot/chunks_embedded", len(todo))
        return item

    def close_spider(self, spider: object = None) -> None:
        if self._batcher is not None:
            self._batcher.close()


class StorePipeline:
    """Write pages to PostgreSQL, one transaction per page (see :meth:`docsbot.db.PageStore.save_page`).

    Gone pages (:class:`PageGone`) are not deleted here but handed to the run's refresh ledger: the run extension
    deletes them at the end of a run that completed, within the mass-deletion guard
    (:meth:`docsbot.refresh.RefreshLedger.deletion_plan`).

    Stats: ``docsbot/new``, ``docsbot/modified``, ``docsbot/unchanged`` (+ ``/same_content``: a 200 whose
    content is what is stored), ``docsbot/gone``, ``docsbot/chunks_written``; ``docsbot/failed`` and
    ``docsbot/failed/store`` for a page the database still refused after the store's retries (dropped, one log
    line; the stored copy, if any, is untouched).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.context = index_context(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        return cls(crawler)

    async def process_item(self, item: PageItem | PageGone, spider: object = None) -> PageItem | PageGone:
        stats, ledger = self.stats, self.context.ledger
        if isinstance(item, PageGone):
            if ledger.gone(item.page_id, item.url, item.reason):
                stats.inc_value("docsbot/gone")
            return item
        try:
            page_id = await self.context.store.save_page(item)
        except StoreUnavailable as exc:  # counted, so the summary, crawl_runs and the exit code say so
            stats.inc_value("docsbot/failed")
            stats.inc_value("docsbot/failed/store")
            raise DropItem(f"not stored: {exc}") from exc
        ledger.stored(page_id)
        if item.page_id is None:
            stats.inc_value("docsbot/new")
        elif item.changed:
            stats.inc_value("docsbot/modified")
        else:
            stats.inc_value("docsbot/unchanged")
            stats.inc_value("docsbot/unchanged/same_content")
        if item.changed:
            stats.inc_value("docsbot/chunks_written", len(item.chunks))
        return item
