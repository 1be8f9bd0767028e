"""``docsbot embed``: the chunks waiting for a vector given theirs, from any machine that reaches the database."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from docsbot.cli.common import database, project_settings
from docsbot.display import printable

if TYPE_CHECKING:
    import argparse

__all__ = ["cmd_embed"]


def cmd_embed(args: argparse.Namespace) -> int:
    """Give the chunks waiting in the queue their vectors (docsbot.embedding.worker), then exit; --follow keeps
    waiting."""
    import asyncio
    import contextlib
    import logging
    import time

    import psycopg

    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.embedding.worker import EmbeddingWorker, FillStats, ModelRunner, when_mostly_written
    from docsbot.extensions.vectors import GRAPH_WAIT_SECONDS
    from docsbot.progress import bar, draw_until, log_past_bars, progress_wanted

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    settings = project_settings()
    embedder = load_embedder(settings)
    dsn = store.resolve_dsn(settings)
    with database(write=True) as conn:
        versions = store.list_versions(conn, args.library, args.version)
        if args.library is not None and not versions:
            known = ", ".join(store.version_label(v.library, v.name) for v in store.list_versions(conn)) or "none"
            print(f"docsbot embed: {printable(args.library)} is not indexed; indexed: {known}", file=sys.stderr)
            return 1
        mine = [v for v in versions if v.embedding_model == embedder.name]
        other = [
            f"{store.version_label(v.library, v.name)} ({v.embedding_model}, {n} waiting)"
            for v in versions
            if v.embedding_model not in (None, embedder.name) and (n := store.waiting_chunks(conn, [v.id]))
        ]
        scope = [v.id for v in mine] if args.library is not None else None
        waiting = store.waiting_chunks(conn, scope, embedder.name) if mine else 0
    if other:
        print(f"docsbot embed: not {embedder.name}'s (set DOCSBOT_EMBEDDING_MODEL to embed them): {', '.join(other)}",
              file=sys.stderr)  # fmt: skip
    labels = ", ".join(store.version_label(v.library, v.name) for v in mine) or "nothing"
    if not waiting and not args.follow:
        print(f"nothing to embed: every chunk of {labels} has its vector ({embedder.name})")
        return 0
    print(f"{waiting} chunks of {labels} wait for a vector ({embedder.name})", file=sys.stderr)
    runner = ModelRunner(embedder, args.nice if args.nice is not None else settings.getint("DOCSBOT_EMBED_NICE", 10))
    worker = EmbeddingWorker(
        dsn,
        runner,
        model=embedder.name,
        version_ids=scope,
        label=labels,
        claim=args.claim or settings.getint("DOCSBOT_EMBED_CLAIM", 256),
        slots=args.concurrency,
        retry=store.RetryPolicy.from_settings(settings),
        progress_every=args.progress,
    )

    def build_graphs() -> None:
        try:
            store.ensure_vector_indexes(dsn, wait=GRAPH_WAIT_SECONDS)
        except psycopg.Error as exc:  # searched exactly until the next run or `docsbot db migrate` builds them
            print(f"docsbot embed: the vector indexes could not be built ({printable(exc)}); searches scan vectors "
                  "exactly", file=sys.stderr)  # fmt: skip

    def counts() -> tuple[int, int]:
        """Vectors written of those waiting at the start (with --follow, of those found waiting since)."""
        written = worker.stats.written
        return written, max(waiting, written + (worker.waiting or 0) if args.follow else waiting)

    async def run() -> FillStats:
        done = asyncio.Event()
        # the graphs of the versions now ready, built beside the model embedding the last tenth, as a crawl does
        graphs = asyncio.ensure_future(when_mostly_written(worker, waiting, done, build_graphs))
        # a terminal's bar (DOCSBOT_PROGRESS): vectors written of waiting, the rate and the time left
        drawing = None
        if progress_wanted(settings.get("DOCSBOT_PROGRESS", "auto")):
            drawing = asyncio.ensure_future(
                draw_until(bar(f"{printable(labels)} vectors", "vector", total=waiting), counts, done)
            )
        with log_past_bars() if drawing is not None else contextlib.nullcontext():
            try:
                return await worker.run(follow=lambda: args.follow)
            finally:
                done.set()
                await graphs
                if drawing is not None:
                    await drawing
                await runner.aclose()  # an HTTP backend's connections, on their event loop

    started = time.monotonic()
    try:
        stats = asyncio.run(run())
    except KeyboardInterrupt:
        print("docsbot embed: stopped; the chunks of the batch in flight wait for the next worker", file=sys.stderr)
        return 130
    finally:
        runner.close()
    took = time.monotonic() - started
    left = worker.waiting or 0
    rate = stats.written / took if took else 0.0
    if stats.written:
        build_graphs()  # whatever graph is still missing: a version whose vectors came in after the early build
    print(
        f"embedded {stats.embedded} texts, {stats.written} chunks given a vector ({stats.copied} by an equal text) in "
        f"{took:.1f} s ({rate:.1f} chunks/s); {left} chunks still wait"
    )
    if stats.error:
        print(f"docsbot embed: {stats.error}", file=sys.stderr)
        return 1
    return 0 if left == 0 else 1
