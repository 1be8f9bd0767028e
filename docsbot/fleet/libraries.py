"""A libraries file: the library versions a fleet keeps indexed and fresh (pure: TOML in, validated entries out).

``libraries.toml`` (read with :mod:`tomllib`)::

    [defaults]                      # optional: any entry field but name, version and url
    refresh = "1d"

    [[library]]
    name = "python"
    version = "3.11"                # optional: "" (the library's one version) by default
    url = "https://docs.python.org/3.11/"
    refresh = "7d"                  # how often it is due: a duration (12h, 7d, 2w); "0": never (index only)
    max_depth = 6                   # the spider arguments of `scrapy crawl docs` (docsbot.arguments)
    max_pages = 20000
    prune = "orphans"
    render = "js"
    sitemap = "https://docs.python.org/3.11/sitemap.xml"
    min_recheck = "12h"
    freshness = "http"              # skip pages whose last response is still fresh (RFC 9111 §4.2)
    scope = "host"                  # prefix (the root's directory, the default), host or domain
    include = ["/3.11/*", "/api/*"] # patterns (a list, or one comma-separated string); exclude wins
    exclude = ["*/changelog/*", "/whatsnew/[0-9.]+/"]   # a glob, and a /regex/
    gone_statuses = [403, 404, 410] # DOCSBOT_GONE_STATUSES for this site
    host_concurrency = 4            # the most concurrent requests the fleet sends its host (default 8)
    settings = { DOCSBOT_RENDER_URLS = "/api/" }   # any other Scrapy or docsbot setting of its runs (-s)

    [[library]]
    name = "handbook"                               # private docs (never rendered)
    url = "https://docs.internal.example/handbook/"
    headers = { PRIVATE-TOKEN = "$DOCS_TOKEN" }     # header = the environment variable that holds its value
    http_auth = "$DOCS_USER:$DOCS_PASSWORD"         # basic credentials, from two variables

Everything is checked before anything runs: :func:`load` raises :class:`LibrariesFileError` naming the file, the
entry (its position and ``name@version``) and the field, for a file that is not TOML, a name or version that is not
one (:mod:`docsbot.names`), an unknown field, a value of the wrong kind, a spider argument the spider would refuse, or
two entries for one version. A private docs host's secrets are never in the file: ``headers`` and ``http_auth`` name
the environment variables that hold them (the environment of ``docsbot sync`` or the scheduler, which its crawls
inherit, or of the Scrapyd nodes).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docsbot.arguments import CrawlArguments, SpiderArgumentError, parse_duration
from docsbot.errors import DocsbotError
from docsbot.names import InvalidName, check_library, check_version
from docsbot.refresh import parse_gone_statuses

if TYPE_CHECKING:
    from datetime import timedelta

__all__ = ["DEFAULT_FILE", "FRESHNESS", "LibrariesFileError", "LibraryEntry", "load", "parse"]

DEFAULT_FILE = "libraries.toml"
FRESHNESS = ("validators", "http")  # validators: every stored page revalidated (default); http: RFC 9111 freshness
_SPIDER_ARGS = (
    "max_depth", "max_pages", "prune", "render", "sitemap", "min_recheck", "scope", "include", "exclude", "headers",
    "http_auth",
)  # fmt: skip
_LISTS = ("include", "exclude", "headers")  # a TOML array of strings, or one comma-separated string
_FIELDS = {
    "name", "version", "url", "refresh", "freshness", "gone_statuses", "settings", "host_concurrency", *_SPIDER_ARGS
}  # fmt: skip
_SETTING_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_DEFAULTABLE = _FIELDS - {"name", "version", "url"}


class LibrariesFileError(DocsbotError, ValueError):
    """The libraries file, or one of its entries, is not valid; the message names the file, entry and field."""


@dataclass(frozen=True)
class LibraryEntry:
    """One library version of the file: what to index (``url``), how (``args``: ``scrapy crawl docs`` spider
    arguments, as strings; ``gone_statuses``: the site's ``DOCSBOT_GONE_STATUSES``), and how often it is due
    (``refresh``; ``None``: never, it is only indexed)."""

    name: str
    version: str
    url: str
    refresh: timedelta | None = None
    freshness: str = "validators"
    gone_statuses: tuple[int, ...] | None = None
    args: dict[str, str] = field(default_factory=dict)
    extra_settings: dict[str, str] = field(default_factory=dict)
    host_concurrency: int | None = None  # its host's budget: concurrent requests across the fleet's runs

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name

    def spider_args(self, mode: str) -> dict[str, str]:
        """``-a`` arguments of its crawl: ``mode`` ``full`` (with ``url``) or ``refresh``."""
        out = {"library": self.name, "version": self.version, "mode": mode, **self.args}
        if mode == "full":
            out["url"] = self.url
        if self.freshness != "validators":
            out["freshness"] = self.freshness
        return out

    def settings(self) -> dict[str, str]:
        """``-s`` settings of its crawl."""
        out = dict(self.extra_settings)
        if self.gone_statuses is not None:
            out["DOCSBOT_GONE_STATUSES"] = ",".join(map(str, self.gone_statuses))
        return out


def load(path: str | Path) -> list[LibraryEntry]:
    """The entries of the libraries file at ``path``. Raises :class:`LibrariesFileError` (a missing or unreadable
    file too)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LibrariesFileError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    return parse(text, str(path))


def parse(text: str, source: str = DEFAULT_FILE) -> list[LibraryEntry]:
    """The entries of a libraries file's ``text`` (``source`` names it in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LibrariesFileError(f"{source}: not valid TOML: {exc}") from None
    unknown = set(data) - {"defaults", "library"}
    if unknown:
        raise LibrariesFileError(
            f"{source}: unknown table {', '.join(sorted(unknown))} (a libraries file has [defaults] and [[library]])"
        )
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise LibrariesFileError(f"{source}: [defaults] must be a table")
    bad = set(defaults) - _DEFAULTABLE
    if bad:
        raise LibrariesFileError(
            f"{source}: [defaults]: unknown field {', '.join(sorted(bad))} (allowed: {', '.join(sorted(_DEFAULTABLE))})"
        )
    raw = data.get("library", [])
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise LibrariesFileError(f"{source}: library must be an array of tables ([[library]])")
    entries: list[LibraryEntry] = []
    seen: dict[tuple[str, str], int] = {}
    for number, item in enumerate(raw, 1):
        entry = _entry({**defaults, **item}, f"{source}: [[library]] #{number}")
        key = (entry.name, entry.version)
        if key in seen:
            raise LibrariesFileError(
                f"{source}: [[library]] #{number} ({entry.label}) repeats [[library]] #{seen[key]}: one entry per "
                "library version"
            )
        seen[key] = number
        entries.append(entry)
    return entries


def _entry(item: dict[str, Any], where: str) -> LibraryEntry:
    name = item.get("name")
    version = item.get("version", "")
    if not isinstance(name, str) or not name.strip():
        raise LibrariesFileError(f"{where}: name: required, a library name (a string)")
    try:
        check_library(name.strip())
    except InvalidName as exc:
        raise LibrariesFileError(f"{where}: name: {exc}") from None
    if not isinstance(version, str | int | float):
        raise LibrariesFileError(f"{where} ({name}): version: a string, got {type(version).__name__}")
    version = str(version).strip()
    try:
        check_version(version)
    except InvalidName as exc:
        raise LibrariesFileError(f"{where} ({name.strip()}): version: {exc}") from None
    label = f"{name.strip()}@{version}" if version else name.strip()
    where = f"{where} ({label})"
    unknown = set(item) - _FIELDS
    if unknown:
        raise LibrariesFileError(
            f"{where}: unknown field {', '.join(sorted(unknown))} (allowed: {', '.join(sorted(_FIELDS))})"
        )
    url = item.get("url")
    if not isinstance(url, str) or not url.strip():
        raise LibrariesFileError(f"{where}: url: required, the docs' root URL")
    args: dict[str, str] = {}
    for name_ in _SPIDER_ARGS:
        if name_ in item:
            args[name_] = _argument(name_, item[name_], where)
    try:
        parsed = CrawlArguments.parse(url=url, library=name, version=version, mode="full", **args)
    except SpiderArgumentError as exc:
        field_name = next((f for f in ("url", *_SPIDER_ARGS) if f"-a {f}" in str(exc)), "url")
        message = str(exc).replace(f"-a {field_name} ", "").replace(f"-a {field_name}: ", "")
        raise LibrariesFileError(f"{where}: {field_name}: {message}") from None
    refresh = item.get("refresh")
    try:
        interval = parse_duration(refresh) if refresh is not None else None
    except ValueError as exc:
        raise LibrariesFileError(f"{where}: refresh: {exc}") from None
    freshness = str(item.get("freshness", "validators"))
    if freshness not in FRESHNESS:
        raise LibrariesFileError(f"{where}: freshness: one of {', '.join(FRESHNESS)}, got {freshness!r}")
    gone = item.get("gone_statuses")
    statuses = None
    if gone is not None:
        if not isinstance(gone, list):
            raise LibrariesFileError(f"{where}: gone_statuses: a list of HTTP statuses, got {gone!r}")
        try:
            statuses = tuple(sorted(parse_gone_statuses(gone)))
        except ValueError as exc:
            raise LibrariesFileError(f"{where}: gone_statuses: {exc}") from None
    extra = item.get("settings", {})
    if not isinstance(extra, dict):
        raise LibrariesFileError(f"{where}: settings: a table of setting names and values, got {extra!r}")
    for key, value in extra.items():
        if not _SETTING_NAME.match(key) or isinstance(value, dict | list):
            raise LibrariesFileError(f"{where}: settings: {key} = {value!r} is not a setting (NAME = value)")
    settings = {key: str(value).lower() if isinstance(value, bool) else str(value) for key, value in extra.items()}
    budget = item.get("host_concurrency")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise LibrariesFileError(f"{where}: host_concurrency: a number of requests, at least 1, got {budget!r}")
    return LibraryEntry(name.strip(), version, parsed.url or url, interval, freshness, statuses, args, settings, budget)


def _argument(name: str, value: Any, where: str) -> str:
    """A spider argument of an entry as the ``-a`` string its crawls get: a string or an integer; for ``include``,
    ``exclude`` and ``headers`` also an array of strings (joined with commas), and for ``headers`` a table of header
    names and ``$VARIABLE`` references. A value of the wrong kind is named by its kind only, never shown (``headers``
    may hold a secret given by mistake)."""
    if name == "headers" and isinstance(value, dict):
        value = [f"{header}={reference}" for header, reference in value.items()]
    if name in _LISTS and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if isinstance(value, bool) or not isinstance(value, str | int):
        kinds = "a string or an array of strings" if name in _LISTS else "a string or an integer"
        kinds = "a table of header names and $VARIABLE references, or " + kinds if name == "headers" else kinds
        raise LibrariesFileError(f"{where}: {name}: {kinds}, got {type(value).__name__}")
    return str(value)
