"""Time to searchable alone: a full index until every page is stored, against the plain Scrapy crawl, alternated.

`make bench` measures this ratio too, in a few rounds at the end of a run that spends most of its half hour
embedding. This script measures only it, ``--repeat`` times, by the same function
(:func:`bench.run.searchable_rounds`), alternating the two so that the machine's drift falls on both: each round is
a full index of the tree into a new library whose crawl leaves its vectors to the queue
(``DOCSBOT_CRAWL_EMBED_WORKERS=0``: what the crawl's worker does after the last page is not part of the time),
then the plain crawl of bench/bare_spider.py. Time to searchable is the index's whole-process wall time less what
it spent after every page was stored (``elapsed_seconds - searchable_seconds`` of its run row). Prints each round,
the medians and their ratio (target: <= 4, against the lean plain crawl).

    .venv/bin/python bench/searchable.py [--repeat 3] [--site /usr/share/doc/python3.11/html]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import Bench, searchable_rounds  # noqa: E402

TARGET = 4.0  # against the lean crawl (1.5 was for the old yardstick, which joined and canonicalized every link)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default="/usr/share/doc/python3.11/html", help="docs tree to copy and serve")
    parser.add_argument("--workdir", default=str(ROOT / ".build/bench-searchable"))
    parser.add_argument("--port", type=int, default=8391)
    parser.add_argument("--server", choices=["nginx", "python"], default="nginx")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of (full index, plain crawl)")
    parser.add_argument("--embedder", help="DOCSBOT_EMBEDDER override (the chunker sizes by its tokenizer)")
    args = parser.parse_args()

    bench = Bench(args)
    bench.setup()
    root = f"{bench.url}index.html"
    try:
        print(f"time to searchable: {args.site} served at {bench.url} by {args.server}", flush=True)
        searchable, plain = searchable_rounds(bench, root, args.repeat)
    finally:
        bench.teardown()
    ratio = statistics.median(searchable) / statistics.median(plain)
    print(
        f"time to searchable {', '.join(f'{s:.1f}' for s in searchable)} s; plain crawl "
        f"{', '.join(f'{p:.1f}' for p in plain)} s; medians {statistics.median(searchable):.1f} / "
        f"{statistics.median(plain):.1f} s = {ratio:.2f}x (target <= {TARGET})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
