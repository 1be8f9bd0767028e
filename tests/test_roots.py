"""The right documentation root from a package's registry metadata, or an honest miss (docsbot.fleet.roots), and
probes that tell the truth (docsbot.fleet.probe): the rules on the registries' real answers, recorded once
(tests/data/registry/), with no documentation host asked; the probes against a local documentation host
(tests/docsite.py) that keeps versioned trees, answers 200 for every path, or cannot be reached."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import httpx
import pytest

from docsbot.fleet.probe import Answer, HostUnreachable, Prober
from docsbot.fleet.readme import readme_strength
from docsbot.fleet.registry import RegistryError, no_probes, resolve, toml_entry
from docsbot.fleet.roots import as_directory, docs_link, readme_links, version_tree
from docsbot.project_settings import ProjectSettings
from tests.conftest import ROOT
from tests.docsite import DocSite, DocSiteServer, html_page
from tests.recorded_registry import NPM_URL, PYPI_URL, recorded_client

# (ecosystem, package, the root its recorded metadata gives with no host asked, a note the rule that chose it writes)
RECORDED = [
    ("pypi", "aiohttp", "https://docs.aiohttp.org/en/stable/", "not every version under https://docs.aiohttp.org/"),
    ("pypi", "numpy", "https://numpy.org/doc/stable/", "not every version under https://numpy.org/doc/"),
    ("pypi", "matplotlib", "https://matplotlib.org/stable/", "not every version under https://matplotlib.org/"),
    ("pypi", "pydantic", "https://pydantic.dev/docs/validation/latest/", "validation/latest/get-started/ is in"),
    ("pypi", "polars", "https://docs.pola.rs/", "the documentation's root, named by pypi's README: 'User guide'"),
    ("pypi", "pyarrow", "https://arrow.apache.org/docs/python/", "names a directory"),
    ("pypi", "uv", "https://docs.astral.sh/uv/", "names a directory"),
    ("pypi", "coverage", "https://coverage.readthedocs.io/en/7.17.0/", "from pypi's project_urls 'Documentation'"),
    ("pypi", "requests", "https://requests.readthedocs.io/en/latest/", "a guess: nothing in the metadata shows it"),
    ("pypi", "flask", "https://flask.palletsprojects.com/en/latest/", "a Read the Docs host's root"),
    ("pypi", "beautifulsoup4", "https://www.crummy.com/software/BeautifulSoup/bs4/doc/", "comprehensive documentation"),
    ("pypi", "google-cloud-storage", "https://cloud.google.com/python/docs/reference/storage/latest/",
     "Client Library Documentation"),
    ("pypi", "starlette", "https://starlette.dev/", "https://starlette.dev/: from pypi's project_urls 'Documentation'"),
    ("pypi", "transformers", "https://huggingface.co/docs/transformers/", "the documentation's directory, of which"),
    ("pypi", "pyyaml", "https://pyyaml.org/wiki/PyYAMLDocumentation", "project_urls 'Documentation'"),
    ("pypi", "openai", "https://github.com/openai/openai-python", "its README is the documentation"),
    ("pypi", "certifi", "https://github.com/certifi/python-certifi", "its README is the documentation"),
    ("npm", "chalk", "https://github.com/chalk/chalk#readme", "its README is the documentation"),
    ("npm", "@angular/core", "https://angular.dev/", "the project's own site, of which https://angular.dev/overview"),
    ("npm", "react", "https://react.dev/", "npm's README: 'See https://react.dev/'"),
    # npm's READMEs, read from the tarballs (the registry these were recorded from sends none)
    ("npm", "webpack", "https://webpack.js.org/", "the project's own site (its host names webpack)"),
    ("npm", "tslib", "https://github.com/Microsoft/tslib#readme", "another project's site, ranked below"),
    ("npm", "typescript", "https://www.typescriptlang.org/docs/", "of which https://www.typescriptlang.org/docs/hand"),
    ("npm", "rollup", "https://rollupjs.org/", "the project's own site, of which https://rollupjs.org/introduction/"),
    ("npm", "socket.io", "https://socket.io/docs/v4/", "the tree of 4.8.4, named as the host names https://socket.io/do"),
    ("npm", "prettier", "https://prettier.io/docs/", "the documentation under the home https://prettier.io/"),
    ("npm", "dayjs", "https://day.js.org/docs/en/", "shows it: https://day.js.org/docs/en/installation/installation"),
    ("npm", "express", "https://expressjs.com/en/", "shows it: https://expressjs.com/en/guide/migrating-5"),
    ("npm", "graphql", "https://graphql.org/graphql-js/", "complete documentation at https://graphql.org/ and https"),
    ("npm", "redux", "https://redux.js.org/", "The Redux core docs are located at"),
    ("npm", "preact", "https://preactjs.com/", "npm's homepage"),  # not the Babel page an example's comment links
]  # fmt: skip


# The recorded hosts are public: nothing to look up. The local documentation host is allowed as if it were.
ANYWHERE = ProjectSettings(overrides={"DOCSBOT_ALLOWED_NETWORKS": "*"})
LOCAL = ProjectSettings(overrides={"DOCSBOT_ALLOWED_NETWORKS": "127.0.0.1"})


@pytest.fixture
def recorded():
    with recorded_client() as client:
        yield client


@pytest.mark.parametrize(("ecosystem", "name", "root", "why"), RECORDED, ids=[r[1] for r in RECORDED])
def test_each_rule_finds_the_root_in_real_metadata(recorded, ecosystem, name, root, why):
    """Every label, the home page, the repository and the README served with the metadata; the root as the crawl's
    scope needs it (one tree, the whole docs, a directory with its slash); no host asked, so the entry says it is
    unverified (and a repository's README is that page alone)."""
    found = resolve(
        name, None, ecosystem, client=recorded, pypi_url=PYPI_URL, npm_url=NPM_URL, probe=no_probes, settings=ANYWHERE
    )
    assert found.url == root
    assert any(why in note for note in found.notes), found.notes
    assert not found.verified and found.version == "latest"
    if "github.com" in root:
        assert found.max_depth == 0 and not any("unverified" in note for note in found.notes)
    else:
        assert found.notes[-1] == "unverified (probes are off): the root is from the registry's data alone"
        assert "# unverified (probes are off)" in toml_entry(found)


def test_a_pin_is_kept_when_the_host_cannot_be_asked(recorded):
    """`docsbot add pydantic==2.14.4` offline: the version is the pin, never "latest", and its tree is named as the
    host names the trees the metadata shows (/docs/validation/1.10/: X.Y), marked as not confirmed."""
    found = resolve(
        "pydantic", "2.14.4", "pypi", client=recorded, pypi_url=PYPI_URL, probe=no_probes, settings=ANYWHERE
    )
    assert (found.version, found.url, found.verified) == ("2.14.4", "https://pydantic.dev/docs/validation/2.14/", False)
    assert "the tree of 2.14.4 as its host's layout would name it, not confirmed" in found.notes[-1]
    # no versioned layout in sight: the registry's root, the pin kept, and a note that it may be another version
    found = resolve("lxml", "6.0.0", "pypi", client=recorded, pypi_url=PYPI_URL, probe=no_probes, settings=ANYWHERE)
    assert (found.version, found.url) == ("6.0.0", "https://lxml.de/")
    assert "may describe another version than 6.0.0" in found.notes[-1]


def test_a_package_whose_docs_cannot_be_told_is_an_honest_miss(recorded):
    """Metadata that names nothing docsbot can use (a registry page), or names the documentation only through a
    redirector (aka.ms) that cannot be followed here: docsbot says it cannot tell and asks for --url."""
    client = _registry_client({"info": {"name": "x", "project_urls": {"Download": "https://pypi.org/project/x/"}}})
    with pytest.raises(RegistryError, match=r"x: cannot tell where its documentation is: .*docsbot add NAME --url"):
        resolve(
            "x", None, "pypi", client=client, pypi_url="https://registry.test/pypi", probe=no_probes, settings=ANYWHERE
        )
    readme = "# X\n\n[Documentation](https://aka.ms/x-docs) | [Service docs](https://x.example/docs/)\n"
    client = _registry_client({"info": {"name": "x", "description": readme}})
    with pytest.raises(RegistryError, match=r"cannot tell .* only through a redirector, https://aka\.ms/x-docs"):
        resolve(
            "x", None, "pypi", client=client, pypi_url="https://registry.test/pypi", probe=no_probes, settings=ANYWHERE
        )


def test_a_redirector_is_followed_when_it_can_be(recorded):
    """azure-storage-blob's README names its API reference through aka.ms. Followed, it is the root; not followed
    (no probes), the README's other links are not what it named, and the package's own README page is taken."""
    reference = "https://learn.microsoft.com/en-us/python/api/azure-storage-blob/"

    def probe(url: str) -> Answer:
        if "docsbot-no-such-page-" in url:
            return _answer(url, 404)
        return _answer(url, 200, "Azure Storage Blobs", b"reference", final=reference if "aka.ms" in url else url)

    found = resolve("azure-storage-blob", None, client=recorded, pypi_url=PYPI_URL, probe=probe, settings=ANYWHERE)
    assert (found.url, found.verified) == (reference, True)
    assert found.notes[1] == f"{reference}: where https://aka.ms/azsdk-python-storage-blob-ref leads"
    found = resolve("azure-storage-blob", None, client=recorded, pypi_url=PYPI_URL, probe=no_probes, settings=ANYWHERE)
    assert found.url == "https://github.com/Azure/azure-sdk-for-python/tree/main/sdk/storage/azure-storage-blob"
    assert "through a redirector cannot be followed from here: https://aka.ms/" in found.notes[1]


def test_an_npm_readme_names_the_docs_under_a_marketing_home():
    """npm sends the README with the document (``readme``; the registry these answers were recorded from does not,
    so it is added here): its documentation link wins over the homepage, a marketing home."""
    from tests.recorded_registry import recorded as recorded_answer

    meta = dict(recorded_answer("npm", "prettier"))
    assert "readme" not in meta and meta["versions"][meta["dist-tags"]["latest"]]["homepage"] == "https://prettier.io"
    meta["readme"] = (
        "# Prettier\n\n### [Documentation](https://prettier.io/docs/)\n\n[Playground](https://prettier.io/playground)\n"
    )
    found = resolve(
        "prettier", None, "npm", client=_registry_client(meta), npm_url=NPM_URL, probe=no_probes, settings=ANYWHERE
    )
    assert found.url == "https://prettier.io/docs/" and "README: 'Documentation'" in found.notes[0]


def _registry_client(meta: dict) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=meta)))


def test_readme_links_are_read_in_markdown_rst_and_html():
    readme = """# Demo
[![Documentation Status](https://img.shields.io/x.svg)](https://demo.readthedocs.io/en/stable/)
<a href="https://demo.dev/guide/"><img alt="User guide" src="https://x/y.svg"></a>
Online documentation is at https://demo.dev/docs/.
See `the manual <https://demo.dev/manual/>`_ and the reference_.

.. _reference: https://demo.dev/api/
[docs]: https://demo.dev/ref-style/
"""
    links = {link.url: link.text for link in readme_links(readme)}
    assert links == {
        "https://demo.readthedocs.io/en/stable/": "Documentation Status",
        "https://demo.dev/guide/": "User guide",
        "https://demo.dev/docs/": "",  # a bare URL: the sentence's own dot is not part of it
        "https://demo.dev/manual/": "the manual",
        "https://demo.dev/api/": "reference",
        "https://demo.dev/ref-style/": "docs",
    }


def test_a_readme_is_read_for_its_words_not_its_code_or_urls():
    """A URL in a code block is an example's; the letters of a URL (``…/docs/…``) are not words about a link; a URL
    that continues the sentence of the line before it is read with that sentence."""
    readme = """# Demo
```js
// See https://other.dev/docs/en/plugin for the JSX transform
```
Sponsored by https://sponsor.example/docs/hosting
The full documentation is at https://demo.dev/ and
https://demo.dev/demo-js/.
"""
    links = {link.url: link for link in readme_links(readme)}
    assert "https://other.dev/docs/en/plugin" not in links
    assert readme_strength(links["https://sponsor.example/docs/hosting"]) == 0  # no word of its line says docs
    assert readme_strength(links["https://demo.dev/"]) == 2
    assert readme_strength(links["https://demo.dev/demo-js/"]) == 2  # "full documentation at … and" + this URL


def test_a_site_named_like_the_package_is_its_own():
    """A host named as the package is (a label, affixes aside: threejs.org, typescriptlang.org) is its project's own
    site; one that names a company as the package does (platform.openai.com), or another project (tslib's home,
    typescriptlang.org), is not."""
    from docsbot.fleet.layout import names_package

    for url, name in (("https://webpack.js.org/", "webpack"), ("https://day.js.org/", "dayjs"),
                      ("https://www.typescriptlang.org/", "typescript"), ("https://angular.dev/", "@angular/core"),
                      ("https://socket.io/", "socket.io"), ("https://esbuild.github.io/", "esbuild")):  # fmt: skip
        assert names_package(url, name, path=False, strict=True), url
    for url, name in (("https://platform.openai.com/", "openai"), ("https://www.typescriptlang.org/", "tslib"),
                      ("https://fetch.spec.whatwg.org/", "node-fetch"), ("https://dotenvx.com/", "dotenv"),
                      ("https://redux-toolkit.js.org/", "redux")):  # fmt: skip
        assert not names_package(url, name, path=False, strict=True), url
    assert names_package("https://www.tornadoweb.org/", "tornado", path=False)  # a home page's host, leniently
    assert names_package("https://github.com/microsoft/tslib", "tslib")  # a repository's path


def test_the_current_tree_is_taken_over_an_old_release_and_another_majors_is_renamed():
    """A home whose README shows /docs/latest/ and an old /docs/2.9.4/: the current docs, not the old release's;
    one that shows only /docs/v3/ for a 4.8.4 release: the release's own tree, named as the host names v3, a guess
    that falls back to /docs/ when a probe finds it not there."""
    from docsbot.fleet.roots import Candidate, Link, find_root

    home = [Candidate("https://x.org/", "home", 40, "homepage")]
    shown = [Link(f"https://x.org/docs/{tree}/start", where="README") for tree in ("latest", "2.9.4")]
    assert find_root(home, shown, name="x", version="4.6.1").url == "https://x.org/docs/latest/"
    choice = find_root(home, [Link("https://x.org/docs/v3/api/", where="README")], name="x", version="4.8.4")
    assert (choice.url, choice.guessed, choice.unguessed) == ("https://x.org/docs/v4/", True, "https://x.org/docs/")


def test_a_root_is_a_directory_a_page_or_a_tree():
    assert as_directory("https://arrow.apache.org/docs/python") == "https://arrow.apache.org/docs/python/"
    assert as_directory("https://docs.astral.sh/uv", "uv") == "https://docs.astral.sh/uv/"
    assert as_directory("https://coverage.readthedocs.io/en/7.17.0") == "https://coverage.readthedocs.io/en/7.17.0/"
    assert as_directory("https://react.dev") == "https://react.dev/"
    pages = ("https://huggingface.co/docs/transformers/index", "https://pyyaml.org/wiki/PyYAMLDocumentation",
             "https://jestjs.io/docs/getting-started", "https://mypy.readthedocs.io/en/stable/index.html")  # fmt: skip
    for page in pages:
        assert as_directory(page) == page
    assert version_tree("https://black.readthedocs.io/en/stable/usage/index.html") == (
        "https://black.readthedocs.io/en/stable/"
    )
    assert version_tree("https://boto3.amazonaws.com/v1/documentation/api/latest/index.html") == (
        "https://boto3.amazonaws.com/v1/documentation/api/latest/"
    )  # the last version segment: v1 is the API's
    assert version_tree("https://docs.pola.rs/user-guide/") is None


def test_a_home_page_names_its_documentation_in_its_navigation():
    home = (
        '<nav><a href="/">Home</a><a href="https://blog.cypress.io/">Blog</a>'
        '<a href="https://docs.cypress.io/app/get-started">Docs</a></nav>'
    )
    assert docs_link("https://cypress.io/", home) == "https://docs.cypress.io/app/get-started"
    assert docs_link("https://jquery.com/", '<a href="https://api.jquery.com/">API Documentation</a>') == (
        "https://api.jquery.com/"
    )
    assert docs_link("https://x.org/", '<a href="/docs/">Docs</a>') == "https://x.org/docs/"
    assert docs_link("https://x.org/", '<a href="https://other.org/docs/">Docs</a>') is None  # another domain
    assert docs_link("https://x.org/", '<a href="/learn">Docs</a>') is None  # the home's own directory


def _answer(url: str, status: int = 200, title: str = "", body: bytes = b"", final: str | None = None) -> Answer:
    return Answer(url, status, final or url, title, str(hash(body or title.encode())), body)


def test_a_probe_tells_there_not_there_and_cannot_tell():
    """Status 404/410: not there; 200: there, unless the directory answers 200 for a path that cannot exist (a soft
    404): then only an answer unlike that one is there; 401/403/429/5xx cannot tell; a network error raises."""
    pages = {"https://h/en/2.0/": _answer("https://h/en/2.0/", 200, "Demo 2.0")}

    def fetch(url: str) -> Answer:
        if "docsbot-no-such-page-" in url:
            return _answer(url, 404)
        return pages.get(url) or _answer(url, 404)

    prober = Prober(fetch)
    assert prober.check("https://h/en/2.0/")[0] is True and prober.check("https://h/en/1.0/")[0] is False
    assert prober.answers[0].url.startswith("https://h/en/docsbot-no-such-page-")  # asked first, once per directory
    assert sum("docsbot-no-such-page-" in a.url for a in prober.answers) == 1

    shell = b"<html><title>Demo</title><div id=app></div></html>"
    soft = Prober(lambda url: _answer(url, 200, "Demo", shell))  # a single-page app: one shell for every path
    assert soft.check("https://h/en/2.0/")[0] is None and soft.soft_404("https://h/en/2.0/")
    missing = ("no-such", "1.0")  # a "Page not found" page served with 200, naming the path asked
    titled = Prober(lambda url: _answer(url, 200, "Page not found", url.encode()) if any(m in url for m in missing)
                    else _answer(url, 200, "Demo 2.0 documentation", b"docs"))  # fmt: skip
    assert titled.check("https://h/en/2.0/")[0] is True and titled.check("https://h/en/1.0/")[0] is False
    home = Prober(lambda url: _answer(url, 200, "Home", final="https://h/") if url != "https://h/en/2.0/" else
                  _answer(url, 200, "Demo 2.0", b"2.0"))  # fmt: skip
    assert home.check("https://h/en/1.0/")[0] is False  # unknown paths redirect home: a redirect there is not a page
    assert home.check("https://h/en/2.0/")[0] is True
    for status in (401, 403, 429, 502, 503):
        assert (
            Prober(lambda url, s=status: _answer(url, 404 if "no-such" in url else s)).check("https://h/a/")[0] is None
        )

    def down(url: str) -> Answer:
        raise HostUnreachable("h cannot be reached (ConnectError: refused)")

    with pytest.raises(HostUnreachable):
        Prober(down).check("https://h/en/2.0/")


# --- against a local documentation host ------------------------------------------------------------------------------


def _page(title: str, links: list[str] = ()) -> str:
    return html_page(title, f"<p>{title} explains how to frobnicate widgets.</p>", links)


@pytest.fixture
def docs_host():
    """A documentation host on this machine that also serves a PyPI answer at /pypi/NAME/json (the registry's
    metadata is put there by each test), allowed as if public (``LOCAL``)."""
    site = DocSite()
    with DocSiteServer(site) as server:
        yield site, server.url


def _publish(site: DocSite, name: str, project_urls: dict[str, str], releases: tuple[str, ...] = ("1.0", "2.0"),
             readme: str = ""):  # fmt: skip
    info = {"name": name, "project_urls": project_urls, "description": readme}
    meta = {"info": info, "releases": {r: [] for r in releases}}
    site.put(f"/pypi/{name}/json", json.dumps(meta), content_type="application/json")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.e2e
def test_a_host_with_versioned_trees_gives_the_pinned_tree(docs_host):
    site, url = docs_host
    _publish(site, "demo", {"Documentation": f"{url}/en/latest/"}, ("1.0", "2.0", "3.1.4"))
    for path in ("/en/latest/index.html", "/en/2.0/index.html", "/en/3.1.x/index.html"):
        site.put(path, _page(f"Demo {path}"))
    with httpx.Client() as client:
        found = resolve("demo", "2.0", client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
        assert (found.version, found.url, found.verified) == ("2.0", f"{url}/en/2.0/", True)
        found = resolve(
            "demo", "3.1.4", client=client, pypi_url=f"{url}/pypi", settings=LOCAL
        )  # the host's own naming: 3.1.x
        assert (found.version, found.url, found.verified) == ("3.1.4", f"{url}/en/3.1.x/", True)
        tried = [h.path for h in site.hits if h.path.startswith(("/en/3", "/en/v3"))]
        assert tried == ["/en/3.1.4/index.html", "/en/v3.1.4/index.html", "/en/3.1/index.html",
                         "/en/v3.1/index.html", "/en/3.1.x/index.html"]  # fmt: skip
        found = resolve(
            "demo", "1.0", client=client, pypi_url=f"{url}/pypi", settings=LOCAL
        )  # the host has no tree of it
        assert (found.version, found.url, found.verified) == ("latest", f"{url}/en/latest/", True)
        assert "no tree of 1.0 found" in found.notes[-1] and "the newest docs" in found.notes[-1]


@pytest.mark.e2e
def test_a_soft_404_host_confirms_no_tree_it_does_not_have(docs_host):
    """A host that answers 200 with its home page for any path: a probe of a path that cannot exist shows it, so
    /en/2.0/ is not taken for a tree on the strength of its 200; /en/3.0/, a real page, is."""
    site, url = docs_host
    site.not_found = (200, _page("Demo home"))
    _publish(site, "demo", {"Documentation": f"{url}/en/latest/"}, ("2.0", "3.0"))
    site.put("/en/latest/index.html", _page("Demo latest"))
    site.put("/en/3.0/index.html", _page("Demo 3.0"))
    with httpx.Client() as client:
        found = resolve("demo", "3.0", client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
        assert (found.version, found.url, found.verified) == ("3.0", f"{url}/en/3.0/", True)
        found = resolve("demo", "2.0", client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
    assert (found.version, found.verified) == ("2.0", False)  # the pin kept, said to be unconfirmed
    assert found.url == f"{url}/en/2.0/" and "a soft 404" in found.notes[-1] and "unverified" in found.notes[-1]
    assert any("docsbot-no-such-page-" in h.path for h in site.hits)


@pytest.mark.e2e
def test_an_unreachable_host_leaves_the_entry_unverified_not_latest(docs_host):
    """The documentation host refuses connections (nothing listens), or a proxy refuses to connect: the entry is
    written from the registry's data alone, the pin kept and the tree named as the layout would name it, and its
    comments say so; never silently "latest"."""
    site, url = docs_host
    dead = f"http://127.0.0.1:{_closed_port()}"
    _publish(site, "demo", {"Documentation": f"{dead}/en/latest/"})
    with httpx.Client() as client:
        found = resolve("demo", "2.0", client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
    assert (found.version, found.url, found.verified) == ("2.0", f"{dead}/en/2.0/", False)
    assert f"unverified ({dead.removeprefix('http://')} cannot be reached (ConnectError" in found.notes[-1]
    entry = toml_entry(found)
    assert 'version = "2.0"' in entry and "# unverified (" in entry
    site.put("/en/2.0/index.html", _page("Demo 2.0"))
    meta = {"info": {"name": "demo", "project_urls": {"Documentation": f"{url}/en/latest/"}}, "releases": {"2.0": []}}
    registry = httpx.MockTransport(lambda request: httpx.Response(200, json=meta))
    proxy = f"http://127.0.0.1:{_closed_port()}"  # a proxy that refuses every connection; the registry answers
    mounts = {"https://registry.test": registry, "all://": httpx.HTTPTransport(proxy=proxy)}
    with httpx.Client(mounts=mounts) as client:
        found = resolve("demo", "2.0", client=client, pypi_url="https://registry.test/pypi", settings=LOCAL)
    assert (found.version, found.url, found.verified) == ("2.0", f"{url}/en/2.0/", False)
    assert "cannot be reached" in found.notes[-1] and not [h for h in site.hits if h.path.startswith("/en/")]


@pytest.mark.e2e
def test_a_root_is_taken_where_its_host_leads(docs_host):
    """A stable alias that redirects to its release's tree (the crawl's scope is the root's own directory, so the
    alias would leave it), a Read the Docs root guessed as /en/latest/ on a one-version host, a marketing home whose
    navigation links its docs, and a redirect to this machine's link-local network, which is not followed."""
    site, url = docs_host
    site.redirects["/en/stable/index.html"] = (302, f"{url}/en/6.1/")
    site.put("/en/6.1/index.html", _page("Demo 6.1"))
    _publish(site, "alias", {"Documentation": f"{url}/en/stable/"})
    _publish(site, "onever", {"Documentation": f"{url}/", "Changes": f"{url}/page/changes/"})
    site.put("/index.html", _page("One-version docs", ["/docs/"]).replace(">/docs/<", ">Docs<"))
    _publish(site, "home", {"Homepage": f"{url}/"})
    site.put("/docs/index.html", _page("Demo docs"))
    with httpx.Client() as client:
        alias = resolve("alias", None, client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
        onever = resolve("onever", None, client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
        home = resolve("home", None, client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
        site.redirects["/en/stable/index.html"] = (302, "http://169.254.169.254/latest/meta-data/")
        refused = resolve("alias", None, client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
    assert (alias.url, alias.verified) == (f"{url}/en/6.1/", True)
    assert f"{url}/en/6.1/: where {url}/en/stable/ leads" in alias.notes[-2]
    assert (onever.url, onever.verified) == (f"{url}/", True) and "a one-version project" in onever.notes[-2]
    assert (home.url, home.verified) == (f"{url}/docs/", True) and "links as such" in home.notes[-2]
    assert (refused.url, refused.verified) == (f"{url}/en/stable/", False)
    assert "169.254.169.254 is a link-local address" in refused.notes[-1]


@pytest.mark.e2e
def test_docsbot_add_says_what_it_chose_or_asks_for_url(docs_host, tmp_path):
    """`docsbot add` prints the entry with why (the label it came from), whether its host confirmed it; a package
    whose metadata names nothing usable is one line asking for --url (exit 1, nothing written); --url writes it."""
    site, url = docs_host
    dead = f"http://127.0.0.1:{_closed_port()}"
    _publish(site, "demo", {"Docs: RTD": f"{dead}/en/latest/"})
    _publish(site, "bare", {"Download": "https://pypi.org/project/bare/"})
    site.put("/docs/index.html", _page("Bare docs"))
    env = {"PATH": "/usr/bin:/bin", "DOCSBOT_PYPI_URL": f"{url}/pypi", "PYTHONPATH": str(ROOT),
           "DOCSBOT_ALLOWED_NETWORKS": "127.0.0.1"}  # fmt: skip

    def add(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "docsbot.cli", "add", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    done = add("demo==2.0")
    assert done.returncode == 0, done.stderr
    assert f"# {dead}/en/latest/: from pypi's project_urls 'Docs: RTD'" in done.stdout
    assert "added demo@2.0 to libraries.toml (unverified: " in done.stdout
    text = (tmp_path / "libraries.toml").read_text()
    assert f'url = "{dead}/en/2.0/"' in text and "# unverified (" in text
    miss = add("bare")
    assert miss.returncode == 1 and "Traceback" not in miss.stderr
    assert (
        miss.stderr.startswith("docsbot add: bare: cannot tell where its documentation is") and "--url" in miss.stderr
    )
    assert (tmp_path / "libraries.toml").read_text() == text
    given = add("bare", "--url", f"{url}/docs/")
    assert given.returncode == 0, given.stderr
    assert f"# {url}/docs/: given (--url)" in given.stdout and "(confirmed by its host)" in given.stdout


@pytest.mark.e2e
def test_a_docs_directory_a_readme_shows_is_taken_when_its_host_has_it(docs_host):
    """A home page whose README links pages under /docs/: the docs directory is the root when the host has it,
    and the home, which the metadata names, when the directory has no page of its own (404)."""
    site, url = docs_host
    site.put("/index.html", _page("Demo home"))
    site.put("/docs/options.html", _page("Demo options"))
    _publish(site, "demo", {"Homepage": f"{url}/"}, readme=f"# Demo\n\nSee [the options]({url}/docs/options.html).\n")
    with httpx.Client() as client:
        found = resolve("demo", None, client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
        assert (found.url, found.verified) == (f"{url}/", True)
        assert f"{url}/docs/ is not there (404): the directory has no page of its own; {url}/ instead" in found.notes
        site.put("/docs/index.html", _page("Demo docs", ["options.html"]))
        found = resolve("demo", None, client=client, pypi_url=f"{url}/pypi", settings=LOCAL)
    assert (found.url, found.verified) == (f"{url}/docs/", True)
    assert found.notes[1].startswith(f"{url}/docs/: the documentation under the home {url}/")
