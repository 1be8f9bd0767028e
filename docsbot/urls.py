"""Canonical URLs, page identity and crawl scope: pure functions over w3lib and the standard library (no Scrapy:
importing this module must not load Scrapy's machinery, see tests/test_layers.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

__all__ = [
    "Scope",
    "canonical_url",
    "has_credentials",
    "page_key",
    "is_download",
    "InvalidURL",
    "without_credentials",
]


_DEFAULT_PORTS = {"http": 80, "https": 443}
_INDEX_PAGE = re.compile(r"/index\.html?$", re.IGNORECASE)


class InvalidURL(ValueError):
    """Raised for a URL docsbot cannot crawl: not absolute http(s) with a host, nor a local ``file:`` URL."""


def canonical_url(url: str, base: str | None = None) -> str:
    """Return the form under which a URL is requested and stored: absolute, fragment dropped, query sorted,
    percent-encoding normalized (``w3lib.url.canonicalize_url``), host lower-cased, default port dropped.

    The path is kept as the site wrote it: ``dir/index.html`` stays ``dir/index.html`` (docsbot never invents a
    URL; nginx without ``autoindex`` answers 403, not 404, for ``dir/`` once ``dir/index.html`` is gone). That the
    two name one page is :func:`page_key`'s business.

    A ``file:`` URL (a folder's file, RFC 8089) is local: ``file:///path`` (``file://localhost/path`` and
    ``file:/path`` are written so), without query or fragment.

    ``base`` resolves a relative ``url`` (RFC 3986 §5). Raises :class:`InvalidURL` for anything but an absolute
    http(s) URL with a host or a local ``file:`` URL.
    """
    if base is not None:
        url = urljoin(base, url)
    return _canonical_absolute(url)


@lru_cache(maxsize=32768)
def _canonical_absolute(url: str) -> str:
    """:func:`canonical_url` of a URL already resolved against its base. Cached: a docs page links the same
    navigation as its neighbours, and w3lib's canonicalization of its ~200 links was a sixth of extraction."""
    parts = urlsplit(url.strip())
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return canonicalize_url(urlunsplit(("file", "", parts.path or "/", "", "")), keep_fragments=False)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidURL(f"not an absolute http(s) URL: {_shown(url)!r}")
    try:
        port = parts.port
    except ValueError:
        raise InvalidURL(f"bad port in {_shown(url)!r}") from None
    if port == _DEFAULT_PORTS[parts.scheme]:  # w3lib keeps explicit default ports
        parts = parts._replace(netloc=parts.netloc.rsplit(":", 1)[0])
    parts = parts._replace(path=parts.path or "/")
    return canonicalize_url(urlunsplit(parts), keep_fragments=False)


def has_credentials(url: str) -> bool:
    """Whether ``url`` has a ``user:password@`` (or ``user@``) before its host (RFC 3986 §3.2.1's userinfo); never
    raises."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        return False
    return "@" in re.split(r"[/?#]", rest, maxsplit=1)[0]


def _shown(url: str) -> str:
    """``url`` as an error may quote it: a ``user:password@`` before its host replaced by ``***@``."""
    scheme, sep, rest = url.partition("://")
    authority, mark, tail = rest.partition("/") if "/" in rest else (rest, "", "")
    if not sep or "@" not in authority:
        return url
    return f"{scheme}://***@{authority.rpartition('@')[2]}{mark}{tail}"


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` before its host: what a reader of an index may see of a root URL."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def page_key(url: str) -> str:
    """The identity of the page a canonical URL names: a trailing ``index.html``/``index.htm`` dropped, so a
    directory and its index page are one page (stored once, requested once) whichever the site links."""
    return _INDEX_PAGE.sub("/", url) if "?" not in url else url


# Links to these are files, not pages. FILE_EXTENSIONS is Scrapy's own list (scrapy.linkextractors.IGNORED_EXTENSIONS
# of Scrapy 2.19: archives, images, audio, video, office documents...), copied so that the pure core does not import
# Scrapy (129 modules); tests/test_urls.py fails if Scrapy's list gains an extension this one lacks.
FILE_EXTENSIONS = (
    # archives
    "7z", "7zip", "bz2", "rar", "tar", "tar.gz", "xz", "zip",
    # images
    "mng", "pct", "bmp", "gif", "jpg", "jpeg", "png", "pst", "psp", "tif", "tiff", "ai", "drw", "dxf", "eps", "ps",
    "svg", "cdr", "ico", "webp",
    # audio
    "mp3", "wma", "ogg", "wav", "ra", "aac", "mid", "au", "aiff",
    # video
    "3gp", "asf", "asx", "avi", "mov", "mp4", "mpg", "qt", "rm", "swf", "wmv", "m4a", "m4v", "flv", "webm",
    # office suites
    "xls", "xlsm", "xlsx", "xltm", "xltx", "potm", "potx", "ppt", "pptm", "pptx", "pps", "doc", "docb", "docm",
    "docx", "dotm", "dotx", "odt", "ods", "odg", "odp",
    # other
    "css", "pdf", "exe", "bin", "rss", "dmg", "iso", "apk", "jar", "sh", "rb", "js", "hta", "bat", "cpl", "msi",
    "msp", "py",
)  # fmt: skip
# Besides those, the plain-text sources documentation generators publish beside their HTML (Sphinx's "Show Source"
# links to _sources/*.rst.txt, half of the requests on a Sphinx site; raw Markdown, reStructuredText, notebooks).
SOURCE_EXTENSIONS = ("txt", "rst", "md", "markdown", "ipynb")
_DOWNLOAD_EXTENSIONS = frozenset(f".{ext}" for ext in (*FILE_EXTENSIONS, *SOURCE_EXTENSIONS))
# In a folder (file: URLs) the pages are its HTML, Markdown and plain-text files (docsbot.folders), and its folders.
FOLDER_PAGE_EXTENSIONS = (".html", ".htm", ".xhtml", ".md", ".markdown", ".txt", ".rst")


def is_download(url: str) -> bool:
    """Whether ``url``'s path ends with an extension Scrapy's link extractors ignore (:data:`FILE_EXTENSIONS`,
    Scrapy's ``IGNORED_EXTENSIONS``: ``.zip``, ``.png``, ``.pdf``...) or a plain-text source's
    (``.txt``, ``.rst``, ``.md``, ``.ipynb``): a file, not a page. In a folder (a ``file:`` URL) every file is one
    but those of :data:`FOLDER_PAGE_EXTENSIONS` and folders; a built site's sources (Sphinx's ``x.rst.txt``) stay
    files."""
    path = urlsplit(url).path.lower()
    dot = path.rfind(".")
    has_extension = dot > path.rfind("/")
    if url.startswith("file:"):
        if not has_extension:
            return False
        source = path[: -len(".txt")] if path.endswith(".txt") else ""
        return path[dot:] not in FOLDER_PAGE_EXTENSIONS or source.endswith((".rst", ".md", ".txt", ".ipynb"))
    return has_extension and path[dot:] in _DOWNLOAD_EXTENSIONS


@dataclass(frozen=True)
class Scope:
    """The part of a site a crawl stays in: same scheme-less host (with port) and a path prefix.

    The default prefix is the root URL's directory: ``https://docs.python.org/3/index.html`` gives
    ``docs.python.org`` + ``/3/``. A folder's (a ``file:`` root) has no host: its files, ``file:///docs/`` and under.
    """

    netloc: str
    path_prefix: str

    @classmethod
    def from_root(cls, root_url: str) -> Scope:
        parts = urlsplit(canonical_url(root_url))
        path = parts.path or "/"
        return cls(parts.netloc, path[: path.rfind("/") + 1])

    def same_host(self, url: str) -> bool:
        """Whether ``url`` (canonical) is an http(s) URL on the scope's host and port, whatever its path; in a
        folder's scope (no host), a ``file:`` URL inside the folder."""
        parts = urlsplit(url)
        if not self.netloc:
            return url in self
        return parts.scheme in ("http", "https") and parts.netloc == self.netloc

    def __contains__(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            parts.scheme in (("http", "https") if self.netloc else ("file",))  # a folder's scope has no host
            and parts.netloc == self.netloc
            and (parts.path or "/").startswith(self.path_prefix)
        )
