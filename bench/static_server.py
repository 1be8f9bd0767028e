"""A static file server that behaves like nginx for the benchmark's purposes, for machines (and the test smoke
run) without nginx: strong ETag from mtime and size, Last-Modified, 304 for a matching If-None-Match (or, when
absent, an exact If-Modified-Since), directory → index.html, and nginx's access-log line.

    python bench/static_server.py ROOT PORT ACCESS_LOG
"""

from __future__ import annotations

import os
import sys
from email.utils import formatdate
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def make_handler(root: str, log_path: str) -> type[SimpleHTTPRequestHandler]:
    log = open(log_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the server

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=root, **kwargs)

        def log_message(self, *args: object) -> None:
            pass

        def _log(self, status: int, size: int) -> None:
            inm = self.headers.get("If-None-Match", "-")
            ims = self.headers.get("If-Modified-Since", "-")
            log.write(f'{status} {size} "{self.requestline}" inm="{inm}" ims="{ims}"\n')

        def do_GET(self) -> None:  # noqa: N802
            path = Path(self.translate_path(self.path))
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                body = b"not found"
                self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self._log(404, len(body))
                return
            st = path.stat()
            etag = f'"{int(st.st_mtime):x}-{st.st_size:x}"'
            last_modified = formatdate(int(st.st_mtime), usegmt=True)
            inm, ims = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
            if (inm is not None and inm == etag) or (inm is None and ims == last_modified):
                self.send_response(304)
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", last_modified)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self._log(304, 0)
                return
            body = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(path)))
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", last_modified)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self._log(200, len(body))

    return Handler


def main() -> None:
    root, port, log_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(os.path.abspath(root), log_path))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
