"""HTTP freshness (RFC 9111 §4.2): the rule itself, then `-a freshness=http` on a real server that sends
Cache-Control: an unchanged refresh inside max-age sends no page request, and one conditional request per page
after it; no-cache keeps every page revalidated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from docsbot.refresh.freshness import fresh_until, parse_cache_control
from tests.test_crawl import index, last_run, refresh

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def until(headers: dict[str, str], latency: float = 0.0, **kwargs) -> datetime | None:
    return fresh_until(headers, request_time=T0 - timedelta(seconds=latency), response_time=T0, **kwargs)


def http_date(when: datetime) -> str:
    return format_datetime(when, usegmt=True)


def test_cache_control_directives_are_read_as_rfc_9111_writes_them():
    assert parse_cache_control('max-age=60, No-Cache="Set-Cookie", private') == {
        "max-age": "60",
        "no-cache": "Set-Cookie",
        "private": None,
    }
    assert parse_cache_control(None) == {}


def test_explicit_freshness_wins_in_the_order_a_shared_cache_reads_it():
    date = {"date": http_date(T0)}
    assert until({**date, "cache-control": "max-age=600"}) == T0 + timedelta(seconds=600)
    assert until({**date, "cache-control": "max-age=600, s-maxage=60"}) == T0 + timedelta(seconds=60)
    expires = {**date, "expires": http_date(T0 + timedelta(hours=2))}
    assert until(expires) == T0 + timedelta(hours=2)
    assert until({**expires, "cache-control": "max-age=60"}) == T0 + timedelta(seconds=60)  # max-age beats Expires
    assert until({**date, "expires": "0"}) is None  # an invalid Expires is already expired


def test_age_and_the_exchange_delay_are_taken_off():
    headers = {"date": http_date(T0), "cache-control": "max-age=600", "age": "100"}
    assert until(headers, latency=2.0) == T0 + timedelta(seconds=600 - 102)
    assert until({"date": http_date(T0), "cache-control": "max-age=60", "age": "61"}) is None


def test_no_cache_and_no_store_are_never_fresh():
    for directive in ("no-cache", "no-store", "max-age=600, no-cache"):
        assert until({"date": http_date(T0), "cache-control": directive}) is None


def test_without_explicit_freshness_a_tenth_of_the_last_modified_age_capped_at_a_day():
    ten_hours = {"date": http_date(T0), "last-modified": http_date(T0 - timedelta(hours=10))}
    assert until(ten_hours) == T0 + timedelta(hours=1)
    old = {"date": http_date(T0), "last-modified": http_date(T0 - timedelta(days=400))}
    assert until(old) == T0 + timedelta(days=1)
    # a 304 without Last-Modified: the stored one
    assert until({"date": http_date(T0)}, last_modified=http_date(T0 - timedelta(hours=10))) == T0 + timedelta(hours=1)
    assert until({"date": http_date(T0)}) is None  # nothing to go by


def test_an_unchanged_refresh_inside_max_age_sends_no_page_request_and_one_per_page_after(crawl, docsite, db):
    site = docsite.site
    site.cache_control = "max-age=3600"
    index(crawl, docsite)
    stored = db.execute("SELECT count(*), count(*) FILTER (WHERE fresh_until > now()) FROM pages").fetchone()
    assert stored == (5, 5)
    site.hits.clear()
    refresh(crawl, freshness="http")
    assert site.statuses() == {}  # not one page requested
    run = last_run(db)
    assert run["skipped/fresh"] == 5 and run.get("deleted", 0) == 0
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5  # nothing lost for not asking

    db.execute("UPDATE pages SET fresh_until = now() - interval '1 second'")  # the hour is over
    site.hits.clear()
    refresh(crawl, freshness="http")
    statuses = site.statuses()
    assert sorted(statuses) == ["/docs/api.html", "/docs/deep.html", "/docs/flaky.html", "/docs/guide.html",
                                "/docs/index.html"] and all(s == [304] for s in statuses.values())  # fmt: skip
    # the 304s' headers made every page fresh again
    assert db.execute("SELECT count(*) FROM pages WHERE fresh_until > now()").fetchone()[0] == 5


def test_no_cache_keeps_every_page_revalidated_and_validators_mode_ignores_freshness(crawl, docsite, db):
    site = docsite.site
    site.cache_control = "no-cache"
    index(crawl, docsite)
    assert db.execute("SELECT count(*) FROM pages WHERE fresh_until IS NOT NULL").fetchone()[0] == 0
    site.hits.clear()
    refresh(crawl, freshness="http")
    assert len(site.statuses()) == 5
    site.cache_control = "max-age=3600"
    refresh(crawl)  # the 304s store their freshness, but without -a freshness=http every page is revalidated
    site.hits.clear()
    refresh(crawl)
    assert len(site.statuses()) == 5 and last_run(db)["skipped/fresh"] == 0
