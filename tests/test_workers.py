"""ExtractionPool: extraction in real worker processes (and threads), errors and dead workers as exceptions."""

from __future__ import annotations

import asyncio
import os

import pytest

from docsbot.content.extract import ExtractionError, extract_page
from docsbot.content.pool import ExtractionPool, ExtractionTimeout, ExtractionWorkerDied, extract_body
from tests.test_extract import SPHINX

URL = "http://h/3/library/asyncio-task.html"


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(params=["process", "thread"])
def pool(request):
    pool = ExtractionPool(request.param, workers=2)
    yield pool
    pool.close()


def test_pool_extracts_what_extract_page_does(pool):
    async def main():
        return await asyncio.gather(*(pool.extract(SPHINX.encode(), URL, "utf-8") for _ in range(4)))

    pages = run(main())
    expected = extract_page(SPHINX, URL)
    assert all(page == expected for page in pages)
    assert pages[0].title == "Coroutines and Tasks"


def test_body_is_decoded_with_the_response_encoding_and_bom_dropped():
    html = "<html><head><title>Café</title></head><body><main><p>Ünïcödé — “quoted”</p></main></body></html>"
    page = extract_body(html.encode("cp1252"), "http://h/a.html", "cp1252")
    assert page.title == "Café"
    assert "Ünïcödé — “quoted”" in page.markdown
    with_bom = extract_body(b"\xef\xbb\xbf" + html.encode("utf-8"), "http://h/a.html", "utf-8")
    assert with_bom == page


def test_extraction_error_in_a_worker_comes_back_as_extraction_error(pool):
    with pytest.raises(ExtractionError, match="empty document"):
        run(pool.extract(b"  \n ", URL, "utf-8"))
    assert run(pool.extract(SPHINX.encode(), URL, "utf-8")).title == "Coroutines and Tasks"


def test_a_worker_that_dies_fails_its_task_and_the_pool_recovers():
    pool = ExtractionPool("process", workers=1)
    try:

        async def main():
            with pytest.raises(ExtractionWorkerDied, match="exited before answering"):
                await asyncio.wait_for(pool._run("a page", os._exit, 3), timeout=60)
            return await asyncio.wait_for(pool.extract(SPHINX.encode(), URL, "utf-8"), timeout=60)

        assert run(main()).title == "Coroutines and Tasks"
    finally:
        pool.close()


def test_no_worker_starts_before_the_first_page_and_a_closed_pool_refuses_work():
    pool = ExtractionPool("process", workers=2)
    assert pool._executor is None  # an all-304 refresh starts no process
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        run(pool.extract(SPHINX.encode(), URL, "utf-8"))


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="DOCSBOT_EXTRACT_POOL"):
        ExtractionPool("fork", workers=2)
    with pytest.raises(ValueError, match="DOCSBOT_EXTRACT_WORKERS"):
        ExtractionPool("process", workers=0)


def test_a_page_over_the_timeout_has_its_worker_stopped_and_the_other_pages_go_on():
    """A document that makes the converter loop must not stall the crawl: its worker is stopped after
    DOCSBOT_EXTRACT_TIMEOUT, the page fails with ExtractionTimeout, and a page extracted beside it is unaffected."""
    import time

    pool = ExtractionPool("process", workers=2, timeout=2)
    try:

        async def main():
            stuck = asyncio.ensure_future(pool._run("a looping page", time.sleep, 3600))
            beside = await asyncio.wait_for(pool.extract(SPHINX.encode(), URL, "utf-8"), timeout=60)
            with pytest.raises(ExtractionTimeout, match="a looping page took over 2 s"):
                await asyncio.wait_for(stuck, timeout=60)
            after = await asyncio.wait_for(pool.extract(SPHINX.encode(), URL, "utf-8"), timeout=60)
            return beside, after

        beside, after = run(main())
        assert beside.title == after.title == "Coroutines and Tasks"
    finally:
        pool.close()
