"""What recording changes costs a refresh: the same docs release refreshed with the change log on and off, alternated.

`make bench` counts what recording does (the diffs' CPU in the workers, the database's time for old texts and change
rows); this script measures what it costs end to end. The Python docs are indexed (hashing embedder: embedding is
not what is measured), then bench/mutate.py's release (edits, deletions, additions) is applied and undone in turn,
each flip refreshed (``prune=orphans``, so every flip adds, modifies and deletes pages): with
``DOCSBOT_CHANGES_KEEP`` at its default and at ``0`` (nothing recorded), alternately. Prints every flip, the medians
and their ratio (target: at most 1.05)::

    .venv/bin/python bench/changes_cost.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mutate import release  # noqa: E402
from bench.run import Bench  # noqa: E402

TARGET = 1.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--workdir", default=str(ROOT / ".build/bench-changes"))
    parser.add_argument("--port", type=int, default=8392)
    parser.add_argument("--server", choices=["nginx", "python"], default="nginx")
    parser.add_argument("--repeat", type=int, default=3, help="flips with the log on, and as many with it off")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    args.embedder = "tests.embedders.HashingEmbedder"
    bench = Bench(args)
    bench.setup()
    try:
        root = f"{bench.url}index.html"
        bench.docsbot("full index", f"url={root}", check=True)
        before = {p: p.read_bytes() for p in bench.site.rglob("*.html")}
        change = release(bench.site, seed=args.seed)
        after = {p: p.read_bytes() for p in bench.site.rglob("*.html")}
        touched = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
        print(f"release: {len(change.edited)} edited, {len(change.deleted)} deleted, {len(change.added)} added; "
              f"{len(touched)} files flip", flush=True)  # fmt: skip

        def flip(state: dict[Path, bytes]) -> None:
            for path in touched:
                if path in state:
                    path.write_bytes(state[path])
                else:
                    path.unlink(missing_ok=True)

        walls: dict[bool, list[float]] = {True: [], False: []}
        released = True  # the files now are the release's
        order = [True, False, False, True] * ((args.repeat + 1) // 2)
        for n, record in enumerate(order[: 2 * args.repeat]):
            if n:  # the first refresh takes the release as applied above
                flip(before if released else after)
                released = not released
            bench.env["DOCSBOT_CHANGES_KEEP"] = "90d" if record else "0"
            phase = bench.docsbot(f"flip #{n + 1} ({'log on' if record else 'log off'})", "mode=refresh",
                                  "prune=orphans")  # fmt: skip
            stats = phase.docsbot
            walls[record].append(phase.wall)
            print(
                f"    {stats.get('modified', 0)} modified, {stats.get('new', 0)} new, {stats.get('deleted', 0)} "
                f"deleted; diffs {stats.get('changes/diff_seconds', 0):.2f} s CPU",
                flush=True,
            )
    finally:
        bench.teardown()
    on, off = statistics.median(walls[True]), statistics.median(walls[False])
    print(
        f"refresh with the change log: {', '.join(f'{w:.1f}' for w in walls[True])} s; without: "
        f"{', '.join(f'{w:.1f}' for w in walls[False])} s; medians {on:.2f} / {off:.2f} s = {on / off:.3f} "
        f"(target <= {TARGET})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
