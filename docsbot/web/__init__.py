"""``docsbot serve``: web pages for people and the MCP Streamable HTTP transport (``/mcp``), in one process.

A thin interface over the service (:class:`docsbot.service.DocsIndex`), server-rendered with Jinja2 templates
(``docsbot/web/templates``) and a few lines of progressive enhancement (no JavaScript build chain), in the shape of
Datasette's pages: every page's URL holds its whole query, and every page has a JSON twin answered by the same view
(:func:`view`: ``/search.json``, ``/libraries.json``, ``/runs/ID.json``, ``/page.json``, ``/changes.json``).

- ``/`` search: a query box with library/version filters, one result per page with its title, heading path, deep link
  and an excerpt with the query's words marked;
- ``/libraries``: each version with pages, chunks, vector coverage and its last runs; refresh and remove buttons
  when writes are allowed (``--allow-writes``);
- ``/runs/ID``: a run's counts and outcome, its progress while it runs (the page polls its JSON twin; without
  JavaScript it reloads itself), and the tail of its log for runs this server started;
- ``/changes?library=…&version=…&since=…``: what refreshes changed (pages added, modified with their sections
  and diffs, deleted, moved), with an Atom feed of the same (``/changes.atom?…``);
- ``/page?url=…&section=…``: a stored page's Markdown rendered (HTML in the Markdown is shown as text, never run),
  its sections, when it was last checked and written;
- ``/mcp``: the MCP server of :mod:`docsbot.mcp.server`, with the same tools as ``docsbot mcp``.

The MCP server's rules apply to the whole process: it binds 127.0.0.1 unless given a host; any other address, and
``--allow-writes`` on any, needs ``DOCSBOT_MCP_TOKEN``, and then every request must carry it, as ``Authorization:
Bearer <token>`` (scripts, MCP clients) or, for a person, through the ``/login`` form (a signed session cookie
holding only a random id the server keeps: ``HttpOnly``, ``SameSite=Strict``, ``Secure`` when the request came over
HTTPS, valid ``DOCSBOT_WEB_SESSION_HOURS``, ended at once by signing out and for everyone by a restart); ten failed
sign-ins or bearer tokens a minute from one address, and the next is answered 429. On loopback, requests whose
``Host`` is not a loopback name are refused (DNS rebinding). A write is a POST whose form carries this process's
CSRF token and, when the browser sends one, an ``Origin`` of this server.

Every response of every status (:func:`docsbot.mcp.http.guarded` wraps the whole app, Starlette's own 500 included)
carries a Content-Security-Policy without inline script (the pages' few lines of behaviour are
``/static/docsbot.js``), ``frame-ancestors 'none'``, ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy:
same-origin`` (``no-referrer`` would make browsers send ``Origin: null`` with the pages' own forms); images in
stored Markdown are shown as links unless ``DOCSBOT_WEB_REMOTE_IMAGES``. A form body over
:data:`~docsbot.web.app.MAX_FORM_BYTES` is answered 413 before it is read.

An unknown library, a malformed query, a page that is not stored: a page that says so with the service error's
HTTP status (400, 403, 404, 502), or 503 while the database is unreachable; never a traceback.

The package, by job: :mod:`~docsbot.web.app` (the app: routes, ``/static/``, the middlewares' order),
:mod:`~docsbot.web.views` (the pages and their JSON twins), :mod:`~docsbot.web.rendering` (Markdown, excerpts, the
templates' filters), :mod:`~docsbot.web.feed` (the Atom feed), :mod:`~docsbot.web.llms` (llms.txt) and
:mod:`~docsbot.web.middleware` (access, sessions, security headers, timing).
"""

from __future__ import annotations

from docsbot.web.app import build_app
from docsbot.web.rendering import excerpt, highlight, render_markdown, render_snippet

__all__ = ["build_app", "excerpt", "highlight", "render_markdown", "render_snippet"]
