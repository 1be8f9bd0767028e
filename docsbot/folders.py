"""Folders and archives as documentation roots (no Scrapy, no database): what a ``file:`` root names, which files of
a folder are pages and of which kind, what answers a folder's URL, whether a path stays inside the folder, and the
validators a file is revalidated with.

A folder is crawled as a site is: its files are ``file:`` URLs (RFC 8089), its pages link each other, and a refresh
sends each stored page's validators back. :class:`docsbot.core.files.FileDownloadHandler` answers those requests
from the disk with these rules; an archive (:data:`ARCHIVE_SUFFIXES`) is unpacked into a folder first
(:mod:`docsbot.archives`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote, urlsplit

from w3lib.url import file_uri_to_path

from docsbot.names import name_from
from docsbot.urls import InvalidURL, canonical_url

if TYPE_CHECKING:
    from os import stat_result

__all__ = [
    "ARCHIVE_SUFFIXES",
    "START_FILES",
    "FolderAnswer",
    "PageKind",
    "answer_for",
    "default_library",
    "file_url",
    "inside",
    "is_archive",
    "is_file_url",
    "page_kind",
    "root_argument",
    "url_path",
    "validators",
]

PageKind = Literal["html", "markdown", "text"]
_KINDS: dict[str, PageKind] = {
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".md": "markdown", ".markdown": "markdown",
    ".txt": "text", ".rst": "text",
}  # fmt: skip
# A folder's start page when it has no index.html: a repository's docs folder introduces itself with one of these (in
# this order); a folder with none is listed (its files and folders, as nginx's autoindex does).
START_FILES = ("index.md", "index.markdown", "README.md", "README.markdown", "readme.md", "README.rst", "README.txt")
_INDEX_FILES = ("index.html", "index.htm")
# .tar.gz and .tgz are what built documentation is shipped as; the other tar compressions and plain tar come free
# with tarfile ("r:*").
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
# The version of the HTML a Markdown or text file is rendered to (docsbot.content.sources): part of the file's ETag,
# so that a docsbot that renders them otherwise fetches every such file again once (a 200, then compared by content).
RENDER_VERSION = 1


def is_file_url(url: str) -> bool:
    return url[:5].lower() == "file:"


def url_path(url: str) -> Path:
    """The local path a canonical ``file:`` URL names (percent-decoded; a trailing slash kept off)."""
    return Path(file_uri_to_path(url))


def file_url(path: Path | str, *, directory: bool = False) -> str:
    """The canonical ``file:`` URL of an absolute ``path``; a ``directory``'s ends with ``/``."""
    url = Path(path).as_uri()
    return canonical_url(url + "/" if directory and not url.endswith("/") else url)


def is_archive(url_or_path: str) -> bool:
    """Whether ``url_or_path``'s path ends with one of :data:`ARCHIVE_SUFFIXES` (``.zip``, ``.tar.gz``...)."""
    path = urlsplit(url_or_path).path if "://" in url_or_path or is_file_url(url_or_path) else url_or_path
    return path.lower().endswith(ARCHIVE_SUFFIXES)


# Folder names that say where docs are, not whose: a library named after its folder skips them.
_GENERIC_NAMES = frozenset({"docs", "doc", "documentation", "html", "_build", "build", "site", "public", "dist", "en"})


def default_library(url: str) -> str:
    """The library name a root is indexed under when none is given (made a name by
    :func:`docsbot.names.name_from`: ``my docs`` is ``my-docs``); see :func:`_default_library`."""
    return name_from(_default_library(url))


def _default_library(url: str) -> str:
    """The library name a root is indexed under when none is given; a local one's (or an archive's): its folder's
    (or archive's) name, the generic ones (``docs``, ``html``, ``_build``...) skipped for their parent's;
    ``/srv/acme/docs/`` gives
    ``acme``, ``docs-acme-1.2.tar.gz`` gives ``docs-acme-1.2``. A site's root URL gives its host."""
    if not is_file_url(url) and not is_archive(url):
        return urlsplit(url).hostname or ""
    path = PurePosixPath(urlsplit(url).path if is_file_url(url) or "://" in url else url)
    parts = list(path.parts[1:])
    if parts and not is_archive(parts[-1]) and page_kind(parts[-1]) is not None and not url.endswith("/"):
        parts.pop()  # a file: its folder's name
    if parts and is_archive(parts[-1]):
        name = parts[-1]
        return name[: -len(next(s for s in ARCHIVE_SUFFIXES if name.lower().endswith(s)))] or name
    for part in reversed(parts):
        if part.lower() not in _GENERIC_NAMES:
            return unquote(part)
    return unquote(parts[-1]) if parts else "files"


def root_argument(value: str) -> str:
    """The root URL ``-a url=`` means when it names a local folder or file: an absolute path (``/srv/docs``,
    ``~/docs``) or a ``file:`` URL, as a canonical ``file:`` URL, a folder's with its ``/`` (so that the folder, not
    its parent, is the scope). Anything else is returned as given. Raises :class:`~docsbot.urls.InvalidURL` for a
    relative path, a ``file:`` URL on another host, and a path that does not exist."""
    text = value.strip()
    if is_file_url(text):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise InvalidURL(f"a file: URL names a local path (file:///path), not one on {parts.netloc!r}: {text!r}")
        path = url_path(canonical_url(text))
    elif text.startswith(("/", "~")):
        path = Path(text).expanduser()
    elif text.startswith(("./", "../")):
        raise InvalidURL(f"give the folder or archive as an absolute path or file:///path, not {text!r}")
    else:
        return value
    if not path.exists():
        raise InvalidURL(f"no such folder or file: {path}")
    return file_url(path.absolute(), directory=path.is_dir())


def page_kind(name: str) -> PageKind | None:
    """``html``, ``markdown`` or ``text`` for a file named ``name`` that is a page in a folder; ``None`` for the
    others (images, stylesheets, scripts, archives...)."""
    return _KINDS.get(os.path.splitext(name)[1].lower())


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path``, symbolic links resolved, is ``folder`` (resolved) or under it: a link out of the folder, or
    ``..`` that climbs out of it, is not."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):  # gone, or a symbolic link loop
        return False
    root = folder.resolve()
    return resolved == root or resolved.is_relative_to(root)


def validators(st: stat_result, kind: PageKind | None) -> tuple[str, str]:
    """``(etag, last_modified)`` of a file with status ``st``: an ETag of its modification time (in nanoseconds)
    and size, as nginx makes one of seconds and size (a file rewritten within a second is told apart), with the
    rendering's version for a file rendered to HTML; ``Last-Modified`` its modification time as an HTTP date
    (RFC 9110 §8.8.2)."""
    tag = f"{st.st_mtime_ns:x}-{st.st_size:x}"
    if kind in ("markdown", "text"):
        tag += f"-r{RENDER_VERSION}"
    return f'"{tag}"', formatdate(st.st_mtime, usegmt=True)


@dataclass(frozen=True)
class FolderAnswer:
    """What answers the URL of a folder ``path``: the ``file`` served there (its ``index.html``, else one of
    :data:`START_FILES`), or ``None``: a listing of the folder. ``canonical``: the URL the page is stored under
    when it is not the folder's own (a start file's, or the folder's with its slash when asked without one)."""

    path: Path
    file: Path | None
    canonical: str | None


def answer_for(url: str) -> FolderAnswer:
    """What answers ``url``, the canonical URL of an existing folder (see :class:`FolderAnswer`). An ``index.html``
    answers at the folder's URL itself (as a web server's index does; :func:`docsbot.urls.page_key` makes them one
    page); a start file is stored under its own URL, so that a link to it and the folder are one page."""
    path = url_path(url)
    slash = url.endswith("/")
    for name in _INDEX_FILES:
        if (path / name).is_file():
            return FolderAnswer(path, path / name, None if slash else file_url(path / name))
    names = {entry.name for entry in path.iterdir()} if path.is_dir() else set()
    for name in START_FILES:
        if name in names and (path / name).is_file():
            return FolderAnswer(path, path / name, file_url(path / name))
    return FolderAnswer(path, None, None if slash else file_url(path, directory=True))
