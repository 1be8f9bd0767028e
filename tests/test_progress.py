"""Progress bars on a terminal: when they are drawn (the auto rule), that a crawl under a terminal shows them, and that
one whose stderr is a pipe or a log file shows the log lines it always showed, without a bar."""

from __future__ import annotations

import fcntl
import io
import logging
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading

import pytest

from docsbot.progress import bar, log_past_bars, progress_wanted
from tests.conftest import ROOT, build_site, docsbot_env
from tests.docsite import DocSiteServer
from tests.test_faults import fault_site

BAR_MARKS = ("\r", "page/s", "it/s", "█", "\x1b[")
COUNTS = re.compile(r"\| *(\d+)/(\d+) \[[^,\]]*, *[?\d.]+ ?(page/s|s/page|vector/s|s/vector)")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# --- the auto rule ---


@pytest.mark.parametrize(
    ("mode", "tty", "log_file", "job", "environ", "drawn"),
    [
        ("auto", True, None, None, {}, True),
        ("auto", False, None, None, {}, False),  # a pipe, a file
        ("auto", True, "crawl.log", None, {}, False),  # LOG_FILE
        ("auto", True, None, "5f1c", {}, False),  # Scrapyd's -a _job
        ("auto", True, None, None, {"SCRAPY_JOB": "5f1c"}, False),  # Scrapyd's environment
        ("auto", True, None, None, {"SHUB_JOBKEY": "1/2/3"}, False),  # Scrapy Cloud (JSON log records)
        ("auto", True, None, None, {"SCRAPY_JOB": ""}, True),  # set but empty: no job
        ("on", False, "crawl.log", None, {"SCRAPY_JOB": "x"}, True),
        ("off", True, None, None, {}, False),
        (" ON ", False, None, None, {}, True),
    ],
)
def test_bars_are_drawn_only_where_a_person_watches_a_terminal(mode, tty, log_file, job, environ, drawn):
    stream = _Terminal() if tty else io.StringIO()
    assert progress_wanted(mode, stream, log_file=log_file, job=job, environ=environ) is drawn


def test_an_unknown_mode_is_one_clear_error():
    with pytest.raises(ValueError, match="DOCSBOT_PROGRESS='sometimes' is not valid: one of auto, on, off"):
        progress_wanted("sometimes", _Terminal(), environ={})


def test_the_setting_is_declared_and_checked():
    from docsbot.config import DocsbotSettings, check_overrides

    assert DocsbotSettings.model_fields["DOCSBOT_PROGRESS"].default == "auto"
    assert check_overrides({"DOCSBOT_PROGRESS": "on"}.get, ["DOCSBOT_PROGRESS"]) == []
    problems = check_overrides({"DOCSBOT_PROGRESS": "loud"}.get, ["DOCSBOT_PROGRESS"])
    assert len(problems) == 1 and problems[0].startswith("DOCSBOT_PROGRESS='loud' is not valid")


def test_log_lines_go_past_the_bars_with_their_level_and_format_kept(monkeypatch):
    screen = _Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    root = logging.getLogger("docsbot-test-progress")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with log_past_bars(root):
            drawn = bar("testdocs@1.0 pages", "page", total=10, stream=screen)
            drawn.update(3)
            root.debug("not shown: below the handler's level")
            root.info("stored https://example.org/a.html")
            drawn.close()
        assert handler.stream is screen  # given back
    finally:
        root.removeHandler(handler)
    text = screen.getvalue()
    assert "[INFO] stored https://example.org/a.html\n" in text
    assert "not shown" not in text
    assert "testdocs@1.0 pages" in text and "3/10" in text


# --- a real crawl ---


def _crawl_command() -> list[str]:
    return [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "library=testdocs", "-a", "version=1.0"]


def _under_a_terminal(cmd: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``cmd`` with its stdout and stderr on a pseudo-terminal 150 columns wide; what it drew, and its exit code."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 150, 0, 0))
    process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code = process.wait(timeout=600)
    reader.join(timeout=30)
    os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_a_crawl_on_a_terminal_draws_pages_and_vectors_with_rates(docsite, database_url, tmp_path, db):
    env = docsbot_env(database_url, tmp_path)
    code, screen = _under_a_terminal([*_crawl_command(), "-a", f"url={docsite.url}/docs/index.html"], env)
    assert code == 0, screen[-3000:]
    assert "\r" in screen  # redrawn in place
    lines = screen.replace("\r", "\n").splitlines()
    pages = [m.groups() for line in lines if (m := COUNTS.search(line)) and line.startswith("testdocs@1.0 pages")]
    # the 5 pages in scope, all known and all done by the end; the rate in pages per second
    assert pages[-1][:2] == ("5", "5") and "page" in pages[-1][2], pages
    vectors = [m.groups() for line in lines if (m := COUNTS.search(line)) and line.startswith("testdocs@1.0 vectors")]
    chunks = db.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert vectors[-1][:2] == (str(chunks), str(chunks)), vectors
    # the log lines still reach the terminal, whole, between the bars' redraws
    assert "Spider closed (finished)" in screen
    assert "every page stored and searchable by text" in screen


@pytest.mark.parametrize("where", ["pipe", "log_file"])
def test_a_crawl_to_a_pipe_or_a_log_file_logs_as_before_without_a_bar(crawl, docsite, db, tmp_path, where):
    settings = {"LOG_FILE": str(tmp_path / "crawl.log")} if where == "log_file" else {}
    result = crawl(library="testdocs", version="1.0", url=f"{docsite.url}/docs/index.html", settings=settings)
    assert result.returncode == 0, result.stderr[-3000:]
    output = (tmp_path / "crawl.log").read_text() if where == "log_file" else result.stderr
    assert "Spider closed (finished)" in output
    assert "every page stored and searchable by text" in output
    assert "CrawlProgress" not in output.split("Enabled extensions:")[1].split("]")[0]
    for mark in BAR_MARKS:
        assert mark not in output, mark
    assert "testdocs@1.0 pages" not in output


def test_docsbot_embed_draws_its_vectors_on_a_terminal_and_none_to_a_pipe(docsite, database_url, tmp_path, db):
    env = docsbot_env(database_url, tmp_path, DOCSBOT_CRAWL_EMBED_WORKERS="0")  # the run leaves its vectors
    # two versions of different texts (a vector is written to every chunk of its text, whatever the version)
    with DocSiteServer(fault_site(3)) as other:
        for version, root in (("1.0", docsite.url), ("2.0", other.url)):
            url = f"{root}/docs/index.html"
            result = subprocess.run(
                [*_crawl_command()[:-4], "-a", "library=testdocs", "-a", f"version={version}", "-a", f"url={url}"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert result.returncode == 4, result.stderr[-3000:]  # stored, vectors pending
    waiting = (
        "SELECT count(*) FROM documents d JOIN pages p ON p.id = d.page_id JOIN versions v ON v.id = p.version_id "
    )
    waiting += "WHERE d.embedding IS NULL AND v.name = %s"
    chunks = db.execute(waiting, ("1.0",)).fetchone()[0]
    assert chunks > 0

    embed = [sys.executable, "-m", "docsbot.cli", "embed", "--library", "testdocs"]
    code, screen = _under_a_terminal([*embed, "--version", "1.0"], env)
    assert code == 0, screen[-3000:]
    lines = screen.replace("\r", "\n").splitlines()
    drawn = [m.groups() for line in lines if (m := COUNTS.search(line)) and line.startswith("testdocs@1.0 vectors")]
    assert drawn and drawn[-1][:2] == (str(chunks), str(chunks)), screen[-3000:]
    assert f"{chunks} chunks given a vector" in screen  # the summary line, after the bar

    piped = subprocess.run([*embed, "--version", "2.0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr[-3000:]
    assert "chunks of testdocs@2.0 wait for a vector" in piped.stderr and "chunks given a vector" in piped.stdout
    for mark in BAR_MARKS:
        assert mark not in piped.stderr + piped.stdout, mark
    assert db.execute(waiting, ("2.0",)).fetchone()[0] == 0


def test_docsbot_sync_draws_libraries_done_and_the_running_ones_pages_on_a_terminal(database_url, tmp_path, db):
    env = docsbot_env(database_url, tmp_path)
    with DocSiteServer(build_site()) as one, DocSiteServer(build_site()) as two:
        libraries = tmp_path / "libraries.toml"
        libraries.write_text(
            f'[[library]]\nname = "one"\nversion = "1.0"\nurl = "{one.url}/docs/index.html"\nrefresh = "1d"\n'
            f'[[library]]\nname = "two"\nurl = "{two.url}/docs/index.html"\nrefresh = "1d"\n'
        )
        sync = [sys.executable, "-m", "docsbot.cli", "sync", str(libraries), "--jobs", "1"]
        code, screen = _under_a_terminal(sync, env)
        assert code == 0, screen[-3000:]
        lines = screen.replace("\r", "\n").splitlines()
        done = [m.group(1, 2) for line in lines if (m := re.search(r"^libraries: .*\| *(\d+)/(\d+) \[", line))]
        assert done[-1] == ("2", "2"), screen[-3000:]
        assert any(re.search(r"^pages of one@1.0: +[1-5]page", line) for line in lines), screen[-3000:]
        assert "2 entries: 2 indexed" in screen  # the table, after the bars

        again = subprocess.run(sync, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0 and "2 entries:" in again.stdout
        for mark in BAR_MARKS:
            assert mark not in again.stdout + again.stderr, mark
