"""An archive of built docs (``.zip``, ``.tar.gz``...) as a folder to crawl: fetched (conditionally, when it is a URL),
unpacked safely into the data directory under its library version, and handed to the crawl as a ``file:`` folder
(no Scrapy, no database).

:func:`unpack_root` is what a run's setup calls (:mod:`docsbot.extensions.setup`). The folder is
``DOCSBOT_DATA_DIR/archives/LIBRARY/VERSION/tree/`` (an archive whose files all sit in one top folder, as
``docs-1.2/…`` archives do, has that folder's content there, so that the pages' URLs do not change with its name);
beside it, ``archive.json`` says which archive it was unpacked from and with which validators.

- **Unpacked safely.** No member is written outside the folder: an archive with a member named by an absolute path
  or with ``..`` is refused, a tar is extracted with Python's ``filter="data"`` (no device files, no permissions
  beyond the owner's: PEP 706; a link that leads out of the folder is not made, and the log counts those: built docs
  link shared scripts so, as Debian's do), and a zip's symbolic links are not made. An archive with more than
  ``DOCSBOT_ARCHIVE_MAX_MEMBERS`` members, or whose files (as declared, and as actually written) or download exceed
  ``DOCSBOT_ARCHIVE_MAX_BYTES``, is refused: a zip bomb stops at the cap. A refused archive raises
  :class:`ArchiveError`, and the folder of the last good one stays.
- **Refreshed.** A refresh fetches a URL again with the stored ``ETag``/``Last-Modified`` (a 304 keeps the folder as
  it is) and reads a local archive again when its size or modification time changed; a changed archive is unpacked
  into a new folder that then replaces the old one. Members keep their modification times, so the files that did
  not change answer the crawl's conditional requests with 304 (:class:`docsbot.core.files.FileDownloadHandler`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from docsbot.errors import DocsbotError
from docsbot.folders import file_url, is_file_url, url_path

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ArchiveError", "ArchiveLimits", "Unpacked", "archive_folder", "unpack", "unpack_root"]

logger = logging.getLogger(__name__)
_STATE = "archive.json"
_CHUNK = 1 << 16


class ArchiveError(DocsbotError, ValueError):
    """An archive that cannot be fetched, read or unpacked safely; nothing is crawled and nothing is deleted."""


@dataclass(frozen=True)
class ArchiveLimits:
    """The zip bomb's guard: ``max_bytes`` (the download, and the files unpacked, in bytes) and ``max_members``."""

    max_bytes: int = 2 << 30
    max_members: int = 200_000


@dataclass(frozen=True)
class Unpacked:
    """The folder an archive was unpacked to (``folder_url``, a ``file:`` URL ending in ``/``), whether this call
    unpacked it (``fresh``; ``False``: the archive had not changed) and a line saying what was done."""

    folder_url: str
    fresh: bool
    message: str


def archive_folder(data_dir: Path, library: str, version: str) -> Path:
    """Where the archive of ``library`` ``version`` is unpacked: ``DATA_DIR/archives/LIBRARY/VERSION`` (names
    percent-encoded; the unnamed version is ``_``)."""
    return Path(data_dir) / "archives" / quote(library, safe="") / (quote(version, safe="") or "_")


def unpack_root(
    source: str,
    data_dir: Path,
    library: str,
    version: str,
    *,
    limits: ArchiveLimits = ArchiveLimits(),  # noqa: B008 - frozen
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> Unpacked:
    """Fetch ``source`` (an archive's ``file:`` or http(s) URL) when it changed since the last call for this
    ``library`` ``version`` and unpack it (see the module docstring); returns the folder to crawl. ``headers``:
    sent with an HTTP fetch (the crawl's ``User-Agent``). Raises :class:`ArchiveError`."""
    home = archive_folder(data_dir, library, version)
    tree = home / "tree"
    state = _read_state(home / _STATE) if tree.is_dir() else {}
    if state.get("source") != source:
        state = {}
    home.mkdir(parents=True, exist_ok=True)
    if is_file_url(source):
        path = url_path(source)
        try:
            st = path.stat()
        except OSError as exc:
            raise ArchiveError(f"cannot read the archive {path}: {exc.strerror or exc}") from None
        current = {"source": source, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        if state and all(state.get(k) == v for k, v in current.items()):
            return Unpacked(file_url(tree, directory=True), False, f"{path} unchanged since it was unpacked")
        if st.st_size > limits.max_bytes:
            raise ArchiveError(f"the archive {path} is {st.st_size} bytes, more than DOCSBOT_ARCHIVE_MAX_BYTES")
        unpack(path, tree, limits)
        _write_state(home / _STATE, current)
        return Unpacked(file_url(tree, directory=True), True, f"{path} unpacked into {tree}")
    download = home / "download.part"
    try:
        fetched = _fetch(source, download, state, limits, dict(headers or {}), timeout)
        if fetched is None:
            return Unpacked(file_url(tree, directory=True), False, f"{source} not modified (304)")
        unpack(download, tree, limits, name=source)
    finally:
        download.unlink(missing_ok=True)
    _write_state(home / _STATE, {"source": source, **fetched})
    return Unpacked(file_url(tree, directory=True), True, f"{source} fetched and unpacked into {tree}")


def _fetch(
    url: str, target: Path, state: dict[str, Any], limits: ArchiveLimits, headers: dict[str, str], timeout: float
) -> dict[str, Any] | None:
    """Download ``url`` into ``target`` (at most ``limits.max_bytes``), conditionally on ``state``'s validators;
    ``None`` for a 304, else the new validators. Raises :class:`ArchiveError` for any other answer or failure."""
    import httpx

    if state.get("etag"):
        headers["If-None-Match"] = state["etag"]
    if state.get("last_modified"):
        headers["If-Modified-Since"] = state["last_modified"]
    try:
        with httpx.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as response:
            if response.status_code == 304 and state:
                return None
            if response.status_code != 200:
                raise ArchiveError(f"cannot fetch the archive {url}: the server answers {response.status_code}")
            written = 0
            with target.open("wb") as out:
                for chunk in response.iter_bytes(_CHUNK):
                    written += len(chunk)
                    if written > limits.max_bytes:
                        raise ArchiveError(f"the archive {url} is larger than DOCSBOT_ARCHIVE_MAX_BYTES")
                    out.write(chunk)
            return {"etag": response.headers.get("ETag"), "last_modified": response.headers.get("Last-Modified")}
    except httpx.HTTPError as exc:
        raise ArchiveError(f"cannot fetch the archive {url}: {exc}") from None


def unpack(archive: Path, tree: Path, limits: ArchiveLimits = ArchiveLimits(), *, name: str | None = None) -> None:  # noqa: B008
    """Unpack ``archive`` (a zip, or a tar with any compression tarfile reads) into ``tree``, replacing what is
    there once the whole archive is unpacked; members keep their modification times, and an archive whose files all
    sit in one top folder has that folder's content at ``tree``. ``name``: how errors name the archive. Raises
    :class:`ArchiveError` (``tree`` is then left as it was)."""
    label = name or str(archive)
    fresh = tree.with_name(tree.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            _unzip(archive, fresh, limits, label)
        elif tarfile.is_tarfile(archive):
            _untar(archive, fresh, limits, label)
        else:
            raise ArchiveError(f"{label} is neither a zip nor a tar archive")
        entries = list(fresh.iterdir())
        if not entries:
            raise ArchiveError(f"the archive {label} holds no file")
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink() else None
        old = tree.with_name(tree.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if tree.exists():
            tree.rename(old)
        (top or fresh).rename(tree)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def _member_path(root: Path, name: str, label: str) -> Path:
    """Where the zip member ``name`` goes under ``root``; raises :class:`ArchiveError` for an absolute name, a drive,
    or ``..``."""
    member = PurePosixPath(name.replace("\\", "/"))
    if member.is_absolute() or ".." in member.parts or (member.parts and ":" in member.parts[0]):
        raise ArchiveError(f"the archive {label} has a member outside its folder: {name!r}; nothing was unpacked")
    return root.joinpath(*member.parts)


def _unzip(archive: Path, root: Path, limits: ArchiveLimits, label: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > limits.max_members:
                raise ArchiveError(f"the archive {label} has {len(members)} members, more than "
                                   "DOCSBOT_ARCHIVE_MAX_MEMBERS")  # fmt: skip
            if sum(m.file_size for m in members) > limits.max_bytes:
                raise ArchiveError(f"the archive {label} unpacks to more than DOCSBOT_ARCHIVE_MAX_BYTES")
            written = 0
            for member in members:
                target = _member_path(root, member.filename, label)
                mode = member.external_attr >> 16
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                if stat.S_ISLNK(mode):
                    logger.info("not unpacking %s from %s: a symbolic link", member.filename, label)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, target.open("wb") as out:
                    while chunk := src.read(_CHUNK):
                        written += len(chunk)
                        if written > limits.max_bytes:  # sizes a zip declares can lie; what it writes cannot
                            raise ArchiveError(f"the archive {label} unpacks to more than DOCSBOT_ARCHIVE_MAX_BYTES")
                        out.write(chunk)
                mtime = time.mktime((*member.date_time, 0, 0, -1))
                os.utime(target, (mtime, mtime))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise ArchiveError(f"cannot unpack the archive {label}: {exc}") from None


def _untar(archive: Path, root: Path, limits: ArchiveLimits, label: str) -> None:
    try:
        with tarfile.open(archive, "r:*") as tf:
            total = 0
            links_out: list[str] = []
            for count, member in enumerate(tf, 1):  # one pass: a compressed stream is read once, members as they come
                total += member.size if member.isreg() else 0
                if count > limits.max_members:
                    raise ArchiveError(f"the archive {label} has more members than DOCSBOT_ARCHIVE_MAX_MEMBERS")
                if total > limits.max_bytes:
                    raise ArchiveError(f"the archive {label} unpacks to more than DOCSBOT_ARCHIVE_MAX_BYTES")
                _member_path(root, member.name, label)  # refused as a zip's would be (the filter only strips a "/")
                try:
                    tf.extract(member, root, filter="data")
                except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
                    links_out.append(member.name)  # not made: a link out of the folder, as a zip's links are not
            if links_out:
                logger.warning("not unpacking %d links of %s that lead out of it (%s)", len(links_out), label,
                               ", ".join(links_out[:5]) + (", ..." if len(links_out) > 5 else ""))  # fmt: skip
    except tarfile.FilterError as exc:
        raise ArchiveError(f"the archive {label} has an unsafe member ({exc}); nothing was unpacked") from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ArchiveError(f"cannot unpack the archive {label}: {exc}") from None


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(path: Path, state: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps(state), encoding="utf-8")
    partial.replace(path)
