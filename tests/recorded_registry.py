"""The registries' real answers, recorded once (``scripts/record_registry.py``) into tests/data/registry/, served
offline: to an ``httpx.Client`` through a transport (:func:`recorded_client`), or over HTTP by a local server
(:class:`RecordedRegistryServer`) for ``docsbot add`` run as a process. No other host answers: a documentation
host is unreachable, as on the machine they were recorded on.

npm's documents come without ``readme``, as that machine's registry sent them; the README of each newest release
was recorded from its tarball, and is served in one (:func:`tarball`) at the tarball's URL: the README member as
the package had it, after as many bytes as the real tarball had before it, so that docsbot's download cap applies
as it would. The served document's ``dist.integrity`` is that tarball's hash (its own, not the real one's)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import re
import tarfile
import threading
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import httpx

DATA = Path(__file__).resolve().parent / "data" / "registry"
PYPI_URL = "https://pypi.org/pypi"
NPM_URL = "https://registry.npmjs.org"


@cache
def recorded(ecosystem: str, name: str, data: Path = DATA) -> dict | None:
    """The recorded answer of ``name`` under ``data`` (``None`` when none was recorded; ``{"status": 404}`` for a
    name the registry did not know). PyPI names are compared as PyPI normalizes them (PEP 503)."""
    if ecosystem == "pypi":
        wanted = re.sub(r"[-_.]+", "-", name).lower()
        for path in (data / "pypi").glob("*.json.gz"):
            if re.sub(r"[-_.]+", "-", path.name.removesuffix(".json.gz")).lower() == wanted:
                return json.loads(gzip.decompress(path.read_bytes()))
        return None
    path = data / ecosystem / f"{quote(name, safe='@')}.json.gz"
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else None


@cache
def recorded_readme(name: str, data: Path = DATA) -> dict | None:
    """The README recorded from the tarball of npm package ``name``'s newest release (``{"version", "tarball",
    "member", "offset", "text"}`` or ``{"version", "tarball", "error"}``), ``None`` when none was recorded."""
    path = data / "npm" / f"{quote(name, safe='@')}.readme.json.gz"
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else None


@cache
def tarball(name: str, data: Path = DATA) -> bytes | None:
    """A gzipped tarball holding ``name``'s recorded README as its member (``package/README.md``...), after a filler
    member of as many bytes as the real tarball's download had before it (stored, not compressed: the bytes
    downloaded are the same); ``None`` without a recorded README. Built once."""
    readme = recorded_readme(name, data)
    if readme is None:
        return None
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        members = [("package/package.json", json.dumps({"name": name, "version": readme["version"]}).encode())]
        if readme.get("offset"):
            members.append(("package/dist/recorded-filler.bin", bytes(readme["offset"])))
        if "member" in readme:
            members.append((readme["member"], readme["text"].encode()))
        for member, body in members:
            info = tarfile.TarInfo(member)
            info.size, info.mode = len(body), 0o644
            tar.addfile(info, io.BytesIO(body))
    return gzip.compress(out.getvalue(), compresslevel=0, mtime=0)


def _with_dist(name: str, document: dict, tarball_base: str, data: Path) -> dict:
    """``document`` whose newest release's ``dist`` names the served tarball (under ``tarball_base``) and its hash."""
    readme, body = recorded_readme(name, data), tarball(name, data)
    if readme is None or body is None:
        return document
    release = (document.get("versions") or {}).get(readme["version"])
    if release is None:
        return document
    path = urlsplit(readme["tarball"]).path
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(body).digest()).decode()
    dist = {"tarball": tarball_base.rstrip("/") + path, "integrity": integrity}
    return {**document, "versions": {**document["versions"], readme["version"]: {**release, "dist": dist}}}


def answer(path: str, data: Path = DATA, tarball_base: str = NPM_URL) -> tuple[int, bytes]:
    """``(status, body)`` for a registry path: ``/pypi/NAME/json``, npm's ``/NAME`` (``/@scope%2Fname``), or a
    recorded README's tarball (``/NAME/-/NAME-VERSION.tgz``, served with its document's tarball URLs under
    ``tarball_base``)."""
    if m := re.fullmatch(r"/pypi/([^/]+)/json/?", path):
        found = recorded("pypi", unquote(m.group(1)), data)
    elif m := re.fullmatch(r"/((?:@[^/]+/)?[^/@]+)/-/[^/]+\.tgz", path):
        readme = recorded_readme(m.group(1), data)
        body = tarball(m.group(1), data) if readme and urlsplit(readme["tarball"]).path == path else None
        return (200, body) if body is not None else (404, b'{"error": "Not Found"}')
    else:
        name = unquote(path.lstrip("/"))
        found = recorded("npm", name, data)
        if found is not None and "status" not in found:
            found = _with_dist(name, found, tarball_base, data)
    if found is None or found.get("status") == 404:
        return 404, b'{"error": "Not Found"}'
    return 200, json.dumps(found).encode()


def recorded_client(data: Path = DATA, unreachable: str = "documentation hosts cannot be reached") -> httpx.Client:
    """An ``httpx.Client`` whose PyPI (``https://pypi.org/pypi``) and npm (``https://registry.npmjs.org``) answers
    are the ones recorded under ``data``; any other host raises :class:`httpx.ConnectError` (``unreachable``)."""

    def handle(request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        if url.startswith((PYPI_URL + "/", NPM_URL + "/")):
            status, body = answer(urlsplit(url).path, data)
        else:
            raise httpx.ConnectError(unreachable, request=request)
        return httpx.Response(status, content=body, headers={"Content-Type": "application/json"})

    return httpx.Client(transport=httpx.MockTransport(handle))


class RecordedRegistryServer:
    """The recorded answers over HTTP on a free port: PyPI at ``{url}/pypi``, npm at ``{url}/npm``."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0]
                npm = f"http://127.0.0.1:{self.server.server_address[1]}/npm"
                status, body = (
                    answer(path.removeprefix("/npm"), tarball_base=npm)
                    if path.startswith(("/pypi/", "/npm/"))
                    else (404, b"")
                )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> RecordedRegistryServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
