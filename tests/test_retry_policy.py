"""The one retry policy of every database step (docsbot.store.RetryPolicy, on tenacity): what it retries, how long
it waits, what it raises once the attempts are spent. The faults themselves (a server stopped and restarted under a
crawl, an embedding worker, a fleet) are in tests/test_faults.py."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest
from psycopg_pool import PoolClosed, PoolTimeout

from docsbot.store.connection import RetryPolicy, StoreUnavailable, retry_sync


def failing(times: int, error: BaseException):
    calls = []

    def operation() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "done"

    return operation, calls


def test_a_broken_connection_is_retried_with_growing_jittered_waits_and_each_retry_is_logged(caplog, monkeypatch):
    waits = []
    monkeypatch.setattr("time.sleep", waits.append)
    operation, calls = failing(3, psycopg.OperationalError("server closed the connection unexpectedly"))
    with caplog.at_level(logging.WARNING, "docsbot.store.connection"):
        assert retry_sync(RetryPolicy(retries=4, delay=0.5, max_delay=1.5), "storing a page", operation) == "done"
    assert len(calls) == 4 and len(waits) == 3
    for wait, backoff in zip(waits, (0.5, 1.0, 1.5), strict=True):  # doubled, capped, each ±50%
        assert backoff * 0.5 <= wait <= backoff * 1.5
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "storing a page: OperationalError: server closed the connection unexpectedly"
    ] * 3


def test_spent_attempts_are_one_store_unavailable_naming_the_step_and_the_count(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda _: None)
    operation, calls = failing(10, PoolTimeout("couldn't get a connection after 30.00 sec"))
    gave_up = r"^loading the stored pages: PoolTimeout: .* \(gave up after 3 attempts\)$"
    with pytest.raises(StoreUnavailable, match=gave_up):
        retry_sync(RetryPolicy(retries=2), "loading the stored pages", operation)
    assert len(calls) == 3


@pytest.mark.parametrize("error", [ValueError("a bug"), psycopg.errors.UniqueViolation("refused")])
def test_a_bug_or_a_refusal_is_raised_at_once(error, monkeypatch):
    monkeypatch.setattr("time.sleep", lambda _: pytest.fail("nothing is retried"))
    operation, calls = failing(1, error)
    with pytest.raises(type(error)):
        retry_sync(RetryPolicy(retries=4), "a step", operation)
    assert len(calls) == 1


def test_a_closed_pool_is_not_retried_and_says_after_how_many_attempts(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda _: pytest.fail("nothing is retried"))
    operation, calls = failing(1, PoolClosed("the pool 'pool-1' is already closed"))
    with pytest.raises(StoreUnavailable, match=r"^a step: PoolClosed: .* \(gave up after 1 attempt\)$"):
        retry_sync(RetryPolicy(retries=4), "a step", operation)
    assert len(calls) == 1


def test_the_async_form_waits_without_blocking_and_stops_early_once_told():
    async def main() -> tuple[int, int]:
        calls, stopping = [], False

        async def claim() -> None:
            nonlocal stopping
            calls.append(1)
            if len(calls) == 2:
                stopping = True  # the worker was told to stop while it retried
            raise psycopg.OperationalError("the server is starting up")

        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        beat = asyncio.ensure_future(ticker())
        with pytest.raises(psycopg.OperationalError):
            async for attempt in RetryPolicy(retries=5, delay=0.02).async_retrying("a claim", until=lambda: stopping):
                with attempt:
                    await claim()
        beat.cancel()
        return len(calls), ticks

    calls, ticks = asyncio.run(main())
    assert calls == 2  # not the six attempts the policy allows
    assert ticks > 1  # the event loop ran while the policy waited
