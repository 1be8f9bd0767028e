"""docsbot's robots.txt middleware checks every request that waited for robots.txt, through Scrapy's public API.

These tests fail when Scrapy changes what :class:`docsbot.downloadermiddlewares.robotstxt.RobotsTxtMiddleware` relies
on: that ``robot_parser`` is a coroutine function ``process_request`` calls through ``self``, and that once it has
returned for a host it answers from its cache without downloading robots.txt again."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import TextResponse
from scrapy.utils.test import get_crawler

from docsbot.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

ROBOTS = b"User-agent: *\nDisallow: /private/\n"


class SlowEngine:
    """Stands in for the engine: robots.txt answers after a delay, so requests pile up behind its download."""

    def __init__(self, body: bytes | None = ROBOTS, delay: float = 0.05) -> None:
        self.body = body
        self.delay = delay
        self.downloads: list[str] = []

    async def download_async(self, request: Request) -> TextResponse:
        self.downloads.append(request.url)
        await asyncio.sleep(self.delay)
        if self.body is None:
            raise ConnectionRefusedError("robots.txt refused")
        return TextResponse(request.url, body=self.body)


def middleware(engine: SlowEngine, cls: type[ScrapyRobotsTxtMiddleware] = RobotsTxtMiddleware):
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    crawler.stats.open_spider()
    crawler.engine = engine
    return cls.from_crawler(crawler)


async def outcomes(mw: ScrapyRobotsTxtMiddleware, urls: list[str]) -> list[str]:
    results = await asyncio.gather(*(mw.process_request(Request(url)) for url in urls), return_exceptions=True)
    return ["forbidden" if isinstance(r, IgnoreRequest) else "allowed" if r is None else repr(r) for r in results]


def test_scrapy_robot_parser_is_still_a_coroutine_function_process_request_calls_through_self():
    assert inspect.iscoroutinefunction(ScrapyRobotsTxtMiddleware.robot_parser)
    assert inspect.iscoroutinefunction(ScrapyRobotsTxtMiddleware.process_request)
    calls: list[str] = []

    class Counting(RobotsTxtMiddleware):
        async def robot_parser(self, request):
            calls.append(request.url)
            return await super().robot_parser(request)

    assert asyncio.run(outcomes(middleware(SlowEngine(), Counting), ["http://h/private/a.html"])) == ["forbidden"]
    assert calls == ["http://h/private/a.html"]


def test_every_request_that_waited_for_robots_txt_is_checked():
    engine = SlowEngine()
    mw = middleware(engine)
    urls = [f"http://h/private/{i}.html" for i in range(20)] + ["http://h/public.html"]
    assert asyncio.run(outcomes(mw, urls)) == ["forbidden"] * 20 + ["allowed"]
    assert engine.downloads == ["http://h/robots.txt"]  # one download for the host, every waiter checked
    assert mw.crawler.stats.get_value("robotstxt/forbidden") == 20
    assert mw.crawler.stats.get_value("robotstxt/request_count") == 1


def test_later_requests_use_scrapys_cached_parser_without_another_download():
    engine = SlowEngine()
    mw = middleware(engine)

    async def twice():
        first = await outcomes(mw, ["http://h/private/a.html", "http://h/b.html"])
        engine.delay = 60  # a second download would hang the test: Scrapy's cache must answer
        second = await asyncio.wait_for(outcomes(mw, ["http://h/private/c.html", "http://h/d.html"]), 5)
        return first + second

    assert asyncio.run(twice()) == ["forbidden", "allowed"] * 2
    assert engine.downloads == ["http://h/robots.txt"]


def test_hosts_are_separate_and_a_failed_robots_txt_allows_everything_once():
    engine = SlowEngine(body=None)
    mw = middleware(engine)
    urls = [f"http://h/private/{i}.html" for i in range(5)] + ["http://other/private/x.html"]
    assert asyncio.run(outcomes(mw, urls)) == ["allowed"] * 6  # as in Scrapy: no robots.txt, no restriction
    assert sorted(engine.downloads) == ["http://h/robots.txt", "http://other/robots.txt"]


@pytest.mark.parametrize("waiters", [1, 3])
def test_a_cancelled_download_does_not_leave_waiters_hanging(waiters):
    mw = middleware(SlowEngine(delay=60))

    async def cancel_first():
        first = asyncio.ensure_future(mw.robot_parser(Request("http://h/private/a.html")))
        await asyncio.sleep(0.01)
        others = [asyncio.ensure_future(mw.robot_parser(Request(f"http://h/{i}.html"))) for i in range(waiters)]
        await asyncio.sleep(0.01)
        first.cancel()
        return await asyncio.wait_for(asyncio.gather(first, *others, return_exceptions=True), 5)

    results = asyncio.run(cancel_first())
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
