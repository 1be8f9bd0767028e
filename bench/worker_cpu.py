"""The extraction workers' CPU per page, and proof that a change to them keeps their output: the functions a crawl's
worker processes run (:func:`docsbot.content.pool.extract_body` with the kept HTML, then
:func:`docsbot.content.pool.chunk_page` with the default model's chunker), over pages read from disk, in this one
process. Which docsbot runs is the one ``PYTHONPATH`` names, so the same script measures two checkouts:

    PYTHONPATH=/work/main python bench/worker_cpu.py dump /tmp/main.pkl        # every page of the local corpora
    PYTHONPATH=$PWD python bench/worker_cpu.py dump /tmp/branch.pkl
    python bench/worker_cpu.py compare /tmp/main.pkl /tmp/branch.pkl            # exit 1 on any difference
    PYTHONPATH=$PWD python bench/worker_cpu.py time --corpus python             # CPU seconds of each step

``dump`` records, per page, a SHA-256 of each field of the output: the title, Markdown, links, canonical URL,
anchors, symbols and link share of the extraction, the kept HTML decompressed (and whether it is the page's
bytes), and the chunks (text, heading path, offset, anchor), definitions (name, text, heading path, anchor,
offset) and symbol hashes of the chunk task. ``time`` prints ``time.process_time`` seconds of the extraction,
the compression of the kept HTML, the chunk task, and pickling the tasks' arguments and results as a process
pool does (pebble pickles both ways), for the pages of one corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import sys
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The corpora of BENCHMARKS.md's identity checks: the Debian documentation packages eval/run.py and bench/matrix.py
# serve, and docsbot's own site as `make docs-site` builds it.
CORPORA = {
    "python": Path("/usr/share/doc/python3.11/html"),
    "cmake": Path("/usr/share/doc/cmake-data/html"),
    "git": Path("/usr/share/doc/git/html"),
    "docbook-xsl": Path("/usr/share/doc/docbook-xsl-doc-html/doc"),
    "lmdb": Path("/usr/share/doc/lmdb-doc/html"),
    "gtk4": Path("/usr/share/doc/libgtk-4-doc"),
    "postgresql": Path("/usr/share/doc/postgresql-doc-15/html"),
    "rust-std": Path("/usr/share/doc/rust-doc/html/std"),
    "docsbot-docs": ROOT / ".build/sites/docsbot-docs/site",
}
TOKENIZER = Path.home() / ".local/share/docsbot/models/all-MiniLM-L6-v2/tokenizer.json"
MAX_TOKENS = 256 - 32  # the default model's limit less DOCSBOT_CONTEXT_TOKENS
DEFINITION_CHARS = 700  # DOCSBOT_DEFINITION_CHARS


def pages(name: str) -> list[tuple[str, bytes]]:
    """(URL, bytes) of every ``.html`` file of corpus ``name``, in path order; the URL as a local server's."""
    root = CORPORA[name]
    files = sorted(p for p in root.rglob("*.html") if p.is_file())
    return [(f"http://docs.test/{name}/{p.relative_to(root).as_posix()}", p.read_bytes()) for p in files]


def _digest(value: Any) -> str:
    return hashlib.sha256(repr(value).encode("utf-8", "surrogatepass")).hexdigest()


def _spec() -> Any:
    from docsbot.content.pool import ChunkerSpec

    return ChunkerSpec(MAX_TOKENS, str(TOKENIZER))


def page_fields(url: str, body: bytes) -> dict[str, str]:
    """Each field the two worker tasks return for one page, as a SHA-256 (an extraction error: its message)."""
    from docsbot.content.extract import ExtractionError
    from docsbot.content.pool import chunk_page, extract_body

    try:
        page = extract_body(body, url, None, keep_html=True)
    except ExtractionError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    html = zlib.decompress(page.html) if page.html is not None else None
    out = {
        "title": _digest(page.title),
        "markdown": _digest(page.markdown),
        "links": _digest(page.links),
        "canonical_url": _digest(page.canonical_url),
        "anchors": _digest([tuple(a) for a in page.anchors]),
        "symbols": _digest([tuple(s) for s in page.symbols]),
        "link_share": _digest(page.link_share),
        "html_is_body": str(html == body),
    }
    chunked = chunk_page(page.markdown, list(page.anchors), list(page.symbols), _spec(), DEFINITION_CHARS)
    out["chunks"] = _digest([(c.content, c.heading_path, c.offset, c.anchor) for c in chunked.chunks])
    out["definitions"] = _digest([(d.name, d.content, d.heading_path, d.anchor, d.offset) for d in chunked.definitions])
    out["symbol_hashes"] = _digest(sorted(chunked.symbol_hashes.items()))
    return out


def dump(path: Path, names: list[str]) -> None:
    import docsbot

    result: dict[str, dict[str, str]] = {}
    for name in names:
        if not CORPORA[name].is_dir():
            print(f"{name}: {CORPORA[name]} is missing, skipped", file=sys.stderr)
            continue
        started = time.monotonic()
        found = pages(name)
        for url, body in found:
            result[url] = page_fields(url, body)
        print(f"{name}: {len(found)} pages in {time.monotonic() - started:.0f} s", file=sys.stderr)
    path.write_bytes(pickle.dumps({"docsbot": docsbot.__file__, "pages": result}))
    print(f"{len(result)} pages from {docsbot.__file__} written to {path}")


def compare(a: Path, b: Path) -> int:
    left, right = pickle.loads(a.read_bytes()), pickle.loads(b.read_bytes())
    pa, pb = left["pages"], right["pages"]
    print(f"{a}: {left['docsbot']}, {len(pa)} pages; {b}: {right['docsbot']}, {len(pb)} pages")
    differ = 0
    for url in sorted(set(pa) | set(pb)):
        fa, fb = pa.get(url), pb.get(url)
        if fa != fb:
            differ += 1
            fields = sorted(k for k in set(fa or {}) | set(fb or {}) if (fa or {}).get(k) != (fb or {}).get(k))
            if differ <= 20:
                print(f"differs: {url}: {', '.join(fields)}")
    corpora = sorted({u.split("/")[3] for u in pa})
    print(f"{differ} of {len(set(pa) | set(pb))} pages differ ({', '.join(corpora)})")
    return 1 if differ else 0


def measure(name: str) -> dict[str, float]:
    """CPU seconds of each worker step over corpus ``name``'s pages (one cold worker: its caches start empty)."""
    from docsbot.content import pool
    from docsbot.content.extract import extract_page
    from docsbot.content.pool import chunk_page

    level = getattr(pool, "HTML_COMPRESSION_LEVEL", 6)  # 6 before it was named

    found = pages(name)
    spec = _spec()
    steps = dict.fromkeys(("extract", "compress", "chunk", "pickle"), 0.0)
    clock = time.process_time
    for url, body in found:
        t0 = clock()
        page = extract_page(body, url, encoding=None)
        t1 = clock()
        page.html = zlib.compress(body, level)
        t2 = clock()
        chunked = chunk_page(page.markdown, list(page.anchors), list(page.symbols), spec, DEFINITION_CHARS)
        t3 = clock()
        # What a process pool sends and receives for the page: both tasks' arguments and results.
        pickle.loads(pickle.dumps((body, url, None, True)))
        pickle.loads(pickle.dumps(page))
        pickle.loads(pickle.dumps((page.markdown, list(page.anchors), list(page.symbols), spec, DEFINITION_CHARS)))
        pickle.loads(pickle.dumps(chunked))
        t4 = clock()
        for step, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            steps[step] += seconds
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="every page's output fields, hashed, into a file")
    d.add_argument("out", type=Path)
    d.add_argument("--corpus", action="append", choices=sorted(CORPORA))
    d.add_argument("--site", type=Path, help="docsbot's own site to read (default: this checkout's .build/sites)")
    c = sub.add_parser("compare", help="two dumps; exit 1 if any page differs")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    t = sub.add_parser("time", help="CPU seconds of each worker step over one corpus")
    t.add_argument("--corpus", default="python", choices=sorted(CORPORA))
    args = parser.parse_args()
    if args.command == "dump":
        if args.site is not None:  # two checkouts compared on the same pages
            CORPORA["docsbot-docs"] = args.site
        dump(args.out, args.corpus or list(CORPORA))
        return 0
    if args.command == "compare":
        return compare(args.a, args.b)
    import docsbot

    steps = measure(args.corpus)
    total = sum(steps.values())
    print(f"{os.path.dirname(docsbot.__file__)} {args.corpus}: " + " ".join(f"{k} {v:.2f}" for k, v in steps.items())
          + f" total {total:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
