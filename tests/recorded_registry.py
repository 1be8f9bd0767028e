"""The registries' real answers, recorded once (``scripts/record_registry.py``) into tests/data/registry/, served
offline: to an ``httpx.Client`` through a transport (:func:`recorded_client`), or over HTTP by a local server
(:class:`RecordedRegistryServer`) for ``docsbot add`` run as a process. No other host answers: a documentation
host is unreachable, as on the machine they were recorded on."""

from __future__ import annotations

import gzip
import json
import re
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


def answer(path: str, data: Path = DATA) -> tuple[int, bytes]:
    """``(status, body)`` for a registry path: ``/pypi/NAME/json`` or npm's ``/NAME`` (``/@scope%2Fname``)."""
    if m := re.fullmatch(r"/pypi/([^/]+)/json/?", path):
        found = recorded("pypi", unquote(m.group(1)), data)
    else:
        found = recorded("npm", unquote(path.lstrip("/")), data)
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
                status, body = answer(path.removeprefix("/npm")) if path.startswith(("/pypi/", "/npm/")) else (404, b"")
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
