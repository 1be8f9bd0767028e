"""Canonical URLs and crawl scope (pure functions, no Scrapy imports)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

__all__ = ["Scope", "canonical_url", "InvalidURL"]


_DEFAULT_PORTS = {"http": 80, "https": 443}
_INDEX_PAGE = re.compile(r"/index\.html?$", re.IGNORECASE)


class InvalidURL(ValueError):
    """Raised for a URL docsbot cannot crawl: not absolute http(s), or without a host."""


def canonical_url(url: str, base: str | None = None) -> str:
    """Return the form under which a page is stored: absolute, fragment dropped, query sorted, default port and
    percent-encoding normalized (``w3lib.url.canonicalize_url``), host lower-cased, default port dropped, and
    a trailing ``index.html``/``index.htm`` dropped (a directory and its index page are one page; servers that
    serve one serve the other).

    ``base`` resolves a relative ``url`` (RFC 3986 §5). Raises :class:`InvalidURL` for anything but an absolute
    http(s) URL with a host.
    """
    if base is not None:
        url = urljoin(base, url)
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidURL(f"not an absolute http(s) URL: {url!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"bad port in {url!r}") from exc
    if port == _DEFAULT_PORTS[parts.scheme]:  # w3lib keeps explicit default ports
        parts = parts._replace(netloc=parts.netloc.rsplit(":", 1)[0])
    # A directory and its index page are one page: ".../index.html" is stored (and requested) as ".../".
    parts = parts._replace(path=_INDEX_PAGE.sub("/", parts.path or "/"))
    return canonicalize_url(urlunsplit(parts), keep_fragments=False)


@dataclass(frozen=True)
class Scope:
    """The part of a site a crawl stays in: same scheme-less host (with port) and a path prefix.

    The default prefix is the root URL's directory: ``https://docs.python.org/3/index.html`` gives
    ``docs.python.org`` + ``/3/``.
    """

    netloc: str
    path_prefix: str

    @classmethod
    def from_root(cls, root_url: str) -> Scope:
        parts = urlsplit(canonical_url(root_url))
        path = parts.path or "/"
        return cls(parts.netloc, path[: path.rfind("/") + 1])

    def __contains__(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            parts.scheme in ("http", "https")
            and parts.netloc == self.netloc
            and (parts.path or "/").startswith(self.path_prefix)
        )
