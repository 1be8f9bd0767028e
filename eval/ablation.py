"""``make ablation``: each ranking knob at its neutral value, one at a time, over every corpus ``make eval`` has.

For every ablation of :data:`ABLATIONS` (a knob, or a few that make one signal, set to the value at which they do
nothing), every query of every indexed corpus is answered again by :class:`docsbot.service.search.Searcher` with
that change alone, and Recall@5 and MRR@10 per corpus and query kind are compared with the defaults (eval/run.py's
metrics and queries; page-level BM25 beside every row as the yardstick).

A knob **lifts** a row when the defaults beat its neutral value there by more than 0.01 (Recall@5 or MRR@10), and
**lowers** it when the neutral value beats the defaults by more than 0.01. The rule a knob is kept by: it lifts at
least one row and lowers none. Rows of corpora no knob was tuned on (:data:`UNTUNED`) are marked.

Usage: python eval/ablation.py [--corpus NAME ...] [--only ABLATION ...] [--write] [--json PATH]
``--write`` puts the tables between ``<!-- ablation -->`` markers in BENCHMARKS.md. Minutes per ablation with the
real model (the query vectors are computed once per query and cached).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402 - eval/run.py, beside this file

from bench.report import write_section  # noqa: E402

# The corpora with questions written before any result was seen and whose generator no knob was tuned on.
UNTUNED = frozenset(("postgresql", "fastify", "rust-book"))

# name -> the knobs' neutral values (docsbot.store.ranking.SEARCH_DEFAULTS has the defaults and what each does)
ABLATIONS: dict[str, dict[str, Any]] = {
    "vector over chunks (w_vec 0)": {"w_vec": 0.0},
    "vector over definitions (w_def, w_def_near 0)": {"w_def": 0.0, "w_def_near": 0.0},
    "near definition (w_def_near = w_def)": {"w_def_near": 1.0},
    "BM25 over chunks (w_lex, w_lex_ident 0)": {"w_lex": 0.0, "w_lex_ident": 0.0},
    "identifier query BM25 (w_lex_ident = w_lex)": {"w_lex_ident": 1.0},
    "heading terms (w_head 1)": {"w_head": 1.0},
    "identifier terms (w_ident 0)": {"w_ident": 0.0},
    "symbols, identifiers (w_sym 0)": {"w_sym": 0.0},
    "symbols, words (w_sym_word 0)": {"w_sym_word": 0.0},
    "navigation pages (nav_factor 1)": {"nav_factor": 1.0},
    "release notes (changelog_factor 1)": {"changelog_factor": 1.0},
    "page's other chunks (w_page_rest 0)": {"w_page_rest": 0.0},
    "identifier missing (ident_miss 1)": {"ident_miss": 1.0},
    "fusion constant (rrf_k 60)": {"rrf_k": 60},
    "page BM25 list on (w_page_lex 1)": {"w_page_lex": 1.0},
}
MARGIN = 0.01


def measure(searcher: Any, corpora: list[Any], params: dict[str, Any], cache: Path) -> dict[tuple[str, str], dict]:
    """``{(corpus, kind): {"bm25": metrics, "docsbot": metrics}}`` with ``params`` over the defaults."""
    searcher.tuning.clear()
    searcher.tuning.update(params)
    out: dict[tuple[str, str], dict] = {}
    for corpus in corpora:
        res = run.evaluate(corpus, searcher, params, None, cache)
        for kind, systems in res.get("table", {}).items():
            out[(corpus.name, kind)] = systems
    return out


def verdict(base: dict, ablated: dict) -> tuple[list[str], list[str]]:
    """The rows the knob lifts and the rows it lowers (by more than :data:`MARGIN`, Recall@5 or MRR@10)."""
    lifts, lowers = [], []
    for row, systems in base.items():
        if row not in ablated:
            continue
        d, a = systems["docsbot"], ablated[row]["docsbot"]
        label = f"{row[0]}{'*' if row[0] in UNTUNED else ''} {row[1]}"
        # rounded: a 0.01 that is one query of a hundred must not count as more than 0.01 by a float's last bit
        deltas = [round(d[m] - a[m], 6) for m in ("recall@5", "mrr@10")]
        if max(deltas) > MARGIN:
            lifts.append(f"{label} {max(deltas):+.3f}")
        if min(deltas) < -MARGIN:
            lowers.append(f"{label} {min(deltas):+.3f}")
    return lifts, lowers


def render(base: dict, ablated: dict[str, dict]) -> str:
    names = list(ablated)
    lines = [
        "Each knob at its neutral value alone: Recall@5 / MRR@10 per corpus and query kind (`*`: a generator no knob "
        "was tuned on, questions written before any result was seen).",
        "",
        "| corpus | kind | n | page BM25 | defaults | " + " | ".join(f"A{i + 1}" for i in range(len(names))) + " |",
        "|---|---|---:|---:|---:|" + "---:|" * len(names),
    ]
    for row, systems in sorted(base.items()):
        b, d = systems["bm25"], systems["docsbot"]
        cells = []
        for name in names:
            a = ablated[name].get(row, {}).get("docsbot")
            cells.append(f"{a['recall@5']:.2f} / {a['mrr@10']:.2f}" if a else "")
        corpus = f"{row[0]}{'*' if row[0] in UNTUNED else ''}"
        lines.append(
            f"| {corpus} | {row[1]} | {d['n']} | {b['recall@5']:.2f} / {b['mrr@10']:.2f} "
            f"| {d['recall@5']:.2f} / {d['mrr@10']:.2f} | " + " | ".join(cells) + " |"
        )
    lines += ["", "| | ablation (neutral value) | the knob lifts (defaults − neutral) | it lowers | kept |"]
    lines.append("|---|---|---|---|---|")
    for i, name in enumerate(names):
        lifts, lowers = verdict(base, ablated[name])
        kept = "yes" if lifts and not lowers else "**no**"
        lines.append(f"| A{i + 1} | {name} | {'; '.join(lifts) or '-'} | {'; '.join(lowers) or '-'} | {kept} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", action="append", choices=sorted(run.CORPORA))
    parser.add_argument("--only", action="append", choices=sorted(ABLATIONS), help="these ablations alone")
    parser.add_argument("--index-version", action="append", default=[], help="CORPUS=VERSION: another stored version")
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--baseline-cache", type=Path, default=Path("/tmp/docsbot-eval-baseline.json"))
    args = parser.parse_args(argv)

    import dataclasses

    from scrapy.utils.project import get_project_settings

    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.service.search import Searcher

    for item in args.index_version:
        name, _, version = item.partition("=")
        run.CORPORA[name] = dataclasses.replace(run.CORPORA[name], version=version)
    settings = get_project_settings()
    dsn = store.resolve_dsn(settings)
    embedder = _Cached(load_embedder(settings))
    with Searcher(dsn, embedder) as searcher:
        with store.connect(dsn) as conn:
            corpora = [
                c
                for n in (args.corpus or list(run.CORPORA))
                if store.find_version(conn, (c := run.CORPORA[n]).library, c.version) is not None
            ]
        if not corpora:
            print("nothing to evaluate: no corpus is indexed (make eval indexes them)", file=sys.stderr)
            return 1
        started = time.perf_counter()
        base = measure(searcher, corpora, {}, args.baseline_cache)
        ablated = {}
        for name in args.only or list(ABLATIONS):
            ablated[name] = measure(searcher, corpora, ABLATIONS[name], args.baseline_cache)
            print(f"{name}: done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    table = render(base, ablated)
    print(table)
    if args.json:

        def keyed(rows: dict) -> dict:
            return {f"{c}/{k}": v for (c, k), v in rows.items()}

        out = {"defaults": keyed(base), "ablations": {n: keyed(a) for n, a in ablated.items()}}
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    if args.write:
        write_section(run.REPO / "BENCHMARKS.md", "ablation", table)
    return 0


class _Cached:
    """The embedder with its query vectors kept: every ablation asks the same queries."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._queries: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_query(self, texts: list[str]) -> Any:
        import numpy as np

        from docsbot.embedding.models import embed_query

        missing = [t for t in texts if t not in self._queries]
        if missing:
            self._queries.update(zip(missing, embed_query(self._embedder, missing), strict=True))
        return np.stack([self._queries[t] for t in texts])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
