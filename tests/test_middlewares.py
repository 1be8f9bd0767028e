from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from docsbot.arguments import Credentials
from docsbot.downloadermiddlewares import (
    FETCHED_VALIDATORS_META_KEY,
    PAGE_META_KEY,
    RENDER_ON_200_META_KEY,
    SEED_FILE_META_KEY,
    VALIDATORS_META_KEY,
)
from docsbot.downloadermiddlewares.conditional import ConditionalRequestMiddleware, NotModified
from docsbot.downloadermiddlewares.credentials import CredentialsMiddleware
from docsbot.downloadermiddlewares.render import RenderMiddleware
from docsbot.downloadermiddlewares.scope import OutOfScope, ScopeMiddleware
from docsbot.urls import Scope, page_key

ETAG = '"6ac63c7b-23e59"'
LAST_MODIFIED = "Wed, 07 Oct 2026 12:35:07 GMT"


@pytest.fixture
def mw():
    crawler = get_crawler()
    crawler.stats.open_spider()
    return ConditionalRequestMiddleware.from_crawler(crawler)


def test_stored_validators_are_sent_back_byte_for_byte(mw):
    request = Request("http://h/a.html", meta={VALIDATORS_META_KEY: (ETAG, LAST_MODIFIED)})
    assert mw.process_request(request) is None
    assert request.headers[b"If-None-Match"] == ETAG.encode()
    assert request.headers[b"If-Modified-Since"] == LAST_MODIFIED.encode()
    assert mw.stats.get_value("docsbot/conditional_requests") == 1


@pytest.mark.parametrize(("etag", "last_modified"), [('W/"weak"', None), (None, LAST_MODIFIED)])
def test_only_the_validators_the_server_gave_are_sent(mw, etag, last_modified):
    request = Request("http://h/a.html", meta={VALIDATORS_META_KEY: (etag, last_modified)})
    mw.process_request(request)
    assert request.headers.get(b"If-None-Match") == (etag.encode() if etag else None)
    assert request.headers.get(b"If-Modified-Since") == (last_modified.encode() if last_modified else None)


def test_requests_without_validators_are_plain(mw):
    request = Request("http://h/new.html")
    mw.process_request(request)
    assert b"If-None-Match" not in request.headers and b"If-Modified-Since" not in request.headers


def test_validators_copied_to_a_redirect_target_are_removed(mw):
    # RedirectMiddleware copies headers and meta to the new request; the old page's ETag must not go to the new URL.
    redirected = Request(
        "http://h/moved.html",
        headers={"If-None-Match": ETAG, "If-Modified-Since": LAST_MODIFIED},
        meta={VALIDATORS_META_KEY: (ETAG, LAST_MODIFIED), "redirect_urls": ["http://h/a.html"]},
    )
    mw.process_request(redirected)
    assert b"If-None-Match" not in redirected.headers and b"If-Modified-Since" not in redirected.headers


def test_304_to_a_conditional_request_is_short_circuited(mw):
    request = Request("http://h/a.html", meta={VALIDATORS_META_KEY: (ETAG, None), PAGE_META_KEY: True})
    mw.process_request(request)
    with pytest.raises(NotModified) as raised:
        mw.process_response(request, Response("http://h/a.html", status=304))
    assert raised.value.response.status == 304
    assert mw.stats.get_value("docsbot/unchanged") == 1
    # a sitemap's (or llms.txt's) 304 is short-circuited alike but is no unchanged page
    sitemap = Request("http://h/sitemap.xml", meta={VALIDATORS_META_KEY: (ETAG, None)})
    mw.process_request(sitemap)
    with pytest.raises(NotModified):
        mw.process_response(sitemap, Response("http://h/sitemap.xml", status=304))
    assert mw.stats.get_value("docsbot/unchanged") == 1 and mw.stats.get_value("docsbot/conditional_requests") == 2


def test_other_responses_pass_through(mw):
    request = Request("http://h/a.html", meta={VALIDATORS_META_KEY: (ETAG, None)})
    mw.process_request(request)
    ok = HtmlResponse("http://h/a.html", status=200, body=b"<html></html>")
    assert mw.process_response(request, ok) is ok
    unsolicited = Response("http://h/b.html", status=304)
    assert mw.process_response(Request("http://h/b.html"), unsolicited) is unsolicited


@pytest.fixture
def stats():
    crawler = get_crawler()
    crawler.stats.open_spider()
    return crawler.stats


def page_request(url: str, **meta) -> Request:
    return Request(url, meta={PAGE_META_KEY: True, "depth": 1, **meta})


def scoped(root: str = "http://h/docs/index.html", **rules):
    scope = Scope.from_root(root, **rules)
    return scope, (lambda: scope), (lambda url: page_key(url) in scope.roots)


def test_scope_lets_pages_inside_the_root_directory_through(stats):
    _, scope, is_root = scoped()
    mw = ScopeMiddleware(scope, stats, is_root)
    assert mw.process_request(page_request("http://h/docs/a/b.html")) is None
    assert mw.process_request(page_request("http://H:80/docs/x.html")) is None  # same page, another spelling
    assert mw.process_request(Request("http://h/robots.txt")) is None  # not a page: robots.txt, sitemaps
    assert stats.get_value("docsbot/skipped/out_of_scope") is None


@pytest.mark.parametrize("url", ["http://h/other/x.html", "http://h:8080/docs/x.html", "http://elsewhere/docs/x.html"])
def test_scope_stops_pages_and_redirect_hops_outside_it(stats, url):
    _, scope, is_root = scoped()
    mw = ScopeMiddleware(scope, stats, is_root)
    hop = page_request(url, redirect_urls=["http://h/docs/moved.html"])
    with pytest.raises(OutOfScope):
        mw.process_request(hop)
    assert stats.get_value("docsbot/skipped/out_of_scope") == 1


def test_the_root_and_its_redirect_hops_always_pass_and_excluded_pages_do_not(stats):
    """The root is always fetched, wherever it redirects (that is where the scope is taken from), even when a
    pattern would keep it out; any other page is held to the patterns, and a seed file to the scope's hosts."""
    _, scope, is_root = scoped("http://h/docs/python", exclude=["*/python*", "/docs/cpp/*"])
    mw = ScopeMiddleware(scope, stats, is_root)
    assert mw.process_request(page_request("http://h/docs/python")) is None
    for hop in ("http://h/docs/python/", "https://other.example/somewhere/"):
        assert mw.process_request(page_request(hop, redirect_urls=["http://h/docs/python"])) is None
    for excluded in ("http://h/docs/python/x.html", "http://h/docs/cpp/index.html"):
        with pytest.raises(OutOfScope):
            mw.process_request(page_request(excluded))
    sitemap = Request("http://h/sitemap.xml", meta={SEED_FILE_META_KEY: "sitemap"})
    assert mw.process_request(sitemap) is None  # anywhere on the root's host
    with pytest.raises(OutOfScope):
        mw.process_request(Request("http://h:8080/sitemap.xml", meta={SEED_FILE_META_KEY: "sitemap"}))
    assert stats.get_value("docsbot/skipped/out_of_scope") == 3


def test_credentials_go_to_the_roots_host_alone_and_a_redirect_elsewhere_loses_them(stats):
    credentials = Credentials("docs.corp", "https", (("PRIVATE-TOKEN", b"t0ken"), ("Authorization", b"Basic YTpi")))
    scope = Scope.from_root("https://docs.corp/guide/")
    mw = CredentialsMiddleware(credentials, lambda: scope, stats)
    own = Request("https://docs.corp/guide/a.html")
    mw.process_request(own)
    assert own.headers[b"PRIVATE-TOKEN"] == b"t0ken" and own.headers[b"Authorization"] == b"Basic YTpi"
    # a hop Scrapy's redirect middleware built copies every header: elsewhere, they are taken off again
    for elsewhere in ("https://cdn.example/a.html", "https://docs.corp:8443/a.html", "http://docs.corp/a.html",
                      "https://sub.docs.corp/a.html"):  # fmt: skip
        hop = own.replace(url=elsewhere, meta={"redirect_urls": [own.url]})
        mw.process_request(hop)
        assert b"PRIVATE-TOKEN" not in hop.headers and b"Authorization" not in hop.headers, elsewhere
    unrelated = Request("https://cdn.example/a.html", headers={"Authorization": "Bearer theirs"})
    mw.process_request(unrelated)  # a header that is not ours stays
    assert unrelated.headers[b"Authorization"] == b"Bearer theirs"
    moved = Scope.from_root("https://docs.corp/guide/").rebased("https://docs.example/guide/")
    gone = CredentialsMiddleware(credentials, lambda: moved, stats)  # the root redirected to another host
    left = Request("https://docs.corp/guide/b.html")
    gone.process_request(left)
    assert b"PRIVATE-TOKEN" not in left.headers
    assert stats.get_value("docsbot/private/requests") == 1


def test_a_200_to_the_revalidation_of_a_rendered_page_becomes_its_browser_request(stats):
    mw = RenderMiddleware("networkidle", stats)
    request = page_request(
        "http://h/docs/app.html",
        **{VALIDATORS_META_KEY: ('"old"', None), RENDER_ON_200_META_KEY: True},
        redirect_urls=["http://h/docs/old-app.html"],
    )
    request.headers[b"If-None-Match"] = b'"old"'
    response = HtmlResponse(
        request.url, status=200, headers={"ETag": '"new"', "Last-Modified": LAST_MODIFIED}, body=b"<html></html>"
    )
    rendered = mw.process_response(request, response)
    assert isinstance(rendered, Request) and rendered.url == "http://h/docs/app.html" and rendered.dont_filter
    assert rendered.meta["playwright"] and rendered.meta["playwright_page_goto_kwargs"] == {"wait_until": "networkidle"}
    assert rendered.meta[FETCHED_VALIDATORS_META_KEY] == ('"new"', LAST_MODIFIED)
    assert rendered.meta["redirect_urls"] == ["http://h/docs/old-app.html"]
    assert VALIDATORS_META_KEY not in rendered.meta and b"If-None-Match" not in rendered.headers
    assert stats.get_value("docsbot/render/after_200") == 1


def test_other_answers_to_a_rendered_page_pass_through(stats):
    mw = RenderMiddleware("load", stats)
    request = page_request("http://h/docs/app.html", **{RENDER_ON_200_META_KEY: True})
    gone = Response(request.url, status=404)
    plain = page_request("http://h/docs/page.html")
    ok = HtmlResponse(plain.url, status=200, body=b"<html></html>")
    assert mw.process_response(request, gone) is gone
    assert mw.process_response(plain, ok) is ok


def test_a_redirect_to_a_stored_page_carries_that_pages_own_validators(stats):
    own = {"http://h/docs/start.html": ('"start-etag"', LAST_MODIFIED)}
    mw = ConditionalRequestMiddleware(stats, own.get)
    hop = page_request("http://h/docs/start.html", redirect_urls=["http://h/docs/"])
    hop.headers[b"If-None-Match"] = b'"the-old-urls-etag"'  # copied by Scrapy from the redirecting request
    mw.process_request(hop)
    assert hop.headers[b"If-None-Match"] == b'"start-etag"'
    other = page_request("http://h/docs/elsewhere.html", redirect_urls=["http://h/docs/"])
    other.headers[b"If-None-Match"] = b'"the-old-urls-etag"'
    mw.process_request(other)
    assert b"If-None-Match" not in other.headers and b"If-Modified-Since" not in other.headers
