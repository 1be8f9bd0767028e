"""The worker of a model migration (:mod:`docsbot.store.reembed`): every chunk of one version given its vector of
the next model, beside the vectors searches read.

A :class:`ReembedWorker` is an :class:`~docsbot.embedding.worker.EmbeddingWorker` (the same model thread, claims,
retries, progress lines and ``embed_workers`` row, recorded under the next model and the version) whose claim is
the version's chunks without a next vector, in id order: per claim, the vector the next model already has for a
text (a version bound to it stored one) is taken over, the other texts are embedded once each, and the claimed rows
get their next vector and key in one ``UPDATE``, committed with the claim. Killed at any moment, it loses only its
claim in flight.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docsbot.embedding.texts import embed_key, embed_text
from docsbot.embedding.worker import EmbeddingWorker, describe_progress
from docsbot.store import reembed

if TYPE_CHECKING:
    import psycopg

    from docsbot.embedding.worker import ModelRunner

__all__ = ["ReembedWorker", "describe_switch"]


def describe_switch(switch: dict[str, Any]) -> str:
    """``"switching to MODEL: 5,120 of 21,219 done, 24.8 chunks/s, about 11 min left"``: a version's model switch
    (``model_switch`` of :func:`docsbot.store.version_overview`) as ``docsbot status`` and the web pages show it."""
    done, total = switch["done"], switch["total"]
    text = f"switching to {switch['model']} ({switch['dim']} dimensions): {done:,} of {total:,} done"
    rate = switch.get("rate")
    if rate:
        text += ", " + describe_progress(done, total - done, rate).split(", ", 2)[2]
    elif done < total:
        text += " (no worker: `docsbot reembed` continues it)"
    return text


class ReembedWorker(EmbeddingWorker):
    """Gives the chunks of version ``version_id`` their vector of ``model`` (``dim`` dimensions: a model answering
    another is an ``EmbeddingModelError`` in ``stats.error``); the other options are
    :class:`~docsbot.embedding.worker.EmbeddingWorker`'s. :meth:`run` returns once none is left (``follow`` is not
    used: chunks a crawl adds meanwhile are claimed as they come, and :func:`docsbot.store.reembed.swap` waits for
    the last)."""

    def __init__(self, dsn: str, runner: ModelRunner, *, model: str, dim: int, version_id: int, **options) -> None:  # noqa: ANN003 - EmbeddingWorker's
        super().__init__(dsn, runner, model=model, version_ids=[version_id], **options)
        self.version_id = version_id
        self.dim = dim

    async def _batch(self) -> int:
        async with self._pool.connection() as conn, conn.transaction():
            rows = await reembed.claim_next(conn, self.version_id, self.claim)
            if not rows:
                return 0
            keys = []
            texts: dict[str, str] = {}
            for _, content, context, cut in rows:
                text = embed_text(context, content, cut)
                key = embed_key(self.model, text)
                keys.append(key)
                texts.setdefault(key, text)
            vectors = await reembed.stored_next(conn, self.model, list(texts))
            todo = await self._embed_missing(texts, vectors, {self.dim})
            written = await reembed.write_next(
                conn, [(row[0], key, vectors[key]) for row, key in zip(rows, keys, strict=True)]
            )
        self._count(len(texts), len(todo), written)
        return len(rows)

    async def _waiting(self, conn: psycopg.AsyncConnection) -> int:
        return await reembed.waiting_next_async(conn, self.version_id)
