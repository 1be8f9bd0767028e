"""The fault matrix on a busy machine: the fault-injecting tests (docs/development/testing.md) beside busy loops.

The target: 0 pages lost and 0 exit-0 runs with a failed page or an unfinished run row, across the whole
fault matrix, with two busy loops beside the crawl. The tests assert pages whole, exit codes and run rows fault by
fault (a lost page fails its test); every run row they leave is also audited (``DOCSBOT_FAULT_AUDIT``,
``tests/conftest.py``: ``audit_runs``) and counted here:

- *dishonest*: a run row that says exit code 0 with a failed page, vectors missing or an outcome other than
  ``complete`` (must be 0);
- *unfinished*: a row without an end or an outcome at the end of its test: only a process the test killed
  leaves one, and the tests check that ``docsbot status`` and the next run show it ``interrupted``.

Usage: python bench/faults.py [--busy 2] [--repeat 1] [--report FILE] [-- PYTEST_ARGS...]
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Where the tests of the fault matrix live (docs/development/testing.md: the fault table).
MATRIX = ["tests/test_faults.py", "tests/test_spider.py", "tests/test_refresh_rules.py", "tests/test_embed_cli.py"]


def busy() -> None:
    while True:
        pass


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=2, help="busy loops beside the tests (default 2: both cores here)")
    parser.add_argument("--repeat", type=int, default=1, help="run the matrix this many times")
    parser.add_argument("--report", type=Path, help="append the result as Markdown to this file")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)

    loops = [multiprocessing.Process(target=busy, daemon=True) for _ in range(args.busy)]
    for loop in loops:
        loop.start()
    totals: collections.Counter[str] = collections.Counter()
    rows: list[dict] = []
    started = time.monotonic()
    try:
        for _ in range(args.repeat):
            with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as audit:
                path = Path(audit.name)
            env = {**os.environ, "DOCSBOT_FAULT_AUDIT": str(path)}
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *MATRIX, *args.pytest_args]
            result = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
            tail = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-500:]
            print(tail)
            for word, count in re.findall(r"(\d+) (passed|failed|error|errors|skipped)", tail):
                totals[count.rstrip("s") if count != "errors" else "error"] += int(word)
            if result.returncode not in (0, 1):
                print(result.stdout[-3000:], result.stderr[-3000:], file=sys.stderr)
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            path.unlink()
    finally:
        for loop in loops:
            loop.terminate()
    wall = time.monotonic() - started

    dishonest = [
        r for r in rows if r["exit_code"] == 0 and (r["failed"] or r["vectors_waiting"] or r["outcome"] != "complete")
    ]
    unfinished = [r for r in rows if not r["finished"] and r["outcome"] is None]
    outcomes = collections.Counter(r["outcome"] or "(no end recorded)" for r in rows)
    exit_codes = collections.Counter(str(r["exit_code"]) for r in rows if r["exit_code"] is not None)
    lines = [
        f"Fault matrix with {args.busy} busy loops beside it ({os.cpu_count()} CPUs), {args.repeat} pass(es), "
        f"{wall / 60:.1f} min: tests {totals['passed']} passed, {totals['failed']} failed, {totals['error']} errors, "
        f"{totals['skipped']} skipped (a lost page or a wrong exit code fails its test).",
        "",
        "| run rows audited | exit-0 rows with a failed page, vectors missing or not complete | rows left unfinished "
        "(a process the test killed) | outcomes | exit codes recorded |",
        "|---:|---:|---:|---|---|",
        f"| {len(rows)} | {len(dishonest)} | {len(unfinished)} | "
        + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        + " | "
        + ", ".join(f"{k}: {v}" for k, v in sorted(exit_codes.items()))
        + " |",
    ]
    for r in dishonest:
        lines.append(f"- dishonest: {r}")
    text = "\n".join(lines)
    print(text)
    if args.report:
        with args.report.open("a", encoding="utf-8") as out:
            out.write(text + "\n")
    return 0 if not dishonest and not totals["failed"] and not totals["error"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
