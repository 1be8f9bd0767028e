"""What every part of :class:`~docsbot.service.index.DocsIndex` shares: its state (the searcher with its pool and
model, the settings, the network policy of the crawls it starts, the launcher and the runs this process started),
its lifetime, and the checks every answer makes of its arguments.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from docsbot.network import NetworkPolicy
from docsbot.service.errors import Forbidden, Invalid
from docsbot.service.reranking import load_reranker
from docsbot.service.runs import Launch, Launcher
from docsbot.service.search import Searcher

if TYPE_CHECKING:
    from collections.abc import Mapping

    from docsbot import store
    from docsbot.embedding.models import Embedder
    from docsbot.project_settings import ProjectSettings

__all__ = ["IndexCore", "check_text"]


def check_text(**values: str | None) -> None:
    """Raise :class:`Invalid` naming the first of ``values`` PostgreSQL cannot take as text: one holding a NUL
    character, or one that is not valid Unicode (a lone surrogate, as a JSON ``\\ud800`` escape gives)."""
    for name, value in values.items():
        if value is None:
            continue
        if "\x00" in value:
            raise Invalid(f"{name} holds a NUL character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Invalid(f"{name} is not valid Unicode text") from None


class IndexCore:
    """The state and lifetime of a :class:`~docsbot.service.index.DocsIndex` (its docstring says what the arguments
    mean), and the helpers its parts share."""

    def __init__(
        self,
        settings: ProjectSettings | Mapping,
        dsn: str,
        embedder: Embedder | None = None,
        *,
        allow_writes: bool = False,
        pool_size: int = 4,
        env: Mapping[str, str] | None = None,
        allowed_networks: str | None = None,
    ) -> None:
        self.dsn = dsn
        self.settings = settings
        self.allow_writes = allow_writes
        self.searcher = Searcher(dsn, embedder, pool_size=pool_size)
        if embedder is not None:  # search's reranking stage (None when DOCSBOT_RERANKER is off)
            self.searcher.reranker = load_reranker(settings)
            self.searcher.rerank_candidates = int(settings.get("DOCSBOT_RERANK_CANDIDATES") or 30)
        self._token_counter: Any = None  # docsbot.service.docs.TokenCounter, on the first docs()
        data_dir = Path(settings.get("DOCSBOT_DATA_DIR")).expanduser()
        # SCRAPYD_URL is an environment variable on purpose, not a docsbot setting: scrapy.cfg's `remote` deploy
        # target reads the same one (scrapyd-client's documented way), so one variable names the node to deploy to
        # and to run on.
        scrapyd_url = (env if env is not None else os.environ).get("SCRAPYD_URL", "").strip()
        if allowed_networks is None:
            allowed_networks = str(settings.get("DOCSBOT_ALLOWED_NETWORKS") or "")
        self.network = NetworkPolicy.public(allowed_networks)
        self.network_limits = (
            int(settings.get("DOCSBOT_NETWORK_MAX_PAGES") or 10000),
            int(settings.get("DOCSBOT_NETWORK_MAX_DEPTH") or 20),
        )
        self.launcher = Launcher(dsn, data_dir / "mcp-runs", scrapyd_url, allowed_networks.strip())
        self._launches: dict[str, Launch] = {}
        self._refresh_lock = threading.Lock()

    def open(self, *, warm_up: bool = True) -> Self:
        """Open the connection pool and, with an embedder and ``warm_up``, load the query model now rather than
        on the first search."""
        self.searcher.open()
        if warm_up and self.searcher.embedder is not None:
            self.searcher.warm_up()
        return self

    def close(self) -> None:
        """Stop the refreshes this process started (SIGTERM: pages already stored stay stored), close the pool."""
        Launcher.stop(list(self._launches.values()))
        self.searcher.close()

    def __enter__(self) -> Self:
        return self.open(warm_up=False)

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(self):  # noqa: ANN201 - a context manager of a pooled psycopg.Connection
        return self.searcher.connection()

    def _require_writes(self, what: str) -> None:
        if not self.allow_writes:
            raise Forbidden(f"{what} is disabled: this server is read-only")

    def _one_version(self, library: str, version: str | None) -> store.VersionRow:
        check_text(library=library, version=version)
        versions = self.searcher.versions(library, version)
        if len(versions) > 1:
            names = ", ".join(repr(v.name) for v in versions)
            raise Invalid(f"{library} has several indexed versions ({names}); say which with version=")
        return versions[0]
