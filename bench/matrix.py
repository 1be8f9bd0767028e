"""`make matrix`: docsbot on real documentation trees, one per generator, from Debian's documentation packages.

For each corpus: install its package with apt-get when missing (a JavaScript framework's site, which Debian does
not package: build it from the npm registry with scripts/build_js_docs.sh), serve a scratch copy of its HTML with
nginx (its default ETag and Last-Modified; bench/run.py's ``Bench`` and scripts/serve_python_docs.sh), and into a
fresh embedded PostgreSQL:

1. count the HTML pages reachable from the root by an independent link walk (urllib + lxml, none of docsbot's
   code): ``<a href>``/``<area href>`` within the root's directory, fragments and queries dropped, a page being a
   200 with an HTML content type, counted once per file served;
2. index it with ``scrapy crawl docs`` (a process, as a user runs it), then an unchanged refresh;
3. apply a seeded docs release (bench/mutate.py: pages edited, deleted and added; plus one deleted directory
   index, ``dir/index.html``, when the tree has one), refresh (``prune=orphans``) and compare with a fresh full
   index of the released tree (pages and chunk texts);
4. touch every file (new mtimes, same content) and refresh.

One row per corpus: reachable HTML pages, pages stored, reachable pages not stored (with a sample), pages without
chunks, refresh ≡ re-index, statuses of the unchanged refresh, exit codes and wall times. Written as Markdown to
``--report`` and as JSON next to it. Corpora over ``--model-limit`` reachable pages use the hashing embedder
(tests.embedders.HashingEmbedder), so they measure crawling and refresh rather than the CPU's embedding speed.

The PostgreSQL, Flask and MkDocs documentation are kept for independent acceptance: never add them here.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urldefrag, urljoin, urlsplit

import lxml.html
from w3lib.html import get_meta_refresh

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mutate import release  # noqa: E402
from bench.report import write_section  # noqa: E402
from bench.run import Bench, Phase, _dangling_symlinks  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable

HASHING_EMBEDDER = "tests.embedders.HashingEmbedder"
SITES = ROOT / ".build/sites"  # scripts/build_js_docs.sh builds bench/sites/<recipe>/ into SITES/<recipe>/site
MKDOCS_RECIPE = "docsbot-docs"  # not a bench/sites/ recipe: this checkout's mkdocs.yml, built by `mkdocs build`
HUB = "index.html"  # written at the site root when a package holds several manuals side by side
ANY_BODY = re.compile(r"<body[^>]*>", re.I)
HTML_TYPES = ("text/html", "application/xhtml+xml")
URL_SAFE = ":/?#[]@!$&'()*+,;=%~"


@dataclass(frozen=True)
class Corpus:
    """A Debian documentation package and the generator that built it. The site is the directory of the
    package's shallowest ``index.html``; with several at that depth (one per manual), their common parent, with
    a generated hub page linking each."""

    name: str
    generator: str
    package: str
    # One manual of the package: its first page, relative to the package's site. The whole site is served (its
    # links out of the manual resolve), the crawl's scope and the walk are the page's directory.
    entry: str = ""
    # Instead of a Debian package, a site built from the npm registry by the framework that publishes it (Debian
    # packages no Docusaurus or VitePress site): a recipe of bench/sites/, built by scripts/build_js_docs.sh into
    # .build/sites/<recipe>/site. ``package`` then names the npm package whose docs/ folder the site is built from.
    recipe: str = ""


# One per generator at least; the PostgreSQL, Flask and MkDocs docs stay out (independent acceptance).
CORPORA = [
    Corpus("git", "AsciiDoc XHTML + DocBook XSL", "git-doc"),
    Corpus("docbook-xsl", "DocBook XSL", "docbook-xsl-doc-html"),
    Corpus("python", "Sphinx", "python3.11-doc"),
    Corpus("cmake", "Sphinx", "cmake-doc"),
    Corpus("gtk4", "gi-docgen", "libgtk-4-doc"),
    Corpus("openjdk-17", "Javadoc", "openjdk-17-doc"),
    Corpus("rust", "rustdoc + mdBook", "rust-doc"),
    # The rust-doc tree is 21,477 pages (most of them core's): its standard library and its book are also rows of
    # their own, at the size of one site (doc.rust-lang.org/std/, doc.rust-lang.org/book/).
    Corpus("rust-std", "rustdoc", "rust-doc", entry="std/index.html"),
    Corpus("rust-book", "mdBook", "rust-doc", entry="book/index.html"),
    Corpus("lmdb", "Doxygen (C)", "lmdb-doc"),
    Corpus("jsoncpp", "Doxygen (C++)", "libjsoncpp-doc"),
    # Fastify's docs as fastify.dev builds them (Docusaurus 3.8, docs at the site root, one page per directory).
    Corpus("fastify", "Docusaurus", "fastify@5.12.8", recipe="fastify"),
    # docsbot's own documentation site (mkdocs.yml), built from this checkout by MkDocs with Material: directory
    # URLs, navigation drawn twice (tabs and sidebar), a table of contents per page, admonitions and details.
    Corpus("docsbot-docs", "MkDocs (Material)", "docsbot", recipe=MKDOCS_RECIPE),
]


def installed(package: str) -> bool:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    ).stdout
    return out.strip().endswith("installed") and "not-installed" not in out


def install(package: str) -> None:
    """apt-get install ``package`` (root, or sudo); raises CalledProcessError."""
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", package], env=env, check=True)


def site_of(package: str) -> tuple[Path, list[str]]:
    """(directory to serve, index pages relative to it at the shallowest depth) from the package's file list."""
    files = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout.split()
    indexes = [Path(f) for f in files if f.endswith("/index.html") and "/html/_" not in f]
    if not indexes:
        raise SystemExit(f"{package} has no index.html")
    depth = min(len(p.parts) for p in indexes)
    top = sorted(p for p in indexes if len(p.parts) == depth)
    # A directory whose only page is its index.html is a shell (openjdk-17-doc's index.html sends the browser to
    # api/, a symlink into openjdk-17-jre-headless, where the package installs its 10,140 pages): not a manual.
    html = [f for f in files if f.endswith(".html")]
    manuals = [p for p in top if sum(1 for f in html if f.startswith(f"{p.parent}/")) > 1]
    top = manuals or top
    if len(top) == 1:
        return top[0].parent, ["index.html"]
    base = Path(os.path.commonpath([p.parent for p in top]))
    return base, [str(p.relative_to(base)) for p in top]


def built_site(recipe: str) -> Path:
    """The directory of bench/sites/``recipe``'s built site: scripts/build_js_docs.sh builds it when it is missing
    or its recipe changed (npm ci and the framework's build, minutes), else only answers where it is; for
    :data:`MKDOCS_RECIPE`, docsbot's own site, built from this checkout each time (seconds). Raises
    CalledProcessError."""
    if recipe == MKDOCS_RECIPE:
        return build_docs_site(SITES / recipe / "site")
    out = subprocess.run(
        [str(ROOT / "scripts/build_js_docs.sh"), recipe], stdout=subprocess.PIPE, text=True, check=True
    ).stdout
    return Path(out.strip().splitlines()[-1])


def build_docs_site(directory: Path) -> Path:
    """``mkdocs build --strict`` of this checkout's documentation site into ``directory``; files whose bytes did not
    change keep their modification time, so that a server's validators (nginx: mtime and size) stay the same and a
    refresh of an unchanged site is all 304s. Returns ``directory``. Raises CalledProcessError."""
    import filecmp
    import tempfile

    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory.parent) as fresh:
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", fresh],
            cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        built = {p.relative_to(fresh) for p in Path(fresh).rglob("*") if p.is_file()}
        for old in [p for p in directory.rglob("*") if p.is_file() and p.relative_to(directory) not in built]:
            old.unlink()
        for name in built:
            target = directory / name
            if target.is_file() and filecmp.cmp(Path(fresh) / name, target, shallow=False):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(fresh) / name, target)
    return directory


def write_hub(site: Path, manuals: list[str], title: str) -> None:
    links = "".join(f'<li><a href="{m}">{m.rsplit("/", 2)[0]}</a></li>' for m in manuals)
    (site / HUB).write_text(
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
        f"<p>The manuals of this package.</p><ul>{links}</ul></main></body></html>"
    )
    # the same validators each time it is staged (nginx's ETag is its mtime and size): an index kept from an
    # earlier run (bench/fleet.py --pgdata) finds it unchanged
    newest = max((site / m).stat().st_mtime for m in manuals)
    os.utime(site / HUB, (newest, newest))


# --- the independent link walk ------------------------------------------------------------------------------------


def stage(corpus: Corpus, work: Path) -> Path:
    """The directory to serve for ``corpus`` (its package's site); a package with several manuals side by side is
    copied next to ``work`` with a hub page linking them written at its root."""
    source, manuals = (built_site(corpus.recipe), ["index.html"]) if corpus.recipe else site_of(corpus.package)
    if manuals == ["index.html"]:
        return source
    if work.exists():
        shutil.rmtree(work)
    staged = work.parent / f"{corpus.name}-src"
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(source, staged, symlinks=False, ignore=_dangling_symlinks)
    write_hub(staged, manuals, f"{corpus.package} manuals")
    return staged


def served_file(url: str, prefix: str) -> str:
    """The file a static server answers for ``url``, relative to the site root: ``dir/`` → ``dir/index.html``."""
    path = unquote(urlsplit(url).path)[len(prefix) :]
    return path + "index.html" if path.endswith("/") or path == "" else path


def link_walk(root: str, workers: int = 8) -> tuple[set[str], dict[str, int]]:
    """Breadth-first walk from ``root`` over ``<a href>`` and ``<area href>`` inside the root's directory.
    A redirect (nginx: ``dir`` → ``dir/``) counts as the page it leads to, whose URL is the base of its links.
    Returns (the files of HTML pages reached with 200, counts of other outcomes by kind)."""
    split = urlsplit(root)
    prefix = split.path.rsplit("/", 1)[0] + "/"
    seen = {root}
    frontier = [root]
    pages: set[str] = set()
    other: collections.Counter[str] = collections.Counter()

    def fetch(url: str) -> tuple[str, str | None, bytes]:
        """(final URL after redirects, content type or outcome, body if HTML)."""
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                kind = resp.headers.get_content_type()
                body = resp.read() if kind in HTML_TYPES else b""
                return resp.geturl(), kind, body
        except urllib.error.HTTPError as exc:
            return url, f"HTTP {exc.code}", b""
        except (urllib.error.URLError, OSError, ValueError) as exc:
            return url, f"error {type(exc).__name__}", b""

    with ThreadPoolExecutor(workers) as pool:
        while frontier:
            batch, frontier = frontier, []
            for url, kind, body in pool.map(fetch, batch):
                if kind not in HTML_TYPES:
                    other[kind or "unknown"] += 1
                    continue
                if not body.strip():
                    pages.add(served_file(url, prefix))
                    continue
                # A meta refresh is a redirect (browsers; Scrapy's MetaRefreshMiddleware, up to 100 s): the page
                # is where it leads.
                delay, refresh = get_meta_refresh(
                    body.decode("utf-8", "replace"), url, ignore_tags=("script", "noscript")
                )
                if refresh and delay is not None and delay < 100:
                    other["meta refresh"] += 1
                    hrefs = [refresh]
                    base_url = url
                else:
                    pages.add(served_file(url, prefix))
                    try:
                        doc = lxml.html.document_fromstring(body)
                    except (lxml.etree.ParserError, ValueError):
                        other["unparseable"] += 1
                        continue
                    base = doc.xpath("//base/@href")
                    base_url = urljoin(url, base[0]) if base else url
                    hrefs = doc.xpath("//a/@href | //area/@href")
                for href in hrefs:
                    # As a browser sends it: spaces and other unsafe characters percent-encoded.
                    target = quote(urldefrag(urljoin(base_url, href.strip()))[0].split("?", 1)[0], safe=URL_SAFE)
                    t = urlsplit(target)
                    in_scope = t.scheme in ("http", "https") and t.netloc == split.netloc and t.path.startswith(prefix)
                    if in_scope and target not in seen:
                        seen.add(target)
                        frontier.append(target)
    return pages, dict(other)


def entry_file(url: str, prefix: str = "/") -> str:
    """The file a visitor of ``url`` ends up reading (HTTP redirects and a meta refresh followed once), relative
    to the site root: the JDK docs' ``index.html`` sends the browser to ``api/index.html``."""
    with urllib.request.urlopen(url, timeout=30) as resp:
        final, body = resp.geturl(), resp.read()
    delay, refresh = get_meta_refresh(body.decode("utf-8", "replace"), final, ignore_tags=("script", "noscript"))
    if refresh and delay is not None and delay < 100:
        final = urldefrag(refresh)[0]
    return served_file(final, prefix)


# --- one corpus -------------------------------------------------------------------------------------------------


@dataclass
class Row:
    corpus: str
    generator: str
    package: str
    embedder: str = ""
    reachable: int = 0
    stored: int = 0
    covered: int = 0  # reachable pages stored
    missing: list[str] = field(default_factory=list)  # reachable HTML pages not stored (sample in the table)
    extra: list[str] = field(default_factory=list)  # stored pages the walk did not reach
    without_chunks: int = 0
    walk_other: dict[str, int] = field(default_factory=dict)
    unchanged_statuses: dict[str, int] = field(default_factory=dict)
    release: str = ""
    equivalent: bool | None = None
    differences: list[str] = field(default_factory=list)
    exit_codes: dict[str, int] = field(default_factory=dict)
    walls: dict[str, float] = field(default_factory=dict)
    rss_mib: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # docsbot/skipped/* and failed of the full index
    scale: list[dict] = field(default_factory=list)  # --scale: one entry per size (see scale_runs)
    # The full index's own clock: every page stored and searchable by text, then every vector in place (seconds).
    searchable: float | None = None
    vectors_complete: float | None = None
    chunks: int = 0
    error: str = ""
    commit: str = ""  # of the code that ran
    date: str = ""
    gone_statuses: str = ""

    @property
    def coverage(self) -> float:
        return self.covered / self.reachable if self.reachable else 0.0


def stored_files(snapshot: dict[str, list[str]], prefix: str) -> dict[str, list[str]]:
    """Bench.snapshot keys (URL paths without the leading slash) → served files relative to the site root."""
    out = {}
    for path, texts in snapshot.items():
        out[served_file("/" + path, prefix)] = texts
    return out


def run_corpus(corpus: Corpus, args: argparse.Namespace, port: int) -> Row:
    row = Row(corpus.name, corpus.generator, corpus.package)
    if not corpus.recipe and not installed(corpus.package):
        if args.no_install:
            row.error = "not installed"
            return row
        print(f"installing {corpus.package}", flush=True)
        install(corpus.package)
    work = Path(args.workdir).resolve() / corpus.name
    try:
        source = stage(corpus, work)
    except subprocess.CalledProcessError as exc:  # a site that does not build is a row, not the end of the matrix
        row.error = f"no site: {exc}"
        return row
    bench_args = argparse.Namespace(
        site=str(source), workdir=str(work), port=port, server="nginx", seed=args.seed, embedder=None
    )
    bench = Bench(bench_args)
    with socket.socket() as probe:  # serve_python_docs.sh would reuse a server already on the port, stale or not
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            row.error = f"port {port} is in use (a server left from another run?); use --port"
            return row
    bench.setup()
    try:
        root = f"{bench.url}{corpus.entry or 'index.html'}"
        manual = corpus.entry.rpartition("/")[0] + "/" if "/" in corpus.entry else ""
        started = time.monotonic()
        reachable, row.walk_other = link_walk(root)
        reachable = {manual + path for path in reachable}  # relative to the site, as stored_files gives them
        row.walls["link walk"] = round(time.monotonic() - started, 1)
        row.reachable = len(reachable)
        row.embedder = "model" if row.reachable <= args.model_limit else "hashing"
        if row.embedder == "hashing":
            bench.env["DOCSBOT_EMBEDDER"] = HASHING_EMBEDDER
        if args.gone_statuses:
            bench.env["DOCSBOT_GONE_STATUSES"] = args.gone_statuses
        print(f"{corpus.name}: {row.reachable} HTML pages reachable from {root}; embedder: {row.embedder}", flush=True)

        def phase(name: str, *crawl_args: str, library: str = "matrix") -> Phase:
            p = bench.docsbot(name, *crawl_args, library=library, check=False, timeout=args.phase_timeout or None)
            row.walls[name] = round(p.wall, 1)
            row.exit_codes[name] = p.exit_code
            row.rss_mib[name] = round(p.rss / 2**20)
            if p.stopped:
                raise TimeLimit(f"{name} stopped at the time limit ({args.phase_timeout:.0f} s)")
            return p

        def count_stored() -> dict[str, list[str]]:
            stored = stored_files(bench.snapshot("matrix"), "/")
            row.stored = len(stored)
            row.without_chunks = sum(1 for texts in stored.values() if not texts)
            row.missing = sorted(reachable - set(stored))
            row.covered = len(reachable & set(stored))
            row.extra = sorted(set(stored) - reachable)
            return stored

        if corpus.name in args.scale and args.scale_slice:
            row.scale.append(scale_runs(bench, root, args, phase, f"matrix-{args.scale_slice}", args.scale_slice))
        try:
            full = phase("full index", f"url={root}")
        except TimeLimit:
            count_stored()  # what it reached
            raise
        row.skipped = {k: v for k, v in full.docsbot.items() if k.startswith(("skipped/", "failed"))}
        row.searchable = full.docsbot.get("searchable_seconds")
        row.vectors_complete = full.docsbot.get("elapsed_seconds")
        row.chunks = full.docsbot.get("chunks_written", 0)
        unchanged = phase("unchanged refresh", "mode=refresh")
        row.unchanged_statuses = unchanged.statuses
        count_stored()
        if corpus.name in args.scale:
            row.scale.append(scale_runs(bench, root, args, phase, "matrix", None, indexed=full))

        # A site whose pages are mostly directory indexes (Docusaurus: Guides/Testing/index.html) has few other
        # pages: the release edits, deletes and adds among those indexes, or it would change almost nothing.
        html = [p.name for p in (bench.site / manual).rglob("*.html")]
        directory_pages = html.count("index.html") > len(html) / 2
        change = release(bench.site / manual, seed=args.seed, main=ANY_BODY, directory_pages=directory_pages)
        dir_indexes = sorted(
            str(p.relative_to(bench.site)) for p in bench.site.rglob("index.html") if p.parent != bench.site
        )
        # Not the page the root leads to: without it the site has no entry (a fresh index stores nothing, and a
        # refresh stops at the root's 404 and deletes nothing), so the row would not test the refresh.
        entry = entry_file(root)
        dir_indexes = [p for p in dir_indexes if p in reachable and p != entry]
        deleted_index = random.Random(args.seed).choice(dir_indexes) if dir_indexes else None
        if deleted_index:
            (bench.site / deleted_index).unlink()
        row.release = f"{len(change.edited)} edited, {len(change.deleted)} deleted, {len(change.added)} added" + (
            f", {deleted_index} deleted" if deleted_index else ", no directory index to delete"
        )
        phase("release refresh", "mode=refresh", "prune=orphans")
        after = stored_files(bench.snapshot("matrix"), "/")
        phase("fresh re-index", f"url={root}", library="matrix-check")
        fresh = stored_files(bench.snapshot("matrix-check"), "/")
        row.equivalent = after == fresh
        if not row.equivalent:
            only_fresh, only_refresh = sorted(set(fresh) - set(after)), sorted(set(after) - set(fresh))
            differ = sorted(p for p in set(after) & set(fresh) if after[p] != fresh[p])
            row.differences = [
                f"only in the re-index: {len(only_fresh)} {only_fresh[:5]}",
                f"only in the refresh: {len(only_refresh)} {only_refresh[:5]}",
                f"chunks differ: {len(differ)} {differ[:5]}",
            ]
        if not args.touch_limit or row.reachable <= args.touch_limit:
            now = time.time()
            for path in bench.site.rglob("*"):
                if path.is_file():
                    os.utime(path, (now + 5, now + 5))
            phase("touch refresh", "mode=refresh")
    except Exception as exc:  # noqa: BLE001 - one corpus failing is a row, not the end of the matrix
        row.error = f"{type(exc).__name__}: {exc}"
    finally:
        bench.teardown()
        if bench.pg is not None:
            bench.pg.cleanup()
    return row


class TimeLimit(Exception):
    """A phase was stopped at ``--phase-timeout``."""


def write_validators(bench: Bench, library: str, path: Path) -> int:
    """The stored pages of ``library`` with their validators, as bench/bare_spider.py's ``revalidate`` file."""
    with bench.conn() as conn:
        rows = conn.execute(
            "SELECT p.url, p.etag, p.last_modified FROM pages p JOIN versions v ON v.id = p.version_id "
            "JOIN libraries l ON l.id = v.library_id WHERE l.name = %s",
            (library,),
        ).fetchall()
    path.write_text(json.dumps({url: [etag, last_modified] for url, etag, last_modified in rows}))
    return len(rows)


def page_state(bench: Bench, library: str) -> dict:
    """bench/scale.py ``ledger``: what a refresh of ``library`` holds for its stored pages (a process of its own)."""
    cmd = [sys.executable, str(ROOT / "bench/scale.py"), "ledger", bench.dsn, library]
    proc = subprocess.run(cmd, cwd=ROOT, env=bench.env, capture_output=True, text=True, check=False, timeout=1800)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout)


def scale_runs(
    bench: Bench,
    root: str,
    args: argparse.Namespace,
    phase: Callable[..., Phase],
    library: str,
    max_pages: int | None,
    indexed: Phase | None = None,
) -> dict:
    """``--scale``, one size of a corpus (``max_pages`` pages, or the whole tree when ``indexed`` is its full
    index): the index (run here unless given), then ``--repeat`` alternations of docsbot's unchanged refresh and
    the plain Scrapy spider (bench/bare_spider.py) revalidating exactly the stored pages with their stored
    validators (every one answers 304), both as whole processes; peak RSS of each; and the refresh's page state
    (bench/scale.py). For the whole tree also that state for the tree replicated to ``--project`` pages."""
    label = f"{max_pages} pages" if max_pages else "whole tree"
    if indexed is None:
        indexed = phase(f"index, {label}", f"url={root}", f"max_pages={max_pages}", library=library)
    validators = bench.work / f"validators-{library}.json"
    pages = write_validators(bench, library, validators)
    refreshes: list[Phase] = []
    plains: list[Phase] = []
    bare = [sys.executable, "-m", "scrapy", "runspider", str(ROOT / "bench/bare_spider.py")]
    for i in range(args.repeat):
        refreshes.append(phase(f"unchanged refresh, {label} #{i + 1}", "mode=refresh", library=library))
        plains.append(bench.run(f"plain all-304, {label} #{i + 1}", [*bare, "-a", f"revalidate={validators}"]))
    out = {
        "size": label,
        "pages": pages,
        "index_wall_s": round(indexed.wall, 1),
        "index_rss_mib": round(indexed.rss / 2**20),
        "refresh_walls_s": [round(p.wall, 2) for p in refreshes],
        "plain_walls_s": [round(p.wall, 2) for p in plains],
        "refresh_median_s": round(statistics.median(p.wall for p in refreshes), 2),
        "plain_median_s": round(statistics.median(p.wall for p in plains), 2),
        "refresh_rss_mib": max(round(p.rss / 2**20) for p in refreshes),
        "plain_rss_mib": max(round(p.rss / 2**20) for p in plains),
        "refresh_statuses": refreshes[-1].statuses,
        "plain_statuses": plains[-1].statuses,
        "page_state": page_state(bench, library),
    }
    out["ratio"] = round(out["refresh_median_s"] / out["plain_median_s"], 3)
    if max_pages is None and args.project:
        copies = -(-args.project // max(pages, 1))
        replicate = [sys.executable, str(ROOT / "bench/scale.py"), "replicate", bench.dsn, library, str(copies)]
        subprocess.run([*replicate, f"{library}-x{copies}"], cwd=ROOT, env=bench.env, check=True, timeout=1800)
        out["projected"] = page_state(bench, f"{library}-x{copies}")
        with bench.conn() as conn:
            conn.execute("DELETE FROM libraries WHERE name = %s", (f"{library}-x{copies}",))
    print(f"  scale {label}: {json.dumps(out)}", flush=True)
    return out


# --- report -------------------------------------------------------------------------------------------------------


def _mib(r: Row, *names: str) -> str:
    return " / ".join(str(r.rss_mib.get(n, "–")) for n in names)


def render(rows: list[Row], *, notes: bool = True) -> str:
    """The matrix as Markdown: conditions, one row per corpus, then (``notes``) what each row left out and the
    ``--scale`` measurements."""
    commits = sorted({r.commit for r in rows if r.commit})
    dates = sorted({r.date for r in rows if r.date})
    gone = sorted({r.gone_statuses for r in rows if r.gone_statuses})
    lines = [
        f"{', '.join(dates)} · {os.cpu_count()} CPUs · commit {', '.join(commits)} · `make matrix` (bench/matrix.py) · "
        f"nginx, its default ETag/Last-Modified · `DOCSBOT_GONE_STATUSES={'/'.join(gone) or '404,410'}` (the "
        "advice for static file servers: nginx answers 403 for a directory whose index.html is gone) · "
        "embedder per row (`model`: all-MiniLM-L6-v2; `hashing`: tests.embedders.HashingEmbedder)",
        "",
        "| corpus | generator | embedder | reachable HTML | stored | coverage | without chunks | refresh ≡ re-index "
        "| unchanged refresh statuses | exit codes | wall s (index / refresh / release refresh / re-index / touch) "
        "| peak RSS MiB (index / refresh) |",
        "|---|---|---|---:|---:|---:|---:|---|---|---|---|---|",
    ]
    for r in rows:
        if r.error and not r.reachable:
            lines.append(f"| {r.corpus} | {r.generator} | | | | | | | | | {r.error} | |")
            continue
        walls = " / ".join(
            str(r.walls.get(k, "–"))
            for k in ("full index", "unchanged refresh", "release refresh", "fresh re-index", "touch refresh")
        )
        codes = ", ".join(f"{v}" for v in r.exit_codes.values())
        equivalent = {True: "holds", False: "**BROKEN**", None: "–"}[r.equivalent]
        lines.append(
            f"| {r.corpus} | {r.generator} | {r.embedder} | {r.reachable} | {r.stored} | {100 * r.coverage:.1f}% "
            f"| {r.without_chunks} | {equivalent} | "
            + ", ".join(f"{k}: {v}" for k, v in r.unchanged_statuses.items())
            + f" | {codes} | {walls} | {_mib(r, 'full index', 'unchanged refresh')} |"
        )
    if not notes:
        return "\n".join(lines) + "\n"
    lines.append("")
    for r in rows:
        notes_ = []
        if r.missing:
            notes_.append(f"reachable but not stored ({len(r.missing)}): {', '.join(r.missing[:8])}")
        if r.extra:
            notes_.append(f"stored but not reached by the walk ({len(r.extra)}): {', '.join(r.extra[:8])}")
        if any(r.skipped.values()):
            notes_.append(
                "full index skipped/failed: " + ", ".join(f"{k} {v}" for k, v in sorted(r.skipped.items()) if v)
            )
        if r.walk_other:
            notes_.append("walk, not HTML: " + ", ".join(f"{k} {v}" for k, v in sorted(r.walk_other.items())))
        if r.release:
            notes_.append(f"release: {r.release}")
        if r.searchable is not None:
            notes_.append(
                f"full index: every page searchable by text after {r.searchable:.0f} s, every vector of its "
                f"{r.chunks:,} chunks in place after {r.vectors_complete or 0:.0f} s ({r.embedder})"
            )
        notes_ += r.differences
        if r.error:
            notes_.append(f"error: {r.error}")
        if notes_:
            lines.append(f"- **{r.corpus}**: " + "; ".join(notes_))
    for r in rows:
        if r.scale:
            lines += ["", render_scale(r)]
    return "\n".join(lines) + "\n"


def render_scale(r: Row) -> str:
    commits = sorted({s["commit"] for s in r.scale if s.get("commit")}) or [r.commit]
    lines = [
        f"Scale on {r.corpus} ({r.embedder} embedder, commit {', '.join(commits)}): unchanged refresh against a "
        "plain Scrapy spider revalidating the same stored pages (bench/bare_spider.py, all 304), whole processes, "
        "alternated; medians. Page state: bench/scale.py (stored pages, ledger, queued requests; the last row is "
        "the tree replicated to 100,000 pages).",
        "",
        "| size | pages | index s | index peak RSS MiB | unchanged refresh s | plain all-304 s | refresh / plain "
        "| refresh peak RSS MiB | plain peak RSS MiB | refresh page state MiB (KiB/page) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in r.scale:
        state = s.get("page_state", {})
        lines.append(
            f"| {s['size']} | {s['pages']} | {s['index_wall_s']} | {s['index_rss_mib']} | {s['refresh_median_s']} "
            f"| {s['plain_median_s']} | {s['ratio']} | {s['refresh_rss_mib']} | {s['plain_rss_mib']} "
            f"| {state.get('held_mib', '–')} ({state.get('kib_per_page', '–')}) |"
        )
        projected = s.get("projected")
        if projected and "pages" in projected:
            lines.append(
                f"| projected: the tree replicated | {projected['pages']} | | | | | | | "
                f"| {projected['held_mib']} ({projected['kib_per_page']}); peak "
                f"{projected['peak_above_base_mib']} |"
            )
    return "\n".join(lines)


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    # the tables this script writes (--write) do not make the code under test dirty
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!BENCHMARKS.md", ":!docs/development"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return out.stdout.strip() + ("+" if dirty else "")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", help=f"names to run (default all: {', '.join(c.name for c in CORPORA)})")
    parser.add_argument("--workdir", default=str(ROOT / ".build/matrix"))
    parser.add_argument("--port", type=int, default=0, help="first port, one per corpus (default: free ports)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--model-limit", type=int, default=1100, help="above this many pages: hashing embedder")
    parser.add_argument("--no-install", action="store_true", help="skip corpora whose package is not installed")
    parser.add_argument("--report", default=str(ROOT / ".build/matrix/MATRIX.md"))
    parser.add_argument(
        "--gone-statuses",
        default="403,404,410",
        help="DOCSBOT_GONE_STATUSES for the runs (default: the settings reference's advice for static file servers)",
    )
    parser.add_argument("--touch-limit", type=int, default=0, help="touch refresh only up to this many pages (0: all)")
    parser.add_argument("--phase-timeout", type=float, default=0, help="stop a docsbot phase after this many seconds")
    parser.add_argument("--merge", action="store_true", help="keep the report's other corpora (rows run now replace)")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md and the docs")
    parser.add_argument("--render-only", action="store_true", help="render the report's JSON again, run nothing")
    parser.add_argument("--scale", nargs="*", default=[], metavar="CORPUS", help="also measure scale on these")
    parser.add_argument("--scale-slice", type=int, default=500, help="--scale: the small size, in pages (0: none)")
    parser.add_argument("--repeat", type=int, default=3, help="--scale: refresh / plain all-304 alternations")
    parser.add_argument("--project", type=int, default=100_000, help="--scale: pages to project the page state to")
    args = parser.parse_args()
    chosen = [c for c in CORPORA if not args.corpora or c.name in args.corpora]
    unknown = set(args.corpora) - {c.name for c in CORPORA}
    if unknown:
        parser.error(f"unknown corpora: {', '.join(sorted(unknown))}")
    report = Path(args.report)
    report.parent.mkdir(parents=True, exist_ok=True)
    kept: dict[str, Row] = {}
    if (args.merge or args.render_only) and report.with_suffix(".json").exists():
        for data in json.loads(report.with_suffix(".json").read_text()):
            data.pop("coverage", None)
            kept[data["corpus"]] = Row(**data)
    if args.render_only:
        ordered = [kept[c.name] for c in CORPORA if c.name in kept]
        report.write_text("# docsbot corpus matrix\n\n" + render(ordered))
        if args.write:
            write_section(ROOT / "BENCHMARKS.md", "matrix", render(ordered))
            write_section(ROOT / "docs" / "development" / "testing.md", "matrix", render(ordered, notes=False))
        print(render(ordered))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # `timeout`: tear the servers down, keep the report
    rows: list[Row] = []
    for i, corpus in enumerate(chosen):
        row = run_corpus(corpus, args, args.port + i if args.port else free_port())
        row.commit, row.date, row.gone_statuses = commit(), datetime.date.today().isoformat(), args.gone_statuses
        if not row.scale and corpus.name in kept:  # a run without --scale keeps the scale rows measured before
            row.scale = kept[corpus.name].scale
        rows.append(row)
        kept[corpus.name] = row
        ordered = [kept[c.name] for c in CORPORA if c.name in kept]
        text = render(ordered)
        report.write_text("# docsbot corpus matrix\n\n" + text)
        report.with_suffix(".json").write_text(
            json.dumps([asdict(r) | {"coverage": r.coverage} for r in ordered], indent=1)
        )
        print(text, flush=True)
        if args.write:
            write_section(ROOT / "BENCHMARKS.md", "matrix", text)
            write_section(ROOT / "docs" / "development" / "testing.md", "matrix", render(ordered, notes=False))
    ok = all(not r.error and r.coverage >= 0.99 and r.equivalent for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
