"""``make eval``: retrieval quality of ``docsbot search`` against a page-level BM25 baseline, per query kind.

For every corpus of :data:`CORPORA` that is indexed in the database (``DATABASE_URL``, or the embedded server),
both systems answer every query of ``eval/queries/*.jsonl`` for that corpus:

- **baseline**: bm25s (BM25, Lucene variant, English stop words, Snowball stemmer) over whole pages, each page
  the title and Markdown that :func:`docsbot.content.extract.extract_page` makes of the same HTML file docsbot stored.
- **docsbot**: :class:`docsbot.service.search.Searcher` (one result per page), with the real embedding model.

Metrics over page URLs (a query's ``targets`` are page paths relative to the site root):
Hit@1 (the first result is a target), Recall@5 (share of targets in the first 5, out of min(targets, 5)),
MRR@10 (1 / rank of the first target within 10, else 0). In-process latency of ``Searcher.search`` (query
embedding included) is reported as p50/p95 per corpus.

Usage: python eval/run.py [--corpus NAME ...] [--write] [--misses KIND] [--param NAME=VALUE ...] [--no-vectors]
``--write`` replaces the table between ``<!-- eval -->`` and ``<!-- /eval -->`` in BENCHMARKS.md and
docs/explanation/search.md.
``--no-vectors`` ranks as search does while a version's chunks still wait for their vectors (text first: the
lexical and symbol signals alone), and writes its table between ``<!-- eval-no-vectors -->`` markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from bench.report import write_section  # noqa: E402

# user_question: questions written by a procedure fixed before any result was seen, by someone who did not write the
# ranker, in a user's words rather than the docs' (eval/queries/USER_QUESTIONS.md); "question" is the older set,
# written beside the ranker.
KINDS = ("symbol", "index_term", "question", "user_question")


@dataclass(frozen=True)
class Corpus:
    name: str
    library: str
    version: str
    root: Path  # where the Debian package installs the HTML
    package: str
    url: str  # where `make eval` serves it (scripts/serve_python_docs.sh)


CORPORA = {
    "python": Corpus(
        "python", "python", "3.11", Path("/usr/share/doc/python3.11/html"), "python3.11-doc",
        os.environ.get("EVAL_PYTHON_URL", "http://127.0.0.1:8311/index.html"),
    ),
    "cmake": Corpus(
        "cmake", "cmake", "3.25", Path("/usr/share/doc/cmake-data/html"), "cmake-doc",
        os.environ.get("EVAL_CMAKE_URL", "http://127.0.0.1:8325/index.html"),
    ),
    "git": Corpus(
        "git", "git", "2.39", Path("/usr/share/doc/git/html"), "git-doc",
        os.environ.get("EVAL_GIT_URL", "http://127.0.0.1:8326/index.html"),
    ),
    "docbook-xsl": Corpus(
        "docbook-xsl", "docbook-xsl", "1.79", Path("/usr/share/doc/docbook-xsl-doc-html/doc"), "docbook-xsl-doc-html",
        os.environ.get("EVAL_DOCBOOK_URL", "http://127.0.0.1:8327/index.html"),
    ),
    "lmdb": Corpus(
        "lmdb", "lmdb", "0.9", Path("/usr/share/doc/lmdb-doc/html"), "lmdb-doc",
        os.environ.get("EVAL_LMDB_URL", "http://127.0.0.1:8328/index.html"),
    ),
    # Generators no ranking knob was tuned on, with questions written before any result was seen (user-questions v2):
    # the PostgreSQL 15 manual (DocBook), Fastify 5 (Docusaurus, built by `make jsdocs`), the Rust book (mdBook).
    "postgresql": Corpus(
        "postgresql", "postgresql", "15", Path("/usr/share/doc/postgresql-doc-15/html"), "postgresql-doc-15",
        os.environ.get("EVAL_POSTGRESQL_URL", "http://127.0.0.1:8330/index.html"),
    ),
    "fastify": Corpus(
        "fastify", "fastify", "5", REPO / ".build/sites/fastify/site", "",
        os.environ.get("EVAL_FASTIFY_URL", "http://127.0.0.1:8331/"),
    ),
    "rust-book": Corpus(
        "rust-book", "rust-book", "1.63", Path("/usr/share/doc/rust-doc/html/book"), "rust-doc",
        os.environ.get("EVAL_RUST_BOOK_URL", "http://127.0.0.1:8332/index.html"),
    ),
    # docsbot's own documentation site (MkDocs with Material), built from this checkout by `make eval`.
    "docsbot-docs": Corpus(
        "docsbot-docs", "docsbot", "0.1", REPO / ".build/sites/docsbot-docs/site", "",
        os.environ.get("EVAL_DOCSBOT_DOCS_URL", "http://127.0.0.1:8329/index.html"),
    ),
}  # fmt: skip


def index_corpus(corpus: Corpus) -> None:
    """``scrapy crawl docs`` of the corpus into the same database (a full index: minutes with the real model)."""
    print(f"indexing {corpus.library}@{corpus.version} from {corpus.url}", file=sys.stderr)
    args = ["-a", f"url={corpus.url}", "-a", f"library={corpus.library}", "-a", f"version={corpus.version}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "scrapy", "crawl", "docs", *args], cwd=REPO, env=env, check=True)


def load_queries(corpus: str) -> list[dict[str, Any]]:
    out = []
    for path in sorted((HERE / "queries").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                if q["corpus"] == corpus:
                    # a directory URL's target (``Reference/Hooks``, ``Guides/``) names the page as relative() does
                    q["targets"] = [t if t.endswith(".html") else f"{t.rstrip('/')}/index.html".lstrip("/")
                                    for t in q["targets"]]  # fmt: skip
                    out.append(q)
    return out


def relative(url: str, base: str) -> str:
    """A page URL as a path relative to the site root (``dir/`` and ``dir/index.html`` are one page)."""
    path = url.split("#", 1)[0]
    path = path[len(base) :] if path.startswith(base) else path
    path = path.lstrip("/")
    if path == "" or path.endswith("/"):
        path += "index.html"
    return path


def metrics(ranked: list[str], targets: list[str]) -> tuple[float, float, float]:
    wanted = set(targets)
    hit1 = 1.0 if ranked[:1] and ranked[0] in wanted else 0.0
    recall5 = len(wanted & set(ranked[:5])) / min(len(wanted), 5)
    mrr = next((1.0 / (i + 1) for i, page in enumerate(ranked[:10]) if page in wanted), 0.0)
    return hit1, recall5, mrr


class Baseline:
    """Page-level BM25 (bm25s) over the extracted title + Markdown of every stored page."""

    def __init__(self, pages: list[str], root: Path, base: str) -> None:
        import bm25s
        import Stemmer

        from docsbot.content.extract import extract_page

        self.paths: list[str] = []
        texts = []
        for url in pages:
            path = relative(url, base)
            file = root / urllib.parse.unquote(path)  # CMake's "guide/tutorial/A%20Basic%20Starting%20Point.html"
            if not file.is_file():
                continue
            page = extract_page(file.read_bytes(), url)
            self.paths.append(path)
            texts.append(f"{page.title}\n{page.markdown}")
        if not texts:
            raise SystemExit(f"none of the {len(pages)} stored pages is a file under {root}: is the corpus there?")
        self._stemmer = Stemmer.Stemmer("english")
        self._bm25s = bm25s
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False),
                         show_progress=False)  # fmt: skip

    def search(self, query: str, k: int = 10) -> list[str]:
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = self.index.retrieve(tokens, k=min(k, len(self.paths)), show_progress=False)
        return [self.paths[int(i)] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]


def percentile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


class CachedBaseline:
    """The baseline's rankings, stored in ``cache`` (JSON) per corpus and set of stored pages, for quick
    re-runs while tuning docsbot (the baseline does not change with docsbot's ranking)."""

    def __init__(self, cache: Path, corpus: Corpus, pages: list[str], base: str) -> None:
        import hashlib

        self.cache = cache
        # the baseline's version (2: a percent-encoded path names its file unquoted), the corpus, its stored pages
        self.key = corpus.name + ":2:" + hashlib.sha256("\n".join(sorted(pages)).encode()).hexdigest()[:16]
        self.data = json.loads(cache.read_text()) if cache.is_file() else {}
        self.rankings: dict[str, list[str]] = self.data.get(self.key, {}).get("rankings", {})
        stored = self.data.get(self.key, {}).get("paths")
        self._live: Baseline | None = None
        self._args = (pages, corpus.root, base)
        if stored is None:
            self._live = Baseline(*self._args)
            stored = self._live.paths
        self.paths: list[str] = stored

    def search(self, query: str) -> list[str]:
        if query not in self.rankings:
            if self._live is None:
                self._live = Baseline(*self._args)
            self.rankings[query] = self._live.search(query)
        return self.rankings[query]

    def save(self) -> None:
        self.data[self.key] = {"paths": self.paths, "rankings": self.rankings}
        self.cache.write_text(json.dumps(self.data))


def evaluate(
    corpus: Corpus, searcher: Any, params: dict[str, Any], misses: str | None, cache: Path | None = None
) -> dict[str, Any]:
    from docsbot import store

    with searcher._pool.connection() as conn:
        version = store.find_version(conn, corpus.library, corpus.version)
        if version is None:
            return {}
        pages = [u for (u,) in conn.execute("SELECT url FROM pages WHERE version_id = %s", (version.id,))]
    base = version.root_url.rsplit("/", 1)[0] + "/"
    started = time.perf_counter()
    baseline: Any = CachedBaseline(cache, corpus, pages, base) if cache else Baseline(pages, corpus.root, base)
    baseline_build = time.perf_counter() - started
    # A query none of whose targets is stored (a page the crawl did not reach) is left out, and counted.
    stored = set(baseline.paths)
    queries = [q for q in load_queries(corpus.name) if stored & set(q["targets"])]
    skipped = len(load_queries(corpus.name)) - len(queries)
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    latencies: list[float] = []
    for q in queries:
        ranked_b = baseline.search(q["query"])
        t0 = time.perf_counter()
        results = searcher.search(q["query"], corpus.library, corpus.version, limit=10)
        latencies.append((time.perf_counter() - t0) * 1000)
        ranked_d = [relative(r.url, base) for r in results]
        rows.setdefault(("bm25", q["kind"]), []).append(metrics(ranked_b, q["targets"]))
        m = metrics(ranked_d, q["targets"])
        rows.setdefault(("docsbot", q["kind"]), []).append(m)
        if misses in (q["kind"], "all") and (m[2] < 1.0 or m[1] < 1.0):  # first result, or top 5, not all targets
            print(f"MISS [{q['kind']}] {q['query']!r} R@5 {m[1]:.2f} RR {m[2]:.2f} want {q['targets']}")
            print(f"   docsbot {ranked_d[:5]}\n   bm25    {ranked_b[:5]}")
    if cache:
        baseline.save()
    table = {}
    for (system, kind), values in rows.items():
        table.setdefault(kind, {})[system] = {
            "n": len(values),
            "hit@1": statistics.fmean(v[0] for v in values),
            "recall@5": statistics.fmean(v[1] for v in values),
            "mrr@10": statistics.fmean(v[2] for v in values),
        }
    return {
        "corpus": corpus.name,
        "pages": len(baseline.paths),
        "queries": len(queries),
        "skipped": skipped,
        "table": table,
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        "baseline_build_s": baseline_build,
    }


def render(results: list[dict[str, Any]]) -> str:
    lines = [
        "| corpus | query kind | n | BM25 Hit@1 | BM25 Recall@5 | BM25 MRR@10 | docsbot Hit@1 | docsbot Recall@5 | "
        "docsbot MRR@10 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        for kind in KINDS:
            if kind not in res["table"]:
                continue
            b, d = res["table"][kind]["bm25"], res["table"][kind]["docsbot"]
            lines.append(
                f"| {res['corpus']} | {kind} | {b['n']} | {b['hit@1']:.3f} | {b['recall@5']:.3f} | {b['mrr@10']:.3f} "
                f"| {d['hit@1']:.3f} | {d['recall@5']:.3f} | {d['mrr@10']:.3f} |"
            )
    lines.append("")
    for res in results:
        lat = res["latency_ms"]
        lines.append(
            f"- {res['corpus']}: {res['pages']} pages, {res['queries']} queries"
            + (f" ({res['skipped']} left out: no target page stored)" if res["skipped"] else "")
            + "; `Searcher.search` in-process "
            f"p50 {lat['p50']:.0f} ms, p95 {lat['p95']:.0f} ms (query embedding included)."
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA))
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md and the docs")
    parser.add_argument("--misses", choices=(*KINDS, "all"), help="print docsbot's misses of this kind")
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE passed to Searcher.search")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--baseline-cache", type=Path, help="reuse the baseline's rankings from this JSON file")
    parser.add_argument("--index-missing", action="store_true", help="index a corpus that is not indexed yet")
    parser.add_argument(
        "--no-vectors",
        action="store_true",
        help="search as if no chunk had its vector yet (the nearest-neighbour list left empty)",
    )
    parser.add_argument(
        "--index-version",
        help="evaluate the corpus's index stored under this version name instead (a variant, e.g. other chunk sizes)",
    )
    args = parser.parse_args(argv)
    params = {}
    for item in args.param:
        name, _, value = item.partition("=")
        params[name] = json.loads(value)
    if args.no_vectors:
        # no version counts as embedded: the fusion a version whose chunks wait for their vectors gets (no vector
        # list, no definitions' list)
        params["vector_share"] = 2.0

    from scrapy.utils.project import get_project_settings

    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.service.reranking import load_reranker
    from docsbot.service.search import Searcher

    settings = get_project_settings()
    dsn = store.resolve_dsn(settings)
    names = args.corpus or list(CORPORA)
    if args.index_version:
        for name in names:
            CORPORA[name] = dataclasses.replace(CORPORA[name], version=args.index_version)
    if args.index_missing:
        with store.connect(dsn) as conn:
            store.migrate(conn)  # a new database has no tables yet
            missing = [n for n in names if store.find_version(conn, CORPORA[n].library, CORPORA[n].version) is None]
        for name in missing:
            index_corpus(CORPORA[name])
    embedder = load_embedder(settings)
    results = []
    # DOCSBOT_RERANKER (off by default) evaluates search with its reranking stage, as `docsbot search` runs it
    reranker = load_reranker(settings)
    candidates = settings.getint("DOCSBOT_RERANK_CANDIDATES", 30)
    with Searcher(dsn, embedder, reranker=reranker, rerank_candidates=candidates) as searcher:
        if params:
            searcher.tuning.update(params)
        searcher.search("warm up", limit=1)
        for name in names:
            res = evaluate(CORPORA[name], searcher, params, args.misses, args.baseline_cache)
            if not res:
                print(f"{name}: not indexed (make eval-index), skipped", file=sys.stderr)
                continue
            results.append(res)
    if not results:
        print("nothing to evaluate: no corpus is indexed", file=sys.stderr)
        return 1
    table = render(results)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    if args.write:
        for doc in ("BENCHMARKS.md", "docs/explanation/search.md"):
            write_section(REPO / doc, "eval-no-vectors" if args.no_vectors else "eval", table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
