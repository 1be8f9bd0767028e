"""The download handler for ``file:`` URLs: a folder of documentation answered as a web server answers a site.

:class:`FileDownloadHandler` (``DOWNLOAD_HANDLERS["file"]``, set by the add-on) stands in for Scrapy's own
``FileDownloadHandler``, which reads any file it is asked for and knows nothing of validators. This one answers a
docs crawl of a folder (a ``file:`` root, or an archive unpacked into one: :mod:`docsbot.archives`) the way nginx
answers a site, so that the refresh machinery (conditional requests, 304, 404 deletes) works unchanged:

- **validators**: every file answers with an ``ETag`` of its modification time and size and a ``Last-Modified`` of
  its modification time (:func:`docsbot.folders.validators`); a request whose ``If-None-Match`` (or, without one,
  ``If-Modified-Since``, compared byte for byte as nginx does) still matches is answered ``304 Not Modified`` without
  reading the file. A file whose size and time changed is read and answered 200; the store then compares its
  content, so a file touched but not changed costs no chunking and no embedding.
- **pages**: an HTML file as it is; a Markdown or plain-text file rendered to HTML (:mod:`docsbot.content.sources`),
  with its own ``Content-Type`` (``text/markdown``, ``text/plain``); any other file, and a file that lists pages (a
  sitemap, ``llms.txt``, Doxygen's menu), as it is, with its type (the spider indexes HTML only).
- **folders**: a folder's URL answers with its ``index.html``, else its start file (``index.md``, ``README.md``...:
  :data:`docsbot.folders.START_FILES`, stored under its own URL) or, with neither, a listing of its files
  (:func:`docsbot.folders.answer_for`).
- **the folder's walls**: only files inside the crawl's folder are read, symbolic links resolved: a link that leads
  out of it answers 403 (a page never stored is then skipped by rule, and the log says why), a file that is not
  there 404 (a stored page is deleted, as for a site). A crawl that is not of a folder, or that runs with
  ``-a network=public`` (started from the network), reads no file at all (403).

Files are read on a thread (Scrapy's ``run_in_thread``, as its own handler does); a file larger than
``DOWNLOAD_MAXSIZE`` (``DOCSBOT_MAX_PAGE_BYTES``) fails, as an HTTP download that large does.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import os
import re
from email.utils import formatdate
from typing import TYPE_CHECKING

from scrapy.core.downloader.handlers.base import BaseDownloadHandler
from scrapy.exceptions import NotConfigured
from scrapy.http import Headers, HtmlResponse, Response
from scrapy.responsetypes import responsetypes
from scrapy.utils.asyncio import run_in_thread

from docsbot.content.sources import decode_text, listing_page, markdown_page, text_page
from docsbot.extensions.context import index_context
from docsbot.folders import answer_for, inside, is_file_url, page_kind, url_path, validators

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["SEED_FILE_META_KEY", "FileDownloadHandler", "FileTooLarge"]

logger = logging.getLogger(__name__)
_HEAD = re.compile(rb"<head(\s[^>]*)?>", re.IGNORECASE)
# docsbot.downloadermiddlewares.SEED_FILE_META_KEY, which the Scrapy components' layer does not import from a sibling
# (tests/test_folders.py holds them equal): a request for a file that lists pages
SEED_FILE_META_KEY = "docsbot_seed_file"


class FileTooLarge(Exception):
    """A file larger than ``DOWNLOAD_MAXSIZE``: the page fails (kept as stored), as a download that large does. Not
    an ``OSError``, which Scrapy's retries would try again (``RETRY_EXCEPTIONS``): the file stays as large."""


class FileDownloadHandler(BaseDownloadHandler):
    """Answers ``file:`` requests of a docs crawl of a folder (see the module docstring). Built on the first such
    request (``lazy``): the run's folder is its scope's, read then from the run's context."""

    lazy = True

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.max_size = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self._folder: Path | None = None
        self._refusal = ""
        try:
            context = index_context(crawler)
        except NotConfigured:
            self._refusal = "file: URLs are read only by a docs crawl of a folder"
            return
        if context.scope.netloc:
            self._refusal = f"the crawl of {context.label} is of a site, not of a folder"
        elif context.crawl.network == "public":
            self._refusal = "a crawl started from the network (-a network=public) reads no local file"
        else:
            self._folder = url_path("file://" + context.scope.path_prefix)

    async def download_request(self, request: Request) -> Response:
        return await run_in_thread(self._answer, request)

    def _answer(self, request: Request) -> Response:
        url = request.url
        if self._folder is None or not is_file_url(url):
            logger.warning("not reading %s: %s", url, self._refusal or "not a file: URL")
            return _status(url, 403)
        path = url_path(url)
        if not os.path.lexists(path):
            return _status(url, 404)
        if not inside(path, self._folder):
            logger.warning("not reading %s: it leads out of the folder %s (%s)", url, self._folder, path.resolve())
            return _status(url, 403)
        if path.is_dir():
            return self._folder_answer(request, url)
        return self._file(request, url, path)

    def _folder_answer(self, request: Request, url: str) -> Response:
        answer = answer_for(url)
        base = None if url.endswith("/") else url + "/"  # the folder asked for without its slash: links stay in it
        if answer.file is not None and inside(answer.file, self._folder):
            return self._file(request, url, answer.file, base=base, canonical=answer.canonical)
        entries = sorted(
            (entry.name, entry.is_dir())
            for entry in os.scandir(answer.path)
            if not entry.name.startswith(".") and inside(answer.path / entry.name, self._folder)
        )
        body = listing_page(f"{answer.path.name or answer.path}/", entries, base=base, canonical=answer.canonical)
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        last_modified = formatdate(answer.path.stat().st_mtime, usegmt=True)
        if _not_modified(request, etag, last_modified):
            return _status(url, 304, etag, last_modified)
        headers = Headers({"Content-Type": "text/html; charset=utf-8", "ETag": etag, "Last-Modified": last_modified})
        return HtmlResponse(url, status=200, headers=headers, body=body, encoding="utf-8", request=request)

    def _file(
        self, request: Request, url: str, path: Path, *, base: str | None = None, canonical: str | None = None
    ) -> Response:
        kind = page_kind(path.name)
        st = path.stat()
        etag, last_modified = validators(st, kind)
        if _not_modified(request, etag, last_modified):
            return _status(url, 304, etag, last_modified)
        if self.max_size and st.st_size > self.max_size:
            raise FileTooLarge(f"{path} is {st.st_size} bytes, more than DOWNLOAD_MAXSIZE ({self.max_size})")
        headers = {"ETag": etag, "Last-Modified": last_modified}
        body = path.read_bytes()
        if kind is None or request.meta.get(SEED_FILE_META_KEY):  # not a page (a sitemap, llms.txt...): as it is
            content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            headers["Content-Type"] = content_type
            cls = responsetypes.from_args(headers=Headers(headers), url=url, body=body)
            return cls(url, status=200, headers=Headers(headers), body=body, request=request)
        if kind == "html":
            if base or canonical:
                body = _with_head(body, base, canonical)
            headers["Content-Type"] = "text/html"
            return HtmlResponse(url, status=200, headers=Headers(headers), body=body, request=request)
        render = markdown_page if kind == "markdown" else text_page
        html = render(decode_text(body), path.name, base=base, canonical=canonical)
        headers["Content-Type"] = f"text/{'markdown' if kind == 'markdown' else 'plain'}; charset=utf-8"
        return HtmlResponse(url, status=200, headers=Headers(headers), body=html, encoding="utf-8", request=request)


def _not_modified(request: Request, etag: str, last_modified: str) -> bool:
    """Whether ``request``'s conditions (RFC 9110 §13.1.2: ``If-None-Match`` first; ``If-Modified-Since`` only
    without it, equal byte for byte as nginx compares it) say the client's copy is current."""
    if_none_match = request.headers.get(b"If-None-Match")
    if if_none_match is not None:
        tags = {t.strip().removeprefix("W/") for t in if_none_match.decode("latin-1").split(",")}
        return "*" in tags or etag.removeprefix("W/") in tags
    if_modified_since = request.headers.get(b"If-Modified-Since")
    return if_modified_since is not None and if_modified_since.decode("latin-1") == last_modified


def _status(url: str, status: int, etag: str | None = None, last_modified: str | None = None) -> Response:
    headers = {k: v for k, v in (("ETag", etag), ("Last-Modified", last_modified)) if v}
    return Response(url, status=status, headers=Headers(headers), body=b"")


def _with_head(body: bytes, base: str | None, canonical: str | None) -> bytes:
    """``body`` (an HTML page) with ``<base href>`` and ``<link rel="canonical">`` first in its ``<head>``."""
    from html import escape

    tags = b""
    if base:
        tags += f'<base href="{escape(base)}">'.encode()
    if canonical:
        tags += f'<link rel="canonical" href="{escape(canonical)}">'.encode()
    found = _HEAD.search(body)
    return body[: found.end()] + tags + body[found.end() :] if found else tags + body
