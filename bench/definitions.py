"""Time to complete vectors with one vector per definition against before it, alternated.

"Vectors no later than today": a full index of the tree with docsbot's defaults (a vector per definition beside the
chunks, the default model variant) against the same full index as docsbot made it before (``DOCSBOT_DEFINITION_CHARS
=0``, the model graph as first exported: ``--before-model``, a directory ``make model MODEL_VARIANT=onnx-fp32``
provisions; 32 texts per model call, ``DOCSBOT_EMBED_BATCH_SIZE``'s default then). Each full index runs into a
database of its own (vectors are reused by text database-wide: a second index in one database would embed nothing)
and is timed as a whole process: ``scrapy crawl`` returns once its worker has given every chunk its vector. Rounds
alternate the order, so that the machine's drift falls on both.
Prints each run, the medians and their ratio (target: <= 1.0).

    .venv/bin/python bench/definitions.py --before-model DIR [--repeat 2] [--site /usr/share/doc/python3.11/html]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import Bench  # noqa: E402

TARGET = 1.0


def _database(dsn: str) -> str:
    """A new empty database on the bench's server; its libpq URI."""
    name = f"defs_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    head, _, query = dsn.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default="/usr/share/doc/python3.11/html", help="docs tree to copy and serve")
    parser.add_argument("--workdir", default=str(ROOT / ".build/bench-definitions"))
    parser.add_argument("--port", type=int, default=8392)
    parser.add_argument("--server", choices=["nginx", "python"], default="nginx")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of (now, before), the order alternating")
    parser.add_argument("--before-model", required=True, help="model directory of the graph docsbot had before")
    parser.add_argument("--now-model", help="model directory for the 'now' runs (default: the provisioned one)")
    parser.add_argument("--embedder", help="DOCSBOT_EMBEDDER override")
    args = parser.parse_args()

    bench = Bench(args)
    bench.setup()
    root = f"{bench.url}index.html"
    walls: dict[str, list[float]] = {"now": [], "before": []}
    embedded: dict[str, list[int]] = {"now": [], "before": []}
    configs = {
        "now": {"DOCSBOT_EMBEDDING_MODEL_PATH": args.now_model} if args.now_model else {},
        # before: no definition vectors, the graph as first exported, 32 texts per model call (the default then)
        "before": {
            "DOCSBOT_DEFINITION_CHARS": "0",
            "DOCSBOT_EMBEDDING_MODEL_PATH": args.before_model,
            "DOCSBOT_EMBED_BATCH_SIZE": "32",
        },
    }
    try:
        print(f"time to complete vectors: {args.site} served at {bench.url} by {args.server}", flush=True)
        # A text-only index first, not counted, so that a new server's cold caches fall on neither side (a first
        # index once paid 14 s more here, for a query planned without statistics: BENCHMARKS.md "The slow first run")
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={root}", "-a", "library=warmup"]
        env = {**bench.env, "DATABASE_URL": _database(bench.dsn), "DOCSBOT_CRAWL_EMBED_WORKERS": "0"}
        warm = bench.run("warm-up (text only)", cmd, env=env, project=True, check=False)
        if warm.exit_code not in (0, 4):  # 4: vectors pending, which is what a text-only index ends with
            raise SystemExit(f"the warm-up index failed (exit code {warm.exit_code})")
        for i in range(args.repeat):
            order = ("now", "before") if i % 2 == 0 else ("before", "now")
            for which in order:
                dsn = _database(bench.dsn)
                env = {**bench.env, "DATABASE_URL": dsn, **configs[which]}
                cmd = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={root}", "-a", "library=docs"]
                phase = bench.run(f"full index, {which} #{i + 1}", cmd, env=env, project=True)
                walls[which].append(phase.wall)
                with psycopg.connect(dsn) as conn:
                    (stats,) = conn.execute("SELECT stats FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()
                if stats.get("vectors_waiting", 0) or stats.get("outcome") not in (None, "complete"):
                    raise SystemExit(f"the {which} index did not complete its vectors: {stats.get('outcome')}")
                embedded[which].append(stats.get("chunks_embedded", 0))
                print(f"    {which}: {phase.wall:.1f} s, {embedded[which][-1]} texts embedded", flush=True)
    finally:
        bench.teardown()
    now, before = statistics.median(walls["now"]), statistics.median(walls["before"])
    print(
        f"now {', '.join(f'{w:.1f}' for w in walls['now'])} s ({embedded['now'][0]} texts); before "
        f"{', '.join(f'{w:.1f}' for w in walls['before'])} s ({embedded['before'][0]} texts); medians {now:.1f} / "
        f"{before:.1f} s = {now / before:.2f}x (target <= {TARGET})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
