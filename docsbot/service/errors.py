"""What the service answers instead of a result: each error's message is what the person or agent reads, and its
class says what kind of answer it is (an interface maps it: a tool error in MCP, an HTTP status on the web, an exit
code in the CLI)."""

from __future__ import annotations

from docsbot.errors import DocsbotError

__all__ = ["Forbidden", "Invalid", "NotFound", "ServiceError", "Upstream"]


class ServiceError(DocsbotError):
    """A request the service cannot answer as asked; the message says why and what to do."""

    status = 400  # the HTTP status an interface answers with


class Invalid(ServiceError, ValueError):
    """A malformed request: an empty or oversized query, a bad URL, an ambiguous library (HTTP 400)."""


class NotFound(ServiceError, LookupError):
    """What was asked for is not indexed: a library, version, page, section or run (HTTP 404)."""

    status = 404


class Forbidden(ServiceError, PermissionError):
    """A write (refresh, remove) asked of a read-only service (HTTP 403)."""

    status = 403


class Upstream(ServiceError):
    """A service docsbot relies on did not answer as it should (a Scrapyd node) (HTTP 502)."""

    status = 502
