"""docsbot's import graph runs one way, layer by layer (docs/explanation/architecture.md draws it): interfaces → Scrapy
components → the run and, beside it, the service → the store → the pure core; and the pure core imports neither
Scrapy nor a database driver."""

from __future__ import annotations

import subprocess
import sys

import grimp
import pytest

LAYERS = (
    "spiders",  # the docs spider and its seed files (sitemaps, llms.txt, Doxygen's menu)
    "docsbot.cli",
    "docsbot.web",  # the web pages, with the MCP server mounted at /mcp
    grimp.Layer("docsbot.mcp", "docsbot.commands", independent=True),  # interfaces
    grimp.Layer(
        "docsbot.addon",
        "docsbot.downloadermiddlewares",
        "docsbot.pipelines",
        "docsbot.logformatter",
        "docsbot.core",
        independent=True,
    ),  # Scrapy components (the add-on names the others by their import paths)
    "docsbot.content.pool",  # the extraction and chunking pool the spider and the chunk pipeline share
    # the run extension; beside it, the fleet's scheduler (a crawl it starts is a `scrapy crawl` process)
    grimp.Layer("docsbot.extensions", "docsbot.fleet.scheduler", independent=True),
    "docsbot.embedding.migration",  # the worker of a model switch (docsbot reembed), a worker of the queue's kind
    grimp.Layer("docsbot.service", "docsbot.embedding.worker", independent=True),  # the service; the queue's workers
    "docsbot.store",
    grimp.Layer(
        "docsbot.content.changes",
        "docsbot.fleet.libraries",
        "docsbot.fleet.registry",
        "docsbot.fleet.dependencies",
        "docsbot.archives",
        independent=True,
    ),  # a page's changes; a fleet's files and registries; archives unpacked into folders
    # a registry's metadata; its hosts; an npm tarball's README
    grimp.Layer("docsbot.fleet.roots", "docsbot.fleet.probe", "docsbot.fleet.tarball", independent=True),
    "docsbot.fleet.layout",  # how documentation hosts lay out their URLs
    "docsbot.fleet.readme",  # a README's links and what they say
    grimp.Layer("docsbot.fleet.versions", "docsbot.fleet.locks", independent=True),  # each ecosystem's rules, locks
    "docsbot.arguments",
    grimp.Layer(
        "docsbot.refresh",
        "docsbot.content.extract",
        "docsbot.content.chunking",
        "docsbot.embedding.models",
        "docsbot.render",
        "docsbot.items",
        "docsbot.resolver",
        "docsbot.folders",  # file: roots: which files are pages, what answers a folder, validators
        independent=True,
    ),
    # extraction's steps, each a module of content/ that extract_page calls in turn
    grimp.Layer(
        "docsbot.content.symbols",
        "docsbot.content.markdown",
        "docsbot.content.links",
        "docsbot.content.title",
        "docsbot.content.chrome",
        independent=True,
    ),
    grimp.Layer("docsbot.content.anchors", "docsbot.content.decoding", independent=True),
    grimp.Layer("docsbot.network", "docsbot.names", independent=True),  # which addresses; what a name is
    grimp.Layer(
        "docsbot.urls",
        "docsbot.errors",
        "docsbot.display",  # text shown to a person: escaped
        "docsbot.progress",  # a terminal's progress bars: when, and log lines past them
        "docsbot.config",
        "docsbot.project_settings",  # a settings module's names, read without Scrapy
        "docsbot.content.commonmark",
        "docsbot.content.identifiers",  # what counts as an identifier: the symbol table's and the search SQL's
        "docsbot.content.markup",
        "docsbot.content.sources",  # a folder's Markdown and text files rendered to pages
        "docsbot.embedding.texts",  # the text a chunk's vector is made of, and its key
        independent=True,
    ),
)
# Inside each interface's package, its modules run one way too: the command's parser over the command groups over
# what they share; the web app over its views over rendering, the feed and the middlewares; serving over the tools.
# So do the parts of the run extension and of the service.
INSIDE = {
    "docsbot.cli": (
        grimp.Layer("crawl", "search", "status", "fleet", "db", "embed", "reembed", "serve", independent=True),
        "common",
    ),
    "docsbot.web": ("app", "llms", "views", grimp.Layer("rendering", "feed", "middleware", independent=True)),
    "docsbot.mcp": ("transport", grimp.Layer("server", "http", independent=True), "arguments"),
    # the run extension: IndexRun wiring Scrapy's signals to the run's setup and end, over the context components
    # look up, over the run's embedding worker; the service: DocsIndex made of its parts, over what they share
    "docsbot.extensions": (
        grimp.Layer("run", "progress", independent=True),  # and the terminal's bars, reading the run
        grimp.Layer("setup", "ending", independent=True),
        "context",
        "vectors",
    ),
    "docsbot.service": ("index", grimp.Layer("reading", "pages", "changes", "writes", independent=True), "core"),
}
# The crawl and the service stand side by side on the store: neither imports the other (a refresh the service starts
# is a `scrapy crawl` process).
CRAWL = (
    "spiders", "docsbot.commands", "docsbot.addon", "docsbot.downloadermiddlewares", "docsbot.pipelines",
    "docsbot.content.pool", "docsbot.extensions", "docsbot.core",
)  # fmt: skip
PURE = (
    "docsbot.refresh",
    "docsbot.refresh.freshness",
    "docsbot.content.changes",
    "docsbot.fleet.libraries",
    "docsbot.fleet.dependencies",
    "docsbot.fleet.versions",
    "docsbot.fleet.locks",
    "docsbot.arguments",
    "docsbot.content.extract",
    "docsbot.content.decoding",
    "docsbot.content.chrome",
    "docsbot.content.links",
    "docsbot.content.title",
    "docsbot.content.markdown",
    "docsbot.content.anchors",
    "docsbot.content.symbols",
    "docsbot.content.identifiers",
    "docsbot.content.markup",
    "docsbot.content.chunking",
    "docsbot.content.commonmark",
    "docsbot.items",
    "docsbot.urls",
    "docsbot.network",
    "docsbot.names",
    "docsbot.display",
    "docsbot.progress",
    "docsbot.folders",
    "docsbot.archives",
    "docsbot.content.sources",
    "docsbot.embedding.texts",
)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("docsbot", "spiders", include_external_packages=True, cache_dir=None)


def test_imports_run_one_way(graph):
    illegal = graph.find_illegal_dependencies_for_layers(layers=LAYERS)
    assert not illegal, "\n".join(f"{d.importer} imports {d.imported} (a layer above it)" for d in illegal)


@pytest.mark.parametrize("package", sorted(INSIDE))
def test_inside_a_package_imports_run_one_way(graph, package):
    illegal = graph.find_illegal_dependencies_for_layers(layers=INSIDE[package], containers={package})
    assert not illegal, "\n".join(f"{d.importer} imports {d.imported} (a layer above it)" for d in illegal)


@pytest.mark.parametrize("module", PURE)
def test_the_pure_core_loads_no_scrapy_machinery_and_no_database(module):
    """Transitively: what importing the module puts in ``sys.modules`` (a fresh interpreter), not only its own
    import lines (docsbot.urls once loaded 42 Scrapy modules through a list of file extensions)."""
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    outside = {m.split(".")[0] for m in loaded} & {"scrapy", "twisted", "psycopg", "psycopg_pool", "pgvector"}
    assert not outside, f"importing {module} loads {sorted(outside)}"


def test_the_crawl_and_the_service_do_not_import_each_other(graph):
    chains = [
        (a, b)
        for crawl in CRAWL
        for a, b in ((crawl, "docsbot.service"), ("docsbot.service", crawl))
        if graph.chain_exists(a, b, as_packages=True)
    ]
    assert not chains, chains


@pytest.mark.parametrize(
    "module",
    ["docsbot.service.search", "docsbot.service.index", "docsbot.embedding.worker", "docsbot.store", "docsbot.cli"],
)
def test_the_search_side_loads_no_scrapy_and_no_fastembed(module):
    """A search process (``docsbot search``, the MCP server's search) and an embedding worker load no Scrapy or
    Twisted, and no fastembed until an embedder is built (docs/guide/crawling.md); nor does the service, nor the
    ``docsbot`` command before it runs one (its command groups import what they need inside the command)."""
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    outside = {m.split(".")[0] for m in loaded} & {"scrapy", "twisted", "fastembed"}
    assert not outside, f"importing {module} loads {sorted(outside)}"


def test_a_crawl_loads_extraction_only_when_a_page_needs_it():
    """What a ``scrapy crawl docs`` process imports before any page is extracted (the settings, the command, the
    spider, the add-on and every component it names): no extraction, chunking, markdown-it, html-to-markdown,
    pebble or numpy. An unchanged refresh never needs them; they cost about 0.1 s of its start, and every module
    loaded makes Scrapy's start slower still (its deprecated TLS aliases walk ``sys.modules`` per stack frame)."""
    code = """
import sys
import docsbot.settings, docsbot.commands.crawl, spiders.docs
from scrapy.utils.misc import load_object
from docsbot import addon
paths = [p for components in addon.COMPONENTS.values() for p in components]
paths += [*addon.SETTINGS.values(), addon.DOWNLOAD_HANDLER, addon.FILE_DOWNLOAD_HANDLER]
for path in paths:
    load_object(path)
print(len(paths), " ".join(sorted(sys.modules)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) >= 10  # the add-on's components were all loaded
    heavy = {"docsbot.content.extract", "docsbot.content.chunking", "docsbot.content.changes", "markdown_it"}
    heavy |= {"html_to_markdown", "pebble", "numpy", "semantic_text_splitter"}
    loaded = heavy & {m for name in out[1:] for m in (name, name.split(".")[0])}
    assert not loaded, f"a crawl loads {sorted(loaded)} before it extracts a page"
