"""The docs spider's arguments (``scrapy crawl docs -a name=value``): a typed, validated model (pure; no Scrapy).

:meth:`CrawlArguments.parse` validates what the command line gave; :meth:`CrawlArguments.resolve` merges it with
what the full index stored for the version (a refresh reuses ``max_depth``, ``max_pages``, ``prune`` and
``render`` unless given again) into the :class:`CrawlSettings` a run uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from docsbot.errors import DocsbotError
from docsbot.network import NETWORK_MODES
from docsbot.render import RENDER_MODES
from docsbot.urls import InvalidURL, canonical_url

__all__ = [
    "parse_duration",
    "CrawlArguments",
    "CrawlSettings",
    "SpiderArgumentError",
    "MODES",
    "PRUNE",
    "ARGUMENT_NAMES",
]

MODES = ("full", "refresh")
PRUNE = ("none", "orphans")
FRESHNESS = ("validators", "http")  # docsbot.freshness
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class SpiderArgumentError(DocsbotError, ValueError):
    """A spider argument is missing or malformed; the crawl does not start and nothing is touched."""


def _optional_int(name: str, value: Any, minimum: int) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SpiderArgumentError(f"-a {name} must be an integer, got {value!r}") from None
    if number < minimum:
        raise SpiderArgumentError(f"-a {name} must be >= {minimum}, got {number}")
    return number


def parse_duration(value: Any) -> timedelta | None:
    """``45s``, ``30m``, ``12h``, ``7d``, ``2w`` (a number and a unit) as a timedelta; ``None`` (off) for ``0``, a
    zero duration (``0d``), ``''`` or ``None``. Raises ``ValueError`` for anything else, a duration too long for a
    timedelta included."""
    if value in (None, "", "0", 0):
        return None
    m = _DURATION.match(str(value).lower())
    if not m:
        raise ValueError(f"a duration is like 45s, 30m, 12h, 7d or 2w; got {value!r}")
    try:
        duration = timedelta(seconds=float(m.group(1)) * _DURATION_UNITS[m.group(2)])
    except OverflowError:
        raise ValueError(f"a duration of at most 999999999 days; got {value!r}") from None
    return duration or None  # 0d, 0h, 0.0s: off, as 0 is (a zero interval would be due at every tick)


def _duration(name: str, value: Any) -> timedelta | None:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise SpiderArgumentError(f"-a {name} must be a duration like 45s, 30m, 12h, 7d or 2w; got {value!r}") from exc


def _flag(name: str, value: Any) -> bool:
    text = str(value or "0").strip().lower()
    if text not in ("0", "1", "true", "false", "yes", "no"):
        raise SpiderArgumentError(f"-a {name} must be 1 or 0, got {value!r}")
    return text in ("1", "true", "yes")


@dataclass(frozen=True)
class CrawlArguments:
    """The docs spider's arguments (``-a name=value``), validated.

    - ``url``: root URL of the docs (full index; a refresh reads it from the database).
    - ``library``: library name; defaults to the root URL's host. ``version``: version string, default ``''``.
    - ``mode``: ``full`` (default with ``url``) fetches every page without validators; ``refresh`` revalidates.
    - ``max_depth``: link hops from the root (root = 0); ``max_pages``: pages requested at most. A refresh
      reuses the values stored by the index unless given again (so does ``prune``).
    - ``prune``: ``orphans`` deletes stored pages no longer linked from the root (within scope and depth) at the
      end of a completed run; ``none`` (default) only reports them.
    - ``allow_mass_delete``: ``1`` lifts the mass-deletion guard (``DOCSBOT_MASS_DELETE_SHARE``) for this run.
    - ``min_recheck``: a duration (``45s``, ``30m``, ``12h``, ``7d``, ``2w``); stored pages revalidated more
      recently are not requested (their stored links are followed).
    - ``sitemap``: URL of a sitemap (or sitemap index) whose in-scope URLs are added as seeds; by default the
      sitemaps robots.txt names are used; ``none`` uses none.
    - ``render``: ``js`` renders every page in Chromium through scrapy-playwright (:mod:`docsbot.render`);
      ``none`` (default) renders only URLs matching ``DOCSBOT_RENDER_URLS``. Stored by the index, reused by
      refreshes unless given again.
    - ``freshness``: ``validators`` (default) revalidates every stored page; ``http`` does not request a stored
      page whose last response is still fresh by its HTTP caching headers (RFC 9111 §4.2, :mod:`docsbot.freshness`;
      its stored links are followed). Stored by the index, reused by refreshes unless given again.
    - ``network``: ``public`` connects only to public addresses, plus ``DOCSBOT_ALLOWED_NETWORKS``
      (:mod:`docsbot.network`; what a crawl started from the network gets, and renders nothing); ``any`` (default)
      connects wherever the site's URLs lead. Stored by the index, reused by refreshes unless given again.
    - ``launch``: the token the run is recorded under (``crawl_runs.launch``), so that whoever started it finds it
      (``docsbot serve``, the MCP server, a fleet: letters, digits, ``._-``, at most 64); default: a new one.
    """

    url: str | None
    library: str
    version: str
    mode: str
    max_depth: int | None
    max_pages: int | None
    prune: str | None = None
    allow_mass_delete: bool = False
    min_recheck: timedelta | None = None
    sitemap: str | None = None
    render: str | None = None
    freshness: str | None = None
    network: str | None = None
    launch: str | None = None

    @classmethod
    def parse(
        cls,
        url: str | None = None,
        library: str | None = None,
        version: str | None = None,
        mode: str | None = None,
        max_depth: Any = None,
        max_pages: Any = None,
        prune: str | None = None,
        allow_mass_delete: Any = None,
        min_recheck: Any = None,
        sitemap: str | None = None,
        render: str | None = None,
        freshness: str | None = None,
        network: str | None = None,
        launch: str | None = None,
    ) -> CrawlArguments:
        mode = (mode or ("full" if url else "refresh")).strip().lower()
        if mode not in MODES:
            raise SpiderArgumentError(f"-a mode must be one of {', '.join(MODES)}, got {mode!r}")
        if url:
            try:
                url = canonical_url(url)
            except InvalidURL as exc:
                raise SpiderArgumentError(f"-a url: {exc}") from None
        elif mode == "full":
            raise SpiderArgumentError("a full index needs -a url=ROOT_URL")
        if not library:
            if not url:
                raise SpiderArgumentError("a refresh needs -a library=NAME (and -a version=VER if it has one)")
            library = urlsplit(url).hostname or ""
        if prune is not None and prune not in PRUNE:
            raise SpiderArgumentError(f"-a prune must be one of {', '.join(PRUNE)}, got {prune!r}")
        if sitemap and sitemap != "none":
            try:
                sitemap = canonical_url(sitemap)
            except InvalidURL as exc:
                raise SpiderArgumentError(f"-a sitemap: {exc}") from None
        if render is not None:
            render = render.strip().lower()
            if render not in RENDER_MODES:
                raise SpiderArgumentError(f"-a render must be one of {', '.join(RENDER_MODES)}, got {render!r}")
        if freshness is not None:
            freshness = freshness.strip().lower()
            if freshness not in FRESHNESS:
                raise SpiderArgumentError(f"-a freshness must be one of {', '.join(FRESHNESS)}, got {freshness!r}")
        if network is not None:
            network = network.strip().lower()
            if network not in NETWORK_MODES:
                raise SpiderArgumentError(f"-a network must be one of {', '.join(NETWORK_MODES)}, got {network!r}")
        if launch is not None and not re.fullmatch(r"[\w.-]{1,64}", launch, flags=re.ASCII):
            raise SpiderArgumentError(
                f"-a launch must be letters, digits, '.', '_' or '-' (at most 64), got {launch!r}"
            )
        return cls(
            url=url,
            library=library.strip(),
            version=(version or "").strip(),
            mode=mode,
            max_depth=_optional_int("max_depth", max_depth, 0),
            max_pages=_optional_int("max_pages", max_pages, 1),
            prune=prune,
            allow_mass_delete=_flag("allow_mass_delete", allow_mass_delete),
            min_recheck=_duration("min_recheck", min_recheck),
            sitemap=sitemap or None,
            render=render,
            freshness=freshness,
            network=network,
            launch=launch or None,
        )

    def resolve(self, root_url: str | None = None, stored: dict[str, Any] | None = None) -> CrawlSettings:
        """The run's settings: these arguments, with what is not given taken from ``stored`` (the version's
        ``versions.settings``; a full index passes none). ``root_url``: the version's stored root URL, used
        when no ``url`` argument was given."""
        return _resolve(self, root_url, (stored or {}) if self.mode == "refresh" else {})

    def as_json(self) -> dict[str, Any]:
        """The arguments as JSON-able values (recorded in ``crawl_runs.stats``)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["min_recheck"] = str(out["min_recheck"]) if out["min_recheck"] else None
        return out


@dataclass(frozen=True)
class CrawlSettings:
    """What a run uses: the arguments given, completed with the version's stored crawl settings."""

    root_url: str
    max_depth: int | None
    max_pages: int | None
    prune: str
    render: str
    freshness: str = "validators"
    network: str = "any"

    def stored(self) -> dict[str, Any]:
        """The crawl settings a full index stores on its version (``versions.settings``) for later refreshes."""
        return {
            "max_depth": self.max_depth,
            "max_pages": self.max_pages,
            "prune": self.prune,
            "render": self.render,
            "freshness": self.freshness,
            "network": self.network,
        }


def _resolve(args: CrawlArguments, root_url: str | None, stored: dict[str, Any]) -> CrawlSettings:
    def pick(name: str) -> Any:
        given = getattr(args, name)
        return given if given is not None else stored.get(name)

    return CrawlSettings(
        root_url=args.url or canonical_url(root_url or ""),
        max_depth=pick("max_depth"),
        max_pages=pick("max_pages"),
        prune=pick("prune") or "none",
        render=pick("render") or "none",
        freshness=pick("freshness") or "validators",
        network=pick("network") or "any",
    )


ARGUMENT_NAMES = tuple(f.name for f in fields(CrawlArguments))
