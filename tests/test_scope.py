"""What a crawl covers, end to end (`scrapy crawl docs` processes, a real server and PostgreSQL): unknown spider
arguments, the scope modes and patterns on a site laid out as real docs hosts are (a versioned, translated tree beside
a blog and two manuals), the root's redirect setting the scope, a refresh that narrows it, a domain scope behind a
proxy, and private docs whose headers go to their host alone and are written nowhere."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.docsite import DocSite, DocSiteServer, html_page
from tests.test_crawl import server_path

# path → the paths it links (as documentation links: relative and absolute)
LAYOUT = {
    "/index.html": ["/en/2.0/", "/blog/", "/docs/python"],
    "/en/1.0/index.html": ["guide.html", "/en/2.0/", "/fr/2.0/"],
    "/en/1.0/guide.html": ["index.html"],
    "/en/2.0/index.html": ["guide.html", "changelog/", "/en/1.0/", "/fr/2.0/", "/blog/"],
    "/en/2.0/guide.html": ["index.html", "changelog/"],
    "/en/2.0/changelog/index.html": ["../"],
    "/fr/2.0/index.html": ["guide.html", "/en/2.0/"],
    "/fr/2.0/guide.html": ["index.html"],
    "/blog/index.html": ["post.html", "/en/2.0/"],
    "/blog/post.html": ["index.html"],
    # /docs/python (no slash) redirects to /docs/python/; its pages link the C++ manual beside it
    "/docs/python/index.html": ["tutorial.html", "../cpp/", "/en/2.0/"],
    "/docs/python/tutorial.html": ["index.html", "changelog/"],
    "/docs/python/changelog/index.html": ["../"],
    "/docs/cpp/index.html": ["api.html", "../python/"],
    "/docs/cpp/api.html": ["index.html"],
}
EVERYTHING = {path for path in LAYOUT}


def build_layout() -> DocSite:
    site = DocSite()
    for path, links in LAYOUT.items():
        words = " ".join(f"{path.strip('/').replace('/', '-')}-word{i}" for i in range(40))
        site.put(path, html_page(f"Page {path}", f"<h2>About {path}</h2><p>{words}</p>", links))
    site.redirects["/docs/python"] = (301, "/docs/python/")
    # a sitemap listing every page: seed files are held to the scope and its patterns as links are
    site.put("/robots.txt", "User-agent: *\nAllow: /\nSitemap: /sitemap.xml\n", "text/plain")
    locs = "".join(f"<url><loc>{path}</loc></url>" for path in LAYOUT)
    urlset = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    sitemap = f'<?xml version="1.0" encoding="UTF-8"?>{urlset}{locs}</urlset>'
    site.put("/sitemap.xml", sitemap, "application/xml")
    return site


@pytest.fixture
def layout():
    with DocSiteServer(build_layout()) as server:
        yield server


def stored(db, library: str) -> set[str]:
    rows = db.execute(
        "SELECT p.url FROM pages p JOIN versions v ON v.id = p.version_id JOIN libraries l ON l.id = v.library_id "
        "WHERE l.name = %s",
        (library,),
    ).fetchall()
    return {server_path(url) for (url,) in rows}


def requested(site: DocSite) -> set[str]:
    return {hit.path for hit in site.hits if not hit.path.endswith(("/robots.txt", "/llms.txt", "/sitemap.xml"))}


def test_an_unknown_argument_stops_the_crawl_before_anything_is_fetched_or_written(crawl, layout, db):
    """A typo is not a full crawl: one line naming it, the nearest known name and all of them, exit code 2 (a usage
    error), no request and no row. A job runner's own arguments (Scrapyd's _job, _version) pass."""
    root = f"{layout.url}/en/2.0/"
    for given, named in (
        ({"max_page": "3"}, "-a max_page: unknown argument; did you mean max_pages? (known: url, library, "),
        ({"exclde": "*/changelog/*"}, "-a exclde: unknown argument; did you mean exclude?"),
        ({"scope": "site"}, "-a scope must be one of prefix, host, domain, got 'site'"),
    ):
        result = crawl(url=root, library="typo", **given)
        assert result.returncode == 2, result.stderr[-2000:]
        assert named in result.stderr and "Traceback" not in result.stderr, result.stderr[-2000:]
        assert "Scrapy 2." not in result.stderr and "Versions:" not in result.stderr  # no start-up banner first
        # `docsbot index` says the same in one line, from any folder, before a crawl process starts
        cli = [sys.executable, "-m", "docsbot.cli", "index", root, "--library", "typo"]
        for name, value in given.items():
            cli += ["-a", f"{name}={value}"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none"}
        said = subprocess.run(cli, cwd="/", env=env, capture_output=True, text=True, timeout=120)
        assert (said.returncode, said.stdout) == (2, ""), said.stderr[-2000:]
        assert said.stderr.startswith(f"docsbot: {named}") and said.stderr.count("\n") == 1, said.stderr
    assert layout.site.hits == []
    tables = db.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'versions'").fetchone()[0]
    assert tables == 0 or db.execute("SELECT count(*) FROM versions").fetchone()[0] == 0
    scrapyd = crawl(url=root, library="job", _job="6487ec79947edab326d6db28a2d86511e8247444", _version="r1")
    assert scrapyd.returncode == 0, scrapyd.stderr[-2000:]
    assert stored(db, "job") == {"/en/2.0/index.html", "/en/2.0/guide.html", "/en/2.0/changelog/index.html"}


@pytest.mark.parametrize(
    ("root", "args", "expected"),
    [
        # the root's redirect sets the scope: /docs/python → /docs/python/ does not index /docs/cpp/
        ("/docs/python", {}, {"/docs/python/index.html", "/docs/python/tutorial.html",
                              "/docs/python/changelog/index.html"}),
        ("/en/2.0/", {}, {"/en/2.0/index.html", "/en/2.0/guide.html", "/en/2.0/changelog/index.html"}),
        ("/en/2.0/", {"exclude": "*/changelog/*"}, {"/en/2.0/index.html", "/en/2.0/guide.html"}),
        ("/en/2.0/", {"scope": "host", "include": "/en/*,/fr/*"},
         {p for p in EVERYTHING if p.startswith(("/en/", "/fr/"))}),
        # exclude wins over include; a regex; the root is crawled though an include leaves it out
        ("/en/2.0/", {"scope": "host", "include": "/fr/*,/en/*", "exclude": r"/\/1\.0\//,*/changelog/*"},
         {"/en/2.0/index.html", "/en/2.0/guide.html", "/fr/2.0/index.html", "/fr/2.0/guide.html"}),
        ("/en/2.0/", {"scope": "host", "include": "/fr/*"}, {"/en/2.0/index.html", "/fr/2.0/index.html",
                                                            "/fr/2.0/guide.html"}),
        ("/", {"scope": "host"}, EVERYTHING),
        ("/", {"scope": "host", "exclude": "/blog/*,/docs/*"}, {p for p in EVERYTHING if p.startswith(("/en", "/fr"))}
         | {"/index.html"}),
    ],
)  # fmt: skip
def test_each_scope_and_pattern_stores_exactly_its_pages(crawl, layout, db, root, args, expected):
    result = crawl(url=f"{layout.url}{root}", library="site", **args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert stored(db, "site") == expected
    # what the scope leaves out is never requested (the root's redirect aside)
    assert requested(layout.site) - {"/docs/python"} == expected


def test_the_roots_redirect_sets_the_scope_and_the_log_says_it(crawl, layout, db):
    result = crawl(url=f"{layout.url}/docs/python", library="python")
    assert result.returncode == 0, result.stderr[-3000:]
    netloc = layout.url.removeprefix("http://")
    assert f"(scope prefix {netloc}/docs/python/," in result.stderr  # the start line: a directory of its own
    assert not any(path.startswith("/docs/cpp/") for path in requested(layout.site))
    # a root whose redirect leads elsewhere is crawled there: /old/ → /en/1.0/ covers /en/1.0/, not /old/ or /en/2.0/
    layout.site.redirects["/old/index.html"] = (302, "/en/1.0/")
    moved = crawl(url=f"{layout.url}/old/", library="moved")
    assert moved.returncode == 0, moved.stderr[-3000:]
    assert stored(db, "moved") == {"/en/1.0/index.html", "/en/1.0/guide.html"}


def test_a_refresh_keeps_the_scope_and_one_given_again_replaces_it_and_deletes_what_left_it(
    crawl, layout, db, database_url
):
    root = f"{layout.url}/"
    assert crawl(url=root, library="site", scope="host").returncode == 0
    assert stored(db, "site") == EVERYTHING
    layout.site.hits.clear()
    kept = crawl(library="site", mode="refresh")
    assert kept.returncode == 0, kept.stderr[-3000:]
    assert requested(layout.site) - {"/docs/python"} == EVERYTHING  # the stored scope: host
    narrower = crawl(library="site", mode="refresh", exclude="/blog/*")
    assert narrower.returncode == 0, narrower.stderr[-3000:]
    assert stored(db, "site") == EVERYTHING - {"/blog/index.html", "/blog/post.html"}
    run = db.execute("SELECT stats FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert run["deleted"] == 2 and run["left_scope"] == 2
    assert "2 stored pages are out of the scope now" in narrower.stderr
    settings = db.execute("SELECT settings FROM versions").fetchone()[0]
    assert (settings["scope"], settings["exclude"]) == ("host", ["/blog/*"])
    layout.site.hits.clear()
    again = crawl(library="site", mode="refresh")  # the narrower scope holds for the next refreshes
    assert again.returncode == 0, again.stderr[-3000:]
    assert not any(path.startswith("/blog/") for path in requested(layout.site))
    assert stored(db, "site") == EVERYTHING - {"/blog/index.html", "/blog/post.html"}
    status = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "status"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert f"  scope: host {layout.url.removeprefix('http://')}, exclude /blog/*" in status.stdout


# --- a domain scope: several hosts of one registrable domain, served through a proxy --------------------------------

VHOSTS = {
    "http://docs.example.org/en/index.html": ["guide.html", "http://api.example.org/v1/", "http://example.net/x.html",
                                              "http://www.example.org/about.html", "/blog/"],
    "http://docs.example.org/en/guide.html": ["index.html"],
    "http://docs.example.org/blog/index.html": ["../en/"],
    "http://api.example.org/v1/index.html": ["http://docs.example.org/en/"],
    "http://www.example.org/about.html": [],
    "http://example.net/x.html": [],
}  # fmt: skip


def test_a_domain_scope_covers_every_host_of_the_registrable_domain(crawl, db, tmp_path):
    """One test server answers for every host as an HTTP proxy would (Scrapy sends it absolute URLs), so that real
    host names reach it: a domain scope takes docs., api. and www.example.org, never example.net."""
    site = DocSite()
    for url, links in VHOSTS.items():
        site.put(url, html_page(url, f"<p>{url} words</p>", links))
    with DocSiteServer(site) as proxy:
        env = {"http_proxy": proxy.url, "no_proxy": ""}
        root = "http://docs.example.org/en/"
        assert crawl(url=root, library="domain", scope="domain", env=env).returncode == 0
        prefix = crawl(url=root, library="prefix", env=env)
        assert prefix.returncode == 0, prefix.stderr[-3000:]

    def urls(library: str) -> set[str]:
        rows = db.execute(
            "SELECT p.url FROM pages p JOIN versions v ON v.id = p.version_id JOIN libraries l ON l.id = v.library_id "
            "WHERE l.name = %s",
            (library,),
        ).fetchall()
        return {url for (url,) in rows}

    assert urls("domain") == {
        "http://docs.example.org/en/", "http://docs.example.org/en/guide.html", "http://docs.example.org/blog/",
        "http://api.example.org/v1/", "http://www.example.org/about.html",
    }  # fmt: skip
    assert urls("prefix") == {"http://docs.example.org/en/", "http://docs.example.org/en/guide.html"}
    assert not any(hit.path.startswith("http://example.net/") for hit in site.hits)


# --- private docs --------------------------------------------------------------------------------------------------

TOKEN = "tok-5ecret-7c1f"
PASSWORD = "pw-5ecret-a9e2"
PRIVATE = {
    "/docs/index.html": ["guide.html", "api.html"],
    "/docs/guide.html": ["index.html"],
    "/docs/api.html": ["index.html"],
}


def private_site(required: dict[str, str]) -> DocSite:
    site = DocSite()
    for path, links in PRIVATE.items():
        site.put(path, html_page(path, f"<p>Internal {path} words.</p>", links))
    site.required["/"] = required
    return site


def dump(db) -> str:
    """Every row of every table of the database, as text."""
    tables = db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return "\n".join(str(row[0]) for (table,) in tables for row in db.execute(f'SELECT t::text FROM "{table}" t'))


def test_private_docs_are_indexed_and_refreshed_with_headers_sent_to_their_host_alone(crawl, db):
    basic = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    required = {"PRIVATE-TOKEN": TOKEN, "Authorization": basic}
    other = DocSite()
    other.put("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
    other.put("/docs/index.html", html_page("Elsewhere", "<p>Another host's page.</p>", ["page.html"]))
    other.put("/docs/page.html", html_page("Elsewhere too", "<p>More of it.</p>"))
    env = {"DOCS_TOKEN": TOKEN, "DOCS_USER": "alice", "DOCS_PASSWORD": PASSWORD}
    private_args = {"headers": "PRIVATE-TOKEN=$DOCS_TOKEN", "http_auth": "$DOCS_USER:$DOCS_PASSWORD"}
    with DocSiteServer(private_site(required)) as private, DocSiteServer(other, host="127.0.0.2") as elsewhere:
        # robots.txt redirects to another host: Scrapy follows it, and copies every header to the hop
        private.site.redirects["/robots.txt"] = (302, f"{elsewhere.url}/robots.txt")
        root = f"{private.url}/docs/"
        refused = crawl(url=root, library="internal")
        assert refused.returncode == 1 and "the server answers 401" in refused.stderr, refused.stderr[-2000:]

        missing = crawl(url=root, library="internal", **private_args, env={"DOCS_TOKEN": TOKEN})
        assert missing.returncode == 1, missing.stderr[-2000:]
        assert "-a http_auth: the environment variable DOCS_USER is not set" in missing.stderr
        private.site.hits.clear()

        logs = []
        index = crawl(url=root, library="internal", **private_args, env=env)
        assert index.returncode == 0, index.stderr[-3000:]
        logs.append(index.stderr)
        assert f"private docs: headers PRIVATE-TOKEN, Authorization to {private.url.removeprefix('http://')}" in (
            index.stderr
        )
        assert {hit.path for hit in private.site.hits if hit.status == 200} == set(PRIVATE)
        assert all(hit.headers.get("private-token") == TOKEN for hit in private.site.hits)
        assert [hit.path for hit in elsewhere.site.hits] == ["/robots.txt"]
        assert all("private-token" not in h.headers and "authorization" not in h.headers for h in elsewhere.site.hits)

        private.site.hits.clear()
        refresh = crawl(library="internal", mode="refresh", env=env)  # the references come from the database
        assert refresh.returncode == 0, refresh.stderr[-3000:]
        logs.append(refresh.stderr)
        assert sorted(hit.status for hit in private.site.hits if hit.path in PRIVATE) == [304, 304, 304]

        private.site.hits.clear()
        without = crawl(library="internal", mode="refresh")  # the variables are not set in this environment
        assert without.returncode == 1 and "the environment variable DOCS_TOKEN is not set" in without.stderr
        assert private.site.hits == []
        logs.append(without.stderr)

        # a root that redirects to another host leaves its headers behind: the other host gets none
        private.site.redirects["/moved/index.html"] = (302, f"{elsewhere.url}/docs/")
        elsewhere.site.hits.clear()
        moved = crawl(url=f"{private.url}/moved/", library="moved", **private_args, env=env)
        assert moved.returncode == 0, moved.stderr[-3000:]
        logs.append(moved.stderr)
        assert {hit.path for hit in elsewhere.site.hits} >= {"/docs/index.html", "/docs/page.html"}
        assert all("private-token" not in h.headers and "authorization" not in h.headers for h in elsewhere.site.hits)

    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5
    settings = db.execute("SELECT v.settings FROM versions v WHERE v.name = ''").fetchall()
    assert {"PRIVATE-TOKEN=$DOCS_TOKEN"} == {h for (s,) in settings for h in s["headers"]}
    everything = dump(db) + "\n".join(logs)
    for secret in (TOKEN, PASSWORD, basic.split()[1]):
        assert secret not in everything
    arguments = db.execute("SELECT stats->'arguments' FROM crawl_runs WHERE mode = 'full' ORDER BY id").fetchall()
    assert arguments[-1][0]["headers"] == ["PRIVATE-TOKEN=$DOCS_TOKEN"]  # what the run was given: the reference
