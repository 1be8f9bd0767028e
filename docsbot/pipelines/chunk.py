"""The chunk pipeline (300): a changed page's Markdown → chunks and definitions, each with the text the model embeds."""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from typing import TYPE_CHECKING, Any

from scrapy import signals

from docsbot.content.pool import ChunkerSpec, ExtractionPool, ExtractionWorkerDied
from docsbot.embedding.texts import context_line, embed_key, embed_text
from docsbot.extensions.context import PageNotStored, index_context
from docsbot.items import Chunk, PageChange, PageItem
from docsbot.store import StoreUnavailable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docsbot.items import PageGone

__all__ = ["ChunkPipeline"]

logger = logging.getLogger(__name__)


class ChunkPipeline:
    """Split a changed page's Markdown into chunks (``DOCSBOT_CONTEXT_TOKENS`` fewer tokens than the model's
    limit, leaving room for the title/heading context line each chunk is embedded with; ``DOCSBOT_CHUNK_TOKENS``
    caps them lower), each with the text the model will embed and that text's key (``embed_hash``).

    A page whose extracted content hashes the same as the stored ``content_hash`` is marked unchanged
    (``item.changed = False``, :meth:`docsbot.refresh.RefreshLedger.content_unchanged`) and not chunked: only its
    validators will be written.

    Each definition the page's symbol table records is embedded on its own too
    (:func:`docsbot.content.chunking.definitions`, a chunk of kind 1 after the page's chunks): its name or signature and
    description, at most ``DOCSBOT_DEFINITION_CHARS`` characters (0: none); not one that is most of a chunk holding no
    other (:func:`docsbot.content.chunking.own_vectors`: that chunk's vector is already its own).

    What storing the page changes is set on the item for the change log (``item.change``, unless
    ``DOCSBOT_CHANGES_KEEP`` is 0): a page new to the index is ``added``; a stored page at a new URL ``moved``; a
    stored page with new text ``modified``, with the sections that changed and a diff of its stored Markdown
    (:func:`docsbot.content.changes.page_diff`, in the worker pool beside its chunking; a diff that fails or times out
    is left out, the change is still recorded). A page an older extractor stored and this one re-extracts is not a
    change of the docs: it records nothing unless it moved. Stats: ``docsbot/changes/diffed``,
    ``docsbot/changes/diff_failed``, ``docsbot/changes/diff_seconds`` (CPU of the diffs, in the workers; the
    database's share is ``docsbot/changes/db_seconds``, set by the run).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.context = index_context(crawler)
        self.context_tokens = crawler.settings.getint("DOCSBOT_CONTEXT_TOKENS")
        self.chunk_tokens = crawler.settings.getint("DOCSBOT_CHUNK_TOKENS")
        self.record_changes = self.context.changes_keep is not None
        self.diff_bytes = crawler.settings.getint("DOCSBOT_CHANGE_DIFF_BYTES", 16384)
        self.definition_chars = crawler.settings.getint("DOCSBOT_DEFINITION_CHARS", 700)
        self._spec: ChunkerSpec | None = None
        self._files: tempfile.TemporaryDirectory | None = None
        self._inline: ExtractionPool | None = None
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChunkPipeline:
        return cls(crawler)

    def spec(self) -> ChunkerSpec:
        """Built on the first changed page (loading the tokenizer is not free; an unchanged refresh needs none):
        the embedder's tokenizer saved to a file the workers load once."""
        if self._spec is None:
            embedder = self.context.embedder
            tokenizer = embedder.tokenizer()
            room = embedder.max_tokens - self.context_tokens
            size = min(room, self.chunk_tokens) if self.chunk_tokens > 0 else room
            path = None
            if tokenizer is not None:
                self._files = tempfile.TemporaryDirectory(prefix="docsbot-chunker-")
                path = os.path.join(self._files.name, "tokenizer.json")
                tokenizer.save(path)
            self._spec = ChunkerSpec(size, path)
        return self._spec

    def close(self) -> None:
        if self._files is not None:
            self._files.cleanup()
            self._files = None

    def _pool(self) -> ExtractionPool:
        """The spider's extraction pool (chunking is as costly as extraction: it runs in the same workers)."""
        pool = getattr(self.crawler.spider, "extractor", None)
        if pool is None:
            if self._inline is None:
                self._inline = ExtractionPool("inline", 1)
            pool = self._inline
        return pool

    async def process_item(self, item: PageItem | PageGone, spider: object = None) -> PageItem | PageGone:
        if not isinstance(item, PageItem):
            return item
        if self.context.ledger.content_unchanged(item.page_id, item.stored_hash, item.content_hash):
            item.changed = False
            if self.record_changes and item.moved_from is not None:
                item.change = PageChange("moved")
            return item
        old_text = None
        modified = item.page_id is not None and item.stored_hash is not None and item.stored_hash != item.content_hash
        if self.record_changes:
            if item.page_id is None:
                item.change = PageChange("added")
            elif item.moved_from is not None or modified:
                item.change = PageChange("moved" if item.moved_from is not None else "modified")
        if item.change is not None and modified:
            try:
                old_text = await self.context.store.page_markdown(item.page_id)
            except StoreUnavailable as exc:
                logger.warning("recording the change of %s without its diff: %s", item.url, exc)
        chunking = self._pool().chunk(
            item.markdown, list(item.anchors), list(item.symbols), self.spec(), self.definition_chars, item.url
        )
        try:
            if old_text is None:
                chunked = await chunking
            else:
                diffing = self._pool().diff(old_text, item.markdown, list(item.anchors), self.diff_bytes, item.url)
                chunked, diff = await asyncio.gather(chunking, diffing, return_exceptions=True)
                if isinstance(diff, BaseException):
                    self.crawler.stats.inc_value("docsbot/changes/diff_failed")
                    logger.warning("recording the change of %s without its diff: %s", item.url, diff)
                else:
                    self.crawler.stats.inc_value("docsbot/changes/diffed")
                    self.crawler.stats.inc_value("docsbot/changes/diff_seconds", diff.seconds)
                    item.change.sections = [c.as_dict() for c in diff.sections]
                    item.change.diff = diff.diff
                if isinstance(chunked, BaseException):
                    raise chunked
        except ExtractionWorkerDied as exc:  # a crash or a timeout: the stored copy is kept, the page counted failed
            raise PageNotStored(f"not chunked: {exc}", "extract") from exc
        item.symbol_hashes = chunked.symbol_hashes
        context_chars = self.context_tokens * 4
        model = self.context.embedder.name

        def chunk(content: str, heading_path: tuple[str, ...], anchor: str | None, **kind: Any) -> Chunk:
            context = context_line(item.title, heading_path)
            cut = context_chars if len(context) > context_chars else None
            text = embed_text(context, content, cut)
            return Chunk(content, list(heading_path), context, text, embed_key(model, text), anchor=anchor,
                         context_cut=cut, **kind)  # fmt: skip

        item.chunks = [chunk(c.content, c.heading_path, c.anchor) for c in chunked.chunks]
        item.chunks += [chunk(d.content, d.heading_path, d.anchor, kind=1, name=d.name) for d in chunked.definitions]
        return item
