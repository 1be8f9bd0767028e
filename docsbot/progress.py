"""Progress bars on a terminal (pure; no Scrapy): when a command draws them, and how its log lines then get past them.

A crawl (``scrapy crawl docs``, ``docsbot index``), ``docsbot embed`` and ``docsbot sync`` draw tqdm bars on stderr
(pages done of pages known, vectors done of waiting, rate and time left) **only** where a person watches a terminal:
:func:`progress_wanted` says so from ``DOCSBOT_PROGRESS`` (``auto``, ``on``, ``off``) and where the output goes. A log
file (``LOG_FILE``), a Scrapyd job (``SCRAPY_JOB`` in the environment, or its ``_job`` spider argument) and a Scrapy
Cloud job (``SHUB_JOBKEY``, whose log is JSON records) keep their log lines exactly as without bars: a ``\\r`` or a
bar's redraw in a log file is noise. While bars are drawn, :func:`log_past_bars` sends the console log handlers'
lines through ``tqdm.write`` (which clears the bars, writes the line and draws them again), so neither is torn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

__all__ = ["PROGRESS_MODES", "advance", "bar", "draw_until", "log_past_bars", "progress_wanted", "raw_stream"]

PROGRESS_MODES = ("auto", "on", "off")
# Environment variables that mean the output is a job's log, not a terminal: Scrapyd sets SCRAPY_JOB (and
# SCRAPY_LOG_FILE) for every job it starts; Scrapy Cloud sets SHUB_JOBKEY.
JOB_ENVIRONMENT = ("SCRAPY_JOB", "SHUB_JOBKEY")


def progress_wanted(
    mode: str,
    stream: Any = None,
    *,
    log_file: str | None = None,
    job: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> bool:
    """Whether to draw bars on ``stream`` (default ``sys.stderr``). ``mode``: ``on`` (always), ``off`` (never) or
    ``auto``: only when ``stream`` is a terminal (``isatty()``), no ``log_file`` is written, and neither a Scrapyd
    job (``job``, its ``_job`` spider argument, or ``SCRAPY_JOB``) nor a Scrapy Cloud job (``SHUB_JOBKEY``) runs
    the command (``environ``: ``os.environ`` by default). Raises ``ValueError`` for another ``mode``."""
    mode = str(mode).strip().lower()
    if mode not in PROGRESS_MODES:
        raise ValueError(f"DOCSBOT_PROGRESS={mode!r} is not valid: one of {', '.join(PROGRESS_MODES)}")
    if mode != "auto":
        return mode == "on"
    environ = os.environ if environ is None else environ
    if log_file or job or any(environ.get(name) for name in JOB_ENVIRONMENT):
        return False
    stream = raw_stream(sys.stderr if stream is None else stream)
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def raw_stream(stream: Any) -> Any:
    """The stream under a :class:`docsbot.display.EscapingStream` (which would write a bar's ``\\r`` and its colours as
    visible escapes), or ``stream`` itself. A bar's text is docsbot's own; the names in it go through
    :func:`docsbot.display.printable` first."""
    inner = getattr(stream, "_stream", None)
    return stream if inner is None else inner


def bar(desc: str, unit: str, *, total: int | None = None, position: int = 0, stream: Any = None) -> Any:
    """A tqdm bar on ``stream`` (default ``sys.stderr``'s raw stream): ``desc`` before it, counts in ``unit``
    (``page``, ``vector``), the rate in ``unit``/s and the time left once ``total`` is known, redrawn at most 4 times a
    second. ``position``: its line among the bars drawn at once (0 on top)."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        position=position,
        leave=True,
        dynamic_ncols=True,
        mininterval=0.25,
        file=raw_stream(sys.stderr if stream is None else stream),
    )


class _PastBars:
    """A text stream for a log handler: each write goes through ``tqdm.write`` (the bars are cleared, the line is
    written, the bars drawn again) to ``stream``."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        from tqdm import tqdm

        # the bars on the terminal under the stream are cleared; the line goes through the stream (escaped, if the
        # stream escapes), then the bars are drawn again
        with tqdm.external_write_mode(file=raw_stream(self.stream)):
            self.stream.write(text)
            self.stream.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())


@contextlib.contextmanager
def log_past_bars(logger: logging.Logger | None = None) -> Iterator[None]:
    """While inside: every console handler of ``logger`` (default the root logger; a ``StreamHandler`` on
    ``sys.stderr`` or ``sys.stdout``) writes its lines through ``tqdm.write``, with its level, format and filters
    kept (tqdm's own ``logging_redirect_tqdm`` drops the handler's level, so a crawl at INFO would print its DEBUG
    lines). Other handlers (a log file) are left alone. The handlers get their streams back on leaving."""
    logger = logger or logging.getLogger()
    swapped: list[tuple[logging.StreamHandler[Any], Any]] = []
    for handler in logger.handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stderr, sys.stdout):
            swapped.append((handler, handler.stream))
            handler.setStream(_PastBars(handler.stream))
    try:
        yield
    finally:
        for handler, stream in swapped:
            handler.setStream(stream)


async def draw_until(
    drawn: Any, counts: Callable[[], tuple[int, int]], done: asyncio.Event, every: float = 0.25
) -> None:
    """Redraw the tqdm bar ``drawn`` with ``counts()`` (done, total) every ``every`` seconds until ``done`` is set,
    once more then, and close it. Both counts may only grow (tqdm counts by increments)."""
    try:
        while True:
            finished = done.is_set()
            advance(drawn, *counts())
            if finished:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), every)
    finally:
        drawn.close()


def advance(drawn: Any, done: int, total: int | None) -> None:
    """Set the tqdm bar ``drawn`` to ``done`` of ``total`` (at least ``done``; ``None``: not known, a count alone)."""
    total = None if total is None else max(total, done)
    if drawn.total != total:
        drawn.total = total
        drawn.refresh()
    if done > drawn.n:
        drawn.update(done - drawn.n)
