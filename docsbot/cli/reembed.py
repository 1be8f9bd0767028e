"""``docsbot reembed``: switch a version's embedding model without indexing it again (docsbot.store.reembed).

Searches keep answering from the version's vectors until the new ones are complete; then they are swapped in one
transaction. Stopped at any moment, it continues where it stopped when run again.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docsbot.cli.common import database, library_version, project_settings
from docsbot.display import printable

if TYPE_CHECKING:
    import argparse

    from docsbot.store import VersionRow

__all__ = ["cmd_reembed", "model_overrides"]

SWAP_POLL_SECONDS = 2.0
# how long the new graph's build waits for another process building vector indexes (it builds it then, see
# docsbot.store.vector_index.ensure_vector_indexes)
GRAPH_WAIT_SECONDS = 600.0  # how often the swap looks again while a crawl of the version holds its run lock


def model_overrides(model: str | None) -> dict[str, Any]:
    """The settings that select ``--model``: a model directory (an existing directory: its files, under the name
    ``DOCSBOT_EMBEDDING_MODEL`` gives) or a model name (its provisioned directory for the default model,
    fastembed's cache or the endpoint otherwise). Raises ``ValueError`` for a path that is no directory."""
    if model is None:
        return {}
    path = Path(model).expanduser()
    if path.is_dir():
        return {"DOCSBOT_EMBEDDING_MODEL_PATH": str(path.resolve())}
    if model.startswith(("/", "./", "../", "~")) or path.exists():
        raise ValueError(
            f"{model} is not a model directory: export one there with `make model MODEL_DIR={model}` "
            "(add MODEL_VARIANT=onnx-int8 for the quantized graph), or give a model name"
        )
    return {"DOCSBOT_EMBEDDING_MODEL": model, "DOCSBOT_EMBEDDING_MODEL_PATH": ""}


def _select(conn: Any, args: argparse.Namespace, model: str) -> list[VersionRow] | str:
    """The versions to switch, or the line that says why there are none."""
    from docsbot import store

    if args.library is not None:
        library, version = library_version(args.library)
        found = store.list_versions(conn, library, version)
        if not found:
            known = ", ".join(store.version_label(v.library, v.name) for v in store.list_versions(conn)) or "none"
            return f"{printable(args.library)} is not indexed; indexed: {printable(known)}"
        return found
    found = [v for v in store.list_versions(conn) if v.embedding_model == args.from_model or v.next_model == model]
    if not any(v.embedding_model == args.from_model for v in found):
        bound = sorted({v.embedding_model for v in store.list_versions(conn) if v.embedding_model})
        return f"no version is embedded with {printable(args.from_model)}; models in use: {', '.join(bound) or 'none'}"
    return found


def cmd_reembed(args: argparse.Namespace) -> int:
    """Give the chosen versions' chunks their vectors of the new model beside the ones searches read, then swap
    each version to the new model in one transaction."""
    import logging

    from docsbot import store
    from docsbot.project_settings import ProjectSettings
    from docsbot.store import reembed

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    if (args.library is None) == (args.from_model is None):
        print("docsbot reembed: give LIBRARY[@VERSION] or --from-model MODEL (every version embedded with it)",
              file=sys.stderr)  # fmt: skip
        return 2
    settings = project_settings()
    dsn = store.resolve_dsn(settings)
    if args.cancel:
        return _cancel(args, dsn)
    try:
        overrides = model_overrides(args.model)
    except ValueError as exc:
        print(f"docsbot reembed: {printable(exc)}", file=sys.stderr)
        return 2
    from docsbot.embedding.models import load_embedder

    embedder_settings = ProjectSettings("docsbot.settings", overrides)
    embedder = load_embedder(embedder_settings)  # EmbeddingModelError: one line and exit 2 (docsbot.cli.main)
    getattr(embedder, "check", lambda: None)()
    dim = embedder.dim  # may load the model or ask the endpoint: before anything is recorded
    with database(write=True) as conn:
        conn.commit()  # the schema check's transaction
        conn.autocommit = True
        chosen = _select(conn, args, embedder.name)
        if isinstance(chosen, str):
            print(f"docsbot reembed: {chosen}", file=sys.stderr)
            return 1
        todo = []
        for version in chosen:
            label = store.version_label(version.library, version.name)
            try:
                resumed = reembed.start_migration(conn, version, embedder.name, dim)
            except store.DatabaseError as exc:
                if args.from_model is None:
                    raise  # one line from docsbot.cli.main, exit 2; nothing was recorded
                print(f"docsbot reembed: skipped: {printable(exc)}", file=sys.stderr)
                continue
            print(f"{'continuing' if resumed else 'switching'} {printable(label)}: {version.embedding_model} → "
                  f"{embedder.name} ({dim} dimensions)", file=sys.stderr)  # fmt: skip
            todo.append(version)
    status = 0
    for version in todo:
        status = max(status, _migrate(args, settings, dsn, embedder, version, dim))
        if status == 130:
            break
    return status


def _cancel(args: argparse.Namespace, dsn: str) -> int:
    from docsbot import store
    from docsbot.store import reembed

    with database(write=True) as conn:
        conn.commit()  # the schema check's transaction
        conn.autocommit = True
        chosen = _select(conn, args, "")
        if isinstance(chosen, str):
            print(f"docsbot reembed: {chosen}", file=sys.stderr)
            return 1
        switching = [v for v in chosen if v.next_model is not None]
        if not switching:
            print(f"docsbot reembed: no switch is under way for {printable(args.library or args.from_model)}; "
                  "nothing cancelled", file=sys.stderr)  # fmt: skip
            return 1
        for version in switching:
            dropped = reembed.cancel_migration(conn, version)
            label = store.version_label(version.library, version.name)
            print(f"cancelled the switch of {printable(label)} to {version.next_model}: {dropped} of its vectors "
                  f"dropped; it keeps {version.embedding_model}")  # fmt: skip
    return 0


def _migrate(args: argparse.Namespace, settings: Any, dsn: str, embedder: Any, version: VersionRow, dim: int) -> int:
    """One version: embed, wait for a crawl if one runs, swap, build its graph. Returns the exit status."""
    import time

    from docsbot import store
    from docsbot.store import reembed

    label = store.version_label(version.library, version.name)
    started = time.monotonic()
    embedded = written = 0
    told = False
    while True:
        stats = _embed(args, settings, dsn, embedder, version, dim, label)
        if stats is None:
            print(f"docsbot reembed: stopped; `docsbot reembed {printable(label)} --model ...` continues where it "
                  "stopped (searches still read the old vectors)", file=sys.stderr)  # fmt: skip
            return 130
        embedded += stats.embedded
        written += stats.written
        if stats.error:
            print(f"docsbot reembed: {printable(stats.error)} ({printable(label)} keeps its model; run again to "
                  "continue)", file=sys.stderr)  # fmt: skip
            return 1
        with store.connect(dsn, autocommit=True) as conn:
            current = store.find_version(conn, version.library, version.name) or version
            reembed.drop_index_before_swap(conn, current, dim)
            while (swapped := reembed.swap(conn, current, embedder.name, dim)) is None:
                if reembed.waiting_next(conn, version.id):
                    break  # chunks a crawl wrote meanwhile: they get theirs first
                if not told:
                    print(f"waiting for the run of {printable(label)} in progress to end before the swap",
                          file=sys.stderr)  # fmt: skip
                    told = True
                time.sleep(SWAP_POLL_SECONDS)
            if swapped is not None:
                store.ensure_vector_indexes(dsn, wait=GRAPH_WAIT_SECONDS)  # its graph for the new vectors
                break
    print(f"switched {printable(label)} to {embedder.name} ({dim} dimensions): {swapped} chunks, {embedded} texts "
          f"embedded, {written} next vectors written in {time.monotonic() - started:.1f} s")  # fmt: skip
    return 0


def _embed(
    args: argparse.Namespace, settings: Any, dsn: str, embedder: Any, version: VersionRow, dim: int, label: str
) -> Any:
    """Drain the version's chunks without a next vector; the worker's stats, or ``None`` if interrupted."""
    import asyncio

    from docsbot import store
    from docsbot.embedding.migration import ReembedWorker
    from docsbot.embedding.worker import ModelRunner

    runner = ModelRunner(embedder, args.nice if args.nice is not None else settings.getint("DOCSBOT_EMBED_NICE", 10))
    worker = ReembedWorker(
        dsn,
        runner,
        model=embedder.name,
        dim=dim,
        version_id=version.id,
        label=f"{label} ({embedder.name})",
        claim=args.claim or settings.getint("DOCSBOT_EMBED_CLAIM", 256),
        slots=args.concurrency,
        retry=store.RetryPolicy.from_settings(settings),
        progress_every=args.progress,
    )

    async def run() -> Any:
        try:
            return await worker.run()
        finally:
            await runner.aclose()  # an HTTP backend's connections, on their event loop

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        return None
    finally:
        runner.close()
