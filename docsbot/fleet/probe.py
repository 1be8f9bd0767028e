"""Asking a documentation host whether a URL is there, honestly: a page, a page that is not there, or "cannot tell".

A status alone lies twice. A host that answers 200 for every path (a soft 404: a single-page app's shell, a
"not found" page served with 200, a redirect of every unknown path to the home page) would confirm any guess; and
a network error, a proxy's refusal or a 5xx says nothing about the page, yet reading it as "not there" silently
turns every pinned version into "latest" on a machine that cannot reach the host. So :class:`Prober`:

- first asks, in the directory of the URL, for a path that cannot exist (``docsbot-no-such-page-<random>/``): a
  404 or 410 there means the host's statuses can be believed; a 200 makes it a soft-404 directory, where a page
  counts as there only when it differs from that answer (another final URL after redirects, another title), a
  redirect to where the impossible path went counts as not there, and the same body as "cannot tell";
- reads 404 and 410 as not there, a 200 as there, and anything else (401, 403, 429, a proxy's 407, 5xx) as
  "cannot tell";
- raises :class:`HostUnreachable` for a network error (DNS, refused or reset connection, TLS, timeout, a proxy that
  refuses to connect), so that the caller writes what it has as unverified instead of concluding anything.

Redirects are followed by hand, at most 5, each hop checked against the network policy
(:class:`docsbot.network.NetworkPolicy`: a registry's URL must not make docsbot ask this machine's network).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

__all__ = ["Answer", "HostUnreachable", "Prober", "http_fetch"]

_NOT_THERE = (404, 410)
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.I | re.S)
_NOT_FOUND_TITLE = re.compile(r"\b(?:404|not\s+found|page\s+not\s+found|no\s+such\s+page)\b", re.I)
_MAX_REDIRECTS = 5
_MAX_BODY = 256 * 1024


class HostUnreachable(DocsbotError):
    """A documentation host that cannot be asked from here (the reason: a network error, a proxy's refusal, an
    address the network policy refuses, or probes switched off)."""


@dataclass(frozen=True)
class Answer:
    """A host's answer to a GET of ``url``: its ``status`` after redirects, the ``final_url`` they led to, the
    page's ``title``, its first 256 KiB (``body``) and their ``digest``."""

    url: str
    status: int
    final_url: str
    title: str = ""
    digest: str = ""
    body: bytes = field(default=b"", repr=False, compare=False)


def http_fetch(client: httpx.Client, refusal: Callable[[str], str | None] | None = None) -> Callable[[str], Answer]:
    """A fetch function for :class:`Prober` over an ``httpx`` client: GET with redirects followed by hand (at most
    5; each hop's URL checked with ``refusal(url)``, which names why an address is refused, or ``None``). Raises
    :class:`HostUnreachable` for a transport error (:class:`httpx.TransportError`: DNS, connection, TLS, timeouts,
    proxies) or a refused hop."""
    import httpx

    def fetch(url: str) -> Answer:
        current = url
        for _ in range(_MAX_REDIRECTS + 1):
            reason = refusal(current) if refusal is not None else None
            if reason is not None:
                raise HostUnreachable(reason)
            try:
                with client.stream("GET", current, follow_redirects=False) as response:
                    if response.is_redirect and "location" in response.headers:
                        current = urljoin(current, response.headers["location"])
                        continue
                    body = b""
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) >= _MAX_BODY:
                            break
                    digest = hashlib.sha1(body).hexdigest()
                    return Answer(url, response.status_code, current, _title(body), digest, body)
            except httpx.TransportError as exc:
                raise HostUnreachable(f"{urlsplit(current).netloc} cannot be reached ({type(exc).__name__}: "
                                      f"{exc or 'no detail'})") from None  # fmt: skip
        return Answer(url, 310, current)  # too many redirects: cannot tell

    return fetch


def _title(body: bytes) -> str:
    m = _TITLE.search(body)
    return " ".join(m.group(1).decode("utf-8", "replace").split()) if m else ""


@dataclass
class Prober:
    """Whether URLs are there on their hosts, through ``fetch`` (:func:`http_fetch`, or any function from a URL
    to an :class:`Answer` that raises :class:`HostUnreachable`). Remembers each directory's answer to the path
    that cannot exist, and the answers it got (``answers``, in order: for the notes and the tests)."""

    fetch: Callable[[str], Answer]
    answers: list[Answer] = field(default_factory=list)
    _baselines: dict[str, Answer] = field(default_factory=dict)

    def get(self, url: str) -> Answer:
        """The host's answer to ``url`` (raises :class:`HostUnreachable`)."""
        answer = self.fetch(url)
        self.answers.append(answer)
        return answer

    def baseline(self, url: str) -> Answer:
        """The answer, in ``url``'s directory, to a path that cannot exist (asked once per directory)."""
        directory = urljoin(url, ".") if not url.endswith("/") else urljoin(url, "..")
        if directory not in self._baselines:
            self._baselines[directory] = self.get(urljoin(directory, f"docsbot-no-such-page-{secrets.token_hex(6)}/"))
        return self._baselines[directory]

    def soft_404(self, url: str) -> bool:
        """Whether ``url``'s directory answers 200 for a path that cannot exist."""
        return self.baseline(url).status == 200

    def check(self, url: str) -> tuple[bool | None, Answer]:
        """``(there, answer)``: ``True`` when ``url`` is a page, ``False`` when it is not there (404, 410, or the
        soft-404 answer's redirect or "not found" title), ``None`` when the host's answer cannot tell (401, 403,
        429, 5xx, the same page as for a path that cannot exist). Raises :class:`HostUnreachable`."""
        baseline = self.baseline(url)
        answer = self.get(url)
        if answer.status in _NOT_THERE:
            return False, answer
        if answer.status != 200:
            return None, answer
        if baseline.status != 200:
            return True, answer
        if answer.final_url != answer.url and answer.final_url == baseline.final_url != baseline.url:
            return False, answer  # redirected where unknown paths are
        if answer.digest == baseline.digest:
            return None, answer
        if answer.title == baseline.title:
            return (False if _NOT_FOUND_TITLE.search(answer.title) else None), answer
        return True, answer
