"""An npm package's README from its tarball, for a registry that sends packuments without ``readme``.

registry.npmjs.org puts the README in a package's document (``readme``); a mirror or a proxy in front of it may
leave it out, and then the metadata is a home page and a repository, without the line that says where the
documentation is. Every release's tarball (``versions[v].dist.tarball``, https://docs.npmjs.com/cli/configuring-npm/
package-json, served by the registry itself) holds the README npm published: ``package/README.md``, any case, or
``README.markdown``, ``.rst``, ``.txt``, or no extension (npm's own rule, ``readme(\\.[^.]*)?``).

:func:`tarball_readme` reads it as a stream, and only it:

- the body is inflated and read as a tar stream member by member (:mod:`tarfile` in stream mode), stopping at the
  first README at the package's top level; nothing is written to disk and a member's path is used for nothing but
  that match;
- at most ``max_download`` bytes are downloaded (8 MiB: npm packs a README near the end, after the code) and
  inflated to at most 8 times that (a decompression bomb stops there); a README is cut at ``max_readme`` (1 MiB);
- the registry's ``dist.integrity`` (SRI, sha512/sha384/sha256) or ``dist.shasum`` (sha1) is checked when the rest
  of the body is cheap to read (no more than what was read already, or 1 MiB, and under the cap: npm packs the
  README late, so it usually is); a mismatch discards the README; a body too long to check leaves it unchecked
  (``verified = False``), which the notes say.

Raises :class:`TarballError` with a one-line reason; the caller goes on without the README.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import httpx

__all__ = ["MAX_DOWNLOAD", "MAX_README", "TarballError", "TarballReadme", "is_readme", "tarball_readme"]

MAX_DOWNLOAD = 8 * 1024 * 1024
MAX_README = 1024 * 1024
_INFLATE_RATIO = 8  # inflated bytes per downloaded byte allowed: npm's tarballs inflate about 3 to 5 times
_MAX_REDIRECTS = 5
_CHECK_EXTRA = 1024 * 1024  # bytes downloaded past the README to check the hash, at least
_STEP = 64 * 1024  # inflated at a time, so that one small compressed chunk cannot expand without bound
# npm's rule (read-package-json: /^readme(\.[^.]*)?$/i), at the package's top level (package/, or an old
# tarball's own top directory); the extensions whose text docsbot reads as a README
_README = re.compile(r"^(?!\.\.?/)[^/]+/readme(?:\.(?:md|markdown|mdown|mkd|rst|txt|text))?$", re.I)
_HASHES = {"sha512": hashlib.sha512, "sha384": hashlib.sha384, "sha256": hashlib.sha256, "sha1": hashlib.sha1}


class TarballError(DocsbotError):
    """A README that cannot be read from a tarball: not there, the tarball over the cap, unreadable, its hash not
    the registry's, or the download failed. The message says which, in one line."""


@dataclass(frozen=True)
class TarballReadme:
    """A README read from a package's tarball: its ``text`` (UTF-8, cut at :data:`MAX_README`), the ``member`` it
    came from (``package/README.md``), the ``url`` of the tarball, whether its hash was checked against the
    registry's (``verified``), and how far into the download it was (``offset``, bytes: what the cap must allow)."""

    text: str
    member: str
    url: str
    verified: bool
    offset: int = 0


def is_readme(member: str) -> bool:
    """Whether a tarball member's path is a package's README (``package/README.md``, ``package/readme``,
    ``package/Readme.rst``...), at the top level only (``package/docs/README.md`` is not)."""
    return bool(_README.match(member))


def tarball_readme(
    client: httpx.Client,
    url: str,
    integrity: str | None = None,
    shasum: str | None = None,
    *,
    refusal: Callable[[str], str | None] | None = None,
    max_download: int = MAX_DOWNLOAD,
    max_readme: int = MAX_README,
) -> TarballReadme:
    """The README in the npm tarball at ``url`` (a GET through ``client``; redirects followed by hand, at most 5,
    each hop's URL checked with ``refusal(url)``, which names why an address is refused, or ``None``), checked
    against ``integrity`` (npm's ``dist.integrity``: ``sha512-<base64>``, several allowed) or ``shasum``
    (``dist.shasum``: sha1, hex) when the whole body fits in ``max_download`` bytes. Raises :class:`TarballError`."""
    import httpx

    expected = _expected_digests(integrity, shasum)
    try:
        with _follow(client, url, refusal) as response:
            if response.status_code != 200:
                raise TarballError(f"{url} answers {response.status_code}")
            body = _Body(response.iter_bytes(), max_download, [factory() for _, factory, _ in expected])
            member, data = _find_readme(body, max_readme, url)
            offset = body.downloaded
            verified = False
            # cheap enough to check: the rest is no more than what was read already, or 1 MiB (npm packs the README
            # after the code, so the rest is often a LICENSE and a changelog)
            if expected and body.drain(min(max_download, max(2 * body.downloaded, body.downloaded + _CHECK_EXTRA))):
                for (name, _, digest), hasher in zip(expected, body.hashers, strict=True):
                    if hasher.digest() != digest:
                        raise TarballError(f"{url}: its {name} is not the registry's (the README is not used)")
                verified = True
    except httpx.HTTPError as exc:
        raise TarballError(f"{url} cannot be read ({type(exc).__name__}: {exc or 'no detail'})") from None
    return TarballReadme(data.decode("utf-8", "replace"), member, url, verified, offset)


@contextmanager
def _follow(client: httpx.Client, url: str, refusal: Callable[[str], str | None] | None) -> Iterator[httpx.Response]:
    """The streamed response at the end of ``url``'s redirects (at most 5), each hop checked with ``refusal``."""
    current = url
    for _ in range(_MAX_REDIRECTS + 1):
        if refusal is not None and (reason := refusal(current)) is not None:
            raise TarballError(reason)
        with client.stream("GET", current, follow_redirects=False) as response:
            if not (response.is_redirect and "location" in response.headers):
                yield response
                return
            current = urljoin(current, response.headers["location"])
    raise TarballError(f"{url}: more than {_MAX_REDIRECTS} redirects")


def _expected_digests(integrity: str | None, shasum: str | None) -> list[tuple[str, type, bytes]]:
    """``(name, hash constructor, digest)`` for the strongest algorithm ``integrity`` names (SRI: space-separated
    ``alg-base64``; unknown algorithms ignored), else for ``shasum``; ``[]`` when neither is usable."""
    found: dict[str, bytes] = {}
    for token in (integrity or "").split():
        algorithm, _, value = token.partition("-")
        if algorithm in _HASHES and algorithm != "sha1":
            try:
                found[algorithm] = base64.b64decode(value.split("?")[0], validate=True)
            except ValueError:
                continue
    for algorithm in ("sha512", "sha384", "sha256"):
        if algorithm in found:
            return [(f"integrity ({algorithm})", _HASHES[algorithm], found[algorithm])]
    if shasum and re.fullmatch(r"[0-9a-fA-F]{40}", shasum):
        return [("shasum (sha1)", hashlib.sha1, bytes.fromhex(shasum))]
    return []


def _find_readme(body: _Body, max_readme: int, url: str) -> tuple[str, bytes]:
    """``(member, first max_readme bytes)`` of the first README member of the tar stream ``body``."""
    try:
        with tarfile.open(fileobj=io.BufferedReader(body, _STEP), mode="r|") as tar:
            for member in tar:
                if member.isfile() and is_readme(member.name):
                    readme = tar.extractfile(member)
                    return member.name, readme.read(min(max_readme, member.size)) if readme is not None else b""
    except _TooLarge as exc:
        raise TarballError(f"{url}: no README in its first {exc} (the cap)") from None
    except (tarfile.TarError, zlib.error, EOFError, OSError) as exc:
        raise TarballError(f"{url} is not a readable tarball ({type(exc).__name__}: {exc})") from None
    raise TarballError(f"{url} holds no README")


class _TooLarge(Exception):
    """The download or its inflated size went over the cap (the message: which cap)."""


class _Body(io.RawIOBase):
    """A gzip body streamed from ``chunks`` as a readable file of its inflated bytes, hashing what is downloaded
    into ``hashers``; raises :class:`_TooLarge` past ``max_download`` downloaded bytes or
    ``max_download * _INFLATE_RATIO`` inflated ones."""

    def __init__(self, chunks: Iterator[bytes], max_download: int, hashers: list) -> None:
        super().__init__()
        self.chunks = chunks
        self.max_download = max_download
        self.hashers = hashers
        self.downloaded = 0
        self.inflated = 0
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing
        self._pending = b""  # downloaded, not yet inflated
        self._out = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._out:
            if self._inflate.eof:
                return 0
            if not self._pending:
                chunk = self._next()
                if chunk is None:
                    return 0  # a truncated stream: tarfile says so
                self._pending = chunk
            self._out = self._inflate.decompress(self._pending, _STEP)
            self._pending = self._inflate.unconsumed_tail
            self.inflated += len(self._out)
            if self.inflated > self.max_download * _INFLATE_RATIO:
                raise _TooLarge(f"{self.max_download * _INFLATE_RATIO // 1024 // 1024} MiB inflated")
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def _next(self) -> bytes | None:
        if self._done:
            return None
        chunk = next(self.chunks, None)
        if chunk is None:
            self._done = True
            return None
        self.downloaded += len(chunk)
        if self.downloaded > self.max_download:
            self._done = True
            raise _TooLarge(f"{self.max_download // 1024 // 1024} MiB downloaded")
        for hasher in self.hashers:
            hasher.update(chunk)
        return chunk

    def drain(self, limit: int) -> bool:
        """Download (and hash) the rest of the body, up to ``limit`` bytes in all: ``True`` when all of it was,
        ``False`` when the limit stopped it."""
        self.max_download = min(self.max_download, limit)
        try:
            while self._next() is not None:
                pass
        except _TooLarge:
            return False
        return True
