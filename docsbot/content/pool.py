"""HTML → Markdown off the reactor thread: :class:`ExtractionPool`, one worker pool per crawl.

Extraction (:func:`docsbot.content.extract.extract_page`) and chunking cost tens of milliseconds of CPU per page,
mostly Python that holds the GIL (lxml's parse, docsbot's walks over the tree, the tokenizer's bookkeeping). On the
reactor thread that time would stop downloading; in threads it would still hold the GIL. In worker processes the
reactor keeps downloading and two cores both work: that is why the default pool kind is ``process``
(BENCHMARKS.md, "Extraction off the reactor thread", has the measurements). Threads remain an option
(``DOCSBOT_EXTRACT_POOL=thread``) for platforms where processes cannot start.

Operationally:

- Workers start on first use (an all-304 refresh starts none, and its process does not even import extraction,
  chunking or pebble: the tasks below import them when they first run) from multiprocessing's ``forkserver`` where it
  exists (Linux, macOS), else ``spawn``; never ``fork``: the crawler process has threads (Scrapy's DNS and
  embedding threads, psycopg pools) whose locks a forked child could inherit held. The fork server is a clean
  interpreter that imports :mod:`docsbot.content.extract` once; each worker is forked from it. Nothing of the spider or
  crawler is pickled: a task is ``(body bytes, url, encoding)`` and its result an
  :class:`~docsbot.content.extract.ExtractedPage`. Workers import the parent's main module only as ``__mp_main__``
  (``python -m scrapy`` not even that), and ``scrapy``'s console script and Scrapyd's ``scrapyd.runner`` keep
  their work behind ``if __name__ == "__main__"``; they get the parent's ``sys.path``, so a Scrapyd job's egg
  too (tests/test_deploy.py indexes through Scrapyd with this pool).
- The process pool is pebble's ``ProcessPool`` (a maintained library; the standard ``ProcessPoolExecutor`` can
  neither stop one task nor survive a dead worker). :class:`~docsbot.content.extract.ExtractionError` raised in a worker
  is re-raised to the caller unchanged. A worker that dies (killed, out of memory, a crash in a C library) fails
  its page with :class:`ExtractionWorkerDied`; a page whose extraction runs longer than ``DOCSBOT_EXTRACT_TIMEOUT``
  seconds (a pathological document that makes the converter loop) has its worker stopped and fails with
  :class:`ExtractionTimeout`. Either way pebble starts a new worker, the other pages in flight go on, and the
  spider keeps the stored page as it was and counts it failed. Nothing waits forever. Threads cannot be stopped:
  ``thread`` and ``inline`` have no timeout.
- The pool is shut down at ``spider_closed`` (workers exit; queued tasks are cancelled).

Settings: ``DOCSBOT_EXTRACT_POOL`` (``process``, default; ``thread``; ``inline`` runs on the calling thread, for
debugging), ``DOCSBOT_EXTRACT_WORKERS`` (``0``, default: the number of CPUs, at most 4) and
``DOCSBOT_EXTRACT_TIMEOUT`` (seconds of wall time per page in a worker, default 60; 0 = no limit).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy import signals

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pebble import ProcessPool
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from docsbot.content.changes import PageDiff
    from docsbot.content.chunking import Chunker, Definition, TextChunk
    from docsbot.content.extract import ExtractedPage

__all__ = [
    "POOL_KINDS",
    "ChunkedPage",
    "ChunkerSpec",
    "ExtractionPool",
    "ExtractionTimeout",
    "ExtractionWorkerDied",
    "chunk_markdown",
    "chunk_page",
    "diff_markdown",
    "extract_body",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

POOL_KINDS = ("process", "thread", "inline")
HTML_COMPRESSION_LEVEL = 1  # zlib's, of the kept HTML (extract_body)
_MAX_DEFAULT_WORKERS = 4
DEFAULT_TIMEOUT = 60.0


class ExtractionWorkerDied(DocsbotError, RuntimeError):
    """The worker process extracting a page exited before answering (killed, out of memory, crashed). The page
    is not extracted; the pool starts a new worker for the next pages."""


class ExtractionTimeout(ExtractionWorkerDied):
    """A page's extraction ran longer than ``DOCSBOT_EXTRACT_TIMEOUT`` seconds; its worker was stopped (and
    replaced). The page is not extracted."""


def extract_body(body: bytes, url: str, encoding: str | None, keep_html: bool = False) -> ExtractedPage:
    """:func:`~docsbot.content.extract.extract_page` of a response body: what a worker runs. ``encoding`` is the
    response's (``TextResponse.encoding``: HTTP header, BOM, ``<meta>`` or detection); ``None`` means UTF-8.
    With ``keep_html``, the page carries ``body`` zlib-compressed (RFC 1950) at level 1, spent here in the worker,
    not on the reactor: the Python docs' 48 MiB of HTML make 8.8 MiB in 0.24 s of CPU, against 7.0 MiB in 0.68 s
    at zlib's default level 6, in a full index that is CPU-bound. Raises
    :class:`~docsbot.content.extract.ExtractionError`."""
    from docsbot.content.extract import extract_page

    page = extract_page(body, url, encoding=encoding)
    if keep_html:
        page.html = zlib.compress(body, HTML_COMPRESSION_LEVEL)
    return page


@dataclass(frozen=True)
class ChunkerSpec:
    """How a worker builds the run's :class:`~docsbot.content.chunking.Chunker`: chunks of at most ``max_tokens`` tokens
    of the tokenizer saved at ``tokenizer_file`` (a ``tokenizer.json``; ``None``: characters / 4). A path, not the
    tokenizer: a task pickles a few bytes, and each worker loads the file once."""

    max_tokens: int
    tokenizer_file: str | None = None


_chunkers: dict[ChunkerSpec, Chunker] = {}


def chunk_markdown(markdown: str, anchors: list[tuple[int, str]], spec: ChunkerSpec) -> list[TextChunk]:
    """:meth:`Chunker.chunks <docsbot.content.chunking.Chunker.chunks>` with the chunker ``spec`` describes, built once
    per process (with its cache of word token counts): what a worker runs. About 9 ms of CPU per Python-docs page here
    (14 ms while each page was encoded whole, 60 ms while semantic-text-splitter tokenized every candidate chunk
    itself; on the reactor thread that held a full index's crawl)."""
    chunker = _chunkers.get(spec)
    if chunker is None:
        from docsbot.content.chunking import Chunker

        tokenizer = None
        if spec.tokenizer_file is not None:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(spec.tokenizer_file)
        chunker = _chunkers[spec] = Chunker(spec.max_tokens, tokenizer)
    return chunker.chunks(markdown, anchors)


@dataclass(frozen=True)
class ChunkedPage:
    """What :func:`chunk_page` makes of a page: its ``chunks``, the ``definitions`` embedded on their own beside them
    (:func:`~docsbot.content.chunking.own_vectors`; none when definitions are off) and ``symbol_hashes``
    (:func:`~docsbot.content.changes.symbol_doc_hashes`)."""

    chunks: list[TextChunk]
    definitions: list[Definition]
    symbol_hashes: dict[str, str]


def chunk_page(
    markdown: str,
    anchors: list[tuple[int, str]],
    symbols: list[tuple[str, ...]],
    spec: ChunkerSpec,
    definition_chars: int,
) -> ChunkedPage:
    """A page's chunks (:func:`chunk_markdown`), its definitions of at most ``definition_chars`` characters (0: none)
    and its symbols' documentation hashes, in one task: the three read the same Markdown, which
    :func:`docsbot.content.commonmark.parse` then parses once (on the reactor thread the definitions' parse cost about 2
    s of the Python docs' full index, 2026-11-27)."""
    from docsbot.content.changes import symbol_doc_hashes
    from docsbot.content.chunking import definitions, own_vectors

    chunks = chunk_markdown(markdown, anchors, spec)
    found: list[Definition] = []
    if definition_chars > 0:
        found = own_vectors(definitions(markdown, anchors, symbols, definition_chars), [c.content for c in chunks])
    return ChunkedPage(chunks, found, symbol_doc_hashes(markdown, anchors, symbols))


def diff_markdown(old: str, new: str, anchors: list[tuple[int, str]], max_bytes: int) -> PageDiff:
    """:func:`docsbot.content.changes.page_diff`: what a worker runs for a page whose stored text a refresh replaces."""
    from docsbot.content.changes import page_diff

    return page_diff(old, new, anchors, max_bytes)


def _mp_context() -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        # The fork server imports extraction once (not the parent's __main__); workers are forked from it.
        ctx.set_forkserver_preload(["docsbot.content.extract", "docsbot.content.chunking", "docsbot.content.changes"])
        return ctx
    return multiprocessing.get_context("spawn")


def default_workers(settings: BaseSettings) -> int:
    workers = settings.getint("DOCSBOT_EXTRACT_WORKERS", 0)
    return workers if workers > 0 else max(1, min(_MAX_DEFAULT_WORKERS, os.cpu_count() or 1))


class ExtractionPool:
    """Runs :func:`extract_body` in a pool of ``workers`` processes (``kind="process"``) or threads
    (``"thread"``), or on the calling thread (``"inline"``). Built once per crawl by :meth:`from_crawler`,
    which closes it at ``spider_closed``. Must be awaited from the asyncio event loop (Scrapy's default
    asyncio reactor). ``timeout``: seconds a worker process may spend on one page (``None``: no limit).

    Stats (with a crawler): ``docsbot/extract/pages``, ``docsbot/extract/worker_died``,
    ``docsbot/extract/timeout``.
    """

    def __init__(
        self,
        kind: str = "process",
        workers: int = 2,
        crawler: Crawler | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        if kind not in POOL_KINDS:
            raise ValueError(f"DOCSBOT_EXTRACT_POOL must be one of {', '.join(POOL_KINDS)}, got {kind!r}")
        if workers < 1:
            raise ValueError(f"DOCSBOT_EXTRACT_WORKERS must be >= 1, got {workers}")
        if timeout is not None and timeout < 0:
            raise ValueError(f"DOCSBOT_EXTRACT_TIMEOUT must be >= 0 seconds, got {timeout}")
        self.kind = kind
        self.workers = workers
        self.crawler = crawler
        self.timeout = timeout or None
        self._executor: ProcessPool | ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ExtractionPool:
        settings = crawler.settings
        pool = cls(
            settings.get("DOCSBOT_EXTRACT_POOL", "process"),
            default_workers(settings),
            crawler,
            settings.getfloat("DOCSBOT_EXTRACT_TIMEOUT", DEFAULT_TIMEOUT),
        )
        crawler.signals.connect(pool.close, signal=signals.spider_closed)
        return pool

    def _get_executor(self) -> ProcessPool | ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("the extraction pool is closed")
            if self._executor is None:
                if self.kind == "process":
                    from pebble import ProcessPool

                    self._executor = ProcessPool(max_workers=self.workers, context=_mp_context())
                else:
                    self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="docsbot-extract")
                logger.debug("started %d extraction %s workers", self.workers, self.kind)
            return self._executor

    def _count(self, stat: str) -> None:
        if self.crawler is not None:
            self.crawler.stats.inc_value(stat)

    async def extract(self, body: bytes, url: str, encoding: str | None, keep_html: bool = False) -> ExtractedPage:
        """The page extracted from ``body`` (the response's bytes, ``encoding`` as Scrapy resolved it), carrying
        ``body`` compressed with ``keep_html`` (:func:`extract_body`).

        Raises :class:`~docsbot.content.extract.ExtractionError` (empty or unparseable document) and
        :class:`ExtractionWorkerDied` (the worker exited before answering).
        """
        self._count("docsbot/extract/pages")
        if self.kind == "inline":
            return extract_body(body, url, encoding, keep_html)
        return await self._run(url, extract_body, body, url, encoding, keep_html)

    async def chunk(
        self,
        markdown: str,
        anchors: list[tuple[int, str]],
        symbols: list[tuple[str, ...]],
        spec: ChunkerSpec,
        definition_chars: int,
        url: str,
    ) -> ChunkedPage:
        """A page's chunks, definitions and symbol hashes (:func:`chunk_page`), in the pool like its extraction.
        Raises :class:`ExtractionTimeout` and :class:`ExtractionWorkerDied` (``url`` names the page in them)."""
        self._count("docsbot/extract/chunked")
        args = (markdown, anchors, symbols, spec, definition_chars)
        if self.kind == "inline":
            return chunk_page(*args)
        return await self._run(f"the chunks of {url}", chunk_page, *args)

    async def diff(self, old: str, new: str, anchors: list[tuple[int, str]], max_bytes: int, url: str) -> PageDiff:
        """How a page's new Markdown differs from its stored Markdown (:func:`diff_markdown`), in the pool. Raises
        :class:`ExtractionTimeout` and :class:`ExtractionWorkerDied`."""
        self._count("docsbot/extract/diffed")
        if self.kind == "inline":
            return diff_markdown(old, new, anchors, max_bytes)
        return await self._run(f"the diff of {url}", diff_markdown, old, new, anchors, max_bytes)

    async def _run(self, what: str, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in the pool; ``what`` names the task in errors. Raises :class:`ExtractionTimeout` and
        :class:`ExtractionWorkerDied` (process pool), or what ``func`` raised."""
        executor = self._get_executor()
        if isinstance(executor, ThreadPoolExecutor):
            return await asyncio.wrap_future(executor.submit(func, *args))
        from pebble import ProcessExpired  # loaded with the pool

        try:
            return await asyncio.wrap_future(executor.schedule(func, args=args, timeout=self.timeout))
        except FutureTimeout as exc:
            self._count("docsbot/extract/timeout")
            raise ExtractionTimeout(
                f"extracting {what} took over {self.timeout:g} s (DOCSBOT_EXTRACT_TIMEOUT); its worker was stopped"
            ) from exc
        except ProcessExpired as exc:
            self._count("docsbot/extract/worker_died")
            raise ExtractionWorkerDied(
                f"the extraction worker for {what} exited before answering (exit code {exc.exitcode})"
            ) from exc

    def close(self) -> None:
        """Stop the workers (they are idle at the end of a crawl); pending tasks are cancelled. Idempotent."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None and not isinstance(executor, ThreadPoolExecutor):  # pebble's ProcessPool
            executor.stop()
            executor.join()
        elif executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
