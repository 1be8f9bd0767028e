"""The target for get_docs: at a budget of 5,000 tokens, its sections hold a target page of at least 90% of
`make eval`'s questions (the questions written beside the ranker and the user questions).

For each indexed corpus of eval/run.py, every query of kind ``question`` and ``user_question`` is asked of
:meth:`docsbot.service.index.DocsIndex.docs` (topic = the query) with the real model; a query counts when a
section's page is one of its targets. Prints one row per corpus and kind, and the budget actually used.

    python eval/get_docs.py [--corpus NAME ...] [--max-tokens 5000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from run import CORPORA, load_queries, relative  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA))
    parser.add_argument("--max-tokens", type=int, default=5000)
    args = parser.parse_args()

    from scrapy.utils.project import get_project_settings

    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.service import DocsIndex

    settings = get_project_settings()
    print("| corpus | query kind | n | a target page in get_docs' sections | sections (median) | tokens (max) |")
    print("|---|---|---:|---:|---:|---:|")
    with DocsIndex(settings, store.resolve_dsn(settings), embedder=load_embedder(settings), pool_size=2) as index:
        for name in args.corpus or list(CORPORA):
            corpus = CORPORA[name]
            try:
                target = index.searcher.versions(corpus.library, corpus.version)[0]
            except LookupError:
                continue
            base = target.root_url.rsplit("/", 1)[0] + "/"
            for kind in ("question", "user_question"):
                queries = [q for q in load_queries(name) if q["kind"] == kind]
                if not queries:
                    continue
                hits, sections, tokens = 0, [], []
                for q in queries:
                    result = index.docs(corpus.library, corpus.version, q["query"], args.max_tokens)
                    pages = {relative(s.url, base) for s in result.sections}
                    hits += bool(pages & set(q["targets"]))
                    sections.append(len(result.sections))
                    tokens.append(result.tokens)
                    assert result.tokens <= args.max_tokens
                print(f"| {name} | {kind} | {len(queries)} | {hits / len(queries):.3f} | "
                      f"{statistics.median(sections):.0f} | {max(tokens)} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
