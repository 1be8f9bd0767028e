"""The docs spider's arguments (``scrapy crawl docs -a name=value``): a typed, validated model (pure; no Scrapy).

:meth:`CrawlArguments.parse` validates what the command line gave; :meth:`CrawlArguments.resolve` merges it with
what the full index stored for the version (a refresh reuses ``max_depth``, ``max_pages``, ``prune`` and
``render`` unless given again) into the :class:`CrawlSettings` a run uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from docsbot.errors import DocsbotError
from docsbot.folders import default_library, root_argument
from docsbot.names import InvalidName, check_library, check_version
from docsbot.network import NETWORK_MODES
from docsbot.render import RENDER_MODES
from docsbot.urls import InvalidURL, canonical_url, has_credentials

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
FRESHNESS = ("validators", "http")  # docsbot.refresh.freshness
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class SpiderArgumentError(DocsbotError, ValueError):
    """A spider argument is missing or malformed; the crawl does not start and nothing is touched."""


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


class _Invalid(ValueError):
    """A malformed argument, in the words the error shows after ``-a NAME``."""


def _argument(default: Any, description: str, *, choices: tuple[str, ...] = (), shown: str | None = None) -> Any:
    """A field: its default and description, the values it takes (``choices``) and the default as the reference
    shows it (``shown``, when it depends on other arguments)."""
    extra = {"choices": list(choices), "shown_default": shown}
    return Field(default, description=description, json_schema_extra={k: v for k, v in extra.items() if v})


def _choice(value: Any, choices: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if text not in choices:
        raise _Invalid(f"must be one of {', '.join(choices)}, got {value!r}")
    return text


def _url(value: Any) -> str | None:
    if value in (None, ""):
        return None
    if has_credentials(str(value)):
        # Refused before anything is logged or stored: the URL would carry its password into both
        raise _Invalid(
            ": a URL with a user name or password is not crawled (it would be written to the log and the database); "
            "give it without them, and private docs' credentials by environment variable: "
            "-a http_auth=$USER_VARIABLE:$PASSWORD_VARIABLE"
        )
    try:
        return canonical_url(str(value))
    except InvalidURL as exc:
        raise _Invalid(f": {exc}") from None


class CrawlArguments(BaseModel):
    """The docs spider's arguments (``scrapy crawl docs -a name=value``), each declared once with its type, default
    and description (pydantic; the reference page is generated from these fields). Values arrive as strings;
    :meth:`parse` validates them and raises :class:`SpiderArgumentError` naming the argument, before anything is
    requested or written. ``url`` and the sitemap's are canonical URLs (:func:`docsbot.urls.canonical_url`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = _argument(
        None,
        "Root URL of the docs (a full index; a refresh reads it from the database); or a local folder (an absolute "
        "path or `file:///path/`) of HTML, Markdown and text files, or an archive of built docs (`.zip`, `.tar.gz`, "
        "by path or URL), unpacked under `DOCSBOT_DATA_DIR`.",
    )
    library: str = _argument(
        "",
        "Library name (ASCII letters, digits, `.`, `_`, `-`, `+`, at most 214, `docsbot.names`). A refresh needs it.",
        shown="the root URL's host; a folder's or archive's name",
    )
    version: str = _argument(
        "", "Version string (none: the library's only, unnamed version); a library name's characters, and `@`."
    )
    mode: str = _argument(
        "full",
        "`full` fetches every page without validators; `refresh` revalidates every stored page with a conditional "
        "request (RFC 9110 §13).",
        choices=MODES,
        shown="`full` with `url`, else `refresh`",
    )
    max_depth: int | None = _argument(
        None, "Link hops from the root (root = 0). A refresh reuses the value the index stored unless given again."
    )
    max_pages: int | None = _argument(
        None, "Pages requested at most. A refresh reuses the value the index stored unless given again."
    )
    prune: str | None = _argument(
        None,
        "`orphans` deletes stored pages no longer linked from the root (within scope and depth) at the end of a "
        "completed run; `none` (default) only reports them. Stored by the index, reused by refreshes.",
        choices=PRUNE,
    )
    allow_mass_delete: bool = _argument(
        False, "`1` lifts the mass-deletion guard (`DOCSBOT_MASS_DELETE_SHARE`) for this run."
    )
    min_recheck: timedelta | None = _argument(
        None,
        "A duration (`45s`, `30m`, `12h`, `7d`, `2w`): stored pages revalidated more recently are not requested "
        "(their stored links are followed).",
    )
    sitemap: str | None = _argument(
        None,
        "URL of a sitemap (or sitemap index) whose in-scope URLs are added as seeds; by default the sitemaps "
        "robots.txt names are used; `none` uses none.",
    )
    render: str | None = _argument(
        None,
        "`js` renders every page in Chromium through scrapy-playwright (`docsbot.render`); `none` (default) renders "
        "only URLs matching `DOCSBOT_RENDER_URLS`. Stored by the index, reused by refreshes unless given again.",
        choices=RENDER_MODES,
    )
    freshness: str | None = _argument(
        None,
        "`validators` (default) revalidates every stored page; `http` does not request a stored page whose last "
        "response is still fresh by its HTTP caching headers (RFC 9111 §4.2, `docsbot.refresh.freshness`; its "
        "stored links are followed). Stored by the index, reused by refreshes unless given again.",
        choices=FRESHNESS,
    )
    network: str | None = _argument(
        None,
        "`public` connects only to public addresses, plus `DOCSBOT_ALLOWED_NETWORKS` (`docsbot.network`; what a "
        "crawl started from the network gets, and renders nothing); `any` (default) connects wherever the site's "
        "URLs lead. Stored by the index, reused by refreshes unless given again.",
        choices=NETWORK_MODES,
    )
    launch: str | None = _argument(
        None,
        "The token the run is recorded under (`crawl_runs.launch`), so that whoever started it finds it (`docsbot "
        "serve`, the MCP server, a fleet): letters, digits, `._-`, at most 64; default: a new one.",
    )

    @field_validator("url", mode="before")
    @classmethod
    def _root(cls, value: Any) -> str | None:
        if isinstance(value, str):
            try:
                value = root_argument(value)  # a local folder or archive: its file: URL
            except InvalidURL as exc:
                raise _Invalid(f": {exc}") from None
        return _url(value)

    @field_validator("sitemap", mode="before")
    @classmethod
    def _sitemap(cls, value: Any) -> str | None:
        return "none" if value == "none" else _url(value)

    @field_validator("mode", "render", "freshness", "network", mode="before")
    @classmethod
    def _one_of(cls, value: Any, info: ValidationInfo) -> str | None:
        """One of the field's ``choices``, whatever its case and surrounding spaces."""
        extra = cls.model_fields[str(info.field_name)].json_schema_extra
        return _choice(value, tuple(extra["choices"]) if isinstance(extra, dict) else ())

    @field_validator("prune", mode="before")
    @classmethod
    def _prune(cls, value: Any) -> str | None:
        if value is not None and value not in PRUNE:
            raise _Invalid(f"must be one of {', '.join(PRUNE)}, got {value!r}")
        return value

    @field_validator("max_depth", "max_pages", mode="before")
    @classmethod
    def _count(cls, value: Any, info: ValidationInfo) -> int | None:
        if value in (None, ""):
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise _Invalid(f"must be an integer, got {value!r}") from None
        minimum = 0 if info.field_name == "max_depth" else 1
        if number < minimum:
            raise _Invalid(f"must be >= {minimum}, got {number}")
        return number

    @field_validator("allow_mass_delete", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> bool:
        text = str(value or "0").strip().lower()
        if text not in ("0", "1", "true", "false", "yes", "no"):
            raise _Invalid(f"must be 1 or 0, got {value!r}")
        return text in ("1", "true", "yes")

    @field_validator("min_recheck", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta | None:
        if isinstance(value, timedelta):
            return value or None
        try:
            return parse_duration(value)
        except ValueError:
            raise _Invalid(f"must be a duration like 45s, 30m, 12h, 7d or 2w; got {value!r}") from None

    @field_validator("launch", mode="before")
    @classmethod
    def _launch(cls, value: Any) -> str | None:
        if value in (None, ""):
            return None
        if not re.fullmatch(r"[\w.-]{1,64}", str(value), flags=re.ASCII):
            raise _Invalid(f"must be letters, digits, '.', '_' or '-' (at most 64), got {value!r}")
        return str(value)

    @field_validator("library", "version", mode="before")
    @classmethod
    def _name(cls, value: Any, info: ValidationInfo) -> str:
        """A library or version name (:mod:`docsbot.names`): a crawl writes under it."""
        name = str(value or "").strip()
        try:
            return check_version(name) if info.field_name == "version" else check_library(name) if name else name
        except InvalidName as exc:
            raise _Invalid(f": {exc}") from None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, given: Any) -> Any:
        """The mode a run's arguments imply (``full`` with a URL, ``refresh`` without), and a full index's library
        (its root URL's host)."""
        if not isinstance(given, dict):
            return given
        given = {k: v for k, v in given.items() if v is not None}
        if not given.get("mode"):
            given["mode"] = "full" if given.get("url") else "refresh"
        return given

    @model_validator(mode="after")
    def _needs(self) -> CrawlArguments:
        if self.url is None and self.mode == "full":
            raise _Invalid("a full index needs -a url=ROOT_URL")
        if not self.library:
            if self.url is None:
                raise _Invalid("a refresh needs -a library=NAME (and -a version=VER if it has one)")
            object.__setattr__(self, "library", default_library(self.url))
        return self

    @classmethod
    def parse(cls, **given: Any) -> CrawlArguments:
        """The arguments ``given`` (``-a`` strings, or values of their types), validated. Raises
        :class:`SpiderArgumentError` with one line naming the first malformed argument (``-a max_pages must be an
        integer, got 'lots'``), an unknown one, or what the mode needs (``a full index needs -a url=ROOT_URL``)."""
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            raise SpiderArgumentError(_message(exc.errors()[0])) from None

    def resolve(self, root_url: str | None = None, stored: dict[str, Any] | None = None) -> CrawlSettings:
        """The run's settings: these arguments, with what is not given taken from ``stored`` (the version's
        ``versions.settings``; a full index passes none). ``root_url``: the version's stored root URL, used
        when no ``url`` argument was given."""
        return _resolve(self, root_url, (stored or {}) if self.mode == "refresh" else {})

    def as_json(self) -> dict[str, Any]:
        """The arguments as JSON-able values (recorded in ``crawl_runs.stats``)."""
        out = self.model_dump()
        out["min_recheck"] = str(out["min_recheck"]) if out["min_recheck"] else None
        return out


def _message(error: Any) -> str:
    """One line for pydantic's first error: ``-a NAME`` and what is wrong with it."""
    name = ".".join(str(part) for part in error.get("loc", ()))
    cause = error.get("ctx", {}).get("error")
    if error.get("type") == "extra_forbidden":
        return f"-a {name}: unknown argument (known: {', '.join(ARGUMENT_NAMES)})"
    if isinstance(cause, _Invalid):
        text = str(cause)
        if not name:
            return text
        return f"-a {name}{text}" if text.startswith(":") else f"-a {name} {text}"
    return f"-a {name}: {error.get('msg')}" if name else str(error.get("msg"))


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


ARGUMENT_NAMES = tuple(CrawlArguments.model_fields)
