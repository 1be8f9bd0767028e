"""Deployment the way Scrapy users deploy: a real Scrapyd fed by scrapyd-deploy, and the egg `shub deploy` builds.

The Scrapyd test runs Scrapyd from a bare virtualenv that sees docsbot's dependencies but not docsbot itself (the
repository's editable install is hidden), with its working directory outside the project: a job can only run
what the deployed egg carries, as on a real Scrapyd node.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, _default_models_dir
from tests.test_crawl import chunks, pages

SHUB = ROOT / ".build/shub-venv/bin/shub"  # `make test` installs shub in its own virtualenv (see Makefile)
EGG_MUST_CONTAIN = {
    "spiders/docs.py",
    "docsbot/settings.py",
    "docsbot/store/migrations/0001_initial.sql",
    "docsbot/store/migrations/0004_embedding_reuse_index.sql",
    "docsbot/web/templates/search.html",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bare_python(where: Path) -> Path:
    """A virtualenv whose only packages are this environment's site-packages, read as a plain directory: its
    ``.pth`` files (the editable install of docsbot among them) are not processed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = Path(sysconfig.get_paths(vars={"base": str(where), "platbase": str(where)})["purelib"])
    (site / "docsbot-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return where / "bin/python"


class Scrapyd:
    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (workdir / "scrapyd.conf").write_text(
            "[scrapyd]\n"
            "bind_address = 127.0.0.1\n"
            f"http_port = {self.port}\n"
            f"eggs_dir = {workdir / 'eggs'}\n"
            f"logs_dir = {workdir / 'logs'}\n"
            f"dbs_dir = {workdir / 'dbs'}\n"
            "items_dir =\n"
            "max_proc = 1\n"
            "poll_interval = 0.5\n"
        )
        python = _bare_python(workdir / "venv")
        self.log = open(workdir / "scrapyd.out", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [str(python), "-m", "scrapyd"], cwd=workdir, env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.get("daemonstatus.json")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Scrapyd did not start: {(workdir / 'scrapyd.out').read_text()}") from None
                time.sleep(0.2)

    def get(self, endpoint: str, **params: str) -> dict:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/{endpoint}{query}", timeout=10) as response:
            return json.load(response)

    def schedule(self, **args: str) -> str:
        data = urllib.parse.urlencode({"project": "docsbot", "spider": "docs", **args}).encode()
        with urllib.request.urlopen(f"{self.url}/schedule.json", data=data, timeout=10) as response:
            answer = json.load(response)
        assert answer["status"] == "ok", answer
        return answer["jobid"]

    def wait(self, job: str, timeout: float = 300) -> str:
        """Polls listjobs.json until ``job`` finished; returns its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            finished = {j["id"] for j in self.get("listjobs.json", project="docsbot")["finished"]}
            if job in finished:
                return (self.workdir / "logs/docsbot/docs" / f"{job}.log").read_text()
            time.sleep(0.5)
        raise AssertionError(f"Scrapyd job {job} did not finish in {timeout} s")

    def deploy(self, version: str = "r1") -> str:
        """``scrapyd-deploy remote`` of this checkout (scrapy.cfg's ``[deploy:remote]``, SCRAPYD_URL) as a user
        runs it; returns its output, asserting it succeeded."""
        result = subprocess.run(
            [str(Path(sys.executable).parent / "scrapyd-deploy"), "remote", "--version", version],
            cwd=ROOT,
            env={**os.environ, "SCRAPYD_URL": self.url},
            capture_output=True,
            text=True,
            timeout=300,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        return output

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture
def scrapyd(tmp_path, database_url):
    # What a Scrapyd node's service environment provides: the database and where the model lives. Nothing else
    # from this repository: no PYTHONPATH, no working directory inside the project.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "SCRAPY_", "PYTHON"))}
    env.update(
        DATABASE_URL=database_url,
        DOCSBOT_DATA_DIR=str(tmp_path / "data"),
        DOCSBOT_MODELS_DIR=os.environ.get("DOCSBOT_MODELS_DIR", _default_models_dir()),
    )
    server = Scrapyd(tmp_path, env)
    yield server
    server.close()


@pytest.mark.model
def test_scrapyd_deploy_then_index_and_refresh_jobs(scrapyd, docsite, db):
    assert '"status": "ok"' in scrapyd.deploy()
    assert scrapyd.get("listspiders.json", project="docsbot")["spiders"] == ["docs"]
    [egg] = (scrapyd.workdir / "eggs/docsbot").glob("*.egg")
    assert set(zipfile.ZipFile(egg).namelist()) >= EGG_MUST_CONTAIN

    index_log = scrapyd.wait(
        scrapyd.schedule(url=f"{docsite.url}/docs/index.html", library="testdocs", version="1.0", max_depth="2")
    )
    assert "full of testdocs@1.0" in index_log and "(finished)" in index_log, index_log[-3000:]
    stored = pages(db)
    assert set(stored) == {"/docs/index.html", "/docs/guide.html", "/docs/api.html", "/docs/deep.html",
                           "/docs/flaky.html"}  # fmt: skip
    assert all(stored[p]["etag"] for p in stored)
    before = chunks(db)
    [dim] = db.execute("SELECT DISTINCT vector_dims(embedding) FROM documents").fetchone()
    assert dim == 384  # the real default model, loaded from DOCSBOT_MODELS_DIR by the job

    docsite.site.hits.clear()
    refresh_log = scrapyd.wait(scrapyd.schedule(library="testdocs", version="1.0", mode="refresh"))
    assert "refresh of testdocs@1.0: 5 unchanged, 0 modified, 0 new, 0 deleted, 0 failed" in refresh_log
    assert {h.status for h in docsite.site.hits if h.path.endswith(".html")} == {304}
    assert chunks(db) == before
    runs = db.execute("SELECT mode, stats->>'finish_reason' FROM crawl_runs ORDER BY id").fetchall()
    assert runs == [("full", "finished"), ("refresh", "finished")]


def test_shub_builds_an_egg_with_the_spider_settings_and_migrations(tmp_path):
    """`shub deploy --build-egg` builds the egg exactly as `shub deploy` does before uploading it (no upload:
    there is no network here)."""
    assert SHUB.exists(), "shub is missing: `make test` installs it into .build/shub-venv"
    egg = tmp_path / "docsbot.egg"
    # A project id and an API key are required arguments; neither is used to build the egg.
    result = subprocess.run(
        [str(SHUB), "deploy", "12345", "--build-egg", str(egg)],
        cwd=ROOT,
        env={**os.environ, "SHUB_APIKEY": "0" * 32},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with zipfile.ZipFile(egg) as archive:
        names = set(archive.namelist())
        entry_points = archive.read("EGG-INFO/entry_points.txt").decode()
    assert names >= EGG_MUST_CONTAIN
    assert "[scrapy]\nsettings = docsbot.settings" in entry_points
    assert not any(name.startswith(("tests/", "bench/")) for name in names)
