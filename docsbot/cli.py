"""``docsbot``: search the index and show its status. Crawling is ``scrapy crawl docs`` (see the README).

Exit codes: 0 success, 1 nothing found / nothing indexed, 2 usage or configuration error (bad arguments,
database unreachable, model not loadable).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import textwrap
import threading
from typing import TYPE_CHECKING

from docsbot.config import ProjectSettings
from docsbot.errors import DocsbotError

# docsbot.db (psycopg, numpy: about 0.3 s) and docsbot.search are imported inside the commands: `docsbot search`
# starts loading the query model on a thread first, and its imports run while the model loads.

if TYPE_CHECKING:
    from collections.abc import Sequence

    import psycopg

    from docsbot.embedding import Embedder

__all__ = ["main"]


def _settings() -> ProjectSettings:
    # docsbot.settings without Scrapy: importing scrapy costs about 0.4 s of every `docsbot search`
    return ProjectSettings("docsbot.settings")


def _database() -> psycopg.Connection:
    """A connection to the configured (or embedded) database, schema migrated."""
    from docsbot import db

    conn = db.connect(db.resolve_dsn(_settings()))
    db.migrate(conn)
    return conn


def _excerpt(text: str, width: int = 300) -> str:
    return textwrap.shorten(" ".join(text.split()), width=width, placeholder=" …")


def _load_in_background(embedder: Embedder) -> threading.Thread:
    """Load the query model on a thread while the main thread reaches the database (onnxruntime releases the GIL
    while it reads the model). A failure is left for the search itself to raise."""

    from docsbot.embedding import embed_query

    def load() -> None:
        with contextlib.suppress(Exception):
            embed_query(embedder, ["warm up"])

    thread = threading.Thread(target=load, name="docsbot-model", daemon=True)
    thread.start()
    return thread


def cmd_search(args: argparse.Namespace) -> int:
    from docsbot.embedding import load_embedder

    settings = _settings()
    embedder = load_embedder(settings)  # the query path imports neither fastembed nor scrapy
    loading = _load_in_background(embedder)
    try:
        from docsbot import db
        from docsbot.search import Searcher, UnknownLibrary

        dsn = db.resolve_dsn(settings)
        with db.connect(dsn) as conn:
            db.migrate(conn)
        with Searcher(dsn, embedder, pool_size=1) as searcher:
            try:
                results = searcher.search(args.query, args.library, args.version, args.k, chunks=args.chunks)
            except UnknownLibrary as exc:
                print(f"docsbot: {exc}; index a site with `scrapy crawl docs -a url=URL`", file=sys.stderr)
                return 1
    finally:
        loading.join()  # never exit while onnxruntime is still loading on the thread
    if args.json:
        for result in results:
            print(json.dumps(result.as_dict(), ensure_ascii=False))
    else:
        for rank, hit in enumerate(results, 1):
            path = " > ".join(hit.heading_path[1:] if hit.heading_path[:1] == [hit.title] else hit.heading_path)
            print(f"{rank}. {hit.title}" + (f" — {path}" if path else ""))
            print(f"   {hit.deep_link}  (score {hit.score:.4f})")
            print(textwrap.indent(textwrap.fill(_excerpt(hit.content), 100), "   "))
            print()
    return 0 if results else 1


def cmd_status(args: argparse.Namespace) -> int:
    from docsbot import db

    with _database() as conn:
        versions = db.status(conn)
    if not versions:
        print("nothing indexed yet; index a site with `scrapy crawl docs -a url=URL`")
        return 1
    for v in versions:
        label = db.version_label(v["library"], v["version"])
        print(f"{label}  {v['root_url']}")
        print(f"  {v['pages']} pages, {v['chunks']} chunks, model {v['embedding_model']}")
        for run in v["runs"]:
            s = run["stats"]
            took = f"{s.get('elapsed_seconds', 0):.1f} s" if run["finished_at"] else "running or interrupted"
            print(
                f"  {run['started_at']:%Y-%m-%d %H:%M} {run['mode']:<7}: {s.get('unchanged', 0)} unchanged, "
                f"{s.get('modified', 0)} modified, {s.get('new', 0)} new, {s.get('deleted', 0)} deleted, "
                f"{s.get('failed', 0)} failed, {s.get('chunks_embedded', 0)} chunks embedded in {took}"
            )
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from docsbot import db

    with _database() as conn:
        deleted = db.delete_version(conn, args.library, args.version)
    if not deleted:
        which = f"{args.library}@{args.version}" if args.version is not None else args.library
        print(f"docsbot: nothing indexed as {which}", file=sys.stderr)
        return 1
    for label, pages in deleted:
        print(f"deleted {label}: {pages} pages with their chunks and runs")
    return 0


def cmd_db_stop(args: argparse.Namespace) -> int:
    from pathlib import Path

    from docsbot import embedded_pg

    settings = _settings()
    if settings.get("DATABASE_URL"):
        print("docsbot: DATABASE_URL is set; docsbot does not manage that server", file=sys.stderr)
        return 2
    pgdata = Path(settings.get("DOCSBOT_PGDATA")).expanduser().resolve()
    if not (pgdata / "PG_VERSION").is_file():
        print(f"no embedded PostgreSQL in {pgdata}")
        return 0
    stopped = embedded_pg.stop(pgdata)
    print(f"{'stopped' if stopped else 'not running:'} the embedded PostgreSQL in {pgdata}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from docsbot.mcp_server import UsageError, serve  # the MCP SDK is imported only by this command

    try:
        return serve(http=args.http, allow_refresh=args.allow_refresh)
    except UsageError as exc:
        print(f"docsbot mcp: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docsbot", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    search = sub.add_parser("search", help="hybrid (vector + full-text) search of the indexed docs")
    search.add_argument("query")
    search.add_argument("--library", help="only this library")
    search.add_argument("--version", help="only this version of it ('' for none)")
    search.add_argument("-k", type=int, default=5, help="number of results (default 5)")
    search.add_argument(
        "--json", action="store_true", help="JSON lines: url, deep_link, title, heading_path, score, content"
    )
    search.add_argument("--chunks", action="store_true", help="raw chunks instead of one result per page")
    search.set_defaults(func=cmd_search)
    status = sub.add_parser("status", help="libraries, versions, page and chunk counts, last runs")
    status.set_defaults(func=cmd_status)
    delete = sub.add_parser("delete", help="remove a library version (or every version) and all of its data")
    delete.add_argument("--library", required=True)
    delete.add_argument("--version", help="only this version ('' for the unversioned one); default: all")
    delete.set_defaults(func=cmd_delete)
    database = sub.add_parser("db", help="the embedded PostgreSQL (used when DATABASE_URL is unset)")
    db_sub = database.add_subparsers(dest="action", required=True)
    db_sub.add_parser(
        "stop", help="stop it now (it also stops by itself after DOCSBOT_PG_IDLE_TIMEOUT seconds unused)"
    ).set_defaults(func=cmd_db_stop)
    mcp = sub.add_parser("mcp", help="serve the index to LLM agents (Model Context Protocol; stdio by default)")
    mcp.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp (default host 127.0.0.1); another host than loopback "
        "needs DOCSBOT_MCP_TOKEN",
    )
    mcp.add_argument(
        "--allow-refresh", action="store_true", help="add the refresh_library and get_run tools (read-only otherwise)"
    )
    mcp.set_defaults(func=cmd_mcp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "k", 1) < 1:
        print("docsbot: -k must be at least 1", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except DocsbotError as exc:  # a database, model or query error the user can act on
        print(f"docsbot: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
