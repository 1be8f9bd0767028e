from __future__ import annotations

import pytest

from docsbot.urls import (
    InvalidURL,
    Scope,
    UrlPattern,
    canonical_url,
    directory_of,
    is_download,
    page_key,
    registrable_domain,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://Docs.Example.org:80/a/b.html#frag", "http://docs.example.org/a/b.html"),
        ("https://docs.example.org/a?b=2&a=1", "https://docs.example.org/a?a=1&b=2"),
        ("https://docs.example.org/a%7eb", "https://docs.example.org/a~b"),
        # the path stays as the site wrote it: docsbot never invents a URL (page_key says which URLs are one page)
        ("https://docs.example.org/guide/index.html", "https://docs.example.org/guide/index.html"),
        ("https://docs.example.org/guide/", "https://docs.example.org/guide/"),
        ("https://docs.example.org", "https://docs.example.org/"),
    ],
)
def test_canonical_url(url, expected):
    assert canonical_url(url) == expected


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://docs.example.org/guide/index.html", "https://docs.example.org/guide/"),
        ("https://docs.example.org/guide/INDEX.HTM", "https://docs.example.org/guide/"),
        ("https://docs.example.org/guide/", "https://docs.example.org/guide/"),
        ("https://docs.example.org/guide/myindex.html", "https://docs.example.org/guide/myindex.html"),
        ("https://docs.example.org/index.html?x=1", "https://docs.example.org/index.html?x=1"),
    ],
)
def test_a_directory_and_its_index_page_are_one_page(url, key):
    assert page_key(url) == key


@pytest.mark.parametrize(
    ("url", "download"),
    [
        ("http://h/docs/manual.pdf", True),
        ("http://h/docs/archive.ZIP", True),
        ("http://h/docs/logo.png", True),
        ("http://h/docs/page.html", False),
        ("http://h/docs/v1.2/", False),
        ("http://h/docs/_sources/library/os.rst.txt", True),  # Sphinx's "Show Source"
        ("http://h/docs/README.md", True),
        ("http://h/docs/changes", False),
    ],
)
def test_links_to_files_scrapy_ignores_are_downloads(url, download):
    assert is_download(url) is download


def test_canonical_url_resolves_relative_links():
    assert canonical_url("../x/y.html#top", "http://h/docs/a/b.html") == "http://h/docs/x/y.html"


@pytest.mark.parametrize("url", ["not a url", "ftp://h/x", "mailto:a@b.c", "/relative/only"])
def test_invalid_urls_raise(url):
    with pytest.raises(InvalidURL):
        canonical_url(url)


def test_scope_is_host_and_directory_of_the_root():
    scope = Scope.from_root("http://127.0.0.1:8311/3/index.html")
    assert (scope.netloc, scope.path_prefix, scope.mode) == ("127.0.0.1:8311", "/3/", "prefix")
    assert "http://127.0.0.1:8311/3/library/asyncio.html" in scope
    assert "http://127.0.0.1:8311/2/index.html" not in scope
    assert "http://127.0.0.1:9999/3/index.html" not in scope
    assert "http://example.org/3/index.html" not in scope


def test_the_file_extensions_cover_scrapys_list():
    """docsbot.urls keeps its own copy of Scrapy's IGNORED_EXTENSIONS (the pure core imports no Scrapy): this fails
    when a Scrapy release adds an extension the copy lacks."""
    from scrapy.linkextractors import IGNORED_EXTENSIONS

    from docsbot.urls import FILE_EXTENSIONS

    assert set(IGNORED_EXTENSIONS) <= set(FILE_EXTENSIONS)


@pytest.mark.parametrize(
    ("path", "directory"),
    [
        ("/docs/python", "/docs/python/"),  # no page extension: a directory of its own
        ("/docs/python/", "/docs/python/"),
        ("/en/2.0", "/en/2.0/"),  # a version number is no file extension
        ("/docs/3.x", "/docs/3.x/"),
        ("/3/index.html", "/3/"),
        ("/api/page.PHP", "/api/"),
        ("/.well-known", "/.well-known/"),
        ("", "/"),
        ("/", "/"),
    ],
)
def test_the_roots_directory(path, directory):
    assert directory_of(path) == directory


ROOTS = "http://h/docs/python"
SITE = [
    "http://h/docs/python/", "http://h/docs/python/lib/os.html", "http://h/docs/cpp/", "http://h/blog/post.html",
    "http://h:8080/docs/python/x.html", "http://api.h/docs/python/x.html",
]  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "inside"),
    [
        ("prefix", {"http://h/docs/python/", "http://h/docs/python/lib/os.html"}),
        (
            "host",
            {
                "http://h/docs/python/",
                "http://h/docs/python/lib/os.html",
                "http://h/docs/cpp/",
                "http://h/blog/post.html",
            },
        ),  # fmt: skip
        ("domain", set(SITE)),  # h is under no public suffix: the host and its subdomains, any port
    ],
)
def test_scope_modes_reach_the_directory_the_host_or_the_domain(mode, inside):
    scope = Scope.from_root(ROOTS, mode)
    assert {url for url in SITE if url in scope} == inside
    assert ROOTS in scope  # the root itself, though /docs/python is not under /docs/python/


def test_a_domain_is_registrable_by_the_public_suffix_list_without_fetching_it(monkeypatch):
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("the Public Suffix List must come from the package, not the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    registrable_domain.cache_clear()
    assert registrable_domain("docs.python.org") == "python.org"
    assert registrable_domain("a.b.co.uk") == "b.co.uk"
    assert registrable_domain("foo.github.io") == "foo.github.io"  # a private suffix: each user's site apart
    assert registrable_domain("127.0.0.1") == "127.0.0.1"
    scope = Scope.from_root("https://docs.example.org/en/", "domain")
    assert scope.domain == "example.org"
    assert "https://api.example.org/v1/" in scope and "http://example.org:8080/x" in scope
    assert "https://example.net/" not in scope and "https://badexample.org/" not in scope
    assert "https://other.github.io/" not in Scope.from_root("https://foo.github.io/", "domain")


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("*/changelog/*", ["http://h/docs/changelog/1.html"], ["http://h/docs/changes.html"]),
        ("/blog/*", ["http://h/blog/a.html", "http://h/blog/2024/b.html"], ["http://h/docs/blog/a.html"]),
        ("/en/*", ["http://h/en/2.0/x.html"], ["http://h/fr/2.0/x.html"]),
        ("/search.html?q=*", ["http://h/search.html?q=x"], ["http://h/search.html"]),
        ("http://h/fr/*", ["http://h/fr/2.0/"], ["https://h/fr/2.0/"]),
        ("/\\/(fr|de)\\//", ["http://h/fr/2.0/", "http://h/de/x"], ["http://h/en/fr.html"]),
        ("/\\.pdf$/", ["http://h/a/b.pdf"], ["http://h/a/b.pdf.html"]),
    ],
)
def test_patterns_are_globs_on_the_url_or_its_path_or_regexes(pattern, matches, misses):
    compiled = UrlPattern.parse(pattern)
    assert [url for url in matches if compiled.matches(url)] == matches
    assert [url for url in misses if compiled.matches(url)] == []


def test_exclude_wins_over_include_and_the_root_is_always_inside():
    scope = Scope.from_root("http://h/", "host", include=["/en/*", "/"], exclude=["*/changelog/*", "/"])
    assert "http://h/" in scope  # excluded by a pattern, but the root
    assert "http://h/en/1.0/" in scope and "http://h/fr/2.0/" not in scope
    assert "http://h/en/1.0/changelog/x.html" not in scope
    assert scope.describe() == "host h, include /en/* /, exclude */changelog/* /"


def test_the_roots_redirect_moves_the_scope_and_keeps_the_root_inside():
    scope = Scope.from_root("http://h/python", exclude=["/docs/python/3.12/changelog/*"])
    assert scope.path_prefix == "/python/" and scope.directory_url == "http://h/python/"
    moved = scope.rebased("https://h/docs/python/3.12/index.html")
    assert (moved.netloc, moved.path_prefix, moved.base) == (
        "h",
        "/docs/python/3.12/",
        "https://h/docs/python/3.12/index.html",
    )
    assert "http://h/python" in moved and "https://h/docs/python/3.12/index.html" in moved
    assert "http://h/docs/python/3.12/os.html" in moved  # either scheme is the same site
    assert "http://h/docs/python/3.11/os.html" not in moved and "http://h/python/x.html" not in moved
    assert "https://h/docs/python/3.12/changelog/a.html" not in moved  # the patterns go along
    assert moved.describe() == "prefix h/docs/python/3.12/, exclude /docs/python/3.12/changelog/*"


@pytest.mark.parametrize("bad", ["/(/", "  "])
def test_a_malformed_pattern_is_named(bad):
    with pytest.raises(ValueError, match="not a regular expression|an empty pattern"):
        UrlPattern.parse(bad)
