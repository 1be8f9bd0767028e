"""The docs spider's arguments (``scrapy crawl docs -a name=value``): a typed, validated model (pure; no Scrapy).

:meth:`CrawlArguments.parse` validates what the command line gave; :meth:`CrawlArguments.resolve` merges it with
what the full index stored for the version (a refresh reuses ``max_depth``, ``max_pages``, ``prune`` and
``render`` unless given again) into the :class:`CrawlSettings` a run uses.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from w3lib.http import basic_auth_header

from docsbot.errors import DocsbotError
from docsbot.folders import default_library, is_archive, root_argument
from docsbot.names import InvalidName, check_library, check_version
from docsbot.network import NETWORK_MODES
from docsbot.render import RENDER_MODES
from docsbot.urls import SCOPE_MODES, InvalidURL, Scope, UrlPattern, canonical_url, has_credentials

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "parse_duration",
    "ArgumentUsageError",
    "CrawlArguments",
    "CrawlSettings",
    "Credentials",
    "SpiderArgumentError",
    "MODES",
    "PRUNE",
    "ARGUMENT_NAMES",
    "RUNNER_ARGUMENT_PREFIX",
    "SCOPE_KEYS",
]

MODES = ("full", "refresh")
PRUNE = ("none", "orphans")
FRESHNESS = ("validators", "http")  # docsbot.refresh.freshness
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


# The settings a refresh given them again keeps for the next ones (versions.settings): what the crawl covers and how it
# gets in. Other arguments given to a refresh hold for that run only.
SCOPE_KEYS = ("scope", "include", "exclude", "headers", "http_auth")
# Arguments a job runner adds of its own, never the spider's: Scrapyd 1.x passes `_job` (and `_version` when
# schedule.json is given one) as `-a`; Zyte Scrapy Cloud passes only the job's own arguments (its job key travels in
# the environment, SHUB_JOBKEY). Any name starting with this is left to the runner.
RUNNER_ARGUMENT_PREFIX = "_"
# Headers a private docs host cannot be sent by `-a headers`: the request's framing and docsbot's own revalidation.
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "if-none-match", "if-modified-since"})
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP token (RFC 9110 §5.1)
_VARIABLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


class SpiderArgumentError(DocsbotError, ValueError):
    """A spider argument is missing or malformed; the crawl does not start and nothing is touched."""


class ArgumentUsageError(SpiderArgumentError):
    """An ``-a`` argument the spider does not know, or whose value it cannot read: a usage error, so ``scrapy crawl``
    exits with code 2, as Scrapy's own usage errors do (:mod:`docsbot.commands.crawl`)."""


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
    scope: str | None = _argument(
        None,
        "How far the crawl reaches from the root, taken after the root's redirects: `prefix` (default) its host and "
        "port and its directory (a last path segment without a page extension is a directory of its own: "
        "`/docs/python` is `/docs/python/`); `host` its host and port, any path; `domain` every host of its "
        "registrable domain (the Public Suffix List's). Stored by the index, reused by refreshes unless given again.",
        choices=SCOPE_MODES,
    )
    include: tuple[str, ...] | None = _argument(
        None,
        "Patterns, comma-separated: only URLs in the scope matching one of them are crawled. A glob on the URL (`*` "
        "any characters, `/` included; one starting with `/` also matches the path), or `/regex/` searched in the "
        "URL. The root is always crawled. Stored by the index, reused by refreshes unless given again (empty: none).",
    )
    exclude: tuple[str, ...] | None = _argument(
        None,
        "Patterns, comma-separated, as `include`'s: URLs matching one are not crawled, whatever `include` says; "
        "stored pages that match are deleted at the end of a completed run. The root is always crawled. Stored by the "
        "index, reused by refreshes unless given again (empty: none).",
    )
    headers: tuple[str, ...] | None = _argument(
        None,
        "Request headers for a private docs host, comma-separated `Name=$VARIABLE`: each value is read from that "
        "environment variable when the crawl starts (a variable that is not set stops it), never given here. Sent "
        "only to the root's host and port; the values are never stored, logged or recorded, the references are: "
        "stored by the index, reused by refreshes unless given again (empty: none).",
    )
    http_auth: str | None = _argument(
        None,
        "HTTP basic credentials for a private docs host (RFC 7617), `$USER_VARIABLE:$PASSWORD_VARIABLE`: read from "
        "those environment variables and sent only to the root's host and port, as `headers` are; the references "
        "are stored by the index, reused by refreshes unless given again (empty: none).",
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

    @field_validator("mode", "render", "freshness", "network", "scope", mode="before")
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

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> tuple[str, ...] | None:
        """Comma-separated patterns (or a list of them), each checked (:class:`docsbot.urls.UrlPattern`); an empty
        value is an empty tuple: given, none."""
        if value is None:
            return None
        items = value.split(",") if isinstance(value, str) else list(value)
        patterns = tuple(str(item).strip() for item in items if str(item).strip())
        for pattern in patterns:
            if "," in pattern:  # a list's item: it would be two patterns once passed on as -a text
                raise _Invalid(f": {pattern!r} holds a comma, which separates patterns (in a /regex/, write \\x2c)")
            try:
                UrlPattern.parse(pattern)
            except ValueError as exc:
                raise _Invalid(f": {exc}") from None
        return patterns

    @field_validator("headers", mode="before")
    @classmethod
    def _headers(cls, value: Any) -> tuple[str, ...] | None:
        """``Name=$VARIABLE`` items (comma-separated, or a list of them); no value is ever repeated in an error, in
        case a secret was given instead of a variable's name."""
        if value is None:
            return None
        items = value.split(",") if isinstance(value, str) else list(value)
        out = []
        for number, item in enumerate((str(i).strip() for i in items if str(i).strip()), 1):
            name, equals, reference = (part.strip() for part in item.partition("="))
            if not equals or not _HEADER_NAME.match(name):
                raise _Invalid(
                    f": item {number} is not Name=$VARIABLE (a header name, and the environment variable that holds "
                    "its value: never the value itself)"
                )
            if name.lower() in _RESERVED_HEADERS:
                raise _Invalid(f": {name} cannot be set (docsbot or the connection sets it)")
            if not _VARIABLE.match(reference):
                raise _Invalid(
                    f": the value of {name} must be $VARIABLE, the environment variable that holds it (never the "
                    "value itself)"
                )
            out.append(f"{name}={reference}")
        return tuple(out)

    @field_validator("http_auth", mode="before")
    @classmethod
    def _http_auth(cls, value: Any) -> str | None:
        if value is None:
            return None
        text = str(value).strip()
        if not text:
            return ""
        user, colon, password = text.partition(":")
        if not (colon and _VARIABLE.match(user.strip()) and _VARIABLE.match(password.strip())):
            raise _Invalid(
                "must be $USER_VARIABLE:$PASSWORD_VARIABLE, the environment variables that hold them (never the "
                "user name and password themselves)"
            )
        return f"{user.strip()}:{password.strip()}"

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
        if self.url is not None and (self.url.startswith("file:") or is_archive(self.url)):
            if self.scope not in (None, "prefix"):
                raise _Invalid(
                    f"-a scope={self.scope} is for a site's host or domain: a folder's or an archive's scope is its "
                    "own files"
                )
            if self.headers or self.http_auth:
                raise _Invalid("-a headers and -a http_auth are for a private docs host, not a folder or an archive")
        if self.http_auth and any(h.lower().startswith("authorization=") for h in self.headers or ()):
            raise _Invalid("give -a http_auth or an Authorization header in -a headers, not both")
        if not self.library:
            if self.url is None:
                raise _Invalid("a refresh needs -a library=NAME (and -a version=VER if it has one)")
            object.__setattr__(self, "library", default_library(self.url))
        return self

    @classmethod
    def parse(cls, **given: Any) -> CrawlArguments:
        """The arguments ``given`` (``-a`` strings, or values of their types), validated. Raises
        :class:`ArgumentUsageError` with one line naming the first malformed argument (``-a max_pages must be an
        integer, got 'lots'``), an unknown one with the known names and the nearest (``-a max_page: unknown
        argument; did you mean max_pages?``), or what the mode needs (``a full index needs -a url=ROOT_URL``)."""
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            raise ArgumentUsageError(_message(exc.errors()[0])) from None

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
        nearest = difflib.get_close_matches(name, ARGUMENT_NAMES, n=1)
        hint = f"; did you mean {nearest[0]}?" if nearest else ""
        return f"-a {name}: unknown argument{hint} (known: {', '.join(ARGUMENT_NAMES)})"
    if isinstance(cause, _Invalid):
        text = str(cause)
        if not name:
            return text
        return f"-a {name}{text}" if text.startswith(":") else f"-a {name} {text}"
    return f"-a {name}: {error.get('msg')}" if name else str(error.get("msg"))


@dataclass(frozen=True)
class Credentials:
    """The request headers of a private docs host, values read from the environment: what
    :class:`~docsbot.downloadermiddlewares.credentials.CredentialsMiddleware` sends to ``netloc`` (host and port) and
    nowhere else. Its ``repr`` names the headers, never their values."""

    netloc: str
    scheme: str
    headers: tuple[tuple[str, bytes], ...] = field(repr=False)

    def __repr__(self) -> str:
        return f"Credentials({self.describe()})"

    def describe(self) -> str:
        """``PRIVATE-TOKEN, Authorization to docs.example.org``: the headers' names and the host, never a value."""
        return f"{', '.join(name for name, _ in self.headers)} to {self.netloc}"


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
    scope: str = "prefix"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()  # Name=$VARIABLE
    http_auth: str = ""  # $USER_VARIABLE:$PASSWORD_VARIABLE

    def stored(self) -> dict[str, Any]:
        """The crawl settings a full index stores on its version (``versions.settings``) for later refreshes: the
        private docs' variable names, never their values."""
        return {
            "max_depth": self.max_depth,
            "max_pages": self.max_pages,
            "prune": self.prune,
            "render": self.render,
            "freshness": self.freshness,
            "network": self.network,
            "scope": self.scope,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "headers": list(self.headers),
            "http_auth": self.http_auth,
        }

    def crawl_scope(self) -> Scope:
        """The scope a crawl from the root URL starts with (:class:`docsbot.urls.Scope`; the root's redirects
        rebase it)."""
        return Scope.from_root(self.root_url, self.scope, self.include, self.exclude)

    def credentials(self, environ: Mapping[str, str]) -> Credentials | None:
        """The private docs' headers with their values from ``environ`` (the process's environment: where Scrapyd
        and Scrapy Cloud put secrets), for the root URL's host and port; ``None`` without ``headers`` or
        ``http_auth``. Raises :class:`SpiderArgumentError` naming a variable that is not set or whose value cannot
        be a header's (a line break), never the value."""
        if not self.headers and not self.http_auth:
            return None

        def value(reference: str, argument: str) -> str:
            name = reference.removeprefix("$")
            found = environ.get(name)
            if not found:
                raise SpiderArgumentError(f"-a {argument}: the environment variable {name} is not set (or empty)")
            if "\r" in found or "\n" in found:
                raise SpiderArgumentError(f"-a {argument}: the value of {name} holds a line break; a header cannot")
            return found

        headers = []
        for item in self.headers:
            name, _, reference = item.partition("=")
            headers.append((name, value(reference, "headers").encode("latin-1", "replace")))
        if self.http_auth:
            user, _, password = self.http_auth.partition(":")
            token = basic_auth_header(value(user, "http_auth"), value(password, "http_auth"), encoding="utf-8")
            headers.append(("Authorization", token))
        root = urlsplit(self.root_url)
        return Credentials(root.netloc, root.scheme, tuple(headers))


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
        scope=pick("scope") or "prefix",
        include=tuple(pick("include") or ()),
        exclude=tuple(pick("exclude") or ()),
        headers=tuple(pick("headers") or ()),
        http_auth=pick("http_auth") or "",
    )


ARGUMENT_NAMES = tuple(CrawlArguments.model_fields)
