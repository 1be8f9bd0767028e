"""What changed: the pure diff of a page and of a symbol's documentation, then the change log a real refresh writes
(added, modified with its sections and diff, deleted, moved; nothing for an unchanged refresh), read back through
`docsbot changes`, the web pages' Atom feed (parsed by feedparser), the MCP tools and `docsbot diff`/`export`."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import anyio
import feedparser
import httpx2
import pytest

from docsbot.content.changes import line_opcodes, page_diff, sections_of, symbol_doc_hashes
from docsbot.service import Invalid, parse_since
from tests.conftest import ROOT, docsbot_env
from tests.docsite import html_page
from tests.test_crawl import index, refresh
from tests.test_mcp import answer, stdio_session
from tests.test_web import Serve

OLD = """# Guide

Intro text.

## Install

Install with pip.

### Extras

Optional extras.

## Configure

Configuration lives in a TOML file.

## Remove me

Going away.
"""


# --- pure ---------------------------------------------------------------------------------------------------------


def test_sections_are_keyed_by_heading_path_and_hold_their_own_text():
    sections = {key: body.strip() for key, _, _, body in sections_of(OLD)}
    assert sections[("Guide",)] == "Intro text."
    assert sections[("Guide", "Install")] == "Install with pip."  # not its subsection's text
    assert sections[("Guide", "Install", "Extras")] == "Optional extras."
    twice = {key for key, *_ in sections_of("## A\n\none\n\n## A\n\ntwo\n")}
    assert twice == {("A",), ("A#2",)}


def test_page_diff_names_exactly_the_sections_whose_text_changed():
    new = OLD.replace("Install with pip.", "Install with pip or uv.").replace("## Remove me\n\nGoing away.\n", "")
    new = new.replace("Configuration lives in a TOML file.", "Configuration   lives in a\nTOML file.")  # rewrapped
    new += "\n## Upgrade\n\nRun the migrations.\n"
    anchors = [(new.index("Install\n"), "install"), (new.index("Upgrade"), "upgrade")]
    diff = page_diff(OLD, new, anchors)
    assert [(s.heading_path, s.anchor, s.change) for s in diff.sections] == [
        (["Guide", "Install"], "install", "modified"),
        (["Guide", "Upgrade"], "upgrade", "added"),
        (["Guide", "Remove me"], None, "removed"),
    ]
    assert "-Install with pip." in diff.diff and "+Install with pip or uv." in diff.diff
    assert not diff.cut
    assert page_diff(OLD, OLD).sections == [] and page_diff(OLD, OLD).diff == ""


def test_a_long_diff_is_cut_at_a_line_and_says_so():
    old = "\n".join(f"line {i}" for i in range(2000))
    new = "\n".join(f"line {i} changed" for i in range(2000))
    diff = page_diff(old, new, max_bytes=1000)
    assert diff.cut and len(diff.diff.encode()) < 1100
    assert diff.diff.endswith("(diff cut at DOCSBOT_CHANGE_DIFF_BYTES)")


def _page(sections: int, word: str) -> tuple[str, list[tuple[int, str]]]:
    """A page of ``sections`` sections, each with its anchor, whose text says ``word``."""
    parts, anchors, offset = [], [], 0
    for i in range(sections):
        part = f"## Section {i}\n\nText {word} of section {i}, with a few more words.\n\n"
        anchors.append((offset, f"s{i}"))
        parts.append(part)
        offset += len(part)
    return "".join(parts), anchors


def test_the_diff_of_a_page_is_linear_in_its_size_with_every_section_changed():
    """A hostile site's refresh (every section changed, 20,000 of them) costs what 20 pages of 1,000 sections cost,
    never the extraction worker's minute: difflib alone was quadratic (8,000 sections took 16 s)."""
    import time

    def cost(sections: int) -> float:
        old, _ = _page(sections, "old")
        new, anchors = _page(sections, "new")
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            diff = page_diff(old, new, anchors)
            best = min(best, time.process_time() - started)
        assert len(diff.sections) == sections and diff.sections[-1].anchor == f"s{sections - 1}" and diff.cut
        return best

    small, large = cost(1_000), cost(20_000)
    assert large < 60 * small, (small, large)  # 20 times the page: linear is 20x, quadratic was 400x


def _applied(old: list[str], diff: str) -> list[str]:
    """``diff`` (a unified diff) applied to ``old``: its hunks' headers must hold, in order."""
    import re

    out, at = [], 0
    for line in diff.splitlines()[2:]:
        if line.startswith("@@"):
            start = int(re.match(r"@@ -(\d+)", line).group(1))
            start = start - 1 if start else 0
            assert start >= at, line
            out += old[at:start]
            at = start
        elif line.startswith((" ", "-")):
            assert old[at] == line[1:], (at, line)
            if line[0] == " ":
                out.append(line[1:])
            at += 1
        else:
            out.append(line[1:])
    return out + old[at:]


@pytest.mark.parametrize("seed", range(40))
def test_the_bounded_diff_is_a_correct_one(seed, monkeypatch):
    """Past the work difflib may do, the diff is made from the page's unique lines and what lies between them: still
    a unified diff that turns the old page into the new one."""
    import random

    rng = random.Random(seed)
    old = [rng.choice(["", "text", "## A", "## B"]) if rng.random() < 0.3 else f"line {i}" for i in range(300)]
    new = list(old)
    for _ in range(rng.randint(1, 60)):
        at = rng.randrange(len(new))
        choice = rng.random()
        if choice < 0.3:
            del new[at]
        elif choice < 0.6:
            new.insert(at, rng.choice(["", "text", f"new {at}"]))
        else:
            new[at] = f"changed {at}"
    from docsbot.content import changes

    for work in (0, 50, 10**9):
        ops = list(line_opcodes(old, new, work))
        assert [op[1] for op in ops] == sorted(op[1] for op in ops) and [op[3] for op in ops] == sorted(
            op[3] for op in ops
        )
        monkeypatch.setattr(changes, "DIFF_WORK", work)
        for max_bytes in (10**9, 400):
            diff = page_diff("\n".join(old), "\n".join(new), max_bytes=max_bytes)
            if not diff.cut:
                assert _applied(old, diff.diff) == new
        short_hunks = "\n".join(changes._unified(old, new, 5))  # hunks ended early, as a cut diff has them
        assert _applied(old, short_hunks) == new


def test_symbol_doc_hashes_cover_the_text_up_to_the_next_anchor():
    markdown = "# mod\n\nf(x)\n: does f.\n\ng(y)\n: does g.\n"
    anchors = [(markdown.index("f(x)"), "mod.f"), (markdown.index("g(y)"), "mod.g")]
    hashes = symbol_doc_hashes(markdown, anchors, [("mod.f", "mod.f"), ("mod.g", "mod.g"), ("mod", "main")])
    changed = symbol_doc_hashes(
        markdown.replace("does g.", "does g well."), anchors, [("mod.f", "mod.f"), ("mod.g", "mod.g"), ("mod", "main")]
    )
    assert hashes["mod.f"] == changed["mod.f"]  # its text did not change
    assert hashes["mod.g"] != changed["mod.g"]
    assert hashes["mod"] != changed["mod"]  # an anchor the page does not mark: the whole page


def test_since_reads_durations_dates_and_times():
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("2026-11-20", now) == datetime(2026, 11, 20, tzinfo=UTC)
    assert parse_since("2026-11-20T08:00:00+01:00", now) == datetime(2026, 11, 20, 7, 0, tzinfo=UTC)
    assert parse_since(None, now) is None and parse_since("", now) is None
    with pytest.raises(Invalid, match="since= takes a duration"):
        parse_since("last tuesday", now)


# --- a real refresh -----------------------------------------------------------------------------------------------


def changes(db, run=None):
    query = "SELECT kind, url, old_url, title, sections, diff, run_id FROM page_changes"
    rows = db.execute(query + (" WHERE run_id = %s" if run else "") + " ORDER BY id", (run,) if run else ()).fetchall()
    keys = ("kind", "url", "old_url", "title", "sections", "diff", "run_id")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def last_run_id(db) -> int:
    return db.execute("SELECT max(id) FROM crawl_runs").fetchone()[0]


def release(site) -> None:
    """Edit the guide's Install section, delete deep.html (unlinked from the guide), add a new page linked from the
    index, move the API reference to a new URL (a 301)."""
    site.put(
        "/docs/guide.html",
        html_page(
            "Guide",
            "<h2 id='install'>Install</h2><p>Install the library with pip or uv.</p>"
            '<div class="highlight-python3"><div class="highlight">'
            "<pre>import testdocs\ntestdocs.run()</pre></div></div>"
            "<h2 id='configure'>Configure</h2><p>Configuration lives in a TOML file.</p>",
            ["index.html", "flaky.html"],
        ),
    )
    site.delete("/docs/deep.html")
    site.put("/docs/new.html", html_page("What's new", "<p>Version 2 adds streaming.</p>"))
    site.put(
        "/docs/index.html",
        html_page(
            "Welcome",
            "<p>Test Docs explain the library.</p><h2>Getting started</h2><p>Read the guide first.</p>",
            ["guide.html", "api.html", "new.html"],
        ),
    )
    site.pages["/docs/reference.html"] = site.pages.pop("/docs/api.html")
    site.redirects["/docs/api.html"] = (301, "/docs/reference.html")


def test_a_refresh_records_what_it_added_modified_deleted_and_moved_and_an_unchanged_one_nothing(
    crawl, docsite, db, database_url, tmp_path
):
    site = docsite.site
    index(crawl, docsite)
    first = last_run_id(db)
    added = changes(db, first)
    assert {c["kind"] for c in added} == {"added"} and len(added) == 5  # a first index adds every page
    refresh(crawl)
    assert changes(db, last_run_id(db)) == []  # all 304: nothing changed, nothing written

    release(site)
    refresh(crawl)
    run = last_run_id(db)
    by_kind: dict[str, list[dict]] = {}
    for change in changes(db, run):
        by_kind.setdefault(change["kind"], []).append(change)
    base = docsite.url
    assert [c["url"] for c in by_kind["added"]] == [f"{base}/docs/new.html"]
    assert [c["url"] for c in by_kind["deleted"]] == [f"{base}/docs/deep.html"]
    assert [(c["url"], c["old_url"]) for c in by_kind["moved"]] == [
        (f"{base}/docs/reference.html", f"{base}/docs/api.html")
    ]
    modified = {c["url"]: c for c in by_kind["modified"]}
    assert set(modified) == {f"{base}/docs/guide.html"}  # the index's new link is in its navigation: not content
    guide = modified[f"{base}/docs/guide.html"]
    assert guide["sections"] == [{"heading_path": ["Guide", "Install"], "anchor": "install", "change": "modified"}]
    assert "+Install the library with pip or uv." in guide["diff"]
    assert by_kind["deleted"][0]["title"] == "Deep dive"
    # the page rows say when their text last changed
    changed_at = dict(db.execute("SELECT url, content_changed_at > (SELECT started_at FROM crawl_runs WHERE id = %s) "
                                 "FROM pages", (run,)).fetchall())  # fmt: skip
    assert changed_at[f"{base}/docs/guide.html"] and not changed_at[f"{base}/docs/flaky.html"]

    # docsbot changes: the same, as a person reads it and as JSON lines
    env = docsbot_env(database_url, tmp_path)
    cli = [sys.executable, "-m", "docsbot.cli", "changes", "testdocs@1.0"]
    text = subprocess.run([*cli, "--run", str(run)], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert "testdocs@1.0: 1 added, 1 deleted, 1 modified, 1 moved" in text.stdout
    assert f"modified: Guide > Install  {base}/docs/guide.html#install" in text.stdout
    lines = subprocess.run([*cli, "--since", "1h", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                           check=True).stdout.splitlines()  # fmt: skip
    assert len(lines) == len(changes(db)) and json.loads(lines[0])["kind"] in {"added", "modified", "deleted", "moved"}
    bad = subprocess.run([*cli, "--since", "soon"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "since= takes a duration" in bad.stderr and "Traceback" not in bad.stderr

    # the Atom feed validates and lists every change of the run
    server = Serve(env, tmp_path / "serve.log")
    try:
        url = server.wait_ready()
        atom = httpx2.get(f"{url}/changes.atom", params={"library": "testdocs", "version": "1.0", "since": "1h"})
        assert atom.status_code == 200 and atom.headers["content-type"].startswith("application/atom+xml")
        feed = feedparser.parse(atom.content)
        assert not feed.bozo, feed.bozo_exception
        assert feed.version == "atom10"
        titles = [e.title for e in feed.entries]
        assert "modified: Guide" in titles and "deleted: Deep dive" in titles and len(titles) == len(changes(db))
        guide_entry = next(e for e in feed.entries if e.title == "modified: Guide")
        assert guide_entry.link == f"{base}/docs/guide.html#install"
        page = httpx2.get(f"{url}/runs/{run}").text
        assert "What it changed" in page and "Install" in page
        assert httpx2.get(f"{url}/changes", params={"library": "nope"}).status_code == 404
    finally:
        server.stop()

    # MCP: get_changes, with and without the diffs
    async def mcp() -> None:
        async with stdio_session(env, tmp_path / "mcp.log") as session:
            listed = answer(await session.call_tool("get_changes", {"library": "testdocs", "since": "1h"}))
            assert listed["counts"] == {"added": 6, "modified": 1, "deleted": 1, "moved": 1}
            assert all(c["diff"] is None for c in listed["changes"])
            diffs = answer(await session.call_tool("get_changes", {"library": "testdocs", "diffs": True}))
            assert any(c["diff"] for c in diffs["changes"] if c["kind"] == "modified")

    anyio.run(mcp)


def test_keeping_no_changes_records_none(crawl, docsite, db):
    index(crawl, docsite)
    release(docsite.site)
    refresh(crawl, env={"DOCSBOT_CHANGES_KEEP": "0"})
    assert {c["run_id"] for c in changes(db)} == {1}  # only the first index's rows (kept: it ran with the default)


# --- two versions -------------------------------------------------------------------------------------------------


def test_diff_versions_and_export(crawl, docsite, db, database_url, tmp_path):
    site = docsite.site
    site.put(
        "/docs/api.html",
        html_page(
            "API reference",
            '<dl class="py function"><dt class="sig" id="testdocs.create_task"><span class="sig-name">create_task'
            "</span></dt><dd><p>Schedule a coroutine.</p></dd></dl>"
            '<dl class="py function"><dt class="sig" id="testdocs.gather"><span class="sig-name">gather</span></dt>'
            "<dd><p>Run awaitables concurrently.</p></dd></dl>"
            '<dl class="py function"><dt class="sig" id="testdocs.sleep"><span class="sig-name">sleep</span></dt>'
            "<dd><p>Wait.</p></dd></dl>",
            ["index.html"],
        ),
    )
    index(crawl, docsite)  # version 1.0
    site.put(
        "/docs/api.html",
        html_page(
            "API reference",
            '<dl class="py function"><dt class="sig" id="testdocs.create_task"><span class="sig-name">create_task'
            "</span></dt><dd><p>Schedule a coroutine.</p></dd></dl>"
            '<dl class="py function"><dt class="sig" id="testdocs.gather"><span class="sig-name">gather</span></dt>'
            "<dd><p>Run awaitables concurrently; return_exceptions collects errors.</p></dd></dl>"
            '<dl class="py function"><dt class="sig" id="testdocs.timeout"><span class="sig-name">timeout</span></dt>'
            "<dd><p>Cancel after a delay.</p></dd></dl>",
            ["index.html"],
        ),
    )
    result = crawl(url=f"{docsite.url}/docs/index.html", library="testdocs", version="2.0")
    assert result.returncode == 0, result.stderr[-2000:]
    env = docsbot_env(database_url, tmp_path)
    out = subprocess.run([sys.executable, "-m", "docsbot.cli", "diff", "testdocs", "1.0", "2.0", "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    diff = json.loads(out)
    api = f"{docsite.url}/docs/api.html"
    assert [s["name"] for s in diff["added"]] == ["testdocs.timeout"]
    assert [s["name"] for s in diff["removed"]] == ["testdocs.sleep"]
    assert [s["name"] for s in diff["changed"]] == ["testdocs.gather"]
    assert diff["changed"][0]["deep_link"] == f"{api}#testdocs.gather"

    async def mcp() -> None:
        async with stdio_session(env, tmp_path / "mcp.log") as session:
            found = answer(await session.call_tool(
                "diff_versions", {"library": "testdocs", "old_version": "1.0", "new_version": "2.0"}
            ))  # fmt: skip
            assert [s["name"] for s in found["changed"]] == ["testdocs.gather"]

    anyio.run(mcp)

    target = tmp_path / "docs.txt"
    done = subprocess.run([sys.executable, "-m", "docsbot.cli", "export", "testdocs@2.0", "-o", str(target)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert "exported 5 pages of testdocs@2.0" in done.stdout
    text = target.read_text()
    assert text.startswith("# testdocs@2.0\n") and f"Source: {api}" in text and "return_exceptions" in text
    pages = tmp_path / "pages"
    subprocess.run([sys.executable, "-m", "docsbot.cli", "export", "testdocs@1.0", "--format", "pages", "-o",
                    str(pages)], cwd=ROOT, env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert sorted(p.name for p in pages.iterdir()) == ["api.md", "deep.md", "flaky.md", "guide.md", "index.md"]
    assert "Wait." in (pages / "api.md").read_text()


PYTHON_DOCS = "/usr/share/doc/python3.11/html"
API_PAGES = ["json", "functools", "itertools", "os.path", "shlex", "textwrap", "heapq", "bisect", "fnmatch", "glob"]


def test_diff_versions_on_real_sphinx_pages_matches_the_release_that_changed_them(crawl, db, database_url, tmp_path):
    """Ten real pages of the Python 3.11 library reference (Debian's python3.11-doc) indexed as 1.0, bench/mutate.py's
    seeded release applied to them (paragraph edits, a deletion, an added page), indexed again as 2.0: the names
    removed are exactly those of the deleted page, and the names whose text changed exactly those whose anchor holds
    an edit (plus, on an edited page, names the page documents as a whole)."""
    import shutil
    from pathlib import Path

    from bench.mutate import release as docs_release
    from docsbot.content.extract import extract_page
    from tests.docsite import DocSite, DocSiteServer

    source = Path(PYTHON_DOCS) / "library"
    if not source.is_dir():
        pytest.skip("python3.11-doc is not installed (apt-get install python3.11-doc)")
    site_dir = tmp_path / "site"
    (site_dir / "library").mkdir(parents=True)
    for name in API_PAGES:
        shutil.copy(source / f"{name}.html", site_dir / "library" / f"{name}.html")
    links = "".join(f'<li><a href="library/{n}.html">{n}</a></li>' for n in API_PAGES)
    (site_dir / "index.html").write_text(
        f'<html><body><div role="main"><h1>Docs</h1><ul>{links}</ul></div></body></html>'
    )

    def serve() -> DocSite:
        site = DocSite()
        for path in site_dir.rglob("*.html"):
            site.put("/" + str(path.relative_to(site_dir)), path.read_bytes().decode("utf-8", "surrogateescape"))
        return site

    before = {}
    with DocSiteServer(serve()) as server:
        result = crawl(url=f"{server.url}/index.html", library="py", version="1.0")
        assert result.returncode == 0, result.stderr[-2000:]
        base = server.url
        for name in API_PAGES:
            path = f"library/{name}.html"
            before[path] = extract_page((site_dir / path).read_bytes(), f"{base}/{path}")
    change = docs_release(site_dir, seed=5, edit=0.5, delete=0.1, add=0.1)
    assert change.edited and change.deleted and all(change.anchors[p] for p in change.edited)
    with DocSiteServer(serve()) as server:
        result = crawl(url=f"{server.url}/index.html", library="py", version="2.0")
        assert result.returncode == 0, result.stderr[-2000:]

    v1 = {
        (row[0], row[1]): row[2]
        for row in db.execute(
            "SELECT regexp_replace(p.url, '^https?://[^/]+/', ''), s.name, s.anchor FROM symbols s "
            "JOIN pages p ON p.id = s.page_id JOIN versions v ON v.id = s.version_id WHERE v.name = '1.0'"
        )
    }
    v2_names = {row[0] for row in db.execute(
        "SELECT s.name FROM symbols s JOIN versions v ON v.id = s.version_id WHERE v.name = '2.0'"
    )}  # fmt: skip
    expected_removed = {name for (path, name) in v1 if path in change.deleted} - v2_names
    expected_changed = set()
    for path in [*change.edited, *change.hosts]:
        anchors = {ident for _, ident in before[path].anchors}
        for (page, name), anchor in v1.items():
            if page == path and name in v2_names and (anchor == change.anchors[path] or anchor not in anchors):
                expected_changed.add(name)
    assert expected_removed and expected_changed

    env = docsbot_env(database_url, tmp_path)
    out = subprocess.run([sys.executable, "-m", "docsbot.cli", "diff", "py", "1.0", "2.0", "--json"], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    diff = json.loads(out)
    assert {s["name"] for s in diff["removed"]} == expected_removed
    assert {s["name"] for s in diff["changed"]} == expected_changed
    assert diff["added"] == [] and diff["not_compared"] == 0
