"""The ``docs`` spider: full index (``-a url=URL``) and refresh (``-a library=NAME -a mode=refresh``).

It decides *what* to request. Every request for a URL already in the index carries that page's stored
validators and depth, however the URL was reached (seed or link); the downloader middleware decides how to
revalidate (:mod:`docsbot.middlewares`), the pipelines what to store (:mod:`docsbot.pipelines`). The refresh
rules of the README's "Refresh" section live here and in those two modules.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse

from docsbot import db
from docsbot.embedding import load_embedder
from docsbot.extract import ExtractionError, content_hash, extract_page
from docsbot.index import IndexContext
from docsbot.items import PageGone, PageItem
from docsbot.middlewares import VALIDATORS_META_KEY, NotModified
from docsbot.urls import InvalidURL, Scope, canonical_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

MODES = ("full", "refresh")
GONE = (404, 410)


class SpiderArgumentError(ValueError):
    """A spider argument is missing or malformed; the crawl does not start and nothing is touched."""


def _optional_int(name: str, value: Any, minimum: int) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SpiderArgumentError(f"-a {name} must be an integer, got {value!r}") from None
    if number < minimum:
        raise SpiderArgumentError(f"-a {name} must be >= {minimum}, got {number}")
    return number


@dataclass(frozen=True)
class CrawlArguments:
    """The docs spider's arguments (``-a name=value``), validated.

    - ``url``: root URL of the docs (full index; a refresh reads it from the database).
    - ``library``: library name; defaults to the root URL's host. ``version``: version string, default ``''``.
    - ``mode``: ``full`` (default with ``url``) fetches every page without validators; ``refresh`` revalidates.
    - ``max_depth``: link hops from the root (root = 0); ``max_pages``: pages requested at most. A refresh
      reuses the values stored by the index unless given again.
    """

    url: str | None
    library: str
    version: str
    mode: str
    max_depth: int | None
    max_pages: int | None

    @classmethod
    def parse(
        cls,
        url: str | None = None,
        library: str | None = None,
        version: str | None = None,
        mode: str | None = None,
        max_depth: Any = None,
        max_pages: Any = None,
    ) -> CrawlArguments:
        mode = (mode or ("full" if url else "refresh")).strip().lower()
        if mode not in MODES:
            raise SpiderArgumentError(f"-a mode must be one of {', '.join(MODES)}, got {mode!r}")
        if url:
            try:
                url = canonical_url(url)
            except InvalidURL as exc:
                raise SpiderArgumentError(f"-a url: {exc}") from None
        elif mode == "full":
            raise SpiderArgumentError("a full index needs -a url=ROOT_URL")
        if not library:
            if not url:
                raise SpiderArgumentError("a refresh needs -a library=NAME (and -a version=VER if it has one)")
            library = urlsplit(url).hostname or ""
        return cls(
            url=url,
            library=library.strip(),
            version=(version or "").strip(),
            mode=mode,
            max_depth=_optional_int("max_depth", max_depth, 0),
            max_pages=_optional_int("max_pages", max_pages, 1),
        )


class DocsSpider(scrapy.Spider):
    name = "docs"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        known = {
            k: kwargs.pop(k) for k in ("url", "library", "version", "mode", "max_depth", "max_pages") if k in kwargs
        }
        super().__init__(*args, **kwargs)  # Scrapyd's _job and other extra arguments land as attributes
        self.args = CrawlArguments.parse(**known)
        self.index: IndexContext | None = None
        self._requested: set[str] = set()
        self._started = time.monotonic()
        self._run_id: int | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DocsSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._open_index(crawler)
        return spider

    # --- setup (synchronous: a failure here stops `scrapy crawl` with exit code 1 before anything is written) ---

    def _open_index(self, crawler: Crawler) -> None:
        settings = crawler.settings
        args = self.args
        dsn = db.resolve_dsn(settings)
        embedder = load_embedder(settings)
        with db.connect(dsn) as conn:
            db.migrate(conn)
            if args.mode == "refresh":
                version = db.find_version(conn, args.library, args.version)
                if version is None:
                    known = ", ".join(f"{v.library}@{v.name}" if v.name else v.library for v in db.list_versions(conn))
                    raise db.DatabaseError(
                        f"nothing to refresh: library {args.library!r} version {args.version!r} is not indexed "
                        f"(indexed: {known or 'none'}); index it first with -a url=ROOT_URL"
                    )
                stored = version.settings
                self.root_url = args.url or version.root_url
                self.max_depth = args.max_depth if args.max_depth is not None else stored.get("max_depth")
                self.max_pages = args.max_pages if args.max_pages is not None else stored.get("max_pages")
            else:
                self.root_url = args.url
                self.max_depth, self.max_pages = args.max_depth, args.max_pages
                version = db.upsert_version(
                    conn,
                    args.library,
                    args.version,
                    self.root_url,
                    {"max_depth": self.max_depth, "max_pages": self.max_pages},
                )
            db.bind_model(conn, version, embedder.name, embedder.dim)
        self.scope = Scope.from_root(self.root_url)
        self.allowed_domains = [urlsplit(self.root_url).hostname]
        self.index = IndexContext(
            version, args.mode, db.PageStore(dsn, settings.getint("DOCSBOT_DB_POOL_SIZE")), embedder
        )
        logger.info(
            "%s of %s from %s (scope %s%s, max_depth=%s, max_pages=%s)",
            args.mode,
            self.index.label,
            self.root_url,
            self.scope.netloc,
            self.scope.path_prefix,
            self.max_depth,
            self.max_pages,
        )

    # --- requests ---

    async def start(self) -> AsyncIterator[scrapy.Request]:
        index = self.index
        await index.store.open()
        index.stored = await index.store.stored_pages(index.version.id)
        self._run_id = await index.store.start_run(index.version.id, index.mode)
        logger.info("%d pages of %s are stored", len(index.stored), index.label)
        root = self.request_for(self.root_url, parent_depth=-1)
        if root is not None:
            yield root
        # Seeds in depth order; each stored page is requested once (the root included) whoever reaches it first.
        for page in list(index.stored.values()):
            request = self.request_for(page.url, parent_depth=page.depth - 1)
            if request is not None:
                yield request

    def request_for(self, url: str, parent_depth: int) -> scrapy.Request | None:
        """The request for ``url`` found at ``parent_depth`` + 1, or ``None`` if it was requested already, is out
        of scope, or is past ``max_depth``/``max_pages``. A stored page keeps its stored depth and carries its
        validators (refresh mode)."""
        if url in self._requested or url not in self.scope:
            return None
        stored = self.index.stored.get(url)
        depth = stored.depth if stored else parent_depth + 1
        if self.max_depth is not None and depth > self.max_depth:
            return None
        if self.max_pages is not None and len(self._requested) >= self.max_pages:
            return None
        self._requested.add(url)
        meta: dict[str, Any] = {"depth": depth}
        if stored and self.index.refresh:
            meta[VALIDATORS_META_KEY] = (stored.etag, stored.last_modified)
        return scrapy.Request(url, callback=self.parse_page, errback=self.page_failed, meta=meta)

    def _follow(self, links: Iterator[str] | list[str] | tuple[str, ...], depth: int) -> Iterator[scrapy.Request]:
        for link in links:
            request = self.request_for(link, depth)
            if request is not None:
                yield request

    # --- responses ---

    def parse_page(self, response: scrapy.http.Response) -> Iterator[scrapy.Request | PageItem | PageGone]:
        index = self.index
        url = canonical_url(response.url)
        stored = index.stored.get(url)
        depth = stored.depth if stored else response.meta["depth"]
        if url not in self.scope:
            self.crawler.stats.inc_value("docsbot/skipped/out_of_scope")
            logger.info("not indexing %s: redirected out of scope %s%s", url, self.scope.netloc, self.scope.path_prefix)
            return
        if response.status in GONE:
            if stored:
                yield PageGone(index.version.id, stored.id, url, response.status)
            return
        if not isinstance(response, HtmlResponse):
            self.crawler.stats.inc_value("docsbot/skipped/not_html")
            logger.info("not indexing %s: %s is not HTML", url, response.headers.get("Content-Type", b"?").decode())
            return
        try:
            page = extract_page(response.text, url)
        except ExtractionError as exc:
            self.crawler.stats.inc_value("docsbot/skipped/unparseable")
            logger.warning("not indexing %s: %s", url, exc)
            if stored:
                yield from self._follow(stored.links, depth)
            return
        links = [link for link in page.links if link in self.scope]
        yield from self._follow(links, depth)
        yield PageItem(
            version_id=index.version.id,
            url=url,
            title=page.title,
            markdown=page.markdown,
            content_hash=content_hash(page.title, page.markdown),
            depth=depth,
            links=links,
            etag=_header(response, b"ETag"),
            last_modified=_header(response, b"Last-Modified"),
            content_type=_header(response, b"Content-Type"),
            canonical_url=page.canonical_url,
            page_id=stored.id if stored else None,
            stored_hash=stored.content_hash if stored else None,
        )

    def page_failed(self, failure: Failure) -> Iterator[scrapy.Request]:
        """304 (:class:`NotModified`) or a failure after Scrapy's retries: the page stays as stored, and its stored
        links are followed so that pages reachable only through it are still reached."""
        request = failure.request
        url = canonical_url(request.url)
        stored = self.index.stored.get(url)
        if not failure.check(NotModified):
            self.crawler.stats.inc_value("docsbot/failed")
            logger.warning("keeping %s as it was: %s", url, failure.getErrorMessage() or failure.type.__name__)
        if stored:
            yield from self._follow(stored.links, stored.depth)

    # --- end of run ---

    async def closed(self, reason: str) -> None:
        """Record the run in ``crawl_runs``, log the one-line summary, close the connection pool."""
        index = self.index
        if index is None:
            return
        all_stats = self.crawler.stats.get_stats()
        counts = {k.removeprefix("docsbot/"): v for k, v in all_stats.items() if k.startswith("docsbot/")}
        statuses = {
            k.rsplit("/", 1)[1]: v for k, v in all_stats.items() if k.startswith("downloader/response_status_count/")
        }
        elapsed = time.monotonic() - self._started
        summary = {
            **counts,
            "responses_by_status": statuses,
            "bytes_downloaded": all_stats.get("downloader/response_bytes", 0),
            "requests": all_stats.get("downloader/request_count", 0),
            "elapsed_seconds": round(elapsed, 3),
            "finish_reason": reason,
            "arguments": asdict(self.args),
        }
        try:
            if self._run_id is not None:
                await index.store.finish_run(self._run_id, summary)
        finally:
            await index.store.close()
        logger.info(
            "%s of %s: %d unchanged, %d modified, %d new, %d deleted, %d failed in %.1f s (%s)",
            index.mode,
            index.label,
            counts.get("unchanged", 0),
            counts.get("modified", 0),
            counts.get("new", 0),
            counts.get("deleted", 0),
            counts.get("failed", 0),
            elapsed,
            reason,
        )


def _header(response: scrapy.http.Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
