"""``docsbot search``, ``docs``, ``changes``, ``diff`` and ``export``: what the index answers, on the terminal
(text, or JSON in the shape the MCP tools answer) or written to files."""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
import threading
from typing import TYPE_CHECKING

from docsbot.cli.common import database, docs_index, library_version, project_settings
from docsbot.display import printable

if TYPE_CHECKING:
    import argparse

    from docsbot.embedding.models import Embedder

__all__ = ["cmd_changes", "cmd_diff", "cmd_docs", "cmd_export", "cmd_search"]


def _excerpt(text: str, width: int = 300) -> str:
    return textwrap.shorten(" ".join(text.split()), width=width, placeholder=" …")


def _load_in_background(embedder: Embedder) -> threading.Thread:
    """Load the query model on a thread while the main thread reaches the database (onnxruntime releases the GIL
    while it reads the model). A failure is left for the search itself to raise. A backend that embeds over the
    network (it has ``aembed``) has nothing to load: no warm-up request is sent."""

    from docsbot.embedding.models import embed_query

    def load() -> None:
        if getattr(embedder, "aembed", None) is not None:
            return
        with contextlib.suppress(Exception):
            embed_query(embedder, ["warm up"])

    thread = threading.Thread(target=load, name="docsbot-model", daemon=True)
    thread.start()
    return thread


def explanation_text(explanation: dict) -> str:
    """An explanation (:mod:`docsbot.store.explaining`) as lines: the ranks in each list, one line a knob, then the
    reranker's score and the rank before and after it (or its failure) when one is on."""
    ranks = ", ".join(f"{name} {rank if rank is not None else '-'}" for name, rank in explanation["lists"].items())
    lines = [f"ranks: {ranks}"]
    for factor in explanation["factors"]:
        part = f" [{factor['part']}]" if factor.get("part") else ""
        lines.append(f"{factor['knob']}={factor['value']:g}{part}: {factor['effect']}")
    rerank = explanation.get("rerank")
    if rerank and "error" in rerank:
        lines.append(f"reranker {rerank['reranker']} failed, fused order kept: {rerank['error']}")
    elif rerank:
        lines.append(
            f"reranker {rerank['reranker']}: score {rerank['score']:.4f}, "
            f"rank {rerank['rank_before']} → {rerank['rank_after']}"
        )
    return "\n".join(lines)


def cmd_search(args: argparse.Namespace) -> int:
    from docsbot.embedding.models import load_embedder
    from docsbot.service.reranking import load_reranker

    settings = project_settings()
    reranker = load_reranker(settings)  # a missing model folder says so before anything loads
    candidates = settings.getint("DOCSBOT_RERANK_CANDIDATES", 30)
    embedder = load_embedder(settings)  # the query path imports neither fastembed nor scrapy
    loading = _load_in_background(embedder)
    try:
        from docsbot import store
        from docsbot.service.search import Searcher, UnknownLibrary

        dsn = store.resolve_dsn(settings)
        with store.connect(dsn) as conn:
            try:
                store.check_schema(conn)
            except store.NoSchema as exc:
                print(f"docsbot: {printable(exc)}", file=sys.stderr)
                return 1
        with Searcher(dsn, embedder, pool_size=1, reranker=reranker, rerank_candidates=candidates) as searcher:
            try:
                results = searcher.search(
                    args.query,
                    args.library,
                    args.version,
                    args.k,
                    chunks=args.chunks,
                    kind=args.kind,
                    explain=args.explain,
                )
            except UnknownLibrary as exc:
                print(f"docsbot: {printable(exc)}; index a site with `scrapy crawl docs -a url=URL`", file=sys.stderr)
                return 1
    finally:
        loading.join()  # never exit while onnxruntime is still loading on the thread
    if args.json:
        for result in results:
            print(json.dumps(result.model_dump(exclude=None if args.explain else {"explanation"}), ensure_ascii=False))
    else:
        for rank, hit in enumerate(results, 1):
            path = " > ".join(hit.heading_path[1:] if hit.heading_path[:1] == [hit.title] else hit.heading_path)
            print(printable(f"{rank}. {hit.title}" + (f" — {path}" if path else "")))
            print(f"   {hit.deep_link}  (score {hit.score:.4f})")
            print(textwrap.indent(textwrap.fill(_excerpt(hit.content), 100), "   "))
            if hit.explanation is not None:
                print(textwrap.indent(explanation_text(hit.explanation), "   "))
            print()
    return 0 if results else 1


def cmd_docs(args: argparse.Namespace) -> int:
    """A library version's docs on a topic (or its overview) within a token budget, as Markdown or JSON: what the
    MCP tool get_docs answers."""
    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.service import DocsIndex, Invalid, NotFound

    library, version = library_version(args.library)
    settings = project_settings()
    database(write=False).close()
    embedder = None if args.resolve else load_embedder(settings)  # the query model, and the tokenizer it counts with
    try:
        with DocsIndex(settings, store.resolve_dsn(settings), embedder=embedder, pool_size=1) as index:
            if args.resolve:
                matches = index.resolve_library(library)
                for c in matches.candidates:
                    versions = ", ".join(f"{v.version or '(unversioned)'} ({v.pages} pages)" for v in c.versions)
                    print(f"{c.library}  {c.score:.2f}  {versions}")
                return 0 if matches.candidates else 1
            # the budget bounds what is printed: the Markdown, or with --json the JSON
            reply = ("json",) if args.json else ("markdown",)
            result = index.docs(library, version, " ".join(args.topic) or None, args.max_tokens, reply=reply)
    except (Invalid, NotFound) as exc:
        print(f"docsbot: {printable(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, Invalid) else 1
    if args.json:
        print(result.model_dump_json())
        return 0
    from docsbot.service.docs import docs_markdown

    print(docs_markdown(result), end="")
    return 0 if result.sections else 1


def cmd_changes(args: argparse.Namespace) -> int:
    from docsbot.service import NotFound

    library, version = library_version(args.library)
    try:
        with docs_index() as index:
            result = index.changes(library, version, args.since, run=args.run, limit=args.limit, diffs=args.diff)
    except NotFound as exc:
        print(f"docsbot: {printable(exc)}", file=sys.stderr)
        return 1
    if args.json:
        for change in result.changes:
            print(change.model_dump_json())
        return 0
    if not result.changes:
        print(f"no change recorded for {printable(args.library)}" + (f" since {result.since}" if result.since else ""))
        return 0
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
    print(f"{printable(args.library)}: {counts}" + (f" since {result.since}" if result.since else "")
          + (" (more not shown: narrow --since or raise --limit)" if result.truncated else ""))  # fmt: skip
    for change in result.changes:
        label = f"{change.library}@{change.version}" if change.version else change.library
        where = f"{change.old_url} -> {change.url}" if change.old_url else change.url
        title = change.title or "(no title)"
        print(printable(f"{change.at}  {label}  {change.kind:<8}  {title}  {where}"))  # one line, whatever they hold
        for section in change.sections:
            path = " > ".join(section.heading_path) or "(before the first heading)"
            link = f"  {change.url}#{section.anchor}" if section.anchor else ""
            print(f"    {section.change}: {printable(path + link)}")
        if args.diff and change.diff:
            print(textwrap.indent(change.diff, "    "))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from docsbot.service import NotFound

    try:
        with docs_index() as index:
            diff = index.diff_versions(args.library, args.old, args.new)
    except NotFound as exc:
        print(f"docsbot: {printable(exc)}", file=sys.stderr)
        return 1
    if args.json:
        print(diff.model_dump_json(indent=2))
        return 0
    print(
        f"{args.library} {args.old} -> {args.new}: {len(diff.added)} added, {len(diff.removed)} removed, "
        f"{len(diff.changed)} changed" + (f" ({diff.not_compared} not compared)" if diff.not_compared else "")
    )
    for kind, symbols in (("+", diff.added), ("-", diff.removed), ("~", diff.changed)):
        for symbol in symbols:
            print(f"{kind} {symbol.name}  {symbol.deep_link}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """One Markdown file in the shape of llms-full.txt (each page under its title, with its source URL), or a
    directory of Markdown files (one per page, paths from the URLs)."""
    from pathlib import Path

    from docsbot.service import NotFound
    from docsbot.store import version_label

    library, version = library_version(args.library)
    try:
        with docs_index() as index:
            target, pages = index.export_pages(library, version)
            label = version_label(target.library, target.name)
            count = 0
            if args.format == "pages":
                from docsbot.service.docs import without_title

                out = Path(args.output or _file_name(f"{target.library}-{target.name or 'docs'}"))
                used: set[str] = set()
                for url, title, markdown in pages:
                    path = out / _unique(_page_path(url, target.root_url), used)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(f"# {title}\n\nSource: {url}\n\n{without_title(markdown, title)}\n")
                    count += 1
            else:
                out = Path(args.output or _file_name(f"{target.library}-{target.name or 'docs'}-llms-full.txt"))
                from docsbot.service.docs import llms_full

                with out.open("w", encoding="utf-8") as f:
                    for piece in llms_full(label, target.root_url, pages):
                        f.write(piece)
                        count += 1
                count -= 1  # the header
    except NotFound as exc:
        print(f"docsbot: {printable(exc)}", file=sys.stderr)
        return 1
    print(printable(f"exported {count} pages of {label} to {out}"))
    return 0


def _unique(path: str, used: set[str]) -> str:
    """``path``, or ``stem-2.md``, ``stem-3.md``… when an earlier page of the export took it (``a.html``, ``a.htm``
    and ``a`` all make ``a.md``): no page overwrites another."""
    candidate, n = path, 1
    while candidate.lower() in used:
        n += 1
        stem, dot, ext = path.rpartition(".")
        candidate = f"{stem}-{n}.{ext}" if dot else f"{path}-{n}"
    used.add(candidate.lower())
    return candidate


def _file_name(name: str) -> str:
    """``name`` as one file name in the working directory: characters other than letters, digits and ``@+._-``
    become ``_``, runs of dots one dot, and leading dots and ``_`` go: a library named ``../x`` or ``/etc/x``
    cannot write elsewhere."""
    import re

    name = re.sub(r"\.{2,}", ".", re.sub(r"[^\w@+.-]+", "_", name, flags=re.ASCII))
    return name.lstrip("._") or "docs"


def _page_path(url: str, root_url: str) -> str:
    """A page's file in an export: its URL's path below the root's directory (an archive's: the folder it was
    unpacked to), ``.md`` for ``.html`` and Markdown files, ``.md`` added to others."""
    import posixpath
    import urllib.parse

    from docsbot.folders import is_archive

    path = urllib.parse.urlsplit(url).path
    base = posixpath.dirname(urllib.parse.urlsplit(root_url).path) + "/"
    if is_archive(root_url) and "/tree/" in path:  # an archive's pages: below the folder it was unpacked to
        base = path[: path.rindex("/tree/") + len("/tree/")]
    rel = path[len(base) :] if path.startswith(base) else path.lstrip("/")
    if not rel or rel.endswith("/"):
        rel += "index.html"
    stem, ext = posixpath.splitext(rel)
    rel = stem + ".md" if ext in (".html", ".htm", ".xhtml", ".md", ".markdown", "") else rel + ".md"
    return "/".join(part for part in rel.split("/") if part not in ("", ".", ".."))
