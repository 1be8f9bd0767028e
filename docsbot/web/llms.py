"""llms.txt (https://llmstxt.org/) of every indexed version, read from the index at each request."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from docsbot import store
from docsbot.display import printable
from docsbot.urls import without_credentials
from docsbot.web.middleware import PlainResponse
from docsbot.web.views import FAILURES, Pages

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.requests import Request

    from docsbot.service import DocsIndex

__all__ = ["LlmsTxt"]


class LlmsTxt:
    """llms.txt for every indexed version (https://llmstxt.org/): ``/llms.txt`` lists the versions, each with its
    ``/docs/LIBRARY@VERSION/llms.txt`` (its pages' titles and URLs) and ``/docs/LIBRARY@VERSION/llms-full.txt``
    (every page's Markdown, streamed from the database), read from the index at each request: current after every
    refresh. An unversioned library is ``/docs/LIBRARY/``."""

    def __init__(self, index: DocsIndex) -> None:
        self.index = index

    async def _version(self, request: Request, fn: Callable[..., Any]) -> Any:
        """``fn(library, version)`` for the path's ``LIBRARY@VERSION`` on a worker thread, or the failure as a
        plain-text response."""
        library, sep, version = request.path_params["label"].partition("@")
        try:
            return await Pages.call(fn, library, version if sep else None)
        except FAILURES as e:
            return PlainResponse(getattr(e, "status", 503), str(e))

    async def root(self, request: Request) -> Response:
        try:
            versions = await Pages.call(self.index.searcher.versions)
        except FAILURES as e:
            return PlainResponse(getattr(e, "status", 503), str(e))
        lines = ["# docsbot", "", "> The documentation this docsbot server keeps indexed and fresh.", "", "## Docs", ""]
        for v in versions:
            label = store.version_label(v.library, v.name)
            quoted = urllib.parse.quote(label, safe="@")
            shown = printable(label)  # one line of the list, whatever a name stored before names were checked holds
            lines.append(f"- [{shown}](/docs/{quoted}/llms.txt): from {without_credentials(v.root_url)}")
        return PlainResponse(200, "\n".join(lines))

    async def version(self, request: Request) -> Response:
        from docsbot.service.docs import llms_txt

        answer = await self._version(request, self.index.page_list)
        if isinstance(answer, Response):
            return answer
        target, pages = answer
        label = store.version_label(target.library, target.name)
        full = f"/docs/{urllib.parse.quote(label, safe='@')}/llms-full.txt"
        text = llms_txt(printable(label), without_credentials(target.root_url), pages, full)
        return Response(text, media_type="text/plain; charset=utf-8")

    async def full(self, request: Request) -> Response:
        from starlette.responses import StreamingResponse

        from docsbot.service.docs import llms_full

        answer = await self._version(request, self.index.export_pages)
        if isinstance(answer, Response):
            return answer
        target, pages = answer
        label = store.version_label(target.library, target.name)
        # a sync iterator: Starlette reads it on worker threads, a server-side cursor behind it
        return StreamingResponse(
            llms_full(printable(label), without_credentials(target.root_url), pages),
            media_type="text/plain; charset=utf-8",
        )
