"""A real nginx serving a directory with one host behaviour switched on, and its access log read back.

Used by tests/test_hosts.py: the behaviours real documentation hosts have (robots.txt rules, 401 and 403 areas,
``limit_req`` answering 429, an http → https redirect, gzip with the weak ETags it makes, ``Cache-Control``) are
nginx's own, configured as their operators configure them, not imitated by a test server.

:class:`NginxHost` writes a configuration under a temporary directory, starts nginx in the foreground of its own
process (``daemon off``, a prefix of its own, no root needed beyond what the ports ask), waits until it answers and
stops it on exit. Its access log is one JSON object per request (:meth:`NginxHost.requests`): when it ended
(``msec``, seconds since the epoch), how long it took (``request_time``, s), status, method, path, scheme, the
validators and ``Accept-Encoding`` the client sent, and the ``ETag``, ``Content-Encoding`` and ``Cache-Control``
nginx answered with.
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)

LOG_FORMAT = (
    "log_format hosts escape=json '{"
    '"msec":$msec,"request_time":$request_time,"status":$status,"method":"$request_method",'
    '"path":"$request_uri","scheme":"$scheme","inm":"$http_if_none_match","ims":"$http_if_modified_since",'
    '"accept_encoding":"$http_accept_encoding","etag":"$sent_http_etag","encoding":"$sent_http_content_encoding",'
    '"cache_control":"$sent_http_cache_control","retry_after":"$sent_http_retry_after","bytes":$body_bytes_sent'
    "}';"
)


def can_listen(address: str, port: int) -> bool:
    """Whether ``address:port`` can be bound now (not taken by, say, a system nginx on every address's port 80)."""
    with socket.socket() as sock:
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Request:
    """One line of the access log. ``start``/``end``: seconds since the epoch (nginx's ``$msec`` less
    ``$request_time``, and ``$msec``)."""

    start: float
    end: float
    status: int
    method: str
    path: str
    scheme: str
    inm: str
    ims: str
    accept_encoding: str
    etag: str
    encoding: str
    cache_control: str
    retry_after: str
    bytes: int


def self_signed_certificate(directory: Path, address: str) -> tuple[Path, Path]:
    """A key and a self-signed certificate for ``address`` (what Scrapy accepts: it does not verify certificates by
    default, as browsers' users are asked to). Made with ``cryptography``, which Scrapy depends on."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)])
    now = datetime.datetime.now(datetime.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]), False)
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = directory / "key.pem", directory / "cert.pem"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


class NginxHost:
    """nginx serving ``root`` on 127.0.0.1 (``url``: ``http://127.0.0.1:PORT``) with ``server`` (directives inside
    the ``server`` block) and ``http`` (directives of the ``http`` block: zones). With ``tls=True`` a second server
    answers https on ``tls_url`` with the same ``server`` directives, and the plain one redirects every request to it
    (301, as most documentation hosts do), both on the default ports (80, 443) of an address of 127/8 of their own
    (root only). Raises ``RuntimeError`` with nginx's error log when it does not start."""

    def __init__(self, root: Path, state: Path, *, server: str = "", http: str = "", tls: bool = False) -> None:
        self.root, self.state, self.tls = root, state, tls
        if tls:  # the default ports, as a real host has them: http://H/ and https://H/ are one host to a crawl
            self.address = f"127.0.{os.getpid() % 250 + 1}.{secrets.randbelow(250) + 2}"
            self.port, self.tls_port = 80, 443
            self.url, self.tls_url = f"http://{self.address}", f"https://{self.address}"
        else:
            self.address, self.port, self.tls_port = "127.0.0.1", free_port(), None
            self.url, self.tls_url = f"http://127.0.0.1:{self.port}", None
        self.log = state / "access.log"
        state.mkdir(parents=True, exist_ok=True)
        (state / "tmp").mkdir(exist_ok=True)
        serve = f"root {root};\n{server}" + ("\nlocation / { }" if "location / " not in server else "")
        if tls:
            key, cert = self_signed_certificate(state, self.address)
            servers = (
                f"server {{ listen {self.address}:{self.port}; return 301 {self.tls_url}$request_uri; }}\n"
                f"server {{ listen {self.address}:{self.tls_port} ssl;\n"
                f"ssl_certificate {cert}; ssl_certificate_key {key};\n"
                f"{serve}\n}}"
            )
        else:
            servers = f"server {{ listen 127.0.0.1:{self.port};\n{serve}\n}}"
        temp = state / "tmp"
        self.config = state / "nginx.conf"
        self.config.write_text(
            # As root, nginx's workers would run as nobody, who cannot read pytest's private temporary directories.
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"worker_processes 1;\ndaemon off;\npid {state}/nginx.pid;\nerror_log {state}/error.log;\n"
            "events { worker_connections 256; }\n"
            "http {\n"
            "  include /etc/nginx/mime.types;\n  default_type application/octet-stream;\n"
            f"  {LOG_FORMAT}\n  access_log {self.log} hosts;\n"
            f"  client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy; fastcgi_temp_path {temp}/fastcgi;\n"
            f"  uwsgi_temp_path {temp}/uwsgi; scgi_temp_path {temp}/scgi;\n"
            f"  {http}\n{servers}\n}}\n"
        )
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> NginxHost:
        self.process = subprocess.Popen([NGINX, "-p", str(self.state), "-c", str(self.config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx did not start: {self.process.stderr.read().decode()}")
            try:
                socket.create_connection((self.address, self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"nginx does not answer on {self.port}: {(self.state / 'error.log').read_text()}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process.stderr.close()

    def clear(self) -> None:
        """Forget the requests logged so far (nginx keeps appending to the same open file)."""
        with open(self.log, "r+") as log:
            log.truncate(0)

    def requests(self) -> list[Request]:
        """Every request logged since the start (or :meth:`clear`), in the order they ended."""
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            end, took = float(row.pop("msec")), float(row.pop("request_time"))
            out.append(Request(start=end - took, end=end, **row))
        return out

    def pages(self) -> list[Request]:
        """The requests for pages: not robots.txt, nor the seed files docsbot asks for (sitemaps, llms.txt)."""
        return [r for r in self.requests() if not r.path.startswith(("/robots.txt", "/sitemap", "/llms"))]


def max_in_flight(requests: list[Request]) -> int:
    """The most requests the server was answering at one time, from their start and end times."""
    # A request nginx answered within its clock's millisecond starts and ends at one time: starts sort first.
    events = sorted([(r.start, -1) for r in requests] + [(r.end, 1) for r in requests])
    most = now = 0
    for _, step in events:
        now -= step
        most = max(most, now)
    return most
