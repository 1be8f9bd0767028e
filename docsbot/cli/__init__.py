"""``docsbot``: search the index, show its status, give waiting chunks their vectors. Crawling is ``scrapy crawl
docs`` (see docs/guide/crawling.md).

Read-only commands (``search``, ``status``) never write: they check that the database's schema is current and
say which command updates it when it is not. Exit codes: 0 success, 1 nothing found / nothing indexed / work left
undone, 2 usage or configuration error (bad arguments, database unreachable, model not loadable).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from docsbot.config import ProjectSettings
from docsbot.errors import DocsbotError

# docsbot.store (psycopg, numpy: about 0.3 s) and docsbot.service are imported inside the commands: `docsbot search`
# starts loading the query model on a thread first, and its imports run while the model loads.

if TYPE_CHECKING:
    from collections.abc import Sequence

    import psycopg

    from docsbot.embedding.models import Embedder
    from docsbot.service import DocsIndex, RunInfo

__all__ = ["main"]


def _settings() -> ProjectSettings:
    # docsbot.settings without Scrapy: importing scrapy costs about 0.4 s of every `docsbot search`
    return ProjectSettings("docsbot.settings")


def _database(*, write: bool = False) -> psycopg.Connection:
    """A connection to the configured (or embedded) database. ``write``: its schema is migrated first (commands
    that write); otherwise it is only checked (:func:`docsbot.store.check_schema`: raises ``NoSchema`` or
    ``SchemaBehind``), so that read-only commands work with a role that may only ``SELECT``."""
    from docsbot import store

    settings = _settings()
    conn = store.connect(store.resolve_dsn(settings), retry=store.RetryPolicy.from_settings(settings))
    try:
        if write:
            store.migrate(conn)
        else:
            store.check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


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


def cmd_search(args: argparse.Namespace) -> int:
    from docsbot.embedding.models import load_embedder

    settings = _settings()
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
                print(f"docsbot: {exc}", file=sys.stderr)
                return 1
        with Searcher(dsn, embedder, pool_size=1) as searcher:
            try:
                results = searcher.search(
                    args.query, args.library, args.version, args.k, chunks=args.chunks, kind=args.kind
                )
            except UnknownLibrary as exc:
                print(f"docsbot: {exc}; index a site with `scrapy crawl docs -a url=URL`", file=sys.stderr)
                return 1
    finally:
        loading.join()  # never exit while onnxruntime is still loading on the thread
    if args.json:
        for result in results:
            print(json.dumps(result.as_dict(), ensure_ascii=False))
    else:
        for rank, hit in enumerate(results, 1):
            path = " > ".join(hit.heading_path[1:] if hit.heading_path[:1] == [hit.title] else hit.heading_path)
            print(f"{rank}. {hit.title}" + (f" — {path}" if path else ""))
            print(f"   {hit.deep_link}  (score {hit.score:.4f})")
            print(textwrap.indent(textwrap.fill(_excerpt(hit.content), 100), "   "))
            print()
    return 0 if results else 1


def _run_line(run: RunInfo) -> str:
    c = run.counts
    when = f"{datetime.fromisoformat(run.started_at):%Y-%m-%d %H:%M} {run.mode:<7}" if run.started_at else run.mode
    if run.state == "running":
        return f"{when}: running"
    if run.state == "interrupted":
        return f"{when}: interrupted (the process ended before the run recorded its end; pages it stored stay stored)"
    took = f"{run.elapsed_seconds:.1f}" if run.elapsed_seconds is not None else "?"
    line = (
        f"{when}: {c.get('unchanged', 0)} unchanged, {c.get('modified', 0)} modified"
        + (f" ({c['reextracted']} re-extracted from stored HTML)" if c.get("reextracted") else "")
        + f", {c.get('new', 0)} new, "
        f"{c.get('deleted', 0)} deleted, {c.get('failed', 0)} failed, "
        + (
            "skipped by the site's rules (" + ", ".join(f"{k} {n}" for k, n in run.skipped.items()) + "), "
            if run.skipped
            else ""
        )
        + f"{c.get('chunks_embedded', 0)} chunks embedded in {took} s: {run.outcome}"
    )
    return line + (f" ({run.outcome_reason})" if run.outcome_reason and run.outcome != "complete" else "")


def _index(*, write: bool = False) -> DocsIndex:
    """The service over the configured (or embedded) database, with no query model (these commands do not
    search); its schema migrated first when ``write``, else checked (see :func:`_database`)."""
    from docsbot import store
    from docsbot.service import DocsIndex

    settings = _settings()
    _database(write=write).close()
    return DocsIndex(settings, store.resolve_dsn(settings), allow_writes=write, pool_size=1)


_VECTOR_INDEX = {
    "hnsw": "its own HNSW graph ({mb:.1f} MB)",
    "building": "exact scan while its HNSW graph is built",
    "exact": "exact scan (no HNSW graph yet: built once its vectors are in, by the crawl or `docsbot embed` that "
    "gives them, or `docsbot db migrate`)",
    "none": "none",
}


def cmd_status(args: argparse.Namespace) -> int:
    from docsbot import store
    from docsbot.embedding.worker import describe_progress

    try:
        with _index() as index:
            versions = index.libraries(runs=3).libraries
    except store.NoSchema:
        versions = []
    if not versions:
        print("nothing indexed yet; index a site with `scrapy crawl docs -a url=URL`")
        return 1
    for v in versions:
        label = store.version_label(v.library, v.version)
        print(f"{label}  {v.root_url}" + ("  (a run is in progress)" if v.refreshing else ""))
        defined = f" + {v.definitions} definitions" if v.definitions else ""
        print(f"  {v.pages} pages, {v.chunks} chunks{defined}, {v.vectors} with a vector, model {v.embedding_model}")
        if v.embedding_model:
            print(f"  vector search: {_VECTOR_INDEX[v.vector_index].format(mb=v.vector_index_bytes / 1e6)}")
        if v.vectors_waiting or v.embedding:
            work = v.embedding
            rate = work["rate"] if work else None
            who = (
                f" ({work['workers']} worker{'s' if work['workers'] != 1 else ''} embedding)"
                if work
                else (" (no worker is embedding: `docsbot embed` gives them their vectors)")
            )
            print(f"  vectors: {describe_progress(v.vectors, v.vectors_waiting, rate)}{who}")
        if v.refresh_interval or v.next_due:
            every = (
                f"refreshed every {v.refresh_interval}" if v.refresh_interval else "indexed, not refreshed on schedule"
            )
            due = f", next due {v.next_due}" if v.next_due else ""
            failing = f"; {v.failures} runs in a row did not complete: {v.last_error}" if v.failures else ""
            print(f"  {every}{due}{failing}")
        for run in [v.last_run, *v.recent_runs] if v.last_run else []:
            print(f"  {_run_line(run)}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from docsbot.service import NotFound

    try:
        with _index(write=True) as index:
            removed = index.remove(args.library, args.version).removed
    except NotFound:
        which = f"{args.library}@{args.version}" if args.version is not None else args.library
        print(f"docsbot: nothing indexed as {which}", file=sys.stderr)
        return 1
    for version in removed:
        print(f"deleted {version['version']}: {version['pages']} pages with their chunks and runs")
    return 0


def _library_version(text: str) -> tuple[str, str | None]:
    """``LIBRARY`` or ``LIBRARY@VERSION`` (``LIBRARY@`` names the unversioned one)."""
    library, sep, version = text.partition("@")
    return library, (version if sep else None)


def cmd_add(args: argparse.Namespace) -> int:
    """Find a package's documentation root from its registry and add it to the libraries file."""
    import httpx

    from docsbot.fleet.libraries import DEFAULT_FILE, LibrariesFileError
    from docsbot.fleet.registry import RegistryError, resolve, toml_entry

    name, spec = _package_spec(args.package, args.ecosystem)
    path = Path(args.file or DEFAULT_FILE)
    try:
        with httpx.Client(timeout=20, follow_redirects=True, headers={"User-Agent": "docsbot"}) as client:
            found = resolve(name, spec, args.ecosystem, client=client)
    except RegistryError as exc:
        print(f"docsbot add: {exc}", file=sys.stderr)
        return 1
    entry = toml_entry(found, args.refresh)
    if args.dry_run:
        print(entry, end="")
        return 0
    try:
        added = _append_entries(path, [found], args.refresh)
    except LibrariesFileError as exc:
        print(f"docsbot add: {exc}; {path} left as it was", file=sys.stderr)
        return 2
    if not added:
        print(f"docsbot add: {path} declares {found.name}@{found.version} already; nothing written", file=sys.stderr)
        return 1
    print(entry, end="")
    print(f"added {found.name}@{found.version} to {path}; `docsbot sync {path}` indexes it")
    return 0


def _append_entries(path: Path, found: list, refresh: str | None = None) -> list:
    """Append the resolutions of ``found`` (:class:`docsbot.fleet.registry.Resolution`) that ``path`` does not declare
    yet to the libraries file ``path`` (created when missing), then read it back; on any error the file is left as
    it was and :class:`~docsbot.fleet.libraries.LibrariesFileError` raised. Returns those appended."""
    from docsbot.fleet.libraries import LibrariesFileError, load
    from docsbot.fleet.registry import toml_entry

    before = path.read_text(encoding="utf-8") if path.exists() else None
    labels = {e.label for e in load(path)} if before is not None else set()
    new = []
    for r in found:
        label = f"{r.name}@{r.version}" if r.version else r.name
        if label not in labels:
            labels.add(label)
            new.append(r)
    if not new:
        return []
    text = (before.rstrip("\n") + "\n\n" if before else "") + "\n".join(toml_entry(r, refresh) for r in new)
    try:
        path.write_text(text, encoding="utf-8")
        load(path)  # what was written reads back as valid entries
    except (LibrariesFileError, OSError):
        if before is not None:
            path.write_text(before, encoding="utf-8")
        elif path.exists():
            path.unlink()
        raise
    return new


def _sync_from(files: list[str], path: Path) -> int:
    """`docsbot sync --from FILE`: the dependencies of each file, their docs found in their registries and added to
    the libraries file ``path``; one line per dependency whose docs cannot be found (the others go on). Returns
    how many could not be resolved."""
    import httpx

    from docsbot.fleet.dependencies import DependencyFileError, read_dependencies
    from docsbot.fleet.registry import RegistryError, resolve

    found, missed = [], 0
    with httpx.Client(timeout=20, follow_redirects=True, headers={"User-Agent": "docsbot"}) as client:
        for name in files:
            try:
                deps = read_dependencies(Path(name))
            except DependencyFileError as exc:
                print(f"docsbot sync: {exc}", file=sys.stderr)
                missed += 1
                continue
            for dep in deps:
                try:
                    found.append(resolve(dep.name, dep.spec, dep.ecosystem, client=client))
                except RegistryError as exc:
                    print(f"docsbot sync: {dep.name} ({dep.source}): {exc}", file=sys.stderr)
                    missed += 1
    added = _append_entries(path, found)
    for r in added:
        print(f"added {r.name}@{r.version} ({r.url}) to {path}" + (f": {r.notes[-1]}" if len(r.notes) > 1 else ""))
    return missed


def _package_spec(text: str, ecosystem: str) -> tuple[str, str | None]:
    """``NAME``, ``NAME==1.2``, ``NAME>=1,<2`` (PEP 508, with packaging), or npm's and cargo's ``NAME@^1.2``
    (``@scope/pkg@1``)."""
    if ecosystem in ("npm", "cargo"):
        at = text.rfind("@")
        return (text[:at], text[at + 1 :] or None) if at > 0 else (text, None)
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise SystemExit(f"docsbot add: {text!r} is not a package and version ({exc})") from None
    spec = str(req.specifier) or None
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    return req.name, (pinned[0] if len(pinned) == 1 and "*" not in pinned[0] else spec)


def cmd_docs(args: argparse.Namespace) -> int:
    """A library version's docs on a topic (or its overview) within a token budget, as Markdown or JSON: what the
    MCP tool get_docs answers."""
    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.service import DocsIndex, Invalid, NotFound

    library, version = _library_version(args.library)
    settings = _settings()
    _database(write=False).close()
    embedder = None if args.resolve else load_embedder(settings)  # the query model, and the tokenizer it counts with
    try:
        with DocsIndex(settings, store.resolve_dsn(settings), embedder=embedder, pool_size=1) as index:
            if args.resolve:
                matches = index.resolve_library(library)
                for c in matches.candidates:
                    versions = ", ".join(f"{v.version or '(unversioned)'} ({v.pages} pages)" for v in c.versions)
                    print(f"{c.library}  {c.score:.2f}  {versions}")
                return 0 if matches.candidates else 1
            result = index.docs(library, version, " ".join(args.topic) or None, args.max_tokens)
    except (Invalid, NotFound) as exc:
        print(f"docsbot: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, Invalid) else 1
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    label = f"{result.library}@{result.version}" if result.version else result.library
    print(f"<!-- {label}: {len(result.sections)} sections, {result.tokens} of {result.max_tokens} tokens -->\n")
    for section in result.sections:
        heading = " > ".join([section.title, *[h for h in section.heading_path if h != section.title]])
        print(f"## {heading}\n\nSource: {section.deep_link}\n\n{section.content}\n")
    return 0 if result.sections else 1


def cmd_changes(args: argparse.Namespace) -> int:
    from docsbot.service import NotFound

    library, version = _library_version(args.library)
    try:
        with _index() as index:
            result = index.changes(library, version, args.since, run=args.run, limit=args.limit, diffs=args.diff)
    except NotFound as exc:
        print(f"docsbot: {exc}", file=sys.stderr)
        return 1
    if args.json:
        for change in result.changes:
            print(change.model_dump_json())
        return 0
    if not result.changes:
        print(f"no change recorded for {args.library}" + (f" since {result.since}" if result.since else ""))
        return 0
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
    print(f"{args.library}: {counts}" + (f" since {result.since}" if result.since else "")
          + (" (more not shown: narrow --since or raise --limit)" if result.truncated else ""))  # fmt: skip
    for change in result.changes:
        label = f"{change.library}@{change.version}" if change.version else change.library
        where = f"{change.old_url} -> {change.url}" if change.old_url else change.url
        print(f"{change.at}  {label}  {change.kind:<8}  {change.title or '(no title)'}  {where}")
        for section in change.sections:
            path = " > ".join(section.heading_path) or "(before the first heading)"
            link = f"  {change.url}#{section.anchor}" if section.anchor else ""
            print(f"    {section.change}: {path}{link}")
        if args.diff and change.diff:
            print(textwrap.indent(change.diff, "    "))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from docsbot.service import NotFound

    try:
        with _index() as index:
            diff = index.diff_versions(args.library, args.old, args.new)
    except NotFound as exc:
        print(f"docsbot: {exc}", file=sys.stderr)
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

    library, version = _library_version(args.library)
    try:
        with _index() as index:
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
        print(f"docsbot: {exc}", file=sys.stderr)
        return 1
    print(f"exported {count} pages of {label} to {out}")
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
    """A page's file in an export: its URL's path below the root's directory, ``.md`` for ``.html``."""
    import posixpath
    import urllib.parse

    path = urllib.parse.urlsplit(url).path
    base = posixpath.dirname(urllib.parse.urlsplit(root_url).path) + "/"
    rel = path[len(base) :] if path.startswith(base) else path.lstrip("/")
    if not rel or rel.endswith("/"):
        rel += "index.html"
    stem, ext = posixpath.splitext(rel)
    rel = stem + ".md" if ext in (".html", ".htm", ".xhtml", "") else rel + ".md"
    return "/".join(part for part in rel.split("/") if part not in ("", ".", ".."))


def _fleet(args: argparse.Namespace):  # noqa: ANN202 - docsbot.fleet.scheduler.Fleet
    import os

    from docsbot import store
    from docsbot.fleet.scheduler import Fleet

    settings = _settings()
    scrapyd = args.scrapyd or [u for u in os.environ.get("DOCSBOT_SCRAPYD_URLS", "").split() if u]
    return Fleet(
        store.resolve_dsn(settings),
        jobs=args.jobs,
        scrapyd=scrapyd,
        log_dir=Path(settings.get("DOCSBOT_DATA_DIR")).expanduser() / "fleet-runs",
        retry=store.RetryPolicy.from_settings(settings),
        host_concurrency=settings.getint("DOCSBOT_HOST_CONCURRENCY", 8),
        per_run=settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8),
    )


def cmd_sync(args: argparse.Namespace) -> int:
    """Declare a libraries file's entries, run the due ones (new ones are due at once), report each."""
    import logging

    from docsbot import store
    from docsbot.fleet.libraries import DEFAULT_FILE, load

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    fleet = _fleet(args)
    version_ids = None
    plan = None
    missed = 0
    if args.from_files:
        if args.due:
            print("docsbot sync: --from adds to a libraries file; --due reads none", file=sys.stderr)
            return 2
        from docsbot.fleet.libraries import LibrariesFileError

        try:
            missed = _sync_from(args.from_files, Path(args.file or DEFAULT_FILE))
        except LibrariesFileError as exc:
            print(f"docsbot sync: {exc}", file=sys.stderr)
            return 2
    if not args.due:
        path = Path(args.file or DEFAULT_FILE)
        entries = load(path)  # every entry checked before anything runs
        source = str(path.resolve())
        plan = fleet.declare(entries, source)
        from docsbot.store.fleet import declared_versions

        labels = {entry.label for entry in entries}
        with store.connect(fleet.dsn) as conn:
            version_ids = [
                row["id"]
                for row in declared_versions(conn, source)
                if store.version_label(row["library"], row["version"]) in labels
            ]
        if plan.removed:
            if args.prune:
                for problem in fleet.remove(plan.removed):
                    print(f"docsbot sync: {problem}", file=sys.stderr)
                print(f"removed (no longer in {path}): {', '.join(plan.removed)}")
            else:
                print(f"no longer in {path}, kept (--prune deletes them): {', '.join(plan.removed)}")
    reports = fleet.run_due(version_ids)
    ran = {r.label for r in reports}
    for report in reports:
        print(report.line())
    with store.connect(fleet.dsn) as conn:
        rows = conn.execute(
            "SELECT l.name, v.name, v.next_due_at FROM versions v JOIN libraries l ON l.id = v.library_id "
            "WHERE (%s::bigint[] IS NULL OR v.id = ANY(%s)) ORDER BY l.name, v.name",
            (version_ids, version_ids),
        ).fetchall()
    idle = [(store.version_label(lib, ver), due) for lib, ver, due in rows if store.version_label(lib, ver) not in ran]
    for label, due in idle:
        print(f"{label}: not due" + (f" (next {due:%Y-%m-%d %H:%M %Z})" if due else " (no refresh interval)"))
    failed = [r for r in reports if r.outcome not in ("complete", "vectors_pending", "scheduled")]
    kinds = {
        "indexed": sum(1 for r in reports if r.mode == "full" and r.outcome != "scheduled"),
        "refreshed": sum(1 for r in reports if r.mode == "refresh" and r.outcome != "scheduled"),
        "scheduled": sum(1 for r in reports if r.outcome == "scheduled"),
        "not due": len(idle),
        "failed": len(failed),
    }
    print(
        f"{len(reports) + len(idle)} versions: "
        + ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n or kind == "failed")
    )
    if missed:
        print(f"{missed} dependencies without docs found (above)")
    return 3 if failed or missed else 0


def cmd_scheduler(args: argparse.Namespace) -> int:
    import logging
    import signal

    from docsbot.fleet.scheduler import Scheduler

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    scheduler = Scheduler(_fleet(args), interval=args.interval)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: scheduler.stop())
    print(f"docsbot scheduler: claiming due versions every {args.interval:g} s", file=sys.stderr, flush=True)
    scheduler.run()
    return 0


def cmd_db_stop(args: argparse.Namespace) -> int:
    from pathlib import Path

    from docsbot.store import embedded

    settings = _settings()
    if settings.get("DATABASE_URL"):
        print("docsbot: DATABASE_URL is set; docsbot does not manage that server", file=sys.stderr)
        return 2
    pgdata = Path(settings.get("DOCSBOT_PGDATA")).expanduser().resolve()
    if not (pgdata / "PG_VERSION").is_file():
        print(f"no embedded PostgreSQL in {pgdata}")
        return 0
    stopped = embedded.stop(pgdata)
    print(f"{'stopped' if stopped else 'not running:'} the embedded PostgreSQL in {pgdata}")
    return 0


def cmd_db_migrate(args: argparse.Namespace) -> int:
    from docsbot import store

    settings = _settings()
    dsn = store.resolve_dsn(settings)
    with store.connect(dsn, retry=store.RetryPolicy.from_settings(settings)) as conn:
        applied = store.migrate(conn)
    store.ensure_vector_indexes(dsn)
    print(f"applied migrations {', '.join(applied)}" if applied else "the database schema is up to date")
    return 0


def cmd_embed(args: argparse.Namespace) -> int:
    """Give the chunks waiting in the queue their vectors (docsbot.embedding.worker), then exit; --follow keeps
    waiting."""
    import asyncio
    import logging
    import time

    import psycopg

    from docsbot import store
    from docsbot.embedding.models import load_embedder
    from docsbot.embedding.worker import EmbeddingWorker, FillStats, ModelRunner, when_mostly_written
    from docsbot.extensions.run import GRAPH_WAIT_SECONDS

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    settings = _settings()
    embedder = load_embedder(settings)
    dsn = store.resolve_dsn(settings)
    with _database(write=True) as conn:
        versions = store.list_versions(conn, args.library, args.version)
        if args.library is not None and not versions:
            known = ", ".join(store.version_label(v.library, v.name) for v in store.list_versions(conn)) or "none"
            print(f"docsbot embed: {args.library} is not indexed; indexed: {known}", file=sys.stderr)
            return 1
        mine = [v for v in versions if v.embedding_model == embedder.name]
        other = [
            f"{store.version_label(v.library, v.name)} ({v.embedding_model}, {n} waiting)"
            for v in versions
            if v.embedding_model not in (None, embedder.name) and (n := store.waiting_chunks(conn, [v.id]))
        ]
        scope = [v.id for v in mine] if args.library is not None else None
        waiting = store.waiting_chunks(conn, scope, embedder.name) if mine else 0
    if other:
        print(f"docsbot embed: not {embedder.name}'s (set DOCSBOT_EMBEDDING_MODEL to embed them): {', '.join(other)}",
              file=sys.stderr)  # fmt: skip
    labels = ", ".join(store.version_label(v.library, v.name) for v in mine) or "nothing"
    if not waiting and not args.follow:
        print(f"nothing to embed: every chunk of {labels} has its vector ({embedder.name})")
        return 0
    print(f"{waiting} chunks of {labels} wait for a vector ({embedder.name})", file=sys.stderr)
    runner = ModelRunner(embedder, args.nice if args.nice is not None else settings.getint("DOCSBOT_EMBED_NICE", 10))
    worker = EmbeddingWorker(
        dsn,
        runner,
        model=embedder.name,
        version_ids=scope,
        label=labels,
        claim=args.claim or settings.getint("DOCSBOT_EMBED_CLAIM", 256),
        slots=args.concurrency,
        retry=store.RetryPolicy.from_settings(settings),
        progress_every=args.progress,
    )

    def build_graphs() -> None:
        try:
            store.ensure_vector_indexes(dsn, wait=GRAPH_WAIT_SECONDS)
        except psycopg.Error as exc:  # searched exactly until the next run or `docsbot db migrate` builds them
            print(f"docsbot embed: the vector indexes could not be built ({exc}); searches scan vectors exactly",
                  file=sys.stderr)  # fmt: skip

    async def run() -> FillStats:
        done = asyncio.Event()
        # the graphs of the versions now ready, built beside the model embedding the last tenth, as a crawl does
        graphs = asyncio.ensure_future(when_mostly_written(worker, waiting, done, build_graphs))
        try:
            return await worker.run(follow=lambda: args.follow)
        finally:
            done.set()
            await graphs
            await runner.aclose()  # an HTTP backend's connections, on their event loop

    started = time.monotonic()
    try:
        stats = asyncio.run(run())
    except KeyboardInterrupt:
        print("docsbot embed: stopped; the chunks of the batch in flight wait for the next worker", file=sys.stderr)
        return 130
    finally:
        runner.close()
    took = time.monotonic() - started
    left = worker.waiting or 0
    rate = stats.written / took if took else 0.0
    if stats.written:
        build_graphs()  # whatever graph is still missing: a version whose vectors came in after the early build
    print(
        f"embedded {stats.embedded} texts, {stats.written} chunks given a vector ({stats.copied} by an equal text) in "
        f"{took:.1f} s ({rate:.1f} chunks/s); {left} chunks still wait"
    )
    if stats.error:
        print(f"docsbot embed: {stats.error}", file=sys.stderr)
        return 1
    return 0 if left == 0 else 1


def cmd_mcp(args: argparse.Namespace) -> int:
    from docsbot.mcp.server import UsageError, serve  # the MCP SDK is imported only by this command

    try:
        return serve(http=args.http, allow_refresh=args.allow_refresh, allowed_networks=_allowed_networks(args))
    except UsageError as exc:
        print(f"docsbot mcp: {exc}", file=sys.stderr)
        return 2


def cmd_serve(args: argparse.Namespace) -> int:
    from docsbot.mcp.server import UsageError, serve  # the MCP SDK, Starlette and Jinja2 only for this command
    from docsbot.web import build_app

    try:
        return serve(
            http=args.http, allow_refresh=args.allow_writes, pages=build_app, allowed_networks=_allowed_networks(args)
        )
    except UsageError as exc:
        print(f"docsbot serve: {exc}", file=sys.stderr)
        return 2


def _allowed_networks(args: argparse.Namespace) -> list[str]:
    """``--allow-network`` values, and ``*`` for ``--allow-private-networks``."""
    return [*(args.allow_network or []), *(["*"] if args.allow_private_networks else [])]


def _network_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--allow-network",
        action="append",
        metavar="NET|HOST",
        help="crawls a caller starts may also reach this network (10.0.0.0/8) or host (docs.internal); repeatable; "
        "adds to DOCSBOT_ALLOWED_NETWORKS (default: public addresses only)",
    )
    command.add_argument(
        "--allow-private-networks",
        action="store_true",
        help="crawls a caller starts may reach any address, loopback and private ones included (trusted callers only)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docsbot", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    search = sub.add_parser("search", help="hybrid (vector + full-text) search of the indexed docs")
    search.add_argument("query")
    search.add_argument("--library", help="only this library")
    search.add_argument("--version", help="only this version of it ('' for none)")
    search.add_argument("-k", type=int, default=5, help="number of results (default 5)")
    search.add_argument(
        "--json", action="store_true", help="JSON lines: url, deep_link, title, heading_path, score, content"
    )
    search.add_argument("--chunks", action="store_true", help="raw chunks instead of one result per page")
    search.add_argument(
        "--kind",
        choices=["docs", "changelog", "index", "example"],
        help="only pages of this kind: docs (reference, guides), changelog (release notes, What's New), index; "
        "example: only sections holding a code example",
    )
    search.set_defaults(func=cmd_search)
    status = sub.add_parser("status", help="libraries, versions, pages, chunks and vectors, last runs")
    status.set_defaults(func=cmd_status)
    embed = sub.add_parser(
        "embed", help="give the chunks waiting for a vector theirs (from any machine; the crawl runs one worker too)"
    )
    embed.add_argument("--library", help="only this library")
    embed.add_argument("--version", help="only this version of it ('' for none)")
    embed.add_argument("--follow", action="store_true", help="keep running: embed new chunks as crawls store them")
    embed.add_argument("--claim", type=int, help="chunks per claim (default DOCSBOT_EMBED_CLAIM, 256)")
    embed.add_argument("--concurrency", type=int, help="claims in flight at once (default: the backend's)")
    embed.add_argument("--nice", type=int, help="CPU priority of the model's thread (default DOCSBOT_EMBED_NICE, 10)")
    embed.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines (default 30)")
    embed.set_defaults(func=cmd_embed)
    delete = sub.add_parser("delete", help="remove a library version (or every version) and all of its data")
    delete.add_argument("--library", required=True)
    delete.add_argument("--version", help="only this version ('' for the unversioned one); default: all")
    delete.set_defaults(func=cmd_delete)
    database = sub.add_parser("db", help="the database: its schema, and the embedded PostgreSQL")
    db_sub = database.add_subparsers(dest="action", required=True)
    db_sub.add_parser(
        "stop", help="stop it now (it also stops by itself after DOCSBOT_PG_IDLE_TIMEOUT seconds unused)"
    ).set_defaults(func=cmd_db_stop)
    db_sub.add_parser(
        "migrate", help="bring the database schema up to date (crawls do it too; read-only commands never do)"
    ).set_defaults(func=cmd_db_migrate)
    mcp = sub.add_parser("mcp", help="serve the index to LLM agents (Model Context Protocol; stdio by default)")
    mcp.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp (default host 127.0.0.1); another host than loopback "
        "needs DOCSBOT_MCP_TOKEN",
    )
    mcp.add_argument(
        "--allow-refresh", action="store_true", help="add the refresh_library and get_run tools (read-only otherwise)"
    )
    _network_options(mcp)
    mcp.set_defaults(func=cmd_mcp)
    changes = sub.add_parser("changes", help="what refreshes changed: pages added, modified (sections, diff), deleted")
    changes.add_argument("library", metavar="LIBRARY[@VERSION]")
    changes.add_argument("--since", help="a duration back from now (7d, 12h) or a date (2026-11-20); default: all kept")
    changes.add_argument("--run", type=int, help="only the changes of this run (a crawl_runs id, as `status` shows)")
    changes.add_argument("--diff", action="store_true", help="show each modified page's unified diff")
    changes.add_argument("--limit", type=int, default=200, help="at most this many pages, newest first (default 200)")
    changes.add_argument("--json", action="store_true", help="JSON lines, one change each")
    changes.set_defaults(func=cmd_changes)
    diff = sub.add_parser("diff", help="API names added, removed and changed between two versions of a library")
    diff.add_argument("library")
    diff.add_argument("old", metavar="OLD_VERSION")
    diff.add_argument("new", metavar="NEW_VERSION")
    diff.add_argument("--json", action="store_true")
    diff.set_defaults(func=cmd_diff)
    add = sub.add_parser("add", help="add a package's documentation to the libraries file, found in its registry")
    add.add_argument("package", metavar="NAME[==VERSION]", help="requests, requests==2.31.0, 'flask>=2,<3', express@^4")
    add.add_argument("--ecosystem", choices=["pypi", "npm", "cargo"], default="pypi", help="its registry (pypi)")
    add.add_argument("--file", help="the libraries file (default ./libraries.toml; created when missing)")
    add.add_argument("--refresh", help="how often it is due (12h, 7d); default the file's [defaults]")
    add.add_argument("--dry-run", action="store_true", help="print the entry, write nothing")
    add.set_defaults(func=cmd_add)
    docs = sub.add_parser("docs", help="a library's docs on a topic (or its overview) within a token budget")
    docs.add_argument("library", metavar="LIBRARY[@VERSION]", help="an indexed library; VERSION may be loose (3.x)")
    docs.add_argument("topic", nargs="*", help="what you need, in words or identifiers; none: the overview pages")
    docs.add_argument("--max-tokens", type=int, default=5000, help="the budget, in the model's tokens (default 5000)")
    docs.add_argument("--json", action="store_true", help="the answer as JSON (MCP get_docs' shape)")
    docs.add_argument("--resolve", action="store_true", help="list the indexed libraries LIBRARY may mean, and stop")
    docs.set_defaults(func=cmd_docs)
    export = sub.add_parser("export", help="write a version's pages as Markdown (llms-full.txt or a directory)")
    export.add_argument("library", metavar="LIBRARY[@VERSION]")
    export.add_argument(
        "--format",
        choices=["llms-full", "pages"],
        default="llms-full",
        help="llms-full: one file, each page under its title and source URL; pages: a .md per page",
    )
    export.add_argument("-o", "--output", help="file (llms-full) or directory (pages); default: named after it")
    export.set_defaults(func=cmd_export)
    sync = sub.add_parser("sync", help="index and refresh the library versions of a libraries file (the due ones)")
    sync.add_argument("file", nargs="?", help="the libraries file (TOML; default ./libraries.toml)")
    sync.add_argument("--due", action="store_true", help="no file: run the versions that are due, from the database")
    sync.add_argument("--prune", action="store_true", help="delete the versions the file no longer declares")
    sync.add_argument(
        "--from",
        dest="from_files",
        action="append",
        metavar="DEPFILE",
        help="first add the docs of this project's dependencies (requirements*.txt, pyproject.toml, package.json, "
        "Cargo.toml; repeatable) to the libraries file",
    )
    scheduler = sub.add_parser("scheduler", help="run due versions on a timer, for ever (a long-running service)")
    scheduler.add_argument("--interval", type=float, default=60.0, help="seconds between ticks (default 60)")
    for command in (sync, scheduler):
        command.add_argument("--jobs", type=int, default=2, help="local runs at once (default 2)")
        command.add_argument(
            "--scrapyd",
            action="append",
            metavar="URL",
            help="run on this Scrapyd node instead (repeatable; default DOCSBOT_SCRAPYD_URLS, space-separated)",
        )
    sync.set_defaults(func=cmd_sync)
    scheduler.set_defaults(func=cmd_scheduler)
    serve = sub.add_parser("serve", help="web pages to search and follow the index, with the MCP server at /mcp")
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        default="127.0.0.1:8765",
        help="where to serve (default 127.0.0.1:8765); another host than loopback needs DOCSBOT_MCP_TOKEN",
    )
    serve.add_argument(
        "--allow-writes",
        action="store_true",
        help="allow refreshing and removing library versions (read-only otherwise)",
    )
    _network_options(serve)
    serve.set_defaults(func=cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "k", 1) < 1:
        print("docsbot: -k must be at least 1", file=sys.stderr)
        return 2
    from docsbot.settings import DOCSBOT_SETTINGS_ERRORS

    if DOCSBOT_SETTINGS_ERRORS:  # a malformed environment variable: say which, before anything is touched
        for problem in DOCSBOT_SETTINGS_ERRORS:
            print(f"docsbot: {problem}", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # `docsbot search ... | head`: the reader left; no traceback (Python's signal docs)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that flushing at exit fails no more
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by it
    except DocsbotError as exc:  # a database, model or query error the user can act on
        print(f"docsbot: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        import psycopg

        if not isinstance(exc, psycopg.Error):
            raise
        # the server refused (a role without the privilege, a read-only transaction): one line, not a traceback
        print(f"docsbot: the database refused: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
