from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from docsbot.middlewares import VALIDATORS_META_KEY, ConditionalRequestMiddleware, NotModified

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
    request = Request("http://h/a.html", meta={VALIDATORS_META_KEY: (ETAG, None)})
    mw.process_request(request)
    with pytest.raises(NotModified) as raised:
        mw.process_response(request, Response("http://h/a.html", status=304))
    assert raised.value.response.status == 304
    assert mw.stats.get_value("docsbot/unchanged") == 1


def test_other_responses_pass_through(mw):
    request = Request("http://h/a.html", meta={VALIDATORS_META_KEY: (ETAG, None)})
    mw.process_request(request)
    ok = HtmlResponse("http://h/a.html", status=200, body=b"<html></html>")
    assert mw.process_response(request, ok) is ok
    unsolicited = Response("http://h/b.html", status=304)
    assert mw.process_response(Request("http://h/b.html"), unsolicited) is unsolicited
