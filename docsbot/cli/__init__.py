"""``docsbot``: index and refresh docs, search the index, show its status, give waiting chunks their vectors.
``index`` and ``refresh`` run ``scrapy crawl docs`` with docsbot's settings, from any folder (see
docs/guide/crawling.md).

Read-only commands (``search``, ``status``) never write: they check that the database's schema is current and
say which command updates it when it is not. What a command prints, and its log lines, have their control and
format characters escaped (:mod:`docsbot.display`). Exit codes: 0 success, 1 nothing found / nothing indexed / work left
undone, 2 usage or configuration error (bad arguments, database unreachable, model not loadable); ``index`` and
``refresh`` exit with the crawl's own codes (docsbot.refresh.outcome).

This module builds the parser and runs a command; the commands live by group: :mod:`~docsbot.cli.crawl`
(``index``, ``refresh``), :mod:`~docsbot.cli.search` (``search``, ``docs``, ``changes``, ``diff``, ``export``),
:mod:`~docsbot.cli.status`, :mod:`~docsbot.cli.fleet` (``add``, ``sync``, ``scheduler``), :mod:`~docsbot.cli.db`
(``delete``, ``db stop``, ``db migrate``), :mod:`~docsbot.cli.embed`, :mod:`~docsbot.cli.reembed` and
:mod:`~docsbot.cli.serve` (``mcp``, ``serve``), with what they share in
:mod:`~docsbot.cli.common`. Each imports what it needs inside its command, so that ``docsbot search`` loads neither
Scrapy nor the MCP SDK.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import TYPE_CHECKING

from docsbot.cli.crawl import cmd_index, cmd_refresh
from docsbot.cli.db import cmd_db_migrate, cmd_db_stop, cmd_delete
from docsbot.cli.embed import cmd_embed
from docsbot.cli.examples import DESCRIPTION, epilog
from docsbot.cli.fleet import cmd_add, cmd_scheduler, cmd_sync
from docsbot.cli.reembed import cmd_reembed
from docsbot.cli.search import cmd_changes, cmd_diff, cmd_docs, cmd_export, cmd_search
from docsbot.cli.serve import cmd_mcp, cmd_serve
from docsbot.cli.status import cmd_status
from docsbot.display import EscapingStream, escape_log_records, printable
from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def _worker_options(parser: argparse.ArgumentParser) -> None:
    """The options of an embedding worker's command (``docsbot embed``, ``docsbot reembed``)."""
    parser.add_argument("--claim", type=int, help="chunks per claim (default DOCSBOT_EMBED_CLAIM, 256)")
    parser.add_argument("--concurrency", type=int, help="claims in flight at once (default: the backend's)")
    parser.add_argument("--nice", type=int, help="CPU priority of the model's thread (default DOCSBOT_EMBED_NICE, 10)")
    parser.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines (default 30)")


def _network_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--allow-network",
        action="append",
        metavar="NET|HOST",
        help="crawls a caller starts may also reach this network (10.0.0.0/8) or host (docs.internal); repeatable; "
        "adds to DOCSBOT_ALLOWED_NETWORKS (default: public addresses only)",
    )
    command.add_argument(
        "--allow-private-networks",
        action="store_true",
        help="crawls a caller starts may reach any address, loopback and private ones included (trusted callers only)",
    )


def _environment_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--python", metavar="X.Y", help="read environment markers for this Python (default: this interpreter's)"
    )
    command.add_argument(
        "--platform",
        choices=["linux", "windows", "macos"],
        help="read environment markers and Cargo's cfg() targets for this platform (default: this machine's)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docsbot",
        description=textwrap.fill(DESCRIPTION, 100),
        epilog=epilog("index"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    index = sub.add_parser(
        "index",
        help="index docs: a site's root URL, a local folder or an archive (runs `scrapy crawl docs` in the foreground)",
    )
    index.add_argument(
        "url", metavar="ROOT", help="a site's root URL, a folder (./docs, /srv/docs, file:///srv/docs/) or an archive "
        "(docs.zip, docs.tar.gz, https://example.org/docs.tar.gz)",
    )  # fmt: skip
    index.add_argument("--library", help="the library's name (default: the URL's host, the folder's or archive's name)")
    index.add_argument("--version", help="its version (default: none)")
    refresh = sub.add_parser(
        "refresh",
        help="refresh an indexed library version: only what changed (runs `scrapy crawl docs` in the foreground)",
    )
    refresh.add_argument("library", metavar="LIBRARY[@VERSION]")
    for command in (index, refresh):
        command.add_argument(
            "-a", dest="arguments", action="append", metavar="NAME=VALUE",
            help="a spider argument, as `scrapy crawl docs -a` takes it (max_depth=2, prune=orphans...); repeatable",
        )  # fmt: skip
        command.add_argument(
            "-s", dest="settings", action="append", metavar="NAME=VALUE",
            help="a setting, as `scrapy crawl -s` takes it (DOCSBOT_CONCURRENT_REQUESTS=4...); repeatable",
        )  # fmt: skip
    index.set_defaults(func=cmd_index)
    refresh.set_defaults(func=cmd_refresh)
    search = sub.add_parser("search", help="hybrid (vector + full-text) search of the indexed docs")
    search.add_argument("query")
    search.add_argument("--library", help="only this library")
    search.add_argument("--version", help="only this version of it ('' for none)")
    search.add_argument("-k", type=int, default=5, help="number of results (default 5)")
    search.add_argument(
        "--json", action="store_true", help="JSON lines: url, deep_link, title, heading_path, score, content"
    )
    search.add_argument("--chunks", action="store_true", help="raw chunks instead of one result per page")
    search.add_argument(
        "--explain",
        action="store_true",
        help="under each result, its rank in each candidate list and every ranking knob that changed its score",
    )
    search.add_argument(
        "--kind",
        choices=["docs", "changelog", "index", "example"],
        help="only pages of this kind: docs (reference, guides), changelog (release notes, What's New), index; "
        "example: only sections holding a code example",
    )
    search.set_defaults(func=cmd_search)
    status = sub.add_parser("status", help="libraries, versions, pages, chunks and vectors, last runs")
    status.set_defaults(func=cmd_status)
    embed = sub.add_parser(
        "embed", help="give the chunks waiting for a vector theirs (from any machine; the crawl runs one worker too)"
    )
    embed.add_argument("--library", help="only this library")
    embed.add_argument("--version", help="only this version of it ('' for none)")
    embed.add_argument("--follow", action="store_true", help="keep running: embed new chunks as crawls store them")
    _worker_options(embed)
    embed.set_defaults(func=cmd_embed)
    reembed = sub.add_parser(
        "reembed",
        help="switch a version's embedding model: new vectors beside the ones searches read, swapped in at the end "
        "(resumable)",
    )
    reembed.add_argument("library", nargs="?", metavar="LIBRARY[@VERSION]", help="the version(s) to switch")
    reembed.add_argument("--from-model", metavar="MODEL", help="instead: every version embedded with this model")
    reembed.add_argument(
        "--model", metavar="NAME_OR_DIR", help="the new model: a provisioned model directory or a model name "
        "(default: DOCSBOT_EMBEDDING_MODEL / DOCSBOT_EMBEDDING_MODEL_PATH, or the endpoint's)",
    )  # fmt: skip
    reembed.add_argument("--cancel", action="store_true", help="stop a switch under way and drop its new vectors")
    _worker_options(reembed)
    reembed.set_defaults(func=cmd_reembed)
    delete = sub.add_parser("delete", help="remove a library version (or every version) and all of its data")
    delete.add_argument("--library", required=True)
    delete.add_argument("--version", help="only this version ('' for the unversioned one); default: all")
    delete.set_defaults(func=cmd_delete)
    database = sub.add_parser("db", help="the database: its schema, and the embedded PostgreSQL")
    db_sub = database.add_subparsers(dest="action", required=True)
    db_sub.add_parser(
        "stop", help="stop it now (it also stops by itself after DOCSBOT_PG_IDLE_TIMEOUT seconds unused)"
    ).set_defaults(func=cmd_db_stop)
    db_sub.add_parser(
        "migrate", help="bring the database schema up to date (crawls do it too; read-only commands never do)"
    ).set_defaults(func=cmd_db_migrate)
    mcp = sub.add_parser("mcp", help="serve the index to LLM agents (Model Context Protocol; stdio by default)")
    mcp.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp (default host 127.0.0.1); another host than loopback "
        "needs DOCSBOT_MCP_TOKEN",
    )
    mcp.add_argument(
        "--allow-refresh",
        action="store_true",
        help="add the write tools (refresh_library, index_library, remove_library...; read-only otherwise); with "
        "--http, needs DOCSBOT_MCP_TOKEN",
    )
    _network_options(mcp)
    mcp.set_defaults(func=cmd_mcp)
    changes = sub.add_parser("changes", help="what refreshes changed: pages added, modified (sections, diff), deleted")
    changes.add_argument("library", metavar="LIBRARY[@VERSION]")
    changes.add_argument("--since", help="a duration back from now (7d, 12h) or a date (2026-11-20); default: all kept")
    changes.add_argument("--run", type=int, help="only the changes of this run (a crawl_runs id, as `status` shows)")
    changes.add_argument("--diff", action="store_true", help="show each modified page's unified diff")
    changes.add_argument("--limit", type=int, default=200, help="at most this many pages, newest first (default 200)")
    changes.add_argument("--json", action="store_true", help="JSON lines, one change each")
    changes.set_defaults(func=cmd_changes)
    diff = sub.add_parser("diff", help="API names added, removed and changed between two versions of a library")
    diff.add_argument("library")
    diff.add_argument("old", metavar="OLD_VERSION")
    diff.add_argument("new", metavar="NEW_VERSION")
    diff.add_argument("--json", action="store_true")
    diff.set_defaults(func=cmd_diff)
    add = sub.add_parser("add", help="add a package's documentation to the libraries file, found in its registry")
    add.add_argument(
        "package",
        metavar="PACKAGE",
        help="as its ecosystem writes it: requests, 'flask>=2', 'requests==2.31.0; python_version < \"3.13\"', "
        "requests@^2.31 (Poetry's), express@^4.18, react@next (npm), serde@1.0 (Cargo: a caret range)",
    )
    add.add_argument("--ecosystem", choices=["pypi", "npm", "cargo"], default="pypi", help="its registry (pypi)")
    add.add_argument("--file", help="the libraries file (default ./libraries.toml; created when missing)")
    add.add_argument("--refresh", help="how often it is due (12h, 7d); default the file's [defaults]")
    add.add_argument("--dry-run", action="store_true", help="print the entry, write nothing")
    _environment_options(add)
    add.add_argument("--url", help="its documentation root, when the registry's metadata cannot tell (still checked)")
    add.set_defaults(func=cmd_add)
    docs = sub.add_parser("docs", help="a library's docs on a topic (or its overview) within a token budget")
    docs.add_argument("library", metavar="LIBRARY[@VERSION]", help="an indexed library; VERSION may be loose (3.x)")
    docs.add_argument("topic", nargs="*", help="what you need, in words or identifiers; none: the overview pages")
    docs.add_argument("--max-tokens", type=int, default=5000, help="the budget, in the model's tokens (default 5000)")
    docs.add_argument("--json", action="store_true", help="the answer as JSON (MCP get_docs' shape)")
    docs.add_argument("--resolve", action="store_true", help="list the indexed libraries LIBRARY may mean, and stop")
    docs.set_defaults(func=cmd_docs)
    export = sub.add_parser("export", help="write a version's pages as Markdown (llms-full.txt or a directory)")
    export.add_argument("library", metavar="LIBRARY[@VERSION]")
    export.add_argument(
        "--format",
        choices=["llms-full", "pages"],
        default="llms-full",
        help="llms-full: one file, each page under its title and source URL; pages: a .md per page",
    )
    export.add_argument("-o", "--output", help="file (llms-full) or directory (pages); default: named after it")
    export.set_defaults(func=cmd_export)
    sync = sub.add_parser("sync", help="index and refresh the library versions of a libraries file (the due ones)")
    sync.add_argument("file", nargs="?", help="the libraries file (TOML; default ./libraries.toml)")
    sync.add_argument("--due", action="store_true", help="no file: run the versions that are due, from the database")
    sync.add_argument("--prune", action="store_true", help="delete the versions the file no longer declares")
    sync.add_argument(
        "--from",
        dest="from_files",
        action="append",
        metavar="DEPFILE",
        help="first add the docs of this project's dependencies (requirements*.txt, pyproject.toml, package.json, "
        "Cargo.toml, with the lock file beside it; or a lock file: uv.lock, package-lock.json, pnpm-lock.yaml, "
        "Cargo.lock; repeatable) to the libraries file",
    )
    sync.add_argument(
        "--dry-run", action="store_true", help="with --from: print the plan (each dependency, its version, root and "
        "why; each one skipped, and why), write nothing, run nothing",
    )  # fmt: skip
    _environment_options(sync)
    scheduler = sub.add_parser("scheduler", help="run due versions on a timer, for ever (a long-running service)")
    scheduler.add_argument("--interval", type=float, default=60.0, help="seconds between ticks (default 60)")
    for command in (sync, scheduler):
        command.add_argument("--jobs", type=int, default=2, help="local runs at once (default 2)")
        command.add_argument(
            "--scrapyd",
            action="append",
            metavar="URL",
            help="run on this Scrapyd node instead (repeatable; default DOCSBOT_SCRAPYD_URLS, space-separated)",
        )
    sync.set_defaults(func=cmd_sync)
    scheduler.set_defaults(func=cmd_scheduler)
    serve = sub.add_parser("serve", help="web pages to search and follow the index, with the MCP server at /mcp")
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        default="127.0.0.1:8765",
        help="where to serve (default 127.0.0.1:8765); another host than loopback needs DOCSBOT_MCP_TOKEN",
    )
    serve.add_argument(
        "--allow-writes",
        action="store_true",
        help="allow refreshing and removing library versions (read-only otherwise); needs DOCSBOT_MCP_TOKEN",
    )
    _network_options(serve)
    serve.set_defaults(func=cmd_serve)
    _describe(sub)
    return parser


def _describe(sub: argparse._SubParsersAction, prefix: str = "") -> None:
    """Give each command its one-line help as a full sentence, and its example as the epilog, through nested
    commands (``db stop``); RawDescriptionHelpFormatter keeps the example's line as written."""
    helps = {choice.dest: choice.help or "" for choice in sub._choices_actions}
    for name, command in sub.choices.items():
        summary = helps.get(name, "")
        if summary and not command.description:
            sentence = summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else ".")
            command.description = textwrap.fill(sentence, 100)
        command.epilog = epilog(prefix + name)
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                _describe(action, prefix + name + " ")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    escape_log_records()
    # Whatever a stored or given string holds, nothing this command prints acts on the terminal
    sys.stderr = EscapingStream(sys.stderr)
    if args.func is not cmd_mcp:  # stdio MCP speaks JSON-RPC on stdout
        sys.stdout = EscapingStream(sys.stdout)
    if getattr(args, "k", 1) < 1:
        print("docsbot: -k must be at least 1", file=sys.stderr)
        return 2
    from docsbot.settings import DOCSBOT_SETTINGS_ERRORS

    if DOCSBOT_SETTINGS_ERRORS:  # a malformed environment variable: say which, before anything is touched
        for problem in DOCSBOT_SETTINGS_ERRORS:
            print(f"docsbot: {problem}", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # `docsbot search ... | head`: the reader left; no traceback (Python's signal docs)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that flushing at exit fails no more
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by it
    except DocsbotError as exc:  # a database, model or query error the user can act on
        print(f"docsbot: {printable(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        import psycopg

        if not isinstance(exc, psycopg.Error):
            raise
        # the server refused (a role without the privilege, a read-only transaction): one line, not a traceback
        print(f"docsbot: the database refused: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
