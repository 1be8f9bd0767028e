"""From a package to its documentation root (docsbot.fleet.registry, `docsbot add`): the metadata rules on recorded
answers, the whole command against a local registry and documentation host, and PyPI and npm themselves."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from docsbot.fleet.registry import RegistryError, no_probes, npm_candidates, pypi_candidates, resolve
from docsbot.fleet.roots import find_root, versioned_roots
from docsbot.project_settings import ProjectSettings
from tests.conftest import BY_DESIGN, ROOT

# Shapes of PyPI's JSON API and npm's registry answers, cut to the fields docsbot reads.
PYPI_REQUESTS = {
    "info": {
        "name": "requests",
        "version": "2.32.3",
        "home_page": "https://requests.readthedocs.io",
        "docs_url": None,
        "project_urls": {
            "Documentation": "https://requests.readthedocs.io",
            "Source": "https://github.com/psf/requests",
        },
    },
    "releases": {"2.31.0": [], "2.32.3": [], "3.0.0rc1": []},
}
NPM_LODASH = {"name": "lodash", "repository": {"type": "git", "url": "git+https://github.com/lodash/lodash.git"}}


def _root(candidates_and_evidence: tuple) -> str:
    return find_root(*candidates_and_evidence).url


def test_documentation_labels_come_before_home_pages():
    assert _root(pypi_candidates(PYPI_REQUESTS)).startswith("https://requests.readthedocs.io/")
    meta = {
        "info": {
            "home_page": "https://x.org",
            "project_urls": {"Homepage": "https://x.org", "Docs ": "https://x.org/docs"},
        }
    }
    assert _root(pypi_candidates(meta)) == "https://x.org/docs/"  # a label's directory, with its slash
    assert _root(npm_candidates(NPM_LODASH)) == "https://github.com/lodash/lodash#readme"
    assert _root(npm_candidates({"homepage": "https://lodash.com/", **NPM_LODASH})) == "https://lodash.com/"


def test_repositories_are_found_in_every_shape_npm_and_pypi_write_them():
    shapes = ["chalk/chalk", "github:chalk/chalk", "git+ssh://git@github.com/chalk/chalk.git",
              "git://github.com/chalk/chalk.git", {"type": "git", "url": "git@github.com:chalk/chalk.git"}]  # fmt: skip
    for shape in shapes:
        assert _root(npm_candidates({"repository": shape})) == "https://github.com/chalk/chalk#readme"
    monorepo = {"type": "git", "url": "git+https://github.com/o/r.git", "directory": "packages/core"}
    assert _root(npm_candidates({"repository": monorepo})) == "https://github.com/o/r/tree/HEAD/packages/core"
    assert _root(npm_candidates({"bugs": {"url": "https://github.com/o/r/issues"}})) == "https://github.com/o/r#readme"
    meta = {"info": {"project_urls": {"Source": "https://github.com/kjd/idna", "Changelog": "https://x.org/c"}}}
    assert find_root(*pypi_candidates(meta)).max_depth == 0 and _root(pypi_candidates(meta)) == (
        "https://github.com/kjd/idna"
    )


@pytest.mark.e2e
def test_a_repository_page_is_indexed_as_its_readme_alone(registry, tmp_path):
    """A package whose metadata names only its repository: the entry takes that page (its README) alone, not the
    repository's code, issue and commit pages."""
    from docsbot.fleet.registry import toml_entry

    _Registry.packages["bare"] = {"info": {"name": "bare", "project_urls": {"Homepage": "https://github.com/o/bare"}}}
    with httpx.Client() as client:
        found = resolve("bare", None, "pypi", client=client, pypi_url=f"{registry}/pypi")
    assert (found.url, found.max_depth) == ("https://github.com/o/bare", 0)
    assert "max_depth = 0" in toml_entry(found) and "README" in toml_entry(found)


def test_an_entry_reads_back_through_tomllib_whatever_text_the_registry_answered():
    """A name outside the BMP, a quote, a backslash, a newline, a control character: the entry `docsbot add` writes
    is TOML that tomllib reads back as it was (JSON's escapes wrote U+1D518 as a surrogate pair, which TOML
    refuses); a note with a newline stays one comment line."""
    import tomllib

    from docsbot.fleet.registry import Resolution, toml_entry

    name = 'pkg-𝔘 "quoted" back\\slash\nnext\x01'
    found = Resolution(name, "pypi", "1.0 𝔘", 'https://x.org/𝔘/"a"\\b/', max_depth=2,
                       notes=["line one\nline two 𝔘", "bell\x07"])  # fmt: skip
    entry = toml_entry(found, "7d")
    assert tomllib.loads(entry) == {"library": [
        {"name": name, "version": "1.0 𝔘", "url": 'https://x.org/𝔘/"a"\\b/', "max_depth": 2,
         "refresh": "7d"},
    ]}  # fmt: skip
    assert entry.startswith("# line one line two 𝔘\n# bell\ufffd\n[[library]]\n")


def test_versioned_layouts_are_read_the_docs_and_version_segments():
    assert versioned_roots("https://requests.readthedocs.io", "2.31.0")[:2] == [
        "https://requests.readthedocs.io/en/2.31.0/", "https://requests.readthedocs.io/en/v2.31.0/"
    ]  # fmt: skip
    assert "https://flask.palletsprojects.com/en/2.3.x/" in versioned_roots(
        "https://flask.palletsprojects.com/en/stable/", "2.3.3"
    )
    assert versioned_roots("https://docs.python.org/3/library/", "3.11")[0] == "https://docs.python.org/3.11/library/"
    assert versioned_roots("https://numpy.org/doc/", "2.1")[0] == "https://numpy.org/doc/2.1/"
    assert versioned_roots("https://socket.io/docs/v4/", "5.1.0")[5:7] == [
        "https://socket.io/docs/5/", "https://socket.io/docs/v5/"
    ]  # fmt: skip
    assert versioned_roots("https://github.com/x/y#readme", "1.0") == []


class _Registry(BaseHTTPRequestHandler):
    """A registry (/pypi/NAME/json) and a documentation host with Read the Docs' layout (/en/latest/, /en/2.0/)."""

    packages: dict[str, dict] = {}
    trees = {"/en/latest/", "/en/2.0/"}
    seen: list[str] = []

    def do_GET(self):  # noqa: N802
        self.seen.append(self.path)
        name = self.path.removeprefix("/pypi/").removesuffix("/json")
        if self.path.startswith("/pypi/") and name in self.packages:
            body, status = json.dumps(self.packages[name]).encode(), 200
        elif self.path in self.trees:
            body = (
                f"<html><head><title>Demo {self.path}</title></head><body><div role='main'><h1>Demo docs</h1>"
                "<p>Demo explains how to frobnicate widgets with its frobnicate function.</p></div></body></html>"
            )
            body, status = body.encode(), 200
        else:
            body, status = b"not found", 404
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def registry():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    _Registry.packages = {
        "demo": {
            "info": {"name": "Demo", "project_urls": {"Documentation": f"{url}/en/latest/"}},
            "releases": {"1.0": [], "2.0": [], "2.1": []},
        }
    }
    _Registry.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url
    server.shutdown()
    server.server_close()


def add(registry: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": "/usr/bin:/bin",
        "DOCSBOT_PYPI_URL": f"{registry}/pypi",
        "PYTHONPATH": str(ROOT),
        "DOCSBOT_ALLOWED_NETWORKS": "127.0.0.1",
    }  # the local documentation host stands for a public one
    return subprocess.run([sys.executable, "-m", "docsbot.cli", "add", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.mark.e2e
def test_docsbot_add_takes_the_pinned_versions_tree_or_says_it_took_the_latest(registry, tmp_path):
    from docsbot.fleet.libraries import load

    assert add(registry, tmp_path, "demo==2.0").returncode == 0
    (entry,) = load(tmp_path / "libraries.toml")
    assert (entry.name, entry.version, entry.url) == ("demo", "2.0", f"{registry}/en/2.0/")
    # 1.0 is released but its docs have no tree: the latest, and the file says so
    done = add(registry, tmp_path, "demo>=1,<2")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "libraries.toml").read_text()
    assert "# no tree of 1.0 found" in text and "the newest docs" in text
    assert [(e.version, e.url) for e in load(tmp_path / "libraries.toml")] == [
        ("2.0", f"{registry}/en/2.0/"), ("latest", f"{registry}/en/latest/")
    ]  # fmt: skip
    before = (tmp_path / "libraries.toml").read_text()
    again = add(registry, tmp_path, "demo>=1,<2")  # the same entry twice: refused, nothing written
    assert again.returncode == 1 and "declares demo@latest already" in again.stderr
    gone = add(registry, tmp_path, "no-such-package")
    assert gone.returncode == 1 and "no such package on pypi" in gone.stderr and "Traceback" not in gone.stderr
    dry = add(registry, tmp_path, "demo", "--dry-run")
    assert dry.returncode == 0 and "[[library]]" in dry.stdout
    assert (tmp_path / "libraries.toml").read_text() == before  # bad input and --dry-run change nothing


@pytest.mark.e2e
def test_the_registries_themselves_name_documentation_roots():
    """PyPI's and npm's metadata of long-lived packages (skipped when this machine cannot reach them)."""
    with httpx.Client(timeout=20, follow_redirects=True) as client:
        try:
            client.get("https://pypi.org/pypi/requests/json").raise_for_status()
        except httpx.HTTPError as exc:
            pytest.skip(
                f"{BY_DESIGN}the live registries are outside the test's control: pypi.org cannot be reached: {exc}"
            )
        never = no_probes  # documentation hosts are not asked: only the registries' answers
        assert "requests.readthedocs.io" in resolve("requests", None, "pypi", client=client, probe=never).url
        assert "flask.palletsprojects.com" in resolve("Flask", "2.3.3", "pypi", client=client, probe=never).url
        assert resolve("express", "^4", "npm", client=client, probe=never).url.startswith("https://expressjs.com")


@pytest.mark.e2e
def test_a_registry_cannot_send_the_crawl_to_this_machines_network(registry):
    """A package whose metadata names a loopback, private or link-local documentation URL (a cloud's metadata
    service, a service on this machine): refused, naming the address, unless DOCSBOT_ALLOWED_NETWORKS allows it."""
    _Registry.packages["sneaky"] = {
        "info": {
            "name": "sneaky",
            "project_urls": {
                "Documentation": "http://169.254.169.254/latest/meta-data/",
                "Homepage": "http://127.0.0.1:9/",
            },
        }  # fmt: skip
    }
    public, allowed = (ProjectSettings(overrides={"DOCSBOT_ALLOWED_NETWORKS": v}) for v in ("", "127.0.0.1"))
    with httpx.Client() as client:
        refused = r"169\.254\.169\.254 is a link-local address.*127\.0\.0\.1 is a loopback"
        with pytest.raises(RegistryError, match=refused):
            resolve("sneaky", None, "pypi", client=client, pypi_url=f"{registry}/pypi", settings=public)
        found = resolve("sneaky", None, "pypi", client=client, pypi_url=f"{registry}/pypi", settings=allowed)
        assert found.url == "http://127.0.0.1:9/"
