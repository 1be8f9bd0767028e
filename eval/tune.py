"""Try ranking knobs of ``docsbot.store.ranking`` on the ``make eval`` query sets, one process, one model load.

Every combination of the ``--grid NAME=V1,V2,...`` values (JSON values) is evaluated on the chosen corpora; each
line gives Recall@5 and MRR@10 per corpus and query kind, and the mean over all of them, so that a knob can be
tuned on one corpus and checked on the other (``--corpus python`` to tune, then ``--corpus cmake``).

Usage: python eval/tune.py [--corpus NAME ...] [--grid NAME=V1,V2 ...] [--param NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import run  # noqa: E402
from run import CORPORA, KINDS, evaluate  # noqa: E402

_Cached = run.CachedBaseline


class FrozenBaseline:
    """The baseline built once per corpus for the whole grid: every combination answers the same queries, even
    while a crawl is still adding pages (tuning needs comparable lines, not the baseline's numbers)."""

    built: dict[str, _Cached] = {}

    def __new__(cls, cache: Path, corpus: run.Corpus, pages: list[str], base: str) -> _Cached:
        if corpus.name not in cls.built:
            cls.built[corpus.name] = _Cached(cache, corpus, pages, base)
        return cls.built[corpus.name]


run.CachedBaseline = FrozenBaseline  # evaluate() looks the name up at call time


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA))
    parser.add_argument("--grid", action="append", default=[], help="NAME=V1,V2,... (JSON values)")
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE fixed for every combination")
    parser.add_argument("--baseline-cache", type=Path, default=Path("/tmp/docsbot-eval-baseline.json"))
    args = parser.parse_args(argv)

    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.project_settings import ProjectSettings
    from docsbot.service.search import Searcher

    fixed = {n: json.loads(v) for n, _, v in (p.partition("=") for p in args.param)}
    axes = [(n, [json.loads(x) for x in v.split(",")]) for n, _, v in (g.partition("=") for g in args.grid)]
    settings = ProjectSettings()
    names = args.corpus or list(CORPORA)
    with Searcher(store.resolve_dsn(settings), load_embedder(settings)) as searcher:
        searcher.search("warm up", limit=1)
        for values in itertools.product(*[vals for _, vals in axes]) if axes else [()]:
            params = {**fixed, **{n: v for (n, _), v in zip(axes, values, strict=True)}}
            searcher.tuning = dict(params)
            cells, means = [], []
            for name in names:
                with contextlib.redirect_stdout(io.StringIO()):
                    res = evaluate(CORPORA[name], searcher, params, None, args.baseline_cache)
                for kind in KINDS:
                    if kind in res.get("table", {}):
                        d = res["table"][kind]["docsbot"]
                        cells.append(f"{name[:2]}/{kind[:4]} {d['recall@5']:.3f}/{d['mrr@10']:.3f}")
                        means += [d["recall@5"], d["mrr@10"]]
            mean = sum(means) / len(means) if means else 0.0
            print(f"{json.dumps(params)}  mean {mean:.4f}  " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
