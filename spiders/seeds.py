"""Seed files: files that list a site's pages, requested beside its root page to seed the crawl with what its links
may not reach. A component of the ``docs`` spider (:class:`SeedFiles`, a mixin: its callbacks stay spider methods,
so requests can go to Scrapy's disk queues).

- **Sitemaps** (https://www.sitemaps.org): ``-a sitemap=URL``, else the ones robots.txt names; a sitemap index is
  followed, a gzipped sitemap decompressed under ``DOWNLOAD_MAXSIZE`` (as Scrapy's ``SitemapSpider``).
  ``<lastmod>`` is only a hint: every page is still revalidated, and a page missing from a sitemap is never deleted
  for that.
- **llms.txt** (https://llmstxt.org): the root's directory's and the host's, ``DOCSBOT_LLMS_TXT``.
- **Doxygen's menu** (``menudata.js`` beside the root page, ``DOCSBOT_DOXYGEN_MENU``): drawn by JavaScript, so the
  pages only it links have no ``<a href>`` anywhere (23 of lmdb-doc's 57 pages).

They are requested once the root has answered, from where its redirects led (the scope's ``directory_url``), and
only on the scope's hosts: the root's host and port, or a domain scope's hosts (redirect hops included:
:class:`~docsbot.downloadermiddlewares.scope.ScopeMiddleware`); the pages they list are held to the scope as links
are. One a refresh stored (:class:`docsbot.store.SeedFile`)
is revalidated with its validators (RFC 9110 §13.1.1-2), as a page is, and its 304 seeds the crawl from the links stored
with it: an unchanged refresh downloads no seed file. The URLs a seed file lists become seeds at depth 0, through the
spider's ``_requests`` (the refresh rules plan them like any link).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import scrapy
from protego import Protego
from scrapy.http import HtmlResponse
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

from docsbot.downloadermiddlewares import SEED_FILE_META_KEY, VALIDATORS_META_KEY, header_value
from docsbot.downloadermiddlewares.conditional import NotModified
from docsbot.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from docsbot.store import SeedFile, StoreUnavailable
from docsbot.urls import InvalidURL, canonical_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    from twisted.python.failure import Failure

__all__ = ["SeedFiles"]

logger = logging.getLogger(__name__)
# Doxygen draws its menu (Modules, Files, Data Structures, the member indexes) with JavaScript from menudata.js:
# pages linked only from there have no <a href> in any page (23 of the 57 pages of lmdb-doc were reached without).
_DOXYGEN_MENU_URL = re.compile(r'\burl\s*:\s*"([^"]+)"')
_MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


class SeedFiles:
    """The seed-file requests and callbacks of the docs spider (mixed into it). Uses the spider's ``context``
    (:class:`~docsbot.extensions.context.IndexContext`), ``args``, ``settings``, ``crawler`` and ``_requests(urls,
    depth)``."""

    context: Any
    args: Any
    settings: Any
    crawler: Any

    def _requests(self, urls: Iterable[str], parent_depth: int) -> Iterator[scrapy.Request]:
        raise NotImplementedError  # the spider's

    async def seed_file_requests(self) -> AsyncIterator[scrapy.Request]:
        """The run's seed-file requests: the sitemap ``-a sitemap`` names (``none``: none; unset: those robots.txt
        names), the llms.txt files and Doxygen's menu."""
        sitemap = self.args.sitemap
        if sitemap and sitemap != "none":
            yield self._seed_file_request(sitemap, self.parse_sitemap, "sitemap")
        elif sitemap is None:  # the sitemaps robots.txt names, if any
            async for request in self._robots_sitemaps():
                yield request
        for request in self._llms_txt_requests():
            yield request
        if self.settings.getbool("DOCSBOT_DOXYGEN_MENU", True):
            menu = canonical_url("menudata.js", self.context.scope.directory_url)
            yield self._seed_file_request(menu, self.parse_doxygen_menu, "doxygen_menu")

    async def _robots_sitemaps(self) -> AsyncIterator[scrapy.Request]:
        """Requests for the sitemaps robots.txt names. With ``ROBOTSTXT_OBEY`` (the default) robots.txt is the one
        the robots.txt middleware downloads anyway (one request per run); otherwise it is fetched here."""
        if not self.context.scope.netloc:
            return  # a folder (file: URLs) has no robots.txt
        root = self.context.scope.base
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

    def parse_robots(self, response: scrapy.http.Response) -> Iterator[scrapy.Request]:
        if response.status == 200:
            yield from self._sitemap_requests(Protego.parse(response.text).sitemaps, response.url)

    def _sitemap_requests(self, urls: Iterable[str], base: str) -> Iterator[scrapy.Request]:
        for url in urls:
            try:
                url = canonical_url(url, base)
            except InvalidURL:
                continue
            if self.context.scope.same_site(url):
                yield self._seed_file_request(url, self.parse_sitemap, "sitemap")

    def _llms_txt_requests(self) -> Iterator[scrapy.Request]:
        """The site's ``llms.txt`` (https://llmstxt.org: a Markdown list of the pages that matter): the one in the
        root URL's directory, and the host's ``/llms.txt`` when that is another file. A missing one costs one 404;
        ``DOCSBOT_LLMS_TXT=0`` asks for none."""
        if not self.settings.getbool("DOCSBOT_LLMS_TXT", True):
            return
        root = self.context.scope.directory_url
        candidates = [canonical_url("llms.txt", root), canonical_url("/llms.txt", root)]
        if not self.context.scope.netloc:
            candidates = candidates[:1]  # a folder's: the filesystem's root is no part of it
        for url in dict.fromkeys(candidates):
            yield self._seed_file_request(url, self.parse_llms_txt, "llms_txt")

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
                if self.context.scope.same_site(url):
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
        etag, last_modified = header_value(response, b"ETag"), header_value(response, b"Last-Modified")
        seed = SeedFile(url, kind, etag, last_modified, tuple(links))
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
