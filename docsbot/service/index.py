"""The service: every answer docsbot gives, for every interface (the CLI, the MCP server, the web pages).

:class:`DocsIndex` lives as long as its process: a :class:`~docsbot.service.search.Searcher` (connection pool and
embedding model), the settings, and the refreshes this process started. Interfaces call its methods and render what
they return; none assembles an answer of its own. Errors are :class:`~docsbot.service.errors.ServiceError`\\ s whose
message is what a person or agent reads (an interface maps the class to a tool error, an HTTP status or an exit
code), and psycopg / pool errors when the database is unreachable.

Its methods live in one module per concern, each a part :class:`DocsIndex` is made of:

- :mod:`~docsbot.service.core`: the state, the lifetime (``open``, ``close``, ``with``) and the checks of arguments;
- :mod:`~docsbot.service.reading`: ``search``, ``resolve_library``, ``docs``, ``version_names``, ``libraries``,
  ``run``, ``runs``;
- :mod:`~docsbot.service.pages`: ``page``, ``export_pages``, ``page_list``;
- :mod:`~docsbot.service.changes`: ``changes``, ``diff_versions``;
- :mod:`~docsbot.service.writes`: ``refresh``, ``index``, ``cancel``, ``remove`` (each claims or locks its version).
"""

from __future__ import annotations

from docsbot.service.changes import ChangeReading
from docsbot.service.pages import PageReading
from docsbot.service.reading import Reading
from docsbot.service.writes import Writing

__all__ = ["DocsIndex"]


class DocsIndex(Reading, PageReading, ChangeReading, Writing):
    """The index at ``dsn`` as the service answers about it. ``embedder`` is the query model (``None``: a process
    that does not search, such as ``docsbot status``); ``allow_writes`` enables :meth:`refresh` and :meth:`remove`
    (otherwise they raise :class:`~docsbot.service.errors.Forbidden`); ``env`` is where ``SCRAPYD_URL`` is read (the
    process environment by default). ``allowed_networks``: what a crawl :meth:`index` starts may reach besides public
    addresses (``DOCSBOT_ALLOWED_NETWORKS``' syntax, :func:`docsbot.network.parse_allowed`; default: that setting).
    Raises ``ValueError`` for a malformed one.

    Every method is synchronous and thread-safe: servers call them on worker threads."""
