"""Scrapyd nodes through scrapyd-client's ``ScrapydClient`` (the Scrapy project's own client), with the two things
a server needs around it: a time limit on every call (``requests`` calls without one can wait forever), and one
error type (:class:`~docsbot.service.errors.Upstream`) whose message names the node but never its password.

scrapyd-client imports Scrapy's configuration helpers; it is imported on first use, so that a process that never
talks to Scrapyd (a search, the MCP server without ``SCRAPYD_URL``) does not load Scrapy.
"""

from __future__ import annotations

import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

from docsbot.service.errors import Upstream

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["SCRAPYD_PROJECT", "ScrapydNode"]

SCRAPYD_PROJECT = "docsbot"  # the project name `scrapyd-deploy` gives docsbot (scrapy.cfg)
T = TypeVar("T")
_calls = ThreadPoolExecutor(max_workers=4, thread_name_prefix="docsbot-scrapyd")


class ScrapydNode:
    """One Scrapyd daemon at ``url`` (``http://[user:password@]host:port/``; credentials in the URL are sent as
    HTTP Basic auth). Every call waits at most ``timeout`` seconds and raises :class:`Upstream` when the node does
    not answer, answers an error, or answers something that is not Scrapyd's JSON."""

    def __init__(self, url: str, timeout: float = 15.0) -> None:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"a Scrapyd URL is http(s)://host:port/, got {url!r}")
        self.username = urllib.parse.unquote(parts.username) if parts.username else None
        self.password = urllib.parse.unquote(parts.password or "") if parts.username else None
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        self.timeout = timeout
        self._client: Any = None

    def __repr__(self) -> str:
        return f"ScrapydNode({self.url!r})"

    def _call(self, what: str, fn: Callable[[Any], T]) -> T:
        if self._client is None:
            from scrapyd_client import ScrapydClient

            self._client = ScrapydClient(self.url, self.username, self.password)
        future = _calls.submit(fn, self._client)
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            raise Upstream(f"Scrapyd at {self.url} did not answer {what} within {self.timeout:g} s") from None
        except Exception as exc:  # requests' errors, scrapyd_client's ErrorResponse / MalformedResponse
            detail = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise Upstream(f"Scrapyd at {self.url} refused {what}: {detail}") from None

    def schedule(
        self,
        spider: str,
        args: dict[str, str],
        project: str = SCRAPYD_PROJECT,
        settings: dict[str, str] | None = None,
    ) -> str:
        """Schedule a job (``schedule.json``) with these spider arguments and Scrapy ``settings`` (Scrapyd's
        ``setting=NAME=VALUE`` parameters); returns its job id."""
        params = list(args.items()) + [("setting", f"{k}={v}") for k, v in (settings or {}).items()]
        return str(self._call("schedule.json", lambda c: c.schedule(project, spider, params)))

    def job_state(self, job: str, project: str = SCRAPYD_PROJECT) -> str:
        """``pending``, ``running`` or ``finished`` (``listjobs.json``), or ``unknown to Scrapyd``."""
        answer = self._call("listjobs.json", lambda c: c.jobs(project))
        for state in ("pending", "running", "finished"):
            if any(j.get("id") == job for j in answer.get(state, [])):
                return state
        return "unknown to Scrapyd"

    def cancel(self, job: str, project: str = SCRAPYD_PROJECT) -> str:
        """Cancel a job (``cancel.json``: a running job gets SIGTERM); returns its state before."""
        return str(self._call("cancel.json", lambda c: c.cancel(project, job)).get("prevstate"))

    def daemonstatus(self) -> dict[str, Any]:
        """``daemonstatus.json``: ``pending``, ``running``, ``finished`` job counts and the node's name."""
        return self._call("daemonstatus.json", lambda c: c.daemonstatus())
