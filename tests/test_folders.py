"""Folders and archives as documentation: the pure rules (file: URLs, which files are pages, what answers a folder,
Markdown and text rendered to pages), the file: download handler (validators, 304, 404, the folder's walls),
archives unpacked safely, then real crawls of a folder edited between runs and of archives by path and by URL."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from types import SimpleNamespace
from typing import TYPE_CHECKING

import anyio
import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.settings import Settings

from docsbot import downloadermiddlewares
from docsbot.archives import ArchiveError, ArchiveLimits, unpack, unpack_root
from docsbot.arguments import CrawlArguments, SpiderArgumentError
from docsbot.content.extract import extract_page
from docsbot.content.sources import markdown_page, text_page
from docsbot.core.files import SEED_FILE_META_KEY, FileDownloadHandler, FileTooLarge
from docsbot.extensions.context import RunExtension
from docsbot.folders import answer_for, default_library, file_url, root_argument
from docsbot.urls import Scope, canonical_url, is_download
from tests.conftest import ROOT, docsbot_env
from tests.docsite import DocSite, DocSiteServer
from tests.test_mcp import answer, error, http_session, stdio_session
from tests.test_web import Serve

if TYPE_CHECKING:
    from pathlib import Path

# --- pure ---------------------------------------------------------------------------------------------------------


def test_file_urls_are_canonical_and_a_folder_is_a_scope_of_its_own():
    assert canonical_url("file:///srv/my docs/a.md#x") == "file:///srv/my%20docs/a.md"
    assert canonical_url("file://localhost/srv/docs/") == "file:///srv/docs/"
    assert canonical_url("../guide/x.md#install", "file:///srv/docs/api/a.md") == "file:///srv/docs/guide/x.md"
    scope = Scope.from_root("file:///srv/docs/")
    assert "file:///srv/docs/guide/x.md" in scope
    assert canonical_url("../../etc/passwd", "file:///srv/docs/a.md") not in scope  # no `..` escape
    assert "file:///srv/docs-old/a.md" not in scope and "http://srv/docs/a.md" not in scope
    assert scope.same_site("file:///srv/docs/llms.txt") and not scope.same_site("file:///llms.txt")
    assert "file:///srv/docs/a.md" not in Scope.from_root("http://srv/docs/")
    # in a folder, its HTML, Markdown and text files are pages; a built site's sources and images are files
    assert not any(map(is_download, ["file:///d/a.md", "file:///d/b.markdown", "file:///d/c.txt", "file:///d/e.rst",
                                     "file:///d/f.html", "file:///d/g/", "file:///d/g"]))  # fmt: skip
    assert all(map(is_download, ["file:///d/_sources/a.rst.txt", "file:///d/x.png", "file:///d/s.css"]))
    assert is_download("https://example.org/a.md")  # on a site, Markdown is a download, as before


def test_a_root_argument_names_a_folder_with_its_slash(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    assert root_argument(str(tmp_path / "docs")) == file_url(tmp_path / "docs", directory=True)
    assert root_argument(f"file://{tmp_path}/docs") == file_url(tmp_path / "docs", directory=True)
    assert root_argument(str(tmp_path / "docs" / "a.md")).endswith("/docs/a.md")
    assert root_argument("https://example.org/docs/") == "https://example.org/docs/"
    args = CrawlArguments.parse(url=str(tmp_path / "docs"))
    assert args.url.endswith("/docs/") and args.library == default_library(args.url)
    for bad, said in [("./docs", "absolute path"), (str(tmp_path / "nope"), "no such folder"),
                      ("file://elsewhere/x", "local path")]:  # fmt: skip
        with pytest.raises(SpiderArgumentError, match=said):
            CrawlArguments.parse(url=bad)
    assert default_library("file:///srv/acme/docs/") == "acme"
    assert default_library("https://example.org/dl/acme-docs-1.2.tar.gz") == "acme-docs-1.2"
    assert default_library("https://docs.example.org/en/") == "docs.example.org"


def test_a_folder_or_an_archive_takes_patterns_but_no_wider_scope_and_no_private_docs_arguments(tmp_path):
    (tmp_path / "docs").mkdir()
    folder = str(tmp_path / "docs")
    args = CrawlArguments.parse(url=folder, exclude="*/changelog/*")
    scope = args.resolve().crawl_scope()
    assert f"{args.url}guide.md" in scope and f"{args.url}changelog/1.md" not in scope
    assert "file:///etc/passwd" not in scope and not scope.same_site("file:///etc/passwd")
    refused = [({"scope": "host"}, "scope=host is for a site"), ({"scope": "domain"}, "scope=domain"),
               ({"headers": "X-Token=$TOKEN"}, "not a folder"), ({"http_auth": "$U:$P"}, "not a folder")]  # fmt: skip
    for given, said in refused:
        with pytest.raises(SpiderArgumentError, match=said):
            CrawlArguments.parse(url=folder, **given)
        with pytest.raises(SpiderArgumentError, match=said):
            CrawlArguments.parse(url="https://example.org/dl/acme-html.zip", **given)


def test_a_folder_is_answered_by_its_index_html_then_its_start_file_then_a_listing(tmp_path):
    (tmp_path / "README.md").write_text("# Read me\n")
    assert answer_for(file_url(tmp_path, directory=True)).file == tmp_path / "README.md"
    (tmp_path / "index.md").write_text("# Index\n")
    found = answer_for(file_url(tmp_path, directory=True))
    assert found.file == tmp_path / "index.md" and found.canonical == file_url(tmp_path / "index.md")
    (tmp_path / "index.html").write_text("<h1>Home</h1>")
    found = answer_for(file_url(tmp_path, directory=True))
    assert found.file == tmp_path / "index.html" and found.canonical is None  # the folder's URL is its page
    (tmp_path / "empty").mkdir()
    listing = answer_for(file_url(tmp_path / "empty"))  # without its slash: stored as the folder with one
    assert listing.file is None and listing.canonical == file_url(tmp_path / "empty", directory=True)


MARKDOWN = """# Acme `run()` guide

Intro with a [link](other.md) and [a section](../guide/x.md#install).

| Option | Meaning |
|--------|---------|
| `fast` | goes fast |

## Install

Use pip. ~~Not conda.~~

## Install

Again.
"""


def test_markdown_renders_to_a_page_with_github_anchors_a_table_and_its_links():
    url = "file:///srv/docs/api/guide.md"
    page = extract_page(markdown_page(MARKDOWN, "guide.md"), url, "utf-8")
    assert page.title == "Acme run() guide"
    assert [a.id for a in page.anchors] == ["acme-run-guide", "install", "install-1"]
    assert "file:///srv/docs/api/other.md" in page.links and "file:///srv/docs/guide/x.md" in page.links
    assert "| `fast` | goes fast |" in page.markdown  # a GFM table stays a table
    assert "## Install" in page.markdown
    untitled = extract_page(markdown_page("Just text.\n", "notes.md"), url, "utf-8")
    assert untitled.title == "notes.md"


def test_plain_text_renders_paragraphs_underlined_headings_and_indented_blocks():
    text = "Title\n=====\n\nFirst paragraph\ncontinues.\n\nSection\n-------\n\n    code line\n      indented\n"
    page = extract_page(text_page(text, "notes.txt"), "file:///d/notes.txt", "utf-8")
    assert page.title == "Title"
    assert [a.id for a in page.anchors] == ["title", "section"]
    assert "First paragraph continues." in " ".join(page.markdown.split())
    assert "code line\n  indented" in page.markdown
    assert extract_page(text_page("no heading here", "x.rst"), "file:///d/x.rst", "utf-8").title == "x.rst"


# --- the download handler -------------------------------------------------------------------------------------------


def handler_for(root_url: str, network: str = "any") -> FileDownloadHandler:
    class Run(RunExtension):
        context = SimpleNamespace(scope=Scope.from_root(root_url), crawl=SimpleNamespace(network=network), label="x")

    run = Run()
    crawler = SimpleNamespace(settings=Settings({"DOWNLOAD_MAXSIZE": 1000}), get_extension=lambda cls: run)
    return FileDownloadHandler(crawler)


def fetch(handler: FileDownloadHandler, url: str, **headers: str):
    return handler._answer(Request(url, headers={k.replace("_", "-"): v for k, v in headers.items()}))


def test_the_handler_answers_with_validators_304_404_and_keeps_to_the_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / "secret.md").write_text("# Secret\n")
    (docs / "leak.md").symlink_to(tmp_path / "secret.md")
    (docs / "inside.md").symlink_to(docs / "a.md")
    (docs / "big.html").write_text("x" * 2000)
    handler = handler_for(file_url(docs, directory=True))
    first = fetch(handler, file_url(docs / "a.md"))
    assert first.status == 200 and isinstance(first, HtmlResponse)
    assert first.headers[b"Content-Type"].startswith(b"text/markdown") and b"<h1" in first.body
    etag, last_modified = first.headers[b"ETag"].decode(), first.headers[b"Last-Modified"].decode()
    assert fetch(handler, file_url(docs / "a.md"), If_None_Match=etag).status == 304
    assert fetch(handler, file_url(docs / "a.md"), If_Modified_Since=last_modified).status == 304
    (docs / "a.md").write_text("# A\n\nText, edited.\n")
    assert fetch(handler, file_url(docs / "a.md"), If_None_Match=etag).status == 200
    assert fetch(handler, file_url(docs / "gone.md")).status == 404
    assert fetch(handler, file_url(docs / "leak.md")).status == 403  # a link out of the folder
    assert fetch(handler, file_url(docs / "inside.md")).status == 200  # a link inside it
    assert fetch(handler, file_url(tmp_path / "secret.md")).status == 403
    listing = fetch(handler, file_url(docs, directory=True))
    assert listing.status == 200 and b'href="./a.md"' in listing.body and b"leak.md" not in listing.body
    with pytest.raises(FileTooLarge, match="DOWNLOAD_MAXSIZE"):
        fetch(handler, file_url(docs / "big.html"))
    (docs / "sub").mkdir()
    (docs / "sub" / "index.html").write_text('<html><head><title>Sub</title></head><body><a href="x.html">x</a></body>')
    bare = extract_page(fetch(handler, file_url(docs / "sub")).body, file_url(docs / "sub"), "utf-8")
    assert bare.canonical_url == file_url(docs / "sub" / "index.html")  # one page with sub/, whichever is linked
    assert bare.links == [file_url(docs / "sub" / "x.html")]  # its links stay in it, though asked without a slash
    (docs / "llms.txt").write_text("# Acme\n\n- [A](a.md)\n")
    seed = handler._answer(Request(file_url(docs / "llms.txt"), meta={SEED_FILE_META_KEY: "llms_txt"}))
    assert seed.body == (docs / "llms.txt").read_bytes()  # a file that lists pages is read as it is, not rendered
    assert SEED_FILE_META_KEY == downloadermiddlewares.SEED_FILE_META_KEY
    # a crawl started from the network, or of a site, reads no file
    assert fetch(handler_for(file_url(docs, directory=True), "public"), file_url(docs / "a.md")).status == 403
    assert fetch(handler_for("https://example.org/docs/"), file_url(docs / "a.md")).status == 403


# --- archives -------------------------------------------------------------------------------------------------------


def make_tar(path: Path, files: dict[str, bytes], mtime: int = 1_700_000_000, **links: str) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(body), mtime
            tf.addfile(info, io.BytesIO(body))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return path


def make_zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in files.items():
            zf.writestr(zipfile.ZipInfo(name, (2024, 1, 2, 3, 4, 6)), body, compress_type=zipfile.ZIP_DEFLATED)
    return path


def test_archives_unpack_into_a_folder_keeping_times_and_dropping_a_single_top_folder(tmp_path):
    tree = tmp_path / "tree"
    unpack(make_tar(tmp_path / "d.tar.gz", {"docs-1.2/index.html": b"<h1>Hi</h1>", "docs-1.2/a/b.md": b"# B"}), tree)
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == ["a", "a/b.md", "index.html"]
    assert (tree / "index.html").stat().st_mtime == 1_700_000_000
    unpack(make_zip(tmp_path / "d.zip", {"index.html": b"<h1>Zip</h1>", "guide/x.md": b"# X"}), tree)
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == ["guide", "guide/x.md", "index.html"]
    first = (tree / "guide" / "x.md").stat().st_mtime
    unpack(tmp_path / "d.zip", tree)
    assert (tree / "guide" / "x.md").stat().st_mtime == first  # unpacked again: the same times, so 304s


@pytest.mark.parametrize(
    ("kind", "members", "said"),
    [
        ("zip", {"../evil.md": b"x"}, "outside its folder"),
        ("zip", {"/etc/evil.md": b"x"}, "outside its folder"),
        ("tar", {"../evil.md": b"x"}, "outside its folder"),
        ("tar", {"/abs/evil.md": b"x"}, "outside its folder"),
    ],
)
def test_an_archive_with_a_member_outside_its_folder_is_refused_and_nothing_is_unpacked(tmp_path, kind, members, said):
    archive = (make_zip if kind == "zip" else make_tar)(tmp_path / f"bad.{kind}", {"ok.md": b"# ok", **members})
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "kept.md").write_text("# the last good one")
    with pytest.raises(ArchiveError, match=said):
        unpack(archive, tree)
    assert [p.name for p in tree.iterdir()] == ["kept.md"] and not (tmp_path / "evil.md").exists()


def test_links_out_members_caps_and_zip_bombs_are_refused(tmp_path):
    links = {"out.md": "../../etc/passwd", "abs.md": "/etc/passwd", "in.md": "a.md"}
    unpack(make_tar(tmp_path / "l.tar.gz", {"a.md": b"# a"}, **links), tmp_path / "t")
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["a.md", "in.md"]  # links out are not made
    assert (tmp_path / "t" / "in.md").resolve() == (tmp_path / "t" / "a.md").resolve()
    zip_link = tmp_path / "l.zip"
    with zipfile.ZipFile(zip_link, "w") as zf:
        link = zipfile.ZipInfo("out.md")
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/passwd")
        zf.writestr("a.md", "# a")
    unpack(zip_link, tmp_path / "z")
    assert sorted(p.name for p in (tmp_path / "z").iterdir()) == ["a.md"]  # a zip's links are not made
    bomb = make_zip(tmp_path / "bomb.zip", {"a.md": b"0" * 5_000_000})
    assert bomb.stat().st_size < 20_000
    with pytest.raises(ArchiveError, match="DOCSBOT_ARCHIVE_MAX_BYTES"):
        unpack(bomb, tmp_path / "b", ArchiveLimits(max_bytes=1_000_000))
    many = make_tar(tmp_path / "many.tar.gz", {f"{i}.md": b"#" for i in range(20)})
    with pytest.raises(ArchiveError, match="DOCSBOT_ARCHIVE_MAX_MEMBERS"):
        unpack(many, tmp_path / "m", ArchiveLimits(max_members=10))
    with pytest.raises(ArchiveError, match="neither a zip nor a tar"):
        (tmp_path / "x.zip").write_text("not an archive")
        unpack(tmp_path / "x.zip", tmp_path / "x")


def test_a_local_archive_is_unpacked_again_only_when_it_changed(tmp_path):
    archive = make_tar(tmp_path / "docs.tar.gz", {"index.html": b"<h1>One</h1>"})
    source = file_url(archive)
    first = unpack_root(source, tmp_path / "data", "acme", "1.0")
    assert first.fresh and first.folder_url.endswith("/archives/acme/1.0/tree/")
    assert not unpack_root(source, tmp_path / "data", "acme", "1.0").fresh
    make_tar(archive, {"index.html": b"<h1>Two</h1>"}, mtime=1_800_000_000)
    again = unpack_root(source, tmp_path / "data", "acme", "1.0")
    assert again.fresh and again.folder_url == first.folder_url
    assert b"Two" in (tmp_path / "data/archives/acme/1.0/tree/index.html").read_bytes()


# --- crawls ---------------------------------------------------------------------------------------------------------


def write_folder(root: Path) -> None:
    (root / "guide").mkdir(parents=True)
    (root / "img").mkdir()
    (root / "README.md").write_text(
        "# Acme docs\n\nWelcome to Acme. See the [install guide](guide/install.md), the [API](api.md#functions) "
        "and [the notes](guide/notes.txt).\n\n| Option | Meaning |\n|---|---|\n| `fast` | go fast |\n\n"
        "![logo](img/logo.png) [escape](escape.md) [up](../outside.md)\n"
    )
    (root / "api.md").write_text(
        "# API\n\n## Functions\n\n### `acme.run(x)`\n\nRuns x on the turbine.\n\nBack [home](README.md).\n"
    )
    (root / "guide" / "install.md").write_text("# Install\n\nInstall with pip.\n\n## Configure\n\nSet ACME_HOME.\n")
    (root / "guide" / "notes.txt").write_text("Notes\n=====\n\nPlain text notes about acme.\n")
    (root / "img" / "logo.png").write_bytes(b"\x89PNG")
    (root.parent / "outside.md").write_text("# Outside\n\nNot part of the docs.\n")
    (root / "escape.md").symlink_to(root.parent / "outside.md")


def stored(db) -> dict[str, tuple[str, int]]:
    rows = db.execute("SELECT url, title, depth FROM pages ORDER BY url").fetchall()
    return {url.rsplit("/docs/", 1)[1]: (title, depth) for url, title, depth in rows}


def run_stats(db) -> dict:
    return db.execute("SELECT stats FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()[0]


def test_a_folder_is_indexed_and_a_refresh_logs_what_changed_in_it(crawl, db, database_url, tmp_path):
    docs = tmp_path / "src" / "docs"
    write_folder(docs)
    result = crawl(url=str(docs), library="acme", version="1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert stored(db) == {
        "README.md": ("Acme docs", 0),  # the folder's start file, stored under its own URL
        "api.md": ("API", 1),
        "guide/install.md": ("Install", 1),
        "guide/notes.txt": ("Notes", 1),
    }
    assert "leads out of the folder" in result.stderr  # the symbolic link out is skipped, and the log says why
    root = db.execute("SELECT root_url FROM versions").fetchone()[0]
    assert root == file_url(docs, directory=True)
    markdown, anchors = db.execute("SELECT markdown, anchors FROM pages WHERE url LIKE '%%/api.md'").fetchone()
    assert "### `acme.run(x)`" in markdown  # the Markdown file's headings are the page's sections and anchors
    assert [a[1] for a in anchors] == ["api", "functions", "acmerunx"]

    env = docsbot_env(database_url, tmp_path)
    found = subprocess.run([sys.executable, "-m", "docsbot.cli", "search", "turbine", "--library", "acme", "--json"],
                           cwd=ROOT, env=env, capture_output=True, text=True)  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout.splitlines()[0])["url"] == file_url(docs / "api.md"), found.stdout

    # unchanged: every file answers 304
    result = crawl(library="acme", version="1.0", mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    assert run_stats(db)["responses_by_status"].get("304") == 4

    # edited: one file changed, one touched only, one added, one deleted
    (docs / "api.md").write_text((docs / "api.md").read_text().replace("turbine", "windmill"))
    later = time.time() + 5
    os.utime(docs / "guide" / "install.md", (later, later))
    (docs / "guide" / "faq.md").write_text("# FAQ\n\nAsked often.\n")
    (docs / "guide" / "install.md").write_text(
        (docs / "guide" / "install.md").read_text() + "\nSee the [FAQ](faq.md).\n"
    )
    (docs / "guide" / "notes.txt").unlink()
    result = crawl(library="acme", version="1.0", mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(stored(db)) == {"README.md", "api.md", "guide/install.md", "guide/faq.md"}
    changes = subprocess.run([sys.executable, "-m", "docsbot.cli", "changes", "acme@1.0", "--since", "1h", "--json"],
                             cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    latest = [json.loads(line) for line in changes.splitlines()]
    latest = [c for c in latest if c["run_id"] == max(c["run_id"] for c in latest)]
    assert sorted((c["kind"], c["url"].rsplit("/docs/", 1)[1]) for c in latest) == [
        ("added", "guide/faq.md"),
        ("deleted", "guide/notes.txt"),
        ("modified", "api.md"),
        ("modified", "guide/install.md"),
    ]

    # export and the MCP tools treat it as any library
    out = tmp_path / "export"
    subprocess.run([sys.executable, "-m", "docsbot.cli", "export", "acme@1.0", "--format", "pages", "-o", str(out)],
                   cwd=ROOT, env=env, capture_output=True, text=True, check=True)  # fmt: skip
    exported = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md"))
    assert exported == ["README.md", "api.md", "guide/faq.md", "guide/install.md"]
    assert "windmill" in (out / "api.md").read_text()

    async def mcp() -> None:
        async with stdio_session(env, tmp_path / "mcp.log") as session:
            page = answer(await session.call_tool("get_page", {"url": file_url(docs / "api.md") + "#functions"}))
            assert page["library"] == "acme" and "windmill" in page["markdown"]
            found = answer(await session.call_tool("search_docs", {"query": "windmill", "library": "acme"}))
            assert found["results"][0]["url"] == file_url(docs / "api.md")

    anyio.run(mcp)


def test_an_archive_by_path_and_by_url_is_indexed_and_refreshed_with_304s(crawl, db, database_url, tmp_path):
    files = {
        "acme-1.0/index.html": b"<html><head><title>Acme</title></head><body><main><h1>Acme</h1>"
        b'<p>See <a href="guide.html">the guide</a>.</p></main></body></html>',
        "acme-1.0/guide.html": b"<html><head><title>Guide</title></head><body><main><h1>Guide</h1>"
        b"<p>Spin the flywheel.</p></main></body></html>",
    }
    archive = make_tar(tmp_path / "acme-1.0.tar.gz", files)
    result = crawl(url=str(archive), version="1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = db.execute("SELECT p.url, l.name FROM pages p JOIN versions v ON v.id = p.version_id "
                      "JOIN libraries l ON l.id = v.library_id ORDER BY p.url").fetchall()  # fmt: skip
    folder = file_url(tmp_path / "data" / "archives" / "acme-1.0" / "1.0" / "tree", directory=True)
    assert rows == [(folder, "acme-1.0"), (folder + "guide.html", "acme-1.0")]
    assert db.execute("SELECT root_url FROM versions").fetchone()[0] == file_url(archive)  # what the user gave

    result = crawl(library="acme-1.0", version="1.0", mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    assert run_stats(db)["responses_by_status"] == {"304": 2}
    # the archive rebuilt with one page changed: unpacked again, the unchanged page still 304
    files["acme-1.0/guide.html"] = files["acme-1.0/guide.html"].replace(b"flywheel", b"gearbox")
    make_tar(archive, files, mtime=1_700_000_000)  # the same times: the guide's size tells it apart
    os.utime(archive, (time.time() + 5, time.time() + 5))
    result = crawl(library="acme-1.0", version="1.0", mode="refresh")
    assert result.returncode == 0, result.stderr[-3000:]
    stats = run_stats(db)
    assert stats["responses_by_status"] == {"200": 1, "304": 1} and stats.get("modified") == 1
    env = docsbot_env(database_url, tmp_path)
    out = tmp_path / "export"
    subprocess.run([sys.executable, "-m", "docsbot.cli", "export", "acme-1.0@1.0", "--format", "pages", "-o",
                    str(out)], cwd=ROOT, env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == ["guide.md", "index.md"]

    # by URL: fetched, then fetched again conditionally (a 304 leaves the folder as it is)
    site = DocSite()
    body = make_zip(tmp_path / "web.zip", {"index.html": files["acme-1.0/index.html"],
                                           "guide.html": files["acme-1.0/guide.html"]}).read_bytes()  # fmt: skip
    site.put("/dl/web.zip", body.decode("latin-1"), "application/zip", encoding="latin-1")
    with DocSiteServer(site) as server:
        result = crawl(url=f"{server.url}/dl/web.zip", library="web")
        assert result.returncode == 0, result.stderr[-3000:]
        assert "fetched and unpacked" in result.stderr
        result = crawl(library="web", mode="refresh")
        assert result.returncode == 0, result.stderr[-3000:]
        assert "not modified (304)" in result.stderr
        assert [h.status for h in site.hits_for("/dl/web.zip")] == [200, 304]
        assert run_stats(db)["responses_by_status"] == {"304": 2}


def test_a_crawl_from_the_network_indexes_no_folder(crawl, db, tmp_path):
    docs = tmp_path / "docs"
    write_folder(docs)
    result = crawl(url=str(docs), network="public")
    assert result.returncode == 1 and "indexes no local folder or archive" in result.stderr
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 0


def test_network_callers_may_not_index_a_folder_or_an_archive_over_mcp_or_the_web_server(database_url, db, tmp_path):
    """The MCP server's ``index_library`` (stdio) and the one ``docsbot serve`` mounts at /mcp refuse a folder, a path
    and an archive before the path is even looked at; nothing is written, nothing is started."""
    docs = tmp_path / "docs"
    write_folder(docs)
    archive = make_zip(tmp_path / "docs.zip", {"index.html": b"<h1>x</h1>"})
    roots = [file_url(docs, directory=True), str(docs), str(tmp_path / "nothing-here"), str(archive),
             "https://example.org/dl/docs.tar.gz"]  # fmt: skip
    env = docsbot_env(database_url, tmp_path)

    async def refused(session) -> None:  # noqa: ANN001 - an MCP ClientSession
        for root in roots:
            text = error(await session.call_tool("index_library", {"url": root, "library": "local"}))
            assert "indexed only from the operator's command line" in text, text
            assert "no such" not in text  # whether a path exists is not told

    async def over_stdio() -> None:
        async with stdio_session(env, tmp_path / "mcp.log", "--allow-refresh") as session:
            await refused(session)

    anyio.run(over_stdio)
    server = Serve({**env, "DOCSBOT_MCP_TOKEN": "tok"}, tmp_path / "serve.log", "--allow-writes")
    try:
        url = server.wait_ready()

        async def over_http() -> None:
            async with http_session(f"{url}/mcp", token="tok") as session:
                await refused(session)

        anyio.run(over_http)
    finally:
        server.stop()
    assert db.execute("SELECT to_regclass('versions') IS NULL").fetchone()[0]  # nothing was written
    assert not (tmp_path / "data" / "archives").exists()


def test_docsbot_index_and_refresh_run_the_spider_from_any_folder_with_its_exit_codes(database_url, db, tmp_path):
    """``docsbot index ./docs`` and ``docsbot refresh LIBRARY@VERSION`` from a folder outside the checkout, with no
    SCRAPY_SETTINGS_MODULE: the crawl's log on stderr and its exit codes (0 complete, 1 could not start)."""
    work = tmp_path / "work"
    write_folder(work / "docs")
    env = {k: v for k, v in docsbot_env(database_url, tmp_path).items() if k != "SCRAPY_SETTINGS_MODULE"}

    def docsbot(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "docsbot.cli", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip

    indexed = docsbot("index", "docs", "--version", "1.0", "-a", "max_depth=1")
    assert indexed.returncode == 0, indexed.stderr[-3000:]
    assert "full of work@1.0 from file://" in indexed.stderr  # the library: the folder's parent, docs being generic
    assert db.execute("SELECT settings->>'max_depth' FROM versions").fetchone()[0] == "1"
    assert len(stored(db)) == 4
    refreshed = docsbot("refresh", "work@1.0")
    assert refreshed.returncode == 0, refreshed.stderr[-3000:]
    # every stored file 304; the folder's own URL is read again (its start file, stored under its own URL: the same
    # content, nothing written) and the link out of it is refused again
    assert run_stats(db)["responses_by_status"] == {"304": 4, "200": 1, "403": 1}
    assert run_stats(db).get("modified", 0) == 0
    unknown = docsbot("refresh", "nothing@1.0")
    assert unknown.returncode == 1 and "nothing to refresh" in unknown.stderr
    malformed = docsbot("index", "docs", "-a", "max_depth")
    assert malformed.returncode == 2 and "-a takes NAME=VALUE" in malformed.stderr
