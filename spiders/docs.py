"""The ``docs`` spider: full index (``-a url=URL``) and refresh (``-a library=NAME -a mode=refresh``).

It decides *what* to request. Every request for a URL already in the index carries that page's stored
validators and depth, however the URL was reached (seed or link); the downloader middleware decides how to
revalidate (:mod:`docsbot.middlewares`), the pipelines what to store (:mod:`docsbot.pipelines`). The refresh
rules of the README's "Refresh" section live here and in those two modules.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import scrapy
from protego import Protego
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse
from scrapy.utils.sitemap import Sitemap

from docsbot import db
from docsbot.embedding import load_embedder
from docsbot.errors import DocsbotError
from docsbot.extract import ExtractionError, content_hash, extract_page
from docsbot.index import IndexContext
from docsbot.items import PageGone, PageItem
from docsbot.middlewares import PAGE_META_KEY, VALIDATORS_META_KEY, NotModified, OutOfScope
from docsbot.render import RENDER_MODES, RenderPolicy, enable_rendering
from docsbot.urls import InvalidURL, Scope, canonical_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    import psycopg
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from docsbot.db import StoredPage

logger = logging.getLogger(__name__)

MODES = ("full", "refresh")
PRUNE = ("none", "orphans")
GONE = (404, 410)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# On a request revalidated over plain HTTP: render the page in the browser if it answers 200.
RENDER_ON_200_META_KEY = "docsbot_render_on_200"
# On a render request that follows such a 200: that response's (etag, last_modified), the ones to store.
FETCHED_VALIDATORS_META_KEY = "docsbot_fetched_validators"


class SpiderArgumentError(DocsbotError, ValueError):
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


def _duration(name: str, value: Any) -> timedelta | None:
    if value in (None, "", "0"):
        return None
    m = _DURATION.match(str(value).lower())
    if not m:
        raise SpiderArgumentError(f"-a {name} must be a duration like 45s, 30m, 12h, 7d or 2w; got {value!r}")
    return timedelta(seconds=float(m.group(1)) * _DURATION_UNITS[m.group(2)])


def _flag(name: str, value: Any) -> bool:
    text = str(value or "0").strip().lower()
    if text not in ("0", "1", "true", "false", "yes", "no"):
        raise SpiderArgumentError(f"-a {name} must be 1 or 0, got {value!r}")
    return text in ("1", "true", "yes")


@dataclass(frozen=True)
class CrawlArguments:
    """The docs spider's arguments (``-a name=value``), validated.

    - ``url``: root URL of the docs (full index; a refresh reads it from the database).
    - ``library``: library name; defaults to the root URL's host. ``version``: version string, default ``''``.
    - ``mode``: ``full`` (default with ``url``) fetches every page without validators; ``refresh`` revalidates.
    - ``max_depth``: link hops from the root (root = 0); ``max_pages``: pages requested at most. A refresh
      reuses the values stored by the index unless given again (so does ``prune``).
    - ``prune``: ``orphans`` deletes stored pages no longer linked from the root (within scope and depth) at the
      end of a completed run; ``none`` (default) only reports them.
    - ``allow_mass_delete``: ``1`` lifts the mass-deletion guard (``DOCSBOT_MASS_DELETE_SHARE``) for this run.
    - ``min_recheck``: a duration (``45s``, ``30m``, ``12h``, ``7d``, ``2w``); stored pages revalidated more
      recently are not requested (their stored links are followed).
    - ``sitemap``: URL of a sitemap (or sitemap index) whose in-scope URLs are added as seeds; by default the
      sitemaps robots.txt names are used; ``none`` uses none.
    - ``render``: ``js`` renders every page in Chromium through scrapy-playwright (:mod:`docsbot.render`);
      ``none`` (default) renders only URLs matching ``DOCSBOT_RENDER_URLS``. Stored by the index, reused by
      refreshes unless given again.
    """

    url: str | None
    library: str
    version: str
    mode: str
    max_depth: int | None
    max_pages: int | None
    prune: str | None = None
    allow_mass_delete: bool = False
    min_recheck: timedelta | None = None
    sitemap: str | None = None
    render: str | None = None

    @classmethod
    def parse(
        cls,
        url: str | None = None,
        library: str | None = None,
        version: str | None = None,
        mode: str | None = None,
        max_depth: Any = None,
        max_pages: Any = None,
        prune: str | None = None,
        allow_mass_delete: Any = None,
        min_recheck: Any = None,
        sitemap: str | None = None,
        render: str | None = None,
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
        if prune is not None and prune not in PRUNE:
            raise SpiderArgumentError(f"-a prune must be one of {', '.join(PRUNE)}, got {prune!r}")
        if sitemap and sitemap != "none":
            try:
                sitemap = canonical_url(sitemap)
            except InvalidURL as exc:
                raise SpiderArgumentError(f"-a sitemap: {exc}") from None
        if render is not None:
            render = render.strip().lower()
            if render not in RENDER_MODES:
                raise SpiderArgumentError(f"-a render must be one of {', '.join(RENDER_MODES)}, got {render!r}")
        return cls(
            url=url,
            library=library.strip(),
            version=(version or "").strip(),
            mode=mode,
            max_depth=_optional_int("max_depth", max_depth, 0),
            max_pages=_optional_int("max_pages", max_pages, 1),
            prune=prune,
            allow_mass_delete=_flag("allow_mass_delete", allow_mass_delete),
            min_recheck=_duration("min_recheck", min_recheck),
            sitemap=sitemap or None,
            render=render,
        )


class DocsSpider(scrapy.Spider):
    name = "docs"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = [f.name for f in fields(CrawlArguments)]
        known = {k: kwargs.pop(k) for k in names if k in kwargs}
        super().__init__(*args, **kwargs)  # Scrapyd's _job and other extra arguments land as attributes
        self.args = CrawlArguments.parse(**known)
        self.index: IndexContext | None = None
        self._requested: set[str] = set()  # every URL requested this run (docsbot dedupes, not Scrapy)
        self._linked: set[str] = set()  # URLs reached from the root through links, within scope and depth
        self._claimed: set[str] = set()  # URLs whose page was stored (or moved there) this run
        self._moved: set[int] = set()  # stored page ids that moved to a new URL (redirect)
        self._truncated = False  # max_pages cut the crawl short: orphans cannot be told
        self.root_ok = False
        self._started = time.monotonic()
        self._run_id: int | None = None
        self._run_lock: psycopg.Connection | None = None  # holds the version's run lock while the crawl runs

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
                self.root_url = args.url or canonical_url(version.root_url)
                self.max_depth = args.max_depth if args.max_depth is not None else stored.get("max_depth")
                self.max_pages = args.max_pages if args.max_pages is not None else stored.get("max_pages")
                self.prune = args.prune or stored.get("prune") or "none"
                render_mode = args.render or stored.get("render") or "none"
                self._configure_rendering(crawler, render_mode)
                self._run_lock = db.lock_version(dsn, version)
            else:
                self.root_url = args.url
                self.max_depth, self.max_pages, self.prune = args.max_depth, args.max_pages, args.prune or "none"
                render_mode = args.render or "none"
                self._configure_rendering(crawler, render_mode)
                existing = db.find_version(conn, args.library, args.version)
                if existing is not None:
                    self._run_lock = db.lock_version(dsn, existing)
                version = db.upsert_version(
                    conn,
                    args.library,
                    args.version,
                    self.root_url,
                    {
                        "max_depth": self.max_depth,
                        "max_pages": self.max_pages,
                        "prune": self.prune,
                        "render": render_mode,
                    },
                )
                if existing is None:
                    self._run_lock = db.lock_version(dsn, version)
            db.bind_model(conn, version, embedder.name, lambda: embedder.dim)
        self.scope = Scope.from_root(self.root_url)
        self.mass_delete_share = settings.getfloat("DOCSBOT_MASS_DELETE_SHARE")
        self.index = IndexContext(
            version, args.mode, db.PageStore(dsn, settings.getint("DOCSBOT_DB_POOL_SIZE")), embedder
        )
        logger.info(
            "%s of %s from %s (scope %s%s, max_depth=%s, max_pages=%s, prune=%s, render=%s)",
            args.mode,
            self.index.label,
            self.root_url,
            self.scope.netloc,
            self.scope.path_prefix,
            self.max_depth,
            self.max_pages,
            self.prune,
            render_mode if self.render.all_pages or not self.render.enabled else "DOCSBOT_RENDER_URLS",
        )

    def _configure_rendering(self, crawler: Crawler, render_mode: str) -> None:
        """Which pages go through the browser; with any, the download handler becomes scrapy-playwright's (the
        crawler applies its settings after the spider is created). Raises before anything is written."""
        settings = crawler.settings
        try:
            self.render = RenderPolicy.from_settings(render_mode, settings.get("DOCSBOT_RENDER_URLS"))
        except ValueError as exc:
            raise SpiderArgumentError(str(exc)) from None
        self.render_wait_until = settings.get("DOCSBOT_RENDER_WAIT_UNTIL")
        if self.render.enabled:
            enable_rendering(settings)

    # --- requests ---

    async def start(self) -> AsyncIterator[scrapy.Request]:
        index = self.index
        await index.store.open()
        index.stored = await index.store.stored_pages(index.version.id)
        self._run_id = await index.store.start_run(index.version.id, index.mode)
        logger.info("%d pages of %s are stored", len(index.stored), index.label)
        for request in self._requests([self.root_url], -1):
            yield request
        if self.args.sitemap and self.args.sitemap != "none":
            yield scrapy.Request(self.args.sitemap, callback=self.parse_sitemap, dont_filter=True)
        elif self.args.sitemap is None:  # the sitemaps robots.txt names, if any
            robots = urlunsplit((*urlsplit(self.root_url)[:2], "/robots.txt", "", ""))
            yield scrapy.Request(
                robots,
                callback=self.parse_robots,
                errback=lambda _: None,
                dont_filter=True,
                meta={"dont_obey_robotstxt": True},
            )
        # Seeds in depth order; each page is requested once (the root included) by whichever request comes first.
        for page in list(index.stored.values()):
            for request in self._requests([page.url], page.depth - 1, linked=False):
                yield request

    def _recently_checked(self, page: StoredPage) -> bool:
        if self.args.min_recheck is None or page.last_checked_at is None or page.url == self.root_url:
            return False
        return page.last_checked_at > datetime.now(UTC) - self.args.min_recheck

    def _requests(self, urls: Iterable[str], parent_depth: int, *, linked: bool = True) -> Iterator[scrapy.Request]:
        """Requests for ``urls`` found at ``parent_depth`` + 1, skipping URLs already requested, out of scope or
        past ``max_depth``/``max_pages``. A stored page keeps its stored depth and, in refresh mode, carries its
        validators. A stored page checked within ``min_recheck`` is not requested; its stored links are followed.
        ``linked``: the URLs come from links (not seeds), so they count as reachable (see orphans)."""
        stack = [(url, parent_depth, linked) for url in reversed(list(urls))]
        while stack:
            url, parent, via_link = stack.pop()
            if url not in self.scope:
                continue
            stored = self.index.stored.get(url)
            depth = stored.depth if stored else parent + 1
            if self.max_depth is not None and depth > self.max_depth:
                continue
            if via_link:
                self._linked.add(url)
            if url in self._requested:
                continue
            if self.max_pages is not None and len(self._requested) >= self.max_pages:
                self._truncated = True
                continue
            self._requested.add(url)
            if stored and self._recently_checked(stored):
                self.crawler.stats.inc_value("docsbot/skipped/recently_checked")
                stack.extend((link, stored.depth, True) for link in reversed(stored.links))
                continue
            meta: dict[str, Any] = {"depth": depth, PAGE_META_KEY: True}
            render = self.render(url)
            if stored and self.index.refresh and (stored.etag or stored.last_modified or not render):
                meta[VALIDATORS_META_KEY] = (stored.etag, stored.last_modified)
                if render:
                    meta[RENDER_ON_200_META_KEY] = True  # revalidate over plain HTTP; render only if changed
            elif render:
                meta.update(self._render_meta())
            yield scrapy.Request(url, callback=self.parse_page, errback=self.page_failed, meta=meta, dont_filter=True)

    def _render_meta(self) -> dict[str, Any]:
        return {"playwright": True, "playwright_page_goto_kwargs": {"wait_until": self.render_wait_until}}

    def _render_after_200(self, response: scrapy.http.Response) -> scrapy.Request:
        """The plain conditional request for a rendered page answered 200 (the page changed): render it, keeping
        the plain response's validators (a browser navigation cannot be revalidated later)."""
        self.crawler.stats.inc_value("docsbot/render/after_200")
        meta = {
            "depth": response.meta["depth"],
            PAGE_META_KEY: True,
            FETCHED_VALIDATORS_META_KEY: (_header(response, b"ETag"), _header(response, b"Last-Modified")),
            **self._render_meta(),
        }
        if response.meta.get("redirect_urls"):
            meta["redirect_urls"] = response.meta["redirect_urls"]
        return scrapy.Request(
            response.url, callback=self.parse_page, errback=self.page_failed, meta=meta, dont_filter=True
        )

    # --- responses ---

    def parse_page(self, response: scrapy.http.Response) -> Iterator[scrapy.Request | PageItem | PageGone]:
        """200 and 404/410 answers (after redirects). The refresh table of the README, row by row."""
        index = self.index
        url = canonical_url(response.url)
        origin = canonical_url(response.meta["redirect_urls"][0]) if response.meta.get("redirect_urls") else url
        origin_page = index.stored.get(origin)
        if origin == self.root_url:
            if response.status in GONE:
                self._abort_root(f"{response.status} at {response.url}")
            self.root_ok = True
        if response.status in GONE:
            if origin_page:
                yield PageGone(index.version.id, origin_page.id, origin, str(response.status))
            return
        if response.meta.get(RENDER_ON_200_META_KEY) and isinstance(response, HtmlResponse):
            yield self._render_after_200(response)
            return
        if response.meta.get("playwright"):
            self.crawler.stats.inc_value("docsbot/rendered")
            if url not in self.scope:  # the browser followed a redirect (or script navigation) out of scope
                self.crawler.stats.inc_value("docsbot/skipped/out_of_scope")
                logger.warning("not indexing %s: the render of %s ended out of scope", url, origin)
                return
        if not isinstance(response, HtmlResponse):
            self.crawler.stats.inc_value("docsbot/skipped/not_html")
            content_type = response.headers.get("Content-Type", b"unknown").decode("latin-1")
            logger.info("not indexing %s: %s is not HTML", url, content_type)
            if origin_page:
                yield from self._requests(origin_page.links, origin_page.depth)
            return
        try:
            extracted = extract_page(response.text, url)
        except ExtractionError as exc:
            self.crawler.stats.inc_value("docsbot/skipped/unparseable")
            logger.warning("not indexing %s: %s", url, exc)
            if origin_page:
                yield from self._requests(origin_page.links, origin_page.depth)
            return
        # The stored URL: the final URL after redirects, or the page's <link rel="canonical"> inside the scope
        # (one page reached under several paths is stored once).
        target = url
        if extracted.canonical_url and extracted.canonical_url != url and extracted.canonical_url in self.scope:
            target = extracted.canonical_url
        page = index.stored.get(target)
        links = [link for link in extracted.links if link in self.scope]
        yield from self._requests(links, page.depth if page else response.meta["depth"])
        if origin_page and origin_page is not page:
            # The stored row we came from now redirects (or is a duplicate path). It moves to the target URL
            # unless that URL has its own row or was stored already this run; then the old row goes.
            if page is None and target not in self._claimed:
                page = origin_page
                self._moved.add(page.id)
                logger.info("%s moved to %s", origin, target)
            else:
                yield PageGone(index.version.id, origin_page.id, origin, f"now {target}")
        if target in self._claimed:
            return  # stored already this run, reached again under another URL
        self._claimed.add(target)
        self._requested.add(target)
        etag, last_modified = response.meta.get(FETCHED_VALIDATORS_META_KEY) or (
            _header(response, b"ETag"),
            _header(response, b"Last-Modified"),
        )
        yield PageItem(
            version_id=index.version.id,
            url=target,
            title=extracted.title,
            markdown=extracted.markdown,
            content_hash=content_hash(extracted.title, extracted.markdown),
            depth=page.depth if page else response.meta["depth"],
            links=links,
            etag=etag,
            last_modified=last_modified,
            content_type=_header(response, b"Content-Type"),
            canonical_url=extracted.canonical_url,
            page_id=page.id if page else None,
            stored_hash=page.content_hash if page else None,
            anchors=list(extracted.anchors),
            symbols=list(extracted.symbols),
            link_share=extracted.link_share,
        )

    def page_failed(self, failure: Failure) -> Iterator[scrapy.Request | PageGone]:
        """304 (:class:`NotModified`), a redirect out of scope, or a failure after Scrapy's retries (5xx, 429,
        timeouts, DNS, refused connections, TLS, robots.txt, size cap). Only a redirect out of scope removes the
        page; otherwise it stays as stored and its stored links are followed, so that pages reachable only
        through it are still reached."""
        request = failure.request
        redirects = request.meta.get("redirect_urls")
        url = canonical_url(redirects[0] if redirects else request.url)
        page = self.index.stored.get(url)
        if failure.check(NotModified):
            if url == self.root_url:
                self.root_ok = True
            if page:
                self.index.checked.add(page.id)
        elif failure.check(OutOfScope) and redirects:
            logger.info("%s now redirects out of scope to %s", url, request.url)
            if url == self.root_url:
                self._abort_root(f"redirect out of scope to {request.url}")
            if page:
                yield PageGone(self.index.version.id, page.id, url, f"redirects out of scope to {request.url}")
            return
        else:
            self.crawler.stats.inc_value("docsbot/failed")
            reason = failure.getErrorMessage() or failure.type.__name__
            if url == self.root_url:
                self._abort_root(reason)
            logger.warning("keeping %s as it was: %s", url, reason)
        if page:
            yield from self._requests(page.links, page.depth)

    def _abort_root(self, reason: str) -> None:
        logger.error("the root URL %s failed (%s): stopping; nothing is deleted", self.root_url, reason)
        raise CloseSpider("root_failed")

    def parse_robots(self, response: scrapy.http.Response) -> Iterator[scrapy.Request]:
        if response.status != 200:
            return
        for url in Protego.parse(response.text).sitemaps:
            try:
                url = canonical_url(url, response.url)
            except InvalidURL:
                continue
            if urlsplit(url).netloc == self.scope.netloc:
                yield scrapy.Request(url, callback=self.parse_sitemap, dont_filter=True)

    def parse_sitemap(self, response: scrapy.http.Response) -> Iterator[scrapy.Request]:
        """Sitemap URLs inside the scope become seeds (and count as reachable); ``<lastmod>`` is not trusted:
        every page is still revalidated. A sitemap index is followed."""
        try:
            sitemap = Sitemap(response.body)
        except Exception as exc:  # noqa: BLE001 - a broken sitemap is reported, not fatal
            logger.warning("ignoring sitemap %s: %s", response.url, exc)
            return
        for entry in sitemap:
            try:
                loc = canonical_url(entry["loc"], response.url)
            except (InvalidURL, KeyError):
                continue
            if sitemap.type == "sitemapindex":
                yield scrapy.Request(loc, callback=self.parse_sitemap, dont_filter=True)
            else:
                yield from self._requests([loc], 0)

    # --- end of run ---

    async def closed(self, reason: str) -> None:
        """Apply the run's deletions if it completed, mark the pages it checked, record the run in
        ``crawl_runs``, log the one-line summary, close the connection pool."""
        index = self.index
        if index is None:
            return
        stats = self.crawler.stats
        try:
            if self._run_id is not None:
                await self._apply_deletions(reason)
                await index.store.mark_checked(self._run_id, sorted(index.checked))
                await index.store.finish_run(self._run_id, self._run_summary(reason))
        finally:
            await index.store.close()
            if self._run_lock is not None:
                self._run_lock.close()
        counts = {k.removeprefix("docsbot/"): v for k, v in stats.get_stats().items() if k.startswith("docsbot/")}
        logger.info(
            "%s of %s: %d unchanged, %d modified, %d new, %d deleted, %d failed in %.1f s (%s)",
            index.mode,
            index.label,
            counts.get("unchanged", 0),
            counts.get("modified", 0),
            counts.get("new", 0),
            counts.get("deleted", 0),
            counts.get("failed", 0),
            time.monotonic() - self._started,
            reason,
        )

    async def _apply_deletions(self, reason: str) -> None:
        index, stats = self.index, self.crawler.stats
        gone = dict(index.gone)
        if reason != "finished" or not self.root_ok:
            if gone:
                logger.warning(
                    "the run did not complete (%s): %d gone pages are kept until a complete run", reason, len(gone)
                )
            return
        orphans = {}
        if not self._truncated:
            for url, page in index.stored.items():
                if url not in self._linked and page.id not in gone and page.id not in self._moved:
                    orphans[page.id] = url
            stats.set_value("docsbot/orphans", len(orphans))
            if orphans:
                sample = ", ".join(sorted(orphans.values())[:5])
                action = "deleting them (prune=orphans)" if self.prune == "orphans" else "kept; -a prune=orphans"
                logger.info("%d orphan pages no longer linked from the root: %s … (%s)", len(orphans), sample, action)
        doomed = {**gone, **(orphans if self.prune == "orphans" else {})}
        if not doomed:
            return
        total = max(len(index.stored), 1)
        if len(doomed) > self.mass_delete_share * total and not self.args.allow_mass_delete:
            stats.set_value("docsbot/deletion_refused", len(doomed))
            logger.warning(
                "not deleting %d of %d pages of %s (more than %.0f%%): if the site really lost them, rerun with "
                "-a allow_mass_delete=1",
                len(doomed),
                total,
                index.label,
                100 * self.mass_delete_share,
            )
            return
        deleted = await index.store.delete_pages(sorted(doomed))
        index.checked.difference_update(doomed)
        stats.set_value("docsbot/deleted", deleted)
        for page_id in sorted(gone):
            logger.info("deleted %s", gone[page_id])

    def _run_summary(self, reason: str) -> dict[str, Any]:
        all_stats = self.crawler.stats.get_stats()
        summary: dict[str, Any] = {
            k.removeprefix("docsbot/"): v for k, v in all_stats.items() if k.startswith("docsbot/")
        }
        summary["responses_by_status"] = {
            k.rsplit("/", 1)[1]: v for k, v in all_stats.items() if k.startswith("downloader/response_status_count/")
        }
        summary["bytes_downloaded"] = all_stats.get("downloader/response_bytes", 0)
        summary["requests"] = all_stats.get("downloader/request_count", 0)
        summary["elapsed_seconds"] = round(time.monotonic() - self._started, 3)
        summary["finish_reason"] = reason
        args = {f.name: getattr(self.args, f.name) for f in fields(self.args)}
        args["min_recheck"] = str(args["min_recheck"]) if args["min_recheck"] else None
        summary["arguments"] = args
        return summary


def _header(response: scrapy.http.Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
