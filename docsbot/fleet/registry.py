"""From a package to the root of its documentation, at the version a project pins: the package registries' own
metadata (PyPI's JSON API, npm's registry), then the versioned layouts documentation hosts use.

- **PyPI** (``GET {DOCSBOT_PYPI_URL}/NAME/json``, https://docs.pypi.org/api/json/): ``info.project_urls`` under a
  documentation label (Documentation, Docs, …; labels compared as PyPI normalizes them: lower case, no
  punctuation), then ``info.docs_url``, then the home page (``Homepage``, ``info.home_page``).
- **npm** (``GET {DOCSBOT_NPM_URL}/NAME``): ``homepage``, then the repository (``git+https://…/x.git`` as its web
  page).
- **crates.io** (``GET {DOCSBOT_CRATES_URL}/NAME``): ``crate.documentation``, else docs.rs, which keeps every
  release's docs at ``https://docs.rs/NAME/VERSION/``.
- **Versioned layouts**: Read the Docs (``HOST/LANG/VERSION/``: ``/en/2.31.0/``, ``/en/v2.31.0/``, ``/en/2.31/``,
  then ``stable`` and ``latest``) and trees named by a version (``/3.11/``, ``/v5/``): the pinned version's tree is
  taken when the host answers for it, else the latest with a note saying so.

A version is pinned (``==2.31.0``, npm's ``2.31.0``) or a range (``>=2,<3``, resolved to the newest release of the
registry's list inside it by the ecosystem's own rules: :mod:`docsbot.fleet.versions`). Raises :class:`RegistryError`
naming the package and what was tried.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import tomli_w

from docsbot.errors import DocsbotError
from docsbot.fleet.versions import newest
from docsbot.network import NetworkPolicy

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

    from docsbot.config import ProjectSettings

__all__ = ["ECOSYSTEMS", "RegistryError", "Resolution", "npm_candidates", "pypi_candidates", "resolve", "toml_entry"]

ECOSYSTEMS = ("pypi", "npm", "cargo")
PYPI_URL = "https://pypi.org/pypi"
NPM_URL = "https://registry.npmjs.org"
CRATES_URL = "https://crates.io/api/v1/crates"
_DOC_LABELS = ("documentation", "docs", "doc", "documentationurl", "apireference", "reference", "manual")
_HOME_LABELS = ("homepage", "home", "website")
_SOURCE_LABELS = ("source", "sourcecode", "code", "repository", "github")
# A repository's page: its README is the documentation; the crawl takes that page alone (max_depth 0), not the
# repository's thousands of code, issue and commit pages.
REPOSITORY_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")
# Read the Docs' layout, on its own domains or a project's (flask.palletsprojects.com/en/2.3.x/): ORIGIN/LANG/VERSION/
_RTD = re.compile(
    r"^(?P<origin>https?://[^/]+?\.(?:readthedocs\.io|readthedocs\.org|rtfd\.io))(?:/|$)"
    r"|^(?P<other>https?://[^/]+)(?:/?$|/(?P<lang>[a-z]{2}(?:[-_][a-z]+)?)/(?:latest|stable|[\w.]+)/?)"
)
_VERSION_SEGMENT = re.compile(r"/(v?)(\d+(?:\.\d+){0,2}|latest|stable|current)/")


class RegistryError(DocsbotError):
    """A package whose documentation root cannot be found: not in the registry, the registry unreachable, or no
    URL in its metadata. The message names the package and what was tried."""


@dataclass
class Resolution:
    """A package's documentation root: ``url`` (the tree of ``version`` when the host has one, else the latest),
    ``version`` (the label of that tree for the libraries file: the pinned version, or ``"latest"``), and
    ``notes``: why, line by line."""

    name: str
    ecosystem: str
    version: str
    url: str
    package_version: str | None = None
    notes: list[str] = field(default_factory=list)
    max_depth: int | None = None  # 0 for a repository's page: its README alone


def _label(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def pypi_candidates(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """``(where, url)`` of a PyPI JSON answer, best first: documentation labels, ``docs_url``, home pages."""
    info = meta.get("info") or {}
    urls = {_label(k): v for k, v in (info.get("project_urls") or {}).items() if isinstance(v, str) and v}
    out: list[tuple[str, str]] = []
    for label in _DOC_LABELS:
        if label in urls:
            out.append((f"project_urls {label}", urls[label]))
    if info.get("docs_url"):
        out.append(("docs_url", info["docs_url"]))
    for label in _HOME_LABELS:
        if label in urls:
            out.append((f"project_urls {label}", urls[label]))
    if info.get("home_page"):
        out.append(("home_page", info["home_page"]))
    for label in _SOURCE_LABELS:
        if label in urls:
            out.append((f"project_urls {label}", urls[label]))
    seen: set[str] = set()
    return [(w, u) for w, u in out if u.startswith(("http://", "https://")) and not (u in seen or seen.add(u))]


def npm_candidates(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """``(where, url)`` of an npm registry answer, best first: ``homepage``, then the repository's web page."""
    out: list[tuple[str, str]] = []
    if isinstance(meta.get("homepage"), str) and meta["homepage"].startswith(("http://", "https://")):
        out.append(("homepage", meta["homepage"]))
    repo = meta.get("repository")
    url = repo.get("url") if isinstance(repo, dict) else repo if isinstance(repo, str) else None
    if url and re.fullmatch(r"(github:)?[\w.-]+/[\w.-]+", url):  # npm's shorthand for a GitHub repository
        url = "https://github.com/" + url.removeprefix("github:")
    if url:
        url = re.sub(r"^git\+", "", url)
        url = re.sub(r"^git://", "https://", url)
        url = re.sub(r"^ssh://(?:[^@/]+@)?", "https://", url)
        url = re.sub(r"^git@([^:]+):", r"https://\1/", url)
        url = re.sub(r"\.git$", "", url)
        if url.startswith(("http://", "https://")):
            out.append(("repository", url + "#readme"))
    return out


def _refusal(url: str, policy: NetworkPolicy) -> str | None:
    """Why a documentation URL named by a registry is refused (its host resolves to a loopback, private or
    link-local address that ``policy`` does not allow: a package's metadata must not send a crawl, and the index
    people read, to this machine's network), or ``None``. A host that does not resolve here is not refused: the
    crawl reports it."""
    parts = urlsplit(url)
    if not parts.hostname:
        return f"{url}: no host"
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 0, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    for info in infos:
        reason = policy.refusal(str(info[4][0]), parts.hostname)
        if reason is not None:
            return f"{url}: {reason}"
    return None


def _versioned_urls(url: str, version: str) -> list[str]:
    """Where the tree of ``version`` would be on the host of ``url``: Read the Docs' language/version paths, or
    the version segment of the URL replaced; most specific first."""
    parts = version.split(".")
    names = [version, f"v{version}"]
    if len(parts) > 2:
        minor = ".".join(parts[:2])
        names += [minor, f"v{minor}", f"{minor}.x"]
    seg = _VERSION_SEGMENT.search(url)
    if seg and not _RTD.match(url):
        return [url[: seg.start()] + f"/{name}/" + url[seg.end() :] for name in names]
    m = _RTD.match(url)
    if m:
        origin = m.group("origin") or m.group("other")
        lang = m.group("lang") or "en"
        return [f"{origin}/{lang}/{name}/" for name in names]
    if re.search(r"/docs?/?$", url):  # numpy.org/doc/ → numpy.org/doc/2.1/
        return [f"{url.rstrip('/')}/{name}/" for name in names]
    return []


def resolve(
    name: str,
    spec: str | None = None,
    ecosystem: str = "pypi",
    *,
    client: httpx.Client,
    pypi_url: str | None = None,
    npm_url: str | None = None,
    probe: Callable[[str], bool] | None = None,
    settings: ProjectSettings | None = None,
) -> Resolution:
    """The documentation root of package ``name`` at ``spec`` (``"2.31.0"``, ``">=2,<3"``, npm's ``"^4.17"``;
    ``None``: the newest release) in ``ecosystem``, from its registry's metadata (``client``: an ``httpx.Client``;
    ``probe(url)``: whether a documentation host answers a URL, by default a GET through ``client``). The
    registries' URLs (``DOCSBOT_PYPI_URL``, ``DOCSBOT_NPM_URL``, ``DOCSBOT_CRATES_URL``; ``pypi_url`` and
    ``npm_url`` first) and the networks besides public ones a documentation URL may be on
    (``DOCSBOT_ALLOWED_NETWORKS``) are read from ``settings`` (default: the project's, from the environment).
    Raises :class:`RegistryError`."""
    if ecosystem not in ECOSYSTEMS:
        raise RegistryError(f"ecosystem: one of {', '.join(ECOSYSTEMS)}, got {ecosystem!r}")
    import httpx

    if settings is None:
        from docsbot.config import ProjectSettings

        settings = ProjectSettings()
    base = (pypi_url or settings.get("DOCSBOT_PYPI_URL") or PYPI_URL).rstrip("/")
    if ecosystem == "npm":
        base = (npm_url or settings.get("DOCSBOT_NPM_URL") or NPM_URL).rstrip("/")
    elif ecosystem == "cargo":
        base = (settings.get("DOCSBOT_CRATES_URL") or CRATES_URL).rstrip("/")
    where = f"{base}/{name}/json" if ecosystem == "pypi" else f"{base}/{name}"
    try:
        answer = client.get(where, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise RegistryError(f"{name}: {ecosystem} cannot be reached ({where}: {exc})") from None
    if answer.status_code == 404:
        raise RegistryError(f"{name}: no such package on {ecosystem} ({where} answers 404)")
    if answer.status_code != 200:
        raise RegistryError(f"{name}: {where} answers {answer.status_code}")
    try:
        meta = answer.json()
    except (json.JSONDecodeError, ValueError):
        raise RegistryError(f"{name}: {where} answers something that is not JSON") from None
    if ecosystem == "pypi":
        releases = list((meta.get("releases") or {}).keys()) or [meta.get("info", {}).get("version", "")]
        candidates = pypi_candidates(meta)
        canonical = re.sub(r"[-_.]+", "-", (meta.get("info") or {}).get("name") or name).lower()
    elif ecosystem == "npm":
        releases = list((meta.get("versions") or {}).keys())
        latest = (meta.get("dist-tags") or {}).get("latest")
        release = (meta.get("versions") or {}).get(latest) or {}
        candidates = npm_candidates({k: release.get(k) or meta.get(k) for k in ("homepage", "repository")})
        canonical = meta.get("name") or name
    else:
        crate = meta.get("crate") or {}
        releases = [v["num"] for v in meta.get("versions") or [] if not v.get("yanked") and v.get("num")]
        canonical = crate.get("name") or name
        documentation = crate.get("documentation") or ""
        if not documentation or "docs.rs/" in documentation:
            version = newest(releases, spec, ecosystem)
            if spec and version is None:
                raise RegistryError(f"{name}: no release matches {spec!r} on {ecosystem}")
            version = version or crate.get("max_stable_version") or "latest"
            url = f"https://docs.rs/{canonical}/{version}/{canonical.replace('-', '_')}/"
            return Resolution(canonical, ecosystem, version, url, version,
                              [f"{url}: docs.rs, which keeps every release's docs"])  # fmt: skip
        candidates = [("crate.documentation", documentation)]
    package_version = newest(releases, spec, ecosystem, meta.get("dist-tags"))
    if spec and package_version is None:
        raise RegistryError(f"{name}: no release matches {spec!r} on {ecosystem}")
    if not candidates:
        raise RegistryError(f"{name}: its {ecosystem} metadata names no documentation or home page URL ({where})")
    policy = NetworkPolicy.public(settings.get("DOCSBOT_ALLOWED_NETWORKS"))
    checked = [(where_found, url, _refusal(url, policy)) for where_found, url in candidates]
    refused = [reason for _, _, reason in checked if reason]
    candidates = [(where_found, url) for where_found, url, reason in checked if reason is None]
    if not candidates:
        raise RegistryError(
            f"{name}: its {ecosystem} metadata names only addresses that are not public ({'; '.join(refused)}): "
            "docsbot does not crawl them on a registry's word (DOCSBOT_ALLOWED_NETWORKS allows more)"
        )
    where_found, url = candidates[0]
    result = Resolution(canonical, ecosystem, "latest", url, package_version,
                        [f"{url}: from {ecosystem}'s {where_found}"])  # fmt: skip
    if re.match(r"https?://(www\.)?(" + "|".join(map(re.escape, REPOSITORY_HOSTS)) + r")/", url):
        result.max_depth = 0
        result.notes.append("a repository's page: its README is the documentation (max_depth 0: that page alone)")
        return result

    def answers(candidate: str) -> bool:
        if probe is not None:
            return probe(candidate)
        try:
            return client.get(candidate).status_code == 200
        except httpx.HTTPError:
            return False

    if package_version and spec:
        for candidate in _versioned_urls(url, package_version):
            if answers(candidate):
                result.url, result.version = candidate, package_version
                result.notes.append(f"{candidate}: the tree of {package_version}")
                return result
        tried = _versioned_urls(url, package_version)
        result.notes.append(
            f"no tree of {package_version} found ({', '.join(tried) or 'the site has no versioned layout'}): "
            "the latest docs, which may describe another version"
        )
    return result


def toml_entry(resolution: Resolution, refresh: str | None = None) -> str:
    """A libraries-file entry (``[[library]]``) for ``resolution``, its notes as comments above it (one line each,
    control characters replaced), its values written by tomli-w: any text a registry answers, a character outside
    the BMP or a quote included, reads back through :mod:`tomllib` as it was."""
    values: dict[str, Any] = {"name": resolution.name, "version": resolution.version, "url": resolution.url}
    if resolution.max_depth is not None:
        values["max_depth"] = resolution.max_depth
    if refresh:
        values["refresh"] = refresh
    comments = "".join(f"# {_comment(note)}\n" for note in resolution.notes)
    return comments + "[[library]]\n" + tomli_w.dumps(values)


def _comment(text: str) -> str:
    """``text`` as the body of one TOML comment line: whitespace runs (newlines too) one space, and the control
    characters TOML forbids in a comment (U+0000-U+001F, U+007F) as U+FFFD."""
    return "".join("\ufffd" if ord(c) < 0x20 or c == "\x7f" else c for c in " ".join(text.split()))
