"""A real HTTP server for tests: a small docs site with ETag/Last-Modified that answers conditional requests.

Pages can be edited, deleted, added or made to fail between crawls; every request is recorded with its
conditional headers and the status it got.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Hit:
    path: str
    status: int
    if_none_match: str | None
    if_modified_since: str | None
    at: float = field(default_factory=time.time)  # when the answer was sent (wall clock, comparable with now())
    headers: dict[str, str] = field(default_factory=dict)  # the request's headers, by lower-cased name


@dataclass
class Page:
    body: bytes
    etag: str
    last_modified: str
    content_type: str = "text/html; charset=utf-8"


def html_page(title: str, body: str, links: list[str] = ()) -> str:
    nav = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<!doctype html><html><head><title>{title} — Test Docs</title></head><body>"
        f"<nav><ul>{nav}</ul></nav>"
        f'<div class="body" role="main"><h1>{title}</h1>{body}</div>'
        f"<footer>Built with a test generator</footer></body></html>"
    )


@dataclass
class DocSite:
    """``validators``: what the server sends and honours: "both" (strong ETag + Last-Modified), "weak" (weak
    ETag + Last-Modified), "last_modified", "none", or "rotating" (a new ETag on every response, as a CDN that
    rebuilds would; the content is the same)."""

    pages: dict[str, Page] = field(default_factory=dict)
    failing: dict[str, int] = field(default_factory=dict)  # path → status to answer
    redirects: dict[str, tuple[int, str]] = field(default_factory=dict)  # path → (status, Location)
    slow: dict[str, float] = field(default_factory=dict)  # path → seconds before answering
    # path → seconds: answer 429 with `Retry-After: <seconds>` until that long after the path's first request
    throttled: dict[str, float] = field(default_factory=dict)
    _throttle_start: dict[str, float] = field(default_factory=dict)
    validators: str = "both"
    cache_control: str | None = None  # sent as Cache-Control with every 200 and 304 of a page
    # what a path without a page answers: 404, or (200, its HTML) for a host with soft 404s
    not_found: tuple[int, str] = (404, "not found")
    hits: list[Hit] = field(default_factory=list)
    # path prefix → headers every request under it must carry, else 401 (a private docs host; behind a proxy, paths
    # are whole URLs: "http://docs.example.org/")
    required: dict[str, dict[str, str]] = field(default_factory=dict)
    # requests being answered at once, now and at most (what the host sees of a crawler's concurrency)
    in_flight: int = 0
    max_in_flight: int = 0
    _flight: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _clock: int = 1_700_000_000
    _served: int = 0

    def put(
        self, path: str, html: str, content_type: str = "text/html; charset=utf-8", encoding: str = "utf-8"
    ) -> None:
        body = html.encode(encoding)
        self._clock += 60
        self.pages[path] = Page(
            body, '"' + hashlib.sha1(body).hexdigest()[:16] + '"', formatdate(self._clock, usegmt=True), content_type
        )

    def delete(self, path: str) -> None:
        del self.pages[path]

    def hits_for(self, path: str) -> list[Hit]:
        return [h for h in self.hits if h.path == path]

    def statuses(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for h in self.hits:
            if not h.path.endswith(("/robots.txt", "/llms.txt")):  # the site's own files, not pages
                out.setdefault(h.path, []).append(h.status)
        return out

    def handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                inm, ims = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
                path = self.path.split("?")[0]
                sent = {k.lower(): v for k, v in self.headers.items()}
                site.hits.append(
                    Hit(path + "index.html" if path.endswith("/") else path, status, inm, ims, headers=sent)
                )
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                with site._flight:
                    site.in_flight += 1
                    site.max_in_flight = max(site.max_in_flight, site.in_flight)
                try:
                    self._get()
                finally:
                    with site._flight:
                        site.in_flight -= 1

            def _get(self) -> None:
                path = self.path.split("?")[0]
                if path.endswith("/"):  # like nginx's `index index.html`
                    path += "index.html"
                for prefix, required in site.required.items():
                    if path.startswith(prefix) and any(self.headers.get(k) != v for k, v in required.items()):
                        self._send(
                            401, b"sign in", {"Content-Type": "text/plain", "WWW-Authenticate": 'Basic realm="docs"'}
                        )
                        return
                if path in site.slow:
                    time.sleep(site.slow[path])
                if path in site.throttled:
                    start = site._throttle_start.setdefault(path, time.monotonic())
                    if time.monotonic() - start < site.throttled[path]:
                        headers = {"Content-Type": "text/plain", "Retry-After": str(math.ceil(site.throttled[path]))}
                        self._send(429, b"slow down", headers)
                        return
                if path in site.failing:
                    headers = {"Content-Type": "text/plain", "Retry-After": "0"}
                    self._send(site.failing[path], b"server error", headers)
                    return
                if path in site.redirects:
                    status, location = site.redirects[path]
                    self._send(status, b"", {"Location": location})
                    return
                page = site.pages.get(path)
                if page is None:
                    status, text = site.not_found
                    kind = "text/html; charset=utf-8" if status == 200 else "text/plain"
                    self._send(status, text.encode(), {"Content-Type": kind})
                    return
                site._served += 1
                etag = page.etag
                if site.validators == "weak":
                    etag = "W/" + etag
                elif site.validators == "rotating":
                    etag = f'"rot-{site._served}"'
                validators = {"ETag": etag, "Last-Modified": page.last_modified}
                if site.validators == "last_modified":
                    validators = {"Last-Modified": page.last_modified}
                elif site.validators == "none":
                    validators = {}
                if site.cache_control is not None:
                    validators["Cache-Control"] = site.cache_control
                inm = self.headers.get("If-None-Match")
                ims = self.headers.get("If-Modified-Since")
                # RFC 9110 §13.2.2: If-None-Match takes precedence over If-Modified-Since.
                if site.validators != "rotating" and site.validators != "none":
                    fresh = inm == etag if inm is not None else ims is not None and ims == page.last_modified
                    if fresh:
                        self._send(304, b"", validators)
                        return
                self._send(200, page.body, {"Content-Type": page.content_type, **validators})

            do_HEAD = do_GET

        return Handler


class DocSiteServer:
    """``site`` served on ``host`` (any 127/8 address: a second loopback host stands for another machine)."""

    def __init__(self, site: DocSite, host: str = "127.0.0.1") -> None:
        self.site = site
        self.host = host
        self.httpd = ThreadingHTTPServer((host, 0), site.handler())
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, client_address: None  # clients that hang up (size cap) are fine
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.httpd.server_address[1]}"

    def __enter__(self) -> DocSiteServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
