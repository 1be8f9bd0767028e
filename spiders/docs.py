"""The ``docs`` spider: full index (``-a url=URL``) and refresh (``-a library=NAME -a mode=refresh``).

It decides *what* to request and hands each answer to the refresh rules. Where each part of a run lives:

- the refresh rules (which stored row a response belongs to, what is gone, what is deleted): the pure
  :mod:`docsbot.refresh`, asked through the run's :class:`~docsbot.refresh.RefreshLedger`;
- setup, start and end of the run (migrations, version, run lock, ``crawl_runs``, deletions): the
  :class:`docsbot.run.IndexRun` extension;
- how a stored page is revalidated (conditional requests, 304), kept in scope and rendered:
  :mod:`docsbot.middlewares`;
- what is stored (chunks, embeddings, one transaction per page): :mod:`docsbot.pipelines`.

The spider's arguments are :class:`docsbot.arguments.CrawlArguments`.
"""

from __future__ import annotations

import logging
import re
import typing
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import scrapy
from protego import Protego
from scrapy import signals
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

from docsbot.arguments import ARGUMENT_NAMES, CrawlArguments
from docsbot.extract import EXTRACTOR_VERSION, ConverterFailed, ExtractionError, content_hash
from docsbot.freshness import fresh_until
from docsbot.items import PageGone, PageItem
from docsbot.middlewares import (
    FETCHED_VALIDATORS_META_KEY,
    PAGE_META_KEY,
    REEXTRACT_META_KEY,
    RENDER_ON_200_META_KEY,
    SEED_FILE_META_KEY,
    VALIDATORS_META_KEY,
    AlreadyRequested,
    ForbiddenByRobots,
    NotModified,
    OutOfScope,
    RobotsTxtMiddleware,
    render_meta,
)
from docsbot.refresh import RootFailed
from docsbot.run import check_components, count_failure, index_context
from docsbot.store import SeedFile, StoreUnavailable
from docsbot.urls import InvalidURL, canonical_url, is_download, page_key
from docsbot.workers import ExtractionPool, ExtractionWorkerDied

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from docsbot.refresh import PlannedRequest
    from docsbot.run import IndexContext

logger = logging.getLogger(__name__)
_FROM_STORE_META_KEY = "docsbot_from_store"  # a response rebuilt from the stored HTML after a 304
# Doxygen draws its menu (Modules, Files, Data Structures, the member indexes) with JavaScript from menudata.js:
# pages linked only from there have no <a href> in any page (23 of the 57 pages of lmdb-doc were reached without).
_DOXYGEN_MENU_URL = re.compile(r'\burl\s*:\s*"([^"]+)"')
_MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


class DocsSpider(scrapy.Spider):
    name = "docs"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        known = {k: kwargs.pop(k) for k in ARGUMENT_NAMES if k in kwargs}
        super().__init__(*args, **kwargs)  # Scrapyd's _job and other extra arguments land as attributes
        self.args = CrawlArguments.parse(**known)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DocsSpider:
        check_components(crawler.settings)  # before IndexRun's setup writes anything
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.extractor = ExtractionPool.from_crawler(crawler)  # HTML → Markdown off the reactor thread
        spider.keep_html = crawler.settings.getbool("DOCSBOT_KEEP_HTML", True)
        return spider

    @property
    def context(self) -> IndexContext:
        """The run (built by the :class:`~docsbot.run.IndexRun` extension after the spider)."""
        try:
            return self._context
        except AttributeError:
            self._context: IndexContext = index_context(self.crawler)
            return self._context

    # --- requests ---

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # A full index embeds for sure: its model is loaded (off the reactor thread) before the first request, so
        # that a model that cannot load stops the run before anything is fetched. Shutdown works meanwhile.
        if not await self.context.model_ready():
            return
        ledger = self.context.ledger
        for request in self._requests([ledger.root_url], -1):
            yield request
        sitemap = self.args.sitemap
        if sitemap and sitemap != "none":
            yield self._seed_file_request(sitemap, self.parse_sitemap, "sitemap")
        elif sitemap is None:  # the sitemaps robots.txt names, if any
            async for request in self._robots_sitemaps():
                yield request
        for request in self._llms_txt_requests():
            yield request
        if self.settings.getbool("DOCSBOT_DOXYGEN_MENU", True):
            menu = canonical_url("menudata.js", ledger.root_url)
            yield self._seed_file_request(menu, self.parse_doxygen_menu, "doxygen_menu")
        # Seeds in depth order; each page is requested once (the root included) by whichever request comes first.
        # Scrapy reads start() ahead into the scheduler whenever the downloader is full; a seed waits for the
        # scheduler to run dry instead (Scrapy's "lazy start requests"), so that a refresh of N stored pages holds
        # a few queued requests, not N of them (about 0.6 KiB each).
        engine = self.crawler.engine
        for planned in ledger.seeds():
            if engine.needs_backout():
                await self.crawler.signals.wait_for(signals.scheduler_empty)
            yield self._request(planned)

    async def _robots_sitemaps(self) -> AsyncIterator[scrapy.Request]:
        """Requests for the sitemaps robots.txt names. With ``ROBOTSTXT_OBEY`` (the default) robots.txt is the one
        the robots.txt middleware downloads anyway (one request per run); otherwise it is fetched here."""
        root = self.context.ledger.root_url
        robots = self.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        if robots is None:
            url = urlunsplit((*urlsplit(root)[:2], "/robots.txt", "", ""))
            meta = {"dont_obey_robotstxt": True}
            yield scrapy.Request(url, callback=self.parse_robots, errback=lambda _: None, dont_filter=True, meta=meta)
            return
        parser = await robots.robot_parser(scrapy.Request(root))
        rules = getattr(parser, "rp", None)  # scrapy.robotstxt.ProtegoRobotParser keeps the Protego object here
        if isinstance(rules, Protego):
            for request in self._sitemap_requests(rules.sitemaps, root):
                yield request

    def _requests(
        self, urls: Iterable[str], parent_depth: int, *, linked: bool = True, source: str | None = None
    ) -> Iterator[scrapy.Request]:
        """Requests for the links ``urls`` of the page requested as ``source`` (``None``: the root, a sitemap)."""
        for planned in self.context.ledger.plan(urls, parent_depth, linked=linked, source=source):
            yield self._request(planned)

    def _request(self, planned: PlannedRequest) -> scrapy.Request:
        meta: dict[str, Any] = {"depth": planned.depth, PAGE_META_KEY: True}
        if planned.validators is not None:
            meta[VALIDATORS_META_KEY] = planned.validators
            if planned.reextract:
                meta[REEXTRACT_META_KEY] = planned.stored.id
            if planned.render_after_200:
                meta[RENDER_ON_200_META_KEY] = True  # revalidate over plain HTTP; render only if it changed
        elif planned.render:
            meta.update(render_meta(self.context.render_wait_until))
        return scrapy.Request(
            planned.url, callback=self.parse_page, errback=self.page_failed, meta=meta, dont_filter=True
        )

    # --- responses ---

    async def parse_page(self, response: scrapy.http.Response) -> AsyncIterator[scrapy.Request | PageItem | PageGone]:
        """200 and 404/410 answers (after redirects): the refresh table of :mod:`docsbot.refresh`, row by row."""
        context, stats = self.context, self.crawler.stats
        ledger = context.ledger
        url = canonical_url(response.url)
        redirects = response.meta.get("redirect_urls")
        origin = canonical_url(redirects[0]) if redirects else url
        if response.status in context.gone_statuses:
            try:
                page = ledger.answered_gone(origin, response.status)
            except RootFailed as exc:
                self._abort_root(f"{exc.reason} at {response.url}")
            if page is not None:
                yield PageGone(context.version.id, page.id, page.url, str(response.status))
            return
        ledger.answered(origin)
        if response.meta.get("playwright"):
            stats.inc_value("docsbot/rendered")
            if url not in context.scope:  # the browser followed a redirect (or script navigation) out of scope
                stats.inc_value("docsbot/skipped/out_of_scope")
                logger.warning("not indexing %s: the render of %s ended out of scope", url, origin)
                return
        extracted = None
        if not isinstance(response, HtmlResponse):
            stats.inc_value("docsbot/skipped/not_html")
            content_type = response.headers.get("Content-Type", b"unknown").decode("latin-1")
            logger.info("not indexing %s: %s is not HTML", url, content_type)
        else:
            from_store = response.meta.get(_FROM_STORE_META_KEY, False)
            try:
                keep = self.keep_html and not from_store  # re-extracted from the stored HTML: that stays as it is
                extracted = await self.extractor.extract(response.body, url, response.encoding, keep_html=keep)
            except ConverterFailed as exc:  # the converter's failure, not the page's: kept as stored, failed
                count_failure(stats, "extract")
                logger.warning("keeping %s as it was: %s", url, exc)
            except ExtractionError as exc:
                stats.inc_value("docsbot/skipped/unparseable")
                logger.warning("not indexing %s: %s", url, exc)
            except ExtractionWorkerDied as exc:  # a crash or a timeout (ExtractionTimeout): kept as stored, failed
                count_failure(stats, "extract")
                logger.warning("keeping %s as it was: %s", url, exc)
        if extracted is None:  # kept as stored; pages reachable only through it are still reached
            page = ledger.stored_page(origin)
            if page is not None:
                for request in self._requests(page.links, page.depth, source=origin):
                    yield request
            return
        links = [link for link in extracted.links if link in context.scope and not is_download(link)]
        found = ledger.resolve(origin, url, extracted.canonical_url, response.meta["depth"])
        for request in self._requests(links, found.depth, source=origin):
            yield request
        if found.retired is not None:
            yield PageGone(context.version.id, found.retired.id, found.retired.url, f"now {found.target}")
        if found.duplicate:
            return  # stored already this run, reached again under another URL
        page = found.page
        moved_from = None
        if page is not None and page_key(page.url) != page_key(found.target):
            logger.info("%s moved to %s", page.url, found.target)
            moved_from = page.url
        etag, last_modified = response.meta.get(FETCHED_VALIDATORS_META_KEY) or (
            _header(response, b"ETag"),
            _header(response, b"Last-Modified"),
        )
        yield PageItem(
            version_id=context.version.id,
            url=found.target,
            title=extracted.title,
            markdown=extracted.markdown,
            content_hash=content_hash(extracted.title, extracted.markdown),
            depth=found.depth,
            links=links,
            etag=etag,
            last_modified=last_modified,
            content_type=_header(response, b"Content-Type"),
            canonical_url=extracted.canonical_url,
            page_id=page.id if page else None,
            # A page extracted by an older version is stored again whatever its hash (symbols, anchors).
            stored_hash=page.content_hash if page and not ledger.outdated(page) else None,
            anchors=list(extracted.anchors),
            symbols=list(extracted.symbols),
            link_share=extracted.link_share,
            extractor_version=EXTRACTOR_VERSION,
            moved_from=moved_from,
            fresh_until=None if response.meta.get("playwright") else _fresh_until(response, response.meta),
            html=extracted.html,
            html_encoding=response.encoding if extracted.html is not None else None,
        )

    async def page_failed(self, failure: Failure) -> AsyncIterator[scrapy.Request | PageItem | PageGone]:
        """304 (:class:`NotModified`), a redirect out of scope, or a failure after Scrapy's retries (5xx, 429,
        timeouts, DNS, refused connections, TLS, robots.txt, size cap). Only a redirect out of scope removes the
        page; otherwise it stays as stored and its stored links are followed, so that pages reachable only
        through it are still reached. A 304 to a page an older extraction stored, whose HTML is stored, is the
        200 it stands for: that HTML is extracted again and stored as a full index would (no download)."""
        ledger = self.context.ledger
        request = failure.request
        redirects = request.meta.get("redirect_urls")
        url = canonical_url(redirects[0] if redirects else request.url)
        if failure.check(NotModified) and request.meta.get(REEXTRACT_META_KEY) and not redirects:
            stored = await self._stored_response(request, failure.value.response)
            if stored is not None:
                self.crawler.stats.inc_value("docsbot/reextracted")
                async for output in self.parse_page(stored):
                    yield output
                return
            self.crawler.stats.inc_value("docsbot/unchanged")  # its HTML went meanwhile: a plain 304
            self.crawler.stats.inc_value("docsbot/unchanged/304")
        if failure.check(AlreadyRequested):
            return  # a link naming a page requested already this run, by another URL: nothing more to do
        if failure.check(NotModified):
            if redirects:  # the redirect target is a stored page, revalidated with its own validators
                page, retired = ledger.not_modified_after_redirect(url, canonical_url(request.url))
                if retired is not None:
                    yield PageGone(self.context.version.id, retired.id, retired.url, f"now {request.url}")
            else:
                stored = ledger.stored_page(url)
                fresh = _fresh_until(failure.value.response, request.meta, stored.last_modified if stored else None)
                page = ledger.not_modified(url, fresh)
        elif (skip := self._skipped_by_rule(failure, url)) is not None:
            kind, reason = skip
            try:
                page = ledger.skipped_by_rule(url, f"{reason} at {url}")
            except RootFailed as exc:
                self._abort_root(exc.reason)
            self.context.skip(kind, url)
            self.crawler.stats.inc_value(f"docsbot/skipped/{kind}")
            logger.info("skipping %s: %s (the site's rule; not a failure)", url, reason)
        elif failure.check(OutOfScope) and redirects:
            logger.info("%s now redirects out of scope to %s", url, request.url)
            try:
                page = ledger.redirected_out_of_scope(url, request.url)
            except RootFailed as exc:
                self._abort_root(exc.reason)
            if page is not None:
                yield PageGone(self.context.version.id, page.id, page.url, f"redirects out of scope to {request.url}")
            return
        else:
            reason = failure.getErrorMessage() or failure.type.__name__
            try:
                page = ledger.failed(url, reason)
            except RootFailed as exc:
                self._abort_root(exc.reason)
            count_failure(self.crawler.stats, "fetch")
            logger.warning("keeping %s as it was: %s", url, reason)
        if page is not None:
            for follow in self._requests(page.links, page.depth, source=url):
                yield follow

    def _skipped_by_rule(self, failure: Failure, url: str) -> tuple[str, str] | None:
        """``(kind, reason)`` when the site's own rules keep ``url`` from the crawler: robots.txt disallows it
        (``robots``), or it answers one of ``DOCSBOT_SKIP_STATUSES`` (401, 403: ``forbidden``; others: ``refused``)
        and was never stored. ``None`` for a failure; a stored page that starts answering 401/403 is one (kept as
        it was, counted failed; or deleted when its status is one of ``DOCSBOT_GONE_STATUSES``)."""
        if failure.check(ForbiddenByRobots):
            return "robots", "robots.txt disallows it"
        if failure.check(HttpError):
            status = failure.value.response.status
            if status in self.context.skip_statuses and self.context.ledger.stored_page(url) is None:
                return ("forbidden" if status in (401, 403) else "refused"), f"the server answers {status}"
        return None

    async def _stored_response(self, request: scrapy.Request, answer: scrapy.http.Response) -> HtmlResponse | None:
        """The stored HTML of the page ``request`` revalidated, as the 200 the server's 304 ``answer`` stands for:
        the 304's headers (RFC 9110 §15.4.5: its validators and caching headers are the current ones) over the
        stored validators and content type. ``None`` when no HTML is stored (or the database cannot give it)."""
        try:
            stored = await self.context.store.page_html(request.meta[REEXTRACT_META_KEY])
        except StoreUnavailable as exc:
            logger.warning("keeping %s as it was (its stored HTML cannot be read: %s)", request.url, exc)
            return None
        if stored is None:
            return None
        body, encoding = stored
        page = self.context.ledger.stored_page(canonical_url(request.url))
        headers = scrapy.http.Headers({"Content-Type": "text/html"})
        if page is not None:
            for name, value in ((b"ETag", page.etag), (b"Last-Modified", page.last_modified)):
                if value:
                    headers[name] = value
        for name, values in answer.headers.items():
            headers.setlist(name, values)
        meta = {**request.meta, _FROM_STORE_META_KEY: True}
        return HtmlResponse(
            request.url, status=200, headers=headers, body=body, encoding=encoding or "utf-8",
            request=request.replace(meta=meta),
        )  # fmt: skip

    def _abort_root(self, reason: str) -> typing.NoReturn:
        logger.error("the root URL %s failed (%s): stopping; nothing is deleted", self.context.ledger.root_url, reason)
        raise CloseSpider("root_failed")

    def parse_robots(self, response: scrapy.http.Response) -> Iterator[scrapy.Request]:
        if response.status == 200:
            yield from self._sitemap_requests(Protego.parse(response.text).sitemaps, response.url)

    def _sitemap_requests(self, urls: Iterable[str], base: str) -> Iterator[scrapy.Request]:
        for url in urls:
            try:
                url = canonical_url(url, base)
            except InvalidURL:
                continue
            if self.context.scope.same_host(url):
                yield self._seed_file_request(url, self.parse_sitemap, "sitemap")

    def _llms_txt_requests(self) -> Iterator[scrapy.Request]:
        """The site's ``llms.txt`` (https://llmstxt.org: a Markdown list of the pages that matter): the one in the
        root URL's directory, and the host's ``/llms.txt`` when that is another file. A missing one costs one 404;
        ``DOCSBOT_LLMS_TXT=0`` asks for none."""
        if not self.settings.getbool("DOCSBOT_LLMS_TXT", True):
            return
        root = self.context.ledger.root_url
        candidates = [canonical_url("llms.txt", root), canonical_url("/llms.txt", root)]
        for url in dict.fromkeys(candidates):
            yield self._seed_file_request(url, self.parse_llms_txt, "llms_txt")

    # --- seed files: sitemaps, llms.txt, Doxygen's menu ---

    def _seed_file_request(self, url: str, callback: Any, stat: str) -> scrapy.Request:
        """A request for a file that lists pages. One a refresh stored (:class:`docsbot.store.SeedFile`) is
        revalidated with its stored validators (RFC 9110 §13.1.1-2), as a page is: its 304 seeds the crawl from
        the links stored with it (:meth:`seed_file_failed`); an unchanged refresh downloads no seed file."""
        request = scrapy.Request(
            url, callback=callback, errback=self.seed_file_failed, dont_filter=True, meta={SEED_FILE_META_KEY: stat}
        )
        stored = self.context.seed_files.get(request.url)
        if stored is not None:
            request.meta[VALIDATORS_META_KEY] = (stored.etag, stored.last_modified)
        return request

    def seed_file_failed(self, failure: Failure) -> Iterator[scrapy.Request]:
        """A seed file's 304 (:class:`NotModified`): the links stored with it are seeds again
        (``docsbot/<stat>/unchanged``; a sitemap index's sitemaps are each revalidated). Any other failure (a
        404: the site has no such file; a dead server) seeds nothing and keeps what is stored."""
        if not failure.check(NotModified):
            return
        request = failure.request
        stat = request.meta[SEED_FILE_META_KEY]
        stored = self.context.seed_files.get(request.url)
        if stored is None:
            return
        self.crawler.stats.inc_value(f"docsbot/{stat}/unchanged")
        if stored.kind != "sitemaps":
            self.crawler.stats.inc_value(f"docsbot/{stat}/links", len(stored.links))
        yield from self._seed_file_links(stored.kind, stored.links)

    def _seed_file_links(self, kind: str, links: Iterable[str]) -> Iterator[scrapy.Request]:
        """Requests for the links of a seed file of ``kind`` (:class:`docsbot.store.SeedFile`), downloaded or
        stored: pages, or a sitemap index's sitemaps."""
        if kind == "sitemaps":  # a sitemap index's sitemaps: only those on the site's host (ScopeMiddleware)
            for url in links:
                if self.context.scope.same_host(url):
                    yield self._seed_file_request(url, self.parse_sitemap, "sitemap")
                else:
                    self.crawler.stats.inc_value("docsbot/skipped/out_of_scope")
                    logger.info("not requesting %s: a sitemap index named a sitemap on another host", url)
        else:
            yield from self._requests(links, 0)

    async def _store_seed_file(self, response: scrapy.http.Response, kind: str, links: list[str]) -> None:
        """Keep a seed file's validators and links for the next refresh (under the URL it was requested as, before
        any redirect). Not stored (the database refused through the retries): the next run downloads it again."""
        url = (response.meta.get("redirect_urls") or [response.request.url])[0]
        seed = SeedFile(url, kind, _header(response, b"ETag"), _header(response, b"Last-Modified"), tuple(links))
        try:
            await self.context.store.save_seed_file(self.context.version.id, seed)
        except StoreUnavailable as exc:
            logger.warning("%s not stored for the next refresh: %s", url, exc)

    async def parse_llms_txt(self, response: scrapy.http.Response) -> AsyncIterator[scrapy.Request]:
        """The Markdown links of an ``llms.txt`` inside the scope become seeds, as a sitemap's entries do (an HTML
        page at that URL, a site's fallback page, is not an llms.txt)."""
        async for request in self._seed_file(response, _MARKDOWN_LINK, "llms_txt"):
            yield request

    async def parse_doxygen_menu(self, response: scrapy.http.Response) -> AsyncIterator[scrapy.Request]:
        """Doxygen's ``menudata.js`` beside the root page (``{text:"Files",url:"files.html"}``; requested once per
        run, a site without one answers a 404): its in-scope pages become seeds, as a sitemap's entries do, since
        the menu every page shows links them (a reader sees the links; the HTML has none)."""
        async for request in self._seed_file(response, _DOXYGEN_MENU_URL, "doxygen_menu"):
            yield request

    async def _seed_file(
        self, response: scrapy.http.Response, link: re.Pattern[str], stat: str
    ) -> AsyncIterator[scrapy.Request]:
        """Seeds from a text file that lists pages (``link``'s first group is a URL; ``docsbot/<stat>/links``
        counts them): a 200 that is not HTML (a site's fallback page at that URL is no such file)."""
        if response.status != 200 or isinstance(response, HtmlResponse) or not hasattr(response, "text"):
            return
        links = []
        for target in link.findall(response.text):
            try:
                links.append(canonical_url(target, response.url))
            except InvalidURL:
                continue
        self.crawler.stats.inc_value(f"docsbot/{stat}/links", len(links))
        await self._store_seed_file(response, "pages", links)
        for request in self._seed_file_links("pages", links):
            yield request

    async def parse_sitemap(self, response: scrapy.http.Response) -> AsyncIterator[scrapy.Request]:
        """Sitemap URLs inside the scope become seeds (and count as reachable); ``<lastmod>`` is not trusted:
        every page is still revalidated. A sitemap index is followed; a gzipped sitemap (``.xml.gz``) is
        decompressed with Scrapy's ``gunzip`` under the ``DOWNLOAD_MAXSIZE`` cap, as ``SitemapSpider`` does."""
        body = response.body
        try:
            if gzip_magic_number(response):
                body = gunzip(body, max_size=response.meta.get("download_maxsize", self.settings["DOWNLOAD_MAXSIZE"]))
            sitemap = Sitemap(body)
        except Exception as exc:  # noqa: BLE001 - a broken sitemap is reported, not fatal
            logger.warning("ignoring sitemap %s: %s", response.url, exc)
            return
        locs = []
        for entry in sitemap:
            try:
                locs.append(canonical_url(entry["loc"], response.url))
            except (InvalidURL, KeyError):
                continue
        kind = "sitemaps" if sitemap.type == "sitemapindex" else "pages"
        await self._store_seed_file(response, kind, locs)
        for request in self._seed_file_links(kind, locs):
            yield request


def _fresh_until(
    response: scrapy.http.Response, meta: dict[str, Any], last_modified: str | None = None
) -> datetime | None:
    """The HTTP freshness of ``response`` (:func:`docsbot.freshness.fresh_until`): its headers, received now, after
    its request's ``download_latency`` seconds (``meta``); ``last_modified``: the stored one, for a 304 without its
    own."""
    headers = {k.decode("latin-1").lower(): v[-1].decode("latin-1") for k, v in response.headers.items() if v}
    received = datetime.now(UTC)
    latency = meta.get("download_latency") or 0.0
    return fresh_until(
        headers,
        request_time=received - timedelta(seconds=latency),
        response_time=received,
        last_modified=last_modified,
    )


def _header(response: scrapy.http.Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
