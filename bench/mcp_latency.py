"""Warm ``search_docs`` latency through the MCP client, against an index that already exists.

Starts ``python -m docsbot.cli mcp`` (stdio) with this process's environment (``DATABASE_URL`` or
``DOCSBOT_DATA_DIR``, ``DOCSBOT_EMBEDDER``…), as a desktop client would, makes ``--warmup`` calls, then times
``-n`` sequential calls (client-side wall time of each ``tools/call``, queries taken in turn from ``--query`` or a
built-in list of Python-docs questions; or ``--tool get_changes --args '{"library": "python"}'``, the same call
each time). Optionally times ``docsbot search`` as whole processes (``--cli-runs``),
for comparison. Prints one JSON object (milliseconds) on stdout, a summary line on stderr::

    python bench/mcp_latency.py --library python --version 3.11 -n 200
    {"calls": 200, "p50_ms": ..., "p95_ms": ..., "max_ms": ..., "mean_ms": ..., "cli_search_s": [...]}

Exit code 1 if a call failed or found nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
QUERIES = [
    "create a task with asyncio",
    "asyncio.gather return_exceptions",
    "read a file line by line",
    "dataclass default factory",
    "subprocess run capture output",
    "json dumps indent",
    "pathlib glob recursive",
    "datetime timezone utc",
    "logging basicConfig format",
    "argparse subcommands",
    "itertools groupby",
    "contextlib contextmanager",
    "typing Protocol",
    "re named groups",
    "collections Counter most_common",
    "unittest mock patch",
]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0-100) of ``values``."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


async def measure(args: argparse.Namespace) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    params = StdioServerParameters(command=sys.executable, args=["-m", "docsbot.cli", "mcp"], env=env, cwd=str(ROOT))
    queries = args.query or QUERIES
    base = {"limit": args.limit}
    if args.library:
        base["library"] = args.library
    if args.version is not None:
        base["version"] = args.version
    timings: list[float] = []
    empty = 0
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            started = time.perf_counter()
            await session.initialize()
            ready = time.perf_counter() - started
            for i in range(args.warmup + args.n):
                if args.tool == "search_docs":
                    call = {**base, "query": queries[i % len(queries)]}
                else:
                    call = json.loads(args.args or "{}")
                t0 = time.perf_counter()
                result = await session.call_tool(args.tool, call)
                elapsed = time.perf_counter() - t0
                if result.is_error:
                    raise SystemExit(f"{args.tool} failed: {result.content[0].text}")
                if i >= args.warmup:
                    timings.append(elapsed * 1000)
                    if args.tool == "search_docs":
                        empty += not result.structured_content["results"]
    return {
        "calls": len(timings),
        "p50_ms": round(percentile(timings, 50), 1),
        "p95_ms": round(percentile(timings, 95), 1),
        "max_ms": round(max(timings), 1),
        "mean_ms": round(statistics.fmean(timings), 1),
        "empty_results": empty,
        "server_start_s": round(ready, 2),
    }


def cli_search(args: argparse.Namespace) -> list[float]:
    """Wall seconds of ``docsbot search`` run as a whole process (model load included), ``--cli-runs`` times."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "docsbot.cli", "search", QUERIES[0], "-k", str(args.limit)]
    if args.library:
        cmd += ["--library", args.library]
    if args.version is not None:
        cmd += ["--version", args.version]
    walls = []
    for _ in range(args.cli_runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, check=True, timeout=300)
        walls.append(round(time.perf_counter() - t0, 2))
    return walls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="timed calls (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first (default 10)")
    parser.add_argument("--library")
    parser.add_argument("--version")
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--query", action="append", help="a query (repeatable); default: built-in Python queries")
    parser.add_argument("--cli-runs", type=int, default=0, help="also time `docsbot search` as whole processes")
    parser.add_argument("--tool", default="search_docs", help="the tool to time (default search_docs)")
    parser.add_argument("--args", help="the other tool's arguments, as JSON (the same for every call)")
    args = parser.parse_args(argv)
    report = anyio.run(measure, args)
    if args.cli_runs:
        report["cli_search_s"] = cli_search(args)
    print(json.dumps(report))
    print(
        f"{args.tool} over MCP (stdio), {report['calls']} warm calls: p50 {report['p50_ms']} ms, "
        f"p95 {report['p95_ms']} ms, max {report['max_ms']} ms"
        + (f"; docsbot search as a process: {report['cli_search_s']} s" if args.cli_runs else ""),
        file=sys.stderr,
    )
    return 1 if report["empty_results"] else 0


if __name__ == "__main__":
    sys.exit(main())
