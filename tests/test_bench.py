"""A smoke run of the benchmark code on a tiny site, so `make bench` does not rot (the real run is not a test)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

from tests.conftest import ROOT
from tests.docsite import html_page


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiny_site(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    names = [f"page{i}.html" for i in range(8)]
    (site / "index.html").write_text(html_page("Home", "<p>The home page of a tiny site.</p>", names))
    for i, name in enumerate(names):
        body = "".join(
            f"<h2>Part {j}</h2><p>Page {i} explains part {j} of the tiny library in detail.</p>" for j in range(3)
        )
        (site / name).write_text(html_page(f"Page {i}", body, ["index.html"]))
    return site


def test_searchable_bench_smoke_run(tmp_path):
    """bench/searchable.py: full indexes (text only) alternated with the plain crawl, and their ratio."""
    site = tiny_site(tmp_path)
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench/searchable.py"),
            "--site",
            str(site),
            "--server",
            "python",
            "--port",
            str(free_port()),
            "--repeat",
            "2",
            "--workdir",
            str(tmp_path / "w"),
            "--embedder",
            "tests.embedders.HashingEmbedder",
        ],  # fmt: skip
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.count("pages stored, 0 failed") == 2
    assert "searchable after" in result.stdout and "9 pages stored" in result.stdout
    assert "plain Scrapy crawl #2" in result.stdout
    assert "(target <= 4.0)" in result.stdout.splitlines()[-1]


def test_bench_smoke_run(tmp_path):
    site = tiny_site(tmp_path)
    report = tmp_path / "BENCHMARKS.md"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench/run.py"),
            "--site",
            str(site),
            "--server",
            "python",
            "--port",
            str(free_port()),
            "--repeat",
            "1",
            "--embed-sample",
            "8",
            "--searchable-rounds",
            "2",
            "--workdir",
            str(tmp_path / "w"),
            "--embedder",
            "tests.embedders.HashingEmbedder",
            "--report",
            str(report),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    text = report.read_text()
    assert "Refresh ≡ re-index: **holds**" in text
    for phase in (
        "full index",
        "plain Scrapy crawl",
        "unchanged refresh #1",
        "plain Scrapy all-304 #1",
        "mutation refresh",
        "fresh index of the release",
        "touch refresh",
        "plain Scrapy crawl #2",
        "unchanged refresh, default, cold",
        "unchanged refresh, default #1",
        "plain Scrapy all-304, default #1",
        "docsbot search, default #1",
        "next version index",
    ):
        assert f"| {phase} |" in text
    assert "| touch: chunks embedded + chunk rows written | 0.000 | == 0 | yes |" in text
    assert "304: 9" in text  # the plain all-304 crawl: index + 8 pages
    assert "| touch refresh / plain Scrapy full crawl (adjacent) |" in text
    # time to searchable: the target held by the medians of the alternated rounds, the first index's pair shown
    assert re.search(
        r"\| time to searchable \(text only, medians of 2 alternated rounds\) / plain Scrapy full crawl \| "
        r"\d+\.\d+ \| <= 4 \| (yes|\*\*no\*\*) \|",
        text,
    ), text
    assert re.search(
        r"\| time to searchable \(the full index above, every page stored\) / [^|]+\| \d+\.\d+ \| - \| - \|", text
    )
    for phase in ("time to searchable, full index #2", "time to searchable, plain Scrapy crawl #2"):
        assert f"| {phase} |" in text
    assert re.search(r"Time to searchable, text only, .*: [\d.]+, [\d.]+ s against [\d.]+, [\d.]+ s; medians", text)
    assert "| next version: texts embedded / texts new to the database |" in text
    assert "every page stored and searchable by text after" in text
    assert "| unchanged refresh, embedded default / plain Scrapy all-304 (medians) |" in text
    assert re.search(r"\| search page over HTTP, warm, server p50 \(ms\) \| \d+\.\d+ \| <= 50 \|", text), text
    # the change log of the release's refresh is exact: its pages, and the section of each edit
    assert "| change log: the release's pages logged, none extra | 1.000 | == 1 | yes |" in text, text
    assert "| change log: modified pages whose edited section is named exactly | 1.000 | == 1 | yes |" in text, text
    assert re.search(r"\| MCP diff_versions, warm, p50 \(ms\) \| \d+\.\d+ \|", text), text
    # The default path left no server running (the bench stops the one its phases kept alive).
    assert not (tmp_path / "w/pg/postmaster.pid").exists()


def test_measured_tables_replace_only_what_stands_between_their_markers(tmp_path):
    from bench.report import write_section

    doc = tmp_path / "BENCHMARKS.md"
    other = "<!-- matrix -->\nrows\n<!-- /matrix -->\nend\n"
    doc.write_text(f"intro\n<!-- eval -->\nold table\n<!-- /eval -->\n{other}")
    assert write_section(doc, "eval", "| new |\n")
    assert doc.read_text() == f"intro\n<!-- eval -->\n| new |\n<!-- /eval -->\n{other}"
    before = doc.read_text()
    assert not write_section(doc, "scale", "x")  # no such markers: nothing written
    assert doc.read_text() == before
