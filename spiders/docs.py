"""The ``docs`` spider: full index (``-a url=URL``) and refresh (``-a library=NAME -a mode=refresh``).

It decides *what* to request and hands each answer to the refresh rules. Where each part of a run lives:

- the refresh rules (which stored row a response belongs to, what is gone, what is deleted): the pure
  :mod:`docsbot.refresh`, asked through the run's :class:`~docsbot.refresh.RefreshLedger`;
- setup, start and end of the run (migrations, version, run lock, ``crawl_runs``, deletions): the
  :class:`docsbot.extensions.run.IndexRun` extension;
- how a stored page is revalidated (conditional requests, 304), kept in scope and rendered:
  :mod:`docsbot.downloadermiddlewares`;
- what is stored (chunks, embeddings, one transaction per page): :mod:`docsbot.pipelines`;
- the files that list pages (sitemaps, llms.txt, Doxygen's menu): :mod:`spiders.seeds`, mixed in.

The spider's arguments are :class:`docsbot.arguments.CrawlArguments`.
"""

from __future__ import annotations

import asyncio
import logging
import typing
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.httperror import HttpError

from docsbot.addon import check_addon
from docsbot.arguments import RUNNER_ARGUMENT_PREFIX, CrawlArguments
from docsbot.content import EXTRACTOR_VERSION, ConverterFailed, ExtractionError, content_hash
from docsbot.content.pool import ExtractionPool, ExtractionWorkerDied
from docsbot.downloadermiddlewares import (
    FETCHED_VALIDATORS_META_KEY,
    PAGE_META_KEY,
    REEXTRACT_META_KEY,
    RENDER_ON_200_META_KEY,
    VALIDATORS_META_KEY,
    header_value,
)
from docsbot.downloadermiddlewares.conditional import AlreadyRequested, NotModified
from docsbot.downloadermiddlewares.render import render_meta
from docsbot.downloadermiddlewares.robotstxt import ForbiddenByRobots
from docsbot.downloadermiddlewares.scope import OutOfScope
from docsbot.extensions.context import count_failure, index_context
from docsbot.items import PageGone, PageItem
from docsbot.refresh import RootFailed
from docsbot.refresh.freshness import fresh_until
from docsbot.store import StoreUnavailable
from docsbot.urls import canonical_url, is_download, page_key
from spiders.seeds import SeedFiles

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from docsbot.extensions.context import IndexContext
    from docsbot.refresh import PlannedRequest

logger = logging.getLogger(__name__)
_FROM_STORE_META_KEY = "docsbot_from_store"  # a response rebuilt from the stored HTML after a 304


class DocsSpider(SeedFiles, scrapy.Spider):
    name = "docs"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # A job runner's own arguments (Scrapyd's _job, docsbot.arguments.RUNNER_ARGUMENT_PREFIX) land as attributes,
        # as Scrapy's Spider makes them; every other one is the spider's, and one it does not know stops the crawl
        # here, before any component is built: nothing is fetched or written.
        runner = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith(RUNNER_ARGUMENT_PREFIX)}
        self.args = CrawlArguments.parse(**kwargs)
        super().__init__(*args, **runner)
        self._root_settled: asyncio.Future[None] | None = None
        self._root_failed = False
        self._seeds: list[PlannedRequest] | None = None  # the stored pages, planned once the root has answered

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DocsSpider:
        check_addon(crawler.settings)  # the add-on (applied after the spider is built) brings every component
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.extractor = ExtractionPool.from_crawler(crawler)  # HTML → Markdown off the reactor thread
        spider.keep_html = crawler.settings.getbool("DOCSBOT_KEEP_HTML", True)
        return spider

    @property
    def context(self) -> IndexContext:
        """The run (built by the :class:`~docsbot.extensions.run.IndexRun` extension after the spider)."""
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
        root = list(self._requests([ledger.root_url], -1))  # none when the stored root is fresh (-a freshness=http)
        if root:
            self._root_settled = asyncio.get_running_loop().create_future()
            yield root[0]
            # Where the root's redirects lead is where the scope is taken from (RefreshLedger.root_moved): nothing
            # else is planned before the root has answered (one round trip), so nothing is planned in a scope the
            # root leaves. Its callback or errback settles it, whatever it answers.
            await self._root_settled
            if self._root_failed:
                return  # the run is closing (root_failed)
        async for request in self.seed_file_requests():  # sitemaps, llms.txt, Doxygen's menu
            yield request
        # Seeds in depth order; each page is requested once (the root included) by whichever request comes first.
        # Scrapy reads start() ahead into the scheduler whenever the downloader is full; a seed waits for the
        # scheduler to run dry instead (Scrapy's "lazy start requests"), so that a refresh of N stored pages holds
        # a few queued requests, not N of them (about 0.6 KiB each).
        engine = self.crawler.engine
        for planned in self._seeds if self._seeds is not None else ledger.seeds():
            if engine.needs_backout():
                await self.crawler.signals.wait_for(signals.scheduler_empty)
            yield self._request(planned)

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
        if ledger.is_root(origin):
            if page_key(url) != page_key(origin):  # a browser's navigation (an HTTP hop told the ledger already)
                ledger.root_moved(url)
            self._settle_root()
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
            header_value(response, b"ETag"),
            header_value(response, b"Last-Modified"),
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
            content_type=header_value(response, b"Content-Type"),
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
        if ledger.is_root(url):
            self._settle_root()
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

    def _settle_root(self) -> None:
        """The root has answered (or failed): the start requests go on (:meth:`start`). The stored pages are planned
        here, in the scope the root's redirects led to and before the root's own links are: each is then claimed by
        its seed, which :meth:`start` yields as the scheduler runs dry, instead of by the root's links all at once
        (a refresh would hold a request per stored page in the scheduler)."""
        if self._root_settled is not None and not self._root_settled.done():
            self._seeds = self.context.ledger.seeds()
            self._root_settled.set_result(None)

    def _abort_root(self, reason: str) -> typing.NoReturn:
        self._root_failed = True
        logger.error("the root URL %s failed (%s): stopping; nothing is deleted", self.context.ledger.root_url, reason)
        raise CloseSpider("root_failed")


def _fresh_until(
    response: scrapy.http.Response, meta: dict[str, Any], last_modified: str | None = None
) -> datetime | None:
    """The HTTP freshness of ``response`` (:func:`docsbot.refresh.freshness.fresh_until`): its headers, received now,
    after its request's ``download_latency`` seconds (``meta``); ``last_modified``: the stored one, for a 304 without
    its own."""
    headers = {k.decode("latin-1").lower(): v[-1].decode("latin-1") for k, v in response.headers.items() if v}
    received = datetime.now(UTC)
    latency = meta.get("download_latency") or 0.0
    return fresh_until(
        headers,
        request_time=received - timedelta(seconds=latency),
        response_time=received,
        last_modified=last_modified,
    )
