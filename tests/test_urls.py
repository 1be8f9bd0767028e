from __future__ import annotations

import pytest

from docsbot.urls import InvalidURL, Scope, canonical_url, is_download, page_key


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
    assert scope == Scope("127.0.0.1:8311", "/3/")
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
