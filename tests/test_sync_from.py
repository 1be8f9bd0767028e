"""From a project's dependency files to indexed docs, as a user runs it: `docsbot add` in each ecosystem's own forms,
`docsbot sync --from FILE --dry-run` (the plan, nothing written), and the real run's table that adds up, with its exit
code, against a local registry (PyPI's, npm's and crates.io's answers, shaped as theirs), a local documentation host
that indexes and a dead one that fails. The live registries are never asked."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import pytest

from tests.conftest import docsbot_env
from tests.docsite import DocSite, DocSiteServer, html_page

if TYPE_CHECKING:
    from pathlib import Path

DEAD = "http://127.0.0.1:9"  # nothing listens on the discard port: every request is refused


def docs_site(trees: list[str]) -> DocSite:
    """Read the Docs' layout: /en/latest/ and one tree per version, each an index and a guide."""
    site = DocSite()
    for tree in ["latest", *trees]:
        site.put(
            f"/en/{tree}/index.html",
            html_page(f"Demo {tree}", f"<p>Demo {tree} frobnicates widgets.</p>", ["guide.html"]),
        )
        site.put(f"/en/{tree}/guide.html", html_page("Guide", "<h2>Install</h2><p>Install demo with pip.</p>"))
    return site


class _Registry(BaseHTTPRequestHandler):
    answers: dict[str, object] = {}
    seen: list[str] = []

    def do_GET(self):  # noqa: N802
        self.seen.append(self.path)
        answer = self.answers.get(self.path)
        body = json.dumps(answer).encode() if answer is not None else b'{"message": "Not Found"}'
        self.send_response(200 if answer is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def pypi(name: str, docs: str, releases: list[str]) -> dict:
    """PyPI's JSON API answer (https://docs.pypi.org/api/json/), cut to what docsbot reads."""
    return {
        "info": {"name": name, "version": releases[-1], "home_page": None, "docs_url": None,
                 "project_urls": {"Documentation": docs, "Source": f"https://github.com/example/{name}"}},
        "releases": {release: [] for release in releases},
    }  # fmt: skip


def npm(name: str, homepage: str, releases: list[str], latest: str) -> dict:
    """npm's registry document (GET /NAME), cut to what docsbot reads."""
    return {
        "name": name,
        "dist-tags": {"latest": latest, "next": releases[-1]},
        "versions": {v: {"name": name, "version": v, "homepage": homepage} for v in releases},
        "homepage": homepage,
    }


@pytest.fixture
def world(tmp_path):
    """A registry of PyPI, npm and crates.io packages and the docs host they name."""
    site = DocSiteServer(docs_site(["2.0", "4.1", "1.1"]))
    registry = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    url = f"http://127.0.0.1:{registry.server_address[1]}"
    docs = f"{site.url}/en/latest/"
    _Registry.seen = []
    _Registry.answers = {
        "/pypi/demo/json": pypi("demo", docs, ["1.0", "2.0", "2.1"]),
        "/pypi/dead/json": pypi("dead", f"{DEAD}/en/latest/", ["0.9", "1.0"]),
        "/npm/widget": npm("widget", docs, ["3.0.0", "4.1.0", "4.2.0", "5.0.0-beta.1"], "4.2.0"),
        "/crates/gizmo": {
            "crate": {"name": "gizmo", "documentation": docs, "max_stable_version": "2.0.0"},
            "versions": [{"num": v, "yanked": v == "1.2.0"} for v in ("2.0.0", "1.2.0", "1.1.0", "1.0.0")],
        },
    }
    thread = threading.Thread(target=registry.serve_forever, daemon=True)
    thread.start()
    with site:
        yield {"registry": url, "site": site, "docs": site.url}
    registry.shutdown()
    registry.server_close()


def docsbot(world, tmp_path: Path, *args: str, database_url: str = "postgresql://nobody@127.0.0.1:9/none"):
    """`docsbot ARGS` in ``tmp_path``, the registries local (the docs host stands for a public one). Without a
    ``database_url`` the database is one that does not exist: a command that touches it fails."""
    env = docsbot_env(
        database_url, tmp_path,
        DOCSBOT_PYPI_URL=f"{world['registry']}/pypi", DOCSBOT_NPM_URL=f"{world['registry']}/npm",
        DOCSBOT_CRATES_URL=f"{world['registry']}/crates", DOCSBOT_ALLOWED_NETWORKS="127.0.0.1",
    )  # fmt: skip
    return subprocess.run([sys.executable, "-m", "docsbot.cli", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


REQUIREMENTS = """\
demo==2.0
dead>=0.9
no-such-package
pywin32>=306; sys_platform == "win32"
-e ./local
"""


def row(output: str, entry: str) -> tuple[str, str]:
    """The result and detail of ``entry``'s row in a sync's table (``dead@``: dead at any version)."""
    name = re.escape(entry) + (r"\S*" if entry.endswith("@") else "")
    results = "indexed|refreshed|scheduled|not due|failed|skipped"
    found = re.search(rf"^{name}\s+({results})\s+(.*)$", output, re.MULTILINE)
    assert found, f"no row for {entry} in:\n{output}"
    return found.group(1), found.group(2)


def test_the_dry_run_prints_the_plan_and_writes_nothing(world, tmp_path):
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS)
    done = docsbot(world, tmp_path, "sync", "--from", "requirements.txt", "--dry-run", "--platform", "linux",
                   "--python", "3.12")  # fmt: skip
    out = done.stdout
    assert done.returncode == 3, out + done.stderr  # one dependency without docs
    assert "requirements.txt (for Python 3.12 on linux; no lock file):" in out
    docs = world["docs"]
    assert f"  add       demo ==2.0 -> demo@2.0 {docs}/en/2.0/ (version 2.0: pinned; " in out
    assert f"{docs}/en/2.0/: the tree of 2.0, confirmed by its host)" in out
    assert "  add       dead >=0.9 -> dead@" in out and "version 1.0: the newest release inside >=0.9 (PEP 440)" in out
    assert "  no docs   no-such-package: no-such-package: no such package on pypi" in out
    assert "  skipped   pywin32>=306; sys_platform == \"win32\": its marker 'sys_platform == \"win32\"' is false for " \
           "Python 3.12 on linux (requirements.txt:4)" in out  # fmt: skip
    assert (
        "  skipped   -e ./local: an editable install (-e): built from a path or a checkout (requirements.txt:5)" in out
    )
    assert "plan for libraries.toml: 2 to add, 0 declared already, 1 without docs found, 2 skipped" in out
    assert "--dry-run: nothing written, nothing run" in out
    assert not (tmp_path / "libraries.toml").exists() and "Traceback" not in done.stderr
    # nothing crawled: the docs host saw the probes (a path that cannot exist, for a soft 404; the root the metadata
    # names; the version's tree), and no page beyond them
    probes = {h.path for h in world["site"].site.hits}
    assert {"/en/latest/index.html", "/en/2.0/index.html"} <= probes and len(probes) == 3, probes
    assert [p for p in probes if "no-such-page" in p], probes
    windows = docsbot(world, tmp_path, "sync", "--from", "requirements.txt", "--dry-run", "--platform", "windows")
    assert "  no docs   pywin32 >=306: pywin32: no such package on pypi" in windows.stdout  # its marker holds there


def test_the_run_ends_with_a_table_that_adds_up_and_an_exit_code_that_says_what_failed(
    world, tmp_path, database_url, db
):
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS)
    first = docsbot(world, tmp_path, "sync", "--from", "requirements.txt", "--platform", "linux",
                    database_url=database_url)  # fmt: skip
    out = first.stdout
    assert first.returncode == 3, out + first.stderr[-3000:]
    assert row(out, "demo@2.0")[0] == "indexed" and row(out, "demo@2.0")[1].startswith("2 new, 0 modified")
    result, detail = row(out, "dead@")
    assert (
        result == "failed"
        and "(log: " in detail
        and detail.startswith(f"full index failed: the root URL {DEAD}/en/1.0/ failed (Connection was refused")
    )  # the spider's own line from the run's log, not only the outcome's "root_failed"
    assert row(out, "no-such-package") == ("failed", "no docs found: no-such-package: no such package on pypi "
                                           f"({world['registry']}/pypi/no-such-package/json answers 404) "
                                           "(requirements.txt:3)")  # fmt: skip
    assert row(out, "-e ./local")[0] == row(out, 'pywin32>=306; sys_platform == "win32"')[0] == "skipped"
    assert out.rstrip().endswith("5 entries: 1 indexed, 0 refreshed, 0 not due, 2 failed, 2 skipped")
    entries = (tmp_path / "libraries.toml").read_text()
    assert "# version 2.0: pinned" in entries and 'version = "2.0"' in entries
    pages = db.execute("SELECT count(*) FROM pages p JOIN versions v ON v.id = p.version_id WHERE v.name = '2.0'")
    assert pages.fetchone()[0] == 2

    # again at once: demo is not due; dead was never indexed and waits for its retry: failed, not "not due"
    again = docsbot(world, tmp_path, "sync", database_url=database_url)
    assert again.returncode == 3, again.stdout + again.stderr[-3000:]
    assert row(again.stdout, "demo@2.0") == ("not due", "no refresh interval")
    result, detail = row(again.stdout, "dead@")
    assert (
        result == "failed"
        and detail.startswith("never indexed: its last run failed: ")
        and "tried again after" in (detail)
    )
    assert again.stdout.rstrip().endswith("2 entries: 0 indexed, 0 refreshed, 1 not due, 1 failed, 0 skipped")

    # the dead entry gone, the rest is fresh: nothing failed, exit 0
    (tmp_path / "requirements.txt").write_text("demo==2.0\n")
    (tmp_path / "libraries.toml").write_text("\n".join(
        block for block in entries.split("\n\n") if "dead" not in block
    ))  # fmt: skip
    clean = docsbot(world, tmp_path, "sync", "--from", "requirements.txt", database_url=database_url)
    assert clean.returncode == 0, clean.stdout + clean.stderr[-3000:]
    assert "  declared  demo ==2.0 -> demo@2.0: libraries.toml has it" in clean.stdout
    assert clean.stdout.rstrip().endswith("1 entry: 0 indexed, 0 refreshed, 1 not due, 0 failed, 0 skipped")


def test_lock_files_pin_the_versions_and_an_empty_file_says_so(world, tmp_path):
    (tmp_path / "package.json").write_text(json.dumps({"dependencies": {"widget": "^4.0.0"},
                                                       "devDependencies": {"jest": "^29"}}))  # fmt: skip
    (tmp_path / "package-lock.json").write_text(json.dumps({"lockfileVersion": 3, "packages": {
        "": {"dependencies": {"widget": "^4.0.0"}, "devDependencies": {"jest": "^29"}},
        "node_modules/widget": {"version": "4.1.0"}, "node_modules/jest": {"version": "29.7.0", "dev": True},
    }}))  # fmt: skip
    plan = docsbot(world, tmp_path, "sync", "--from", "package.json", "--dry-run")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "exact versions from package-lock.json" in plan.stdout
    assert f"  add       widget ^4.0.0 -> widget@4.1.0 {world['docs']}/en/4.1/ (version 4.1.0: exact, 4.1.0 from " \
           "package-lock.json;" in plan.stdout  # fmt: skip
    assert "  skipped   jest: ^29: a development dependency, not what the project runs on" in plan.stdout
    (tmp_path / "package-lock.json").unlink()  # without its lock: npm's pick inside the range, the latest tag
    unlocked = docsbot(world, tmp_path, "sync", "--from", "package.json", "--dry-run")
    assert "widget ^4.0.0 -> widget@" in unlocked.stdout and "version 4.2.0: npm's pick inside ^4.0.0" in (
        unlocked.stdout
    )
    (tmp_path / "requirements.txt").write_text("# nothing yet\n")
    empty = docsbot(world, tmp_path, "sync", "--from", "requirements.txt")
    assert empty.returncode == 1 and "requirements.txt (for " in empty.stdout and "  no dependencies" in empty.stdout
    assert "no dependency to add; libraries.toml not created" in empty.stderr and "cannot read" not in empty.stderr
    assert not (tmp_path / "libraries.toml").exists()
    bad = docsbot(world, tmp_path, "sync", "--dry-run")
    assert bad.returncode == 2 and "--dry-run, --python and --platform go with --from DEPFILE" in bad.stderr


def test_docsbot_add_takes_the_forms_of_the_files(world, tmp_path):
    def entry(*args: str) -> str:
        done = docsbot(world, tmp_path, "add", *args, "--dry-run")
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert 'version = "2.0"' in entry("demo==2.0") and "# version 2.0: pinned" in entry("demo==2.0")
    assert "# version 2.1: the newest release inside >=2 (PEP 440)" in entry("demo>=2")
    assert "# version 2.0: the newest release inside ^2.0,<2.1 (Poetry's rules)" in entry("demo@^2.0,<2.1")
    assert 'version = "2.0"' in entry('demo==2.0; python_version >= "3"')
    assert "# version 4.2.0: npm's pick inside ^4.1" in entry("widget@^4.1", "--ecosystem", "npm")
    assert "# version 5.0.0-beta.1: npm's 'next' tag" in entry("widget@next", "--ecosystem", "npm")
    assert "# version 4.1.0: pinned" in entry("widget@4.1.0", "--ecosystem", "npm")
    assert "# version 1.1.0: the newest release inside 1.0 (Cargo's rules, a bare version a caret range)" in entry(
        "gizmo@1.0", "--ecosystem", "cargo"
    )  # 1.2.0 is yanked
    elsewhere = docsbot(world, tmp_path, "add", 'demo==2.0; sys_platform == "win32"', "--platform", "linux")
    assert elsewhere.returncode == 1 and "is not for this environment: its marker" in elsewhere.stderr
    bad = docsbot(world, tmp_path, "add", "widget@^^4", "--ecosystem", "npm")
    assert bad.returncode == 2 and "'^^4' is not an npm version range" in bad.stderr
    tag = docsbot(world, tmp_path, "add", "widget@canary", "--ecosystem", "npm")
    assert tag.returncode == 1 and "'canary' is not a dist-tag of this package (its tags: latest, next)" in tag.stderr
    assert not (tmp_path / "libraries.toml").exists()


def test_a_dependency_file_reads_nothing_outside_its_folder_and_says_so_in_one_line(world, tmp_path):
    (tmp_path / "requirements.txt").write_text("-r /etc/passwd\n-r /dev/zero\ndemo==2.0\n")
    done = docsbot(world, tmp_path, "sync", "--from", "requirements.txt", "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    refused = f"outside {tmp_path}, not read (a project's files stay in its folder)"
    assert f"  skipped   -r /etc/passwd: {refused} (requirements.txt:1)" in done.stdout
    assert f"  skipped   -r /dev/zero: {refused} (requirements.txt:2)" in done.stdout
    assert "root:" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert "plan for libraries.toml: 1 to add, 0 declared already, 0 without docs found, 2 skipped" in done.stdout
