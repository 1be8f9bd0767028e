"""Canonical URLs, page identity and crawl scope: pure functions over w3lib, tldextract's copy of the Public Suffix
List and the standard library (no Scrapy: importing this module must not load Scrapy's machinery, see
tests/test_layers.py)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from tldextract import TLDExtract

__all__ = [
    "SCOPE_MODES", "InvalidURL", "Scope", "UrlPattern", "canonical_url", "directory_of", "has_credentials",
    "is_download", "page_key", "registrable_domain", "without_credentials",
]  # fmt: skip


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


# --- scope --------------------------------------------------------------------------------------------------------

SCOPE_MODES = ("prefix", "host", "domain")
# A root URL whose last path segment ends with one of these names a page, and the scope's prefix is its directory;
# any other last segment names a directory of its own (`/docs/python`, `/en/2.0`, `/docs/3.x`): a version number is
# not a file extension.
PAGE_EXTENSIONS = frozenset(
    {"html", "htm", "xhtml", "shtml", "php", "asp", "aspx", "jsp", "cgi", "md", "txt", "rst", "xml", "json"}
)


def directory_of(path: str) -> str:
    """The directory a root URL's ``path`` stands for: its own when its last segment has no page extension
    (:data:`PAGE_EXTENSIONS`: ``/docs/python`` is ``/docs/python/``), else the one it is in (``/3/index.html`` is
    ``/3/``)."""
    path = path or "/"
    last = path[path.rfind("/") + 1 :]
    stem, dot, extension = last.rpartition(".")
    if last and not (dot and stem and extension.lower() in PAGE_EXTENSIONS):
        return path + "/"
    return path[: path.rfind("/") + 1]


@lru_cache(maxsize=1)
def _public_suffixes() -> TLDExtract:
    # Only a domain scope needs the list (it takes ~50 ms to load). suffix_list_urls=() uses the snapshot the package
    # ships and never fetches the list at run time (tldextract's default downloads it on first use); cache_dir=None
    # writes no cache file.
    from tldextract import TLDExtract

    return TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True)


@lru_cache(maxsize=1024)
def registrable_domain(host: str) -> str:
    """The registrable domain of ``host`` by the Public Suffix List (https://publicsuffix.org, the snapshot tldextract
    ships): ``docs.python.org`` → ``python.org``, ``a.b.co.uk`` → ``b.co.uk``. Private suffixes count, as browsers
    count them for cookies: ``foo.github.io`` is a domain of its own, not all of ``github.io``. A host under no public
    suffix (an IP address, ``localhost``, ``*.test``) is its own domain."""
    host = host.lower().strip(".")
    return _public_suffixes()(host).top_domain_under_public_suffix or host


@dataclass(frozen=True)
class UrlPattern:
    """One ``-a include`` / ``-a exclude`` pattern. ``/…/`` (starts and ends with ``/``, at least one character
    between) is a regular expression searched in the whole URL (:func:`re.search`); anything else is a glob
    (:mod:`fnmatch`: ``*`` any characters, ``/`` included; ``?`` one; ``[abc]`` one of them), matched against the whole
    URL, and, when it starts with ``/``, against the URL's path (with its query) too: ``*/changelog/*`` and
    ``/blog/*`` both exclude ``https://h/blog/post.html``."""

    text: str
    regex: re.Pattern[str]
    is_regex: bool

    @classmethod
    def parse(cls, text: str) -> UrlPattern:
        """Raises ``ValueError`` naming the pattern for an empty one or a regular expression that does not compile."""
        text = text.strip()
        if not text:
            raise ValueError("an empty pattern")
        if len(text) > 2 and text.startswith("/") and text.endswith("/"):
            try:
                return cls(text, re.compile(text[1:-1]), True)
            except re.error as exc:
                raise ValueError(f"{text!r} is not a regular expression: {exc}") from None
        return cls(text, re.compile(fnmatch.translate(text)), False)

    def matches(self, url: str) -> bool:
        if self.is_regex:
            return self.regex.search(url) is not None
        if self.regex.match(url):
            return True
        if not self.text.startswith("/"):
            return False
        parts = urlsplit(url)
        return self.regex.match(parts.path + (f"?{parts.query}" if parts.query else "")) is not None


@dataclass(frozen=True)
class Scope:
    """The part of the web a crawl stays in: how far it reaches from the root (``mode``), filtered by patterns.

    - ``prefix`` (the default): the root's host and port, and its directory as path prefix
      (:func:`directory_of`: ``https://docs.python.org/3/index.html`` gives ``/3/``, ``…/docs/python`` gives
      ``/docs/python/``);
    - ``host``: the root's host and port, any path;
    - ``domain``: any host of the root's registrable domain (:func:`registrable_domain`), any port and path.

    Then ``exclude`` patterns (:class:`UrlPattern`) take a URL out, and ``include`` patterns, when given, let only the
    URLs matching one of them in: exclude wins. The root is always inside, patterns or not (``roots``: the page keys
    of the root URL and of every URL its redirects went through). ``base`` is the URL the reach is taken from: the
    root, then where it redirected (:meth:`rebased`). Either scheme, http or https, is the same site. A folder's scope
    (a ``file:`` root) has no host: its files, ``file:///docs/`` and under.
    """

    netloc: str
    path_prefix: str = "/"
    mode: str = "prefix"
    domain: str = ""
    include: tuple[UrlPattern, ...] = ()
    exclude: tuple[UrlPattern, ...] = ()
    roots: frozenset[str] = frozenset()
    base: str = ""
    # URL → inside: a docs site's pages link the same navigation, and a refresh plans every 304 page's stored links
    # again (about 100,000 checks for the Python docs' 527 pages), where a check costs ~4 µs and a hit ~0.1 µs.
    _seen: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_root(
        cls, root_url: str, mode: str = "prefix", include: Iterable[str] = (), exclude: Iterable[str] = ()
    ) -> Scope:
        """The scope of a crawl from ``root_url`` (canonicalized) with the ``-a scope``, ``include`` and ``exclude``
        arguments. Raises ``ValueError`` for an unknown mode or a malformed pattern, :class:`InvalidURL` for the
        URL."""
        if mode not in SCOPE_MODES:
            raise ValueError(f"a scope is one of {', '.join(SCOPE_MODES)}, got {mode!r}")
        url = canonical_url(root_url)
        if mode != "prefix" and url.startswith("file:"):
            raise ValueError(f"a folder's scope is its own files: scope={mode} is for a site's host or domain")
        patterns = tuple(UrlPattern.parse(p) for p in include), tuple(UrlPattern.parse(p) for p in exclude)
        return cls._at(url, mode, *patterns, frozenset({page_key(url)}))

    @classmethod
    def of_version(cls, root_url: str, settings: Mapping[str, Any] | None) -> Scope:
        """The scope a version's crawls start with: its root URL and the ``scope``, ``include`` and ``exclude`` its
        stored crawl settings hold (``versions.settings``; a version indexed before they existed has the default).
        Raises ``ValueError`` or :class:`InvalidURL` as :meth:`from_root` does."""
        settings = settings or {}
        return cls.from_root(
            root_url, settings.get("scope") or "prefix", settings.get("include") or (), settings.get("exclude") or ()
        )

    @classmethod
    def _at(
        cls, url: str, mode: str, include: tuple[UrlPattern, ...], exclude: tuple[UrlPattern, ...], roots: frozenset
    ) -> Scope:
        parts = urlsplit(url)
        prefix = directory_of(parts.path) if mode == "prefix" else "/"
        domain = registrable_domain(parts.hostname or "") if mode == "domain" else ""
        return cls(parts.netloc, prefix, mode, domain, include, exclude, roots, url)

    def rebased(self, url: str) -> Scope:
        """The same rules taken from ``url`` (canonical), where the root redirected: its host, directory or domain.
        The root's earlier URLs stay inside."""
        return self._at(url, self.mode, self.include, self.exclude, self.roots | {page_key(url)})

    @property
    def directory_url(self) -> str:
        """The directory of the root (where its redirects led): ``…/docs/python`` gives ``…/docs/python/``, where the
        site's ``llms.txt`` and Doxygen's menu sit (:func:`directory_of`)."""
        parts = urlsplit(self.base)
        return urlunsplit((parts.scheme, parts.netloc, directory_of(parts.path), "", ""))

    def same_site(self, url: str) -> bool:
        """Whether ``url`` (canonical) is an http(s) URL on a host the scope reaches, whatever its path: the root's
        host and port, or, for a ``domain`` scope, any host of the domain; in a folder's scope, a ``file:`` URL
        inside it. Where a sitemap or llms.txt may be."""
        parts = urlsplit(url)
        if not self.netloc:  # a folder's scope: its own files (the filesystem is no site)
            return parts.scheme == "file" and not parts.netloc and (parts.path or "/").startswith(self.path_prefix)
        if parts.scheme not in ("http", "https"):
            return False
        if self.mode == "domain":
            host = parts.hostname or ""
            return host == self.domain or host.endswith("." + self.domain)
        return parts.netloc == self.netloc

    def reaches(self, url: str) -> bool:
        """Whether ``url`` (canonical) is within the scope's reach (host, and the prefix for a ``prefix`` scope),
        patterns aside."""
        return self.same_site(url) and (
            self.mode != "prefix" or (urlsplit(url).path or "/").startswith(self.path_prefix)
        )

    def excluded(self, url: str) -> bool:
        """Whether the patterns keep ``url`` out: an ``exclude`` matches, or ``include`` patterns are given and none
        matches."""
        if any(p.matches(url) for p in self.exclude):
            return True
        return bool(self.include) and not any(p.matches(url) for p in self.include)

    def __contains__(self, url: str) -> bool:
        """Whether a crawl requests and stores ``url`` (canonical): the root's URLs, or a URL within reach that the
        patterns let in."""
        inside = self._seen.get(url)
        if inside is None:
            inside = page_key(url) in self.roots or (self.reaches(url) and not self.excluded(url))
            if len(self._seen) >= 65536:
                self._seen.clear()
            self._seen[url] = inside
        return inside

    def describe(self) -> str:
        """One line for logs and ``docsbot status``: ``prefix docs.example.org/en/2.0/, exclude */changelog/*``."""
        where = {
            "prefix": f"prefix {self.netloc}{self.path_prefix}",
            "host": f"host {self.netloc}",
            "domain": f"domain {self.domain}",
        }[self.mode]
        for name, patterns in (("include", self.include), ("exclude", self.exclude)):
            if patterns:
                where += f", {name} {' '.join(p.text for p in patterns)}"
        return where
