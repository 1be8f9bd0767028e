"""From a package to the root of its documentation, at the version a project pins: the package registries' own
metadata (PyPI's JSON API, npm's registry, crates.io), read whole by :mod:`docsbot.fleet.roots`, then confirmed on
the documentation host by :mod:`docsbot.fleet.probe` when it can be reached.

- **PyPI** (``GET {DOCSBOT_PYPI_URL}/NAME/json``, https://docs.pypi.org/api/json/): every ``project_urls`` label,
  ``home_page``, ``docs_url`` and the README (``info.description``).
- **npm** (``GET {DOCSBOT_NPM_URL}/NAME``): the newest release's ``homepage``, ``repository`` (a monorepo's package
  directory included) and ``bugs``, and the README (``readme``); a registry that sends none (a mirror or a proxy)
  has it read from the tarball of the release being resolved (:mod:`docsbot.fleet.tarball`).
- **crates.io** (``GET {DOCSBOT_CRATES_URL}/NAME``): ``crate.documentation``, else docs.rs, which keeps every
  release's docs at ``https://docs.rs/NAME/VERSION/``.
- **The host** (:class:`~docsbot.fleet.probe.Prober`): the pinned version's tree (Read the Docs' ``/en/2.31.0/``,
  ``/en/2.31.x/``; a version segment replaced: ``/3/`` → ``/3.11/``, ``/v4/`` → ``/v5/``; ``/doc/2.1/``), then the
  root itself; a redirect is followed to where it leads (the crawl's scope is the root's own directory). A host
  that cannot be reached leaves the entry **unverified**: written from the registry's data alone, the pin kept,
  and a note saying so; a host that answers 404 for every tree of the pin gives the newest docs, with a note.

A version is pinned (``==2.31.0``, npm's ``2.31.0``) or a range (``>=2,<3``, resolved to the newest release of the
registry's list inside it by the ecosystem's own rules: :mod:`docsbot.fleet.versions`). Raises
:class:`RegistryError` naming the package and what was tried; when the metadata names nothing usable,
it says so and asks for the root (``docsbot add --url``).
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
from docsbot.fleet.probe import Answer, HostUnreachable, Prober, http_fetch
from docsbot.fleet.roots import (
    REPOSITORY_HOSTS,
    Candidate,
    Choice,
    as_directory,
    docs_link,
    find_root,
    has_versioned_layout,
    npm_candidates,
    pypi_candidates,
    version_tree,
    versioned_roots,
)
from docsbot.fleet.tarball import TarballError, tarball_readme
from docsbot.fleet.versions import newest
from docsbot.network import NetworkPolicy

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

    from docsbot.fleet.roots import Link
    from docsbot.project_settings import ProjectSettings

__all__ = [
    "ECOSYSTEMS",
    "REPOSITORY_HOSTS",
    "RegistryError",
    "Resolution",
    "no_probes",
    "npm_candidates",
    "pypi_candidates",
    "resolve",
    "toml_entry",
]

ECOSYSTEMS = ("pypi", "npm", "cargo")
PYPI_URL = "https://pypi.org/pypi"
NPM_URL = "https://registry.npmjs.org"
CRATES_URL = "https://crates.io/api/v1/crates"


class RegistryError(DocsbotError):
    """A package whose documentation root cannot be found: not in the registry, the registry unreachable, or no
    URL in its metadata. The message names the package and what was tried."""


@dataclass
class Resolution:
    """A package's documentation root: ``url`` (the tree of ``version`` when the host has one, else the newest
    docs), ``version`` (the label of that tree for the libraries file: the pinned version, or ``"latest"``),
    ``notes``: why, line by line (the rule, the label or README line it came from), and ``verified``: whether the
    documentation host confirmed the root (``False``: written from the registry's data alone)."""

    name: str
    ecosystem: str
    version: str
    url: str
    package_version: str | None = None
    notes: list[str] = field(default_factory=list)
    max_depth: int | None = None  # 0 for a repository's page: its README alone
    verified: bool = False


def no_probes(url: str) -> Answer:
    """A probe that asks no documentation host (``resolve(..., probe=no_probes)``): every root is written from the
    registry's data alone, as on a machine that cannot reach the hosts."""
    raise HostUnreachable("probes are off")


def _refusal(url: str, policy: NetworkPolicy) -> str | None:
    """Why a documentation URL named by a registry is refused (its host resolves to a loopback, private or
    link-local address that ``policy`` does not allow: a package's metadata must not send a crawl, and the index
    people read, to this machine's network), or ``None``. A host that does not resolve here is not refused: the
    crawl reports it."""
    parts = urlsplit(url)
    if not parts.hostname:
        return f"{url}: no host"
    if policy.everything or parts.hostname.lower() in policy.hosts:  # nothing to look up
        return None
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 0, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    for info in infos:
        reason = policy.refusal(str(info[4][0]), parts.hostname)
        if reason is not None:
            return f"{url}: {reason}"
    return None


def resolve(
    name: str,
    spec: str | None = None,
    ecosystem: str = "pypi",
    *,
    client: httpx.Client,
    pypi_url: str | None = None,
    npm_url: str | None = None,
    probe: Callable[[str], Answer] | None = None,
    url: str | None = None,
    settings: ProjectSettings | None = None,
) -> Resolution:
    """The documentation root of package ``name`` at ``spec`` (``"2.31.0"``, ``">=2,<3"``, npm's ``"^4.17"``;
    ``None``: the newest release) in ``ecosystem``, from its registry's metadata (``client``: an ``httpx.Client``)
    or given (``url``: ``docsbot add --url``; the version and the probes still apply). ``probe(url)`` asks a
    documentation host (an :class:`~docsbot.fleet.probe.Answer`, or :class:`~docsbot.fleet.probe.HostUnreachable`);
    by default a GET through ``client``, :func:`no_probes` asks none. The
    registries' URLs (``DOCSBOT_PYPI_URL``, ``DOCSBOT_NPM_URL``, ``DOCSBOT_CRATES_URL``; ``pypi_url`` and
    ``npm_url`` first) and the networks besides public ones a documentation URL may be on
    (``DOCSBOT_ALLOWED_NETWORKS``) are read from ``settings`` (default: the project's, from the environment).
    Raises :class:`RegistryError`."""
    if ecosystem not in ECOSYSTEMS:
        raise RegistryError(f"ecosystem: one of {', '.join(ECOSYSTEMS)}, got {ecosystem!r}")
    import httpx

    if settings is None:
        from docsbot.project_settings import ProjectSettings

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
    evidence: list[Link] = []
    policy = NetworkPolicy.public(settings.get("DOCSBOT_ALLOWED_NETWORKS"))
    readme_note = None
    if ecosystem == "pypi":
        releases = list((meta.get("releases") or {}).keys()) or [meta.get("info", {}).get("version", "")]
        candidates, evidence = pypi_candidates(meta)
        canonical = re.sub(r"[-_.]+", "-", (meta.get("info") or {}).get("name") or name).lower()
    elif ecosystem == "npm":
        versions = meta.get("versions") or {}
        releases = list(versions.keys())
        release = versions.get((meta.get("dist-tags") or {}).get("latest")) or {}
        fields = {k: release.get(k) or meta.get(k) for k in ("homepage", "repository", "bugs", "readme")}
        if (
            not isinstance(fields["readme"], str)
            or not fields["readme"].strip()
            or fields["readme"].startswith("ERROR: No README")
        ):  # the README of the release being resolved, from its tarball
            pinned = versions.get(newest(releases, spec, ecosystem, meta.get("dist-tags"))) if spec else None
            fields["readme"], readme_note = _tarball_readme(pinned or release, base, client, policy)
        candidates, evidence = npm_candidates(fields)
        canonical = meta.get("name") or name
    else:
        crate = meta.get("crate") or {}
        releases = [v["num"] for v in meta.get("versions") or [] if not v.get("yanked") and v.get("num")]
        canonical = crate.get("name") or name
        documentation = crate.get("documentation") or ""
        if not url and (not documentation or "docs.rs/" in documentation):
            version = newest(releases, spec, ecosystem)
            if spec and version is None:
                raise RegistryError(f"{name}: no release matches {spec!r} on {ecosystem}")
            version = version or crate.get("max_stable_version") or "latest"
            root = f"https://docs.rs/{canonical}/{version}/{canonical.replace('-', '_')}/"
            return Resolution(canonical, ecosystem, version, root, version,
                              [f"{root}: docs.rs, which keeps every release's docs"])  # fmt: skip
        candidates = [Candidate(documentation, "docs", 100, "crate.documentation")]
    package_version = newest(releases, spec, ecosystem, meta.get("dist-tags"))
    if spec and package_version is None:
        raise RegistryError(f"{name}: no release matches {spec!r} on {ecosystem}")
    prober = Prober(probe or http_fetch(client, lambda u: _refusal(u, policy)))
    if url:
        choice = Choice(url if urlsplit(url).path else url + "/", "given", [f"{url}: given (--url)"])
        if (reason := _refusal(url, policy)) is not None:
            raise RegistryError(f"{name}: {reason}: docsbot does not crawl it (DOCSBOT_ALLOWED_NETWORKS allows more)")
    else:
        choice = _choose(name, ecosystem, where, candidates, evidence, policy, prober, package_version)
        if readme_note and (readme_note.startswith("the registry sends no README") or (
            choice.source is not None and choice.source.where.startswith("README")
        )):  # fmt: skip
            choice.notes.insert(1, readme_note)
    result = Resolution(canonical, ecosystem, "latest", choice.url, package_version, choice.notes, choice.max_depth)
    if choice.kind == "repository":
        return result
    try:
        _confirm(result, choice, prober, spec, evidence)
    except HostUnreachable as exc:
        _unverified(result, spec, evidence, str(exc))
    return result


def _tarball_readme(
    release: dict[str, Any], registry: str, client: httpx.Client, policy: NetworkPolicy
) -> tuple[str | None, str]:
    """``(README, note)`` of an npm release whose document has none (a registry's mirror or proxy may leave it
    out): read from the release's tarball (``dist.tarball``, its hash checked against ``dist.integrity``; see
    :mod:`docsbot.fleet.tarball`), ``None`` and why when it cannot be. A tarball off the registry's host, and
    every redirect off it, is held to ``policy``."""
    dist = release.get("dist") or {}
    url = dist.get("tarball")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None, "the registry sends no README and names no tarball to read it from"
    own = urlsplit(registry).netloc

    def refusal(hop: str) -> str | None:
        return None if urlsplit(hop).netloc == own else _refusal(hop, policy)

    try:
        found = tarball_readme(client, url, dist.get("integrity"), dist.get("shasum"), refusal=refusal)
    except TarballError as exc:
        return None, f"the registry sends no README, and none could be read from the tarball: {exc}"
    checked = "its hash checked against the registry's" if found.verified else "not checked: over the cap"
    return found.text, f"README read from the tarball, {found.member} of {url} ({checked})"


def _choose(
    name: str,
    ecosystem: str,
    where: str,
    candidates: list[Candidate],
    evidence: list[Link],
    policy: NetworkPolicy,
    prober: Prober,
    version: str | None = None,
) -> Choice:
    """The root :func:`~docsbot.fleet.roots.find_root` picks among the candidates whose addresses ``policy``
    allows (a refused one is dropped and the choice made again), a redirector (``aka.ms/…``) followed to where it
    leads (one that cannot be followed from here is dropped, and the note says so). Raises
    :class:`RegistryError` when none is left, asking for ``--url``."""
    refused: list[str] = []
    unfollowed: list[str] = []
    while True:
        choice = find_root(candidates, evidence, f"{ecosystem}'s", name, version)
        if choice is None:
            break
        reason = _refusal(choice.url, policy)
        if reason is None and choice.kind == "redirect":
            try:
                answer = prober.get(choice.url)
            except HostUnreachable as exc:
                answer = Answer(choice.url, 0, choice.url, str(exc))
            if answer.status == 200:
                choice.notes.append(f"{answer.final_url}: where {choice.url} leads")
                choice.url, choice.kind = answer.final_url, "docs"
            else:  # the README's pointer to its docs: its other links are not what it named, so they go too
                unfollowed.append(f"{choice.url} ({answer.title or answer.status})")
                readme = choice.source.where.startswith("README") if choice.source else False
                candidates = [c for c in candidates if c is not choice.source
                              and not (readme and c.where.startswith("README"))]  # fmt: skip
                continue
        if reason is None:
            if unfollowed:
                choice.notes.insert(1, f"the documentation its README names through a redirector cannot be followed "
                                       f"from here: {'; '.join(unfollowed)}")  # fmt: skip
            return choice
        refused.append(reason)
        candidates = [c for c in candidates if c is not choice.source]
    if refused:
        raise RegistryError(
            f"{name}: its {ecosystem} metadata names only addresses that are not public ({'; '.join(refused)}): "
            "docsbot does not crawl them on a registry's word (DOCSBOT_ALLOWED_NETWORKS allows more)"
        )
    through = f"; its README names it only through a redirector, {'; '.join(unfollowed)}" if unfollowed else ""
    raise RegistryError(
        f"{name}: cannot tell where its documentation is: its {ecosystem} metadata ({where}) names no documentation,"
        f" home page or repository URL docsbot can use{through}; give the root: docsbot add NAME --url URL"
    )


def _confirm(result: Resolution, choice: Choice, prober: Prober, spec: str | None, evidence: list[Link]) -> None:
    """Ask the host: the root (where it redirects, the docs a home page links), then the pinned version's tree
    (the first name the host has). Raises :class:`HostUnreachable` (the caller writes the entry unverified) and
    :class:`RegistryError` (the root the metadata names is not there)."""
    _confirm_root(result, choice, prober)
    version = result.package_version
    if spec and version:
        tried, undecided = [], []
        for candidate in versioned_roots(result.url, version, evidence):
            there, answer = prober.check(candidate)
            if there:
                result.url, result.version = answer.final_url, version
                result.notes.append(f"{result.url}: the tree of {version}, confirmed by its host"
                                    + (f" (where {candidate} leads)" if result.url != candidate else ""))  # fmt: skip
                return
            (tried if there is False else undecided).append(f"{candidate} ({answer.status})")
        if undecided:
            soft = ", a soft 404" if prober.soft_404(undecided[0].split(" ")[0]) else ""
            result.verified = False
            raise HostUnreachable(
                f"its answers cannot tell whether the tree of {version} is there ({', '.join(undecided[:3])}{soft})"
            )
        result.notes.append(
            f"no tree of {version} found ({', '.join(tried) or 'the site has no versioned layout'}): "
            "the newest docs, which may describe another version"
        )


def _confirm_root(result: Resolution, choice: Choice, prober: Prober) -> None:
    """The root as its host answers it: a guessed root that is not there (a Read the Docs tree, a home's docs
    directory) gives way to the root before the guess; a redirect is followed to where it leads (the crawl's scope
    is the root's own directory); a home page (a host's root named as the home) gives way to the documentation it
    links as such."""
    there, answer = prober.check(result.url)
    if there is False and choice.guessed and choice.unguessed:
        why = choice.guess_why
        result.notes.append(f"{result.url} is not there ({answer.status}): {why}; {choice.unguessed} instead")
        result.url = choice.unguessed
        there, answer = prober.check(result.url)
    if there is None:
        soft = " (the host answers 200 for any path: a soft 404)" if prober.soft_404(result.url) else ""
        raise HostUnreachable(f"its answer cannot confirm {result.url}: {answer.status}{soft}")
    if there is False:
        source = "given with --url" if choice.kind == "given" else f"where its {result.ecosystem} metadata points"
        raise RegistryError(
            f"{result.name}: {result.url}, {source}, is not there ({answer.status}); give the root: "
            "docsbot add NAME --url URL"
        )
    if answer.final_url != result.url:
        result.notes.append(f"{answer.final_url}: where {result.url} leads (the crawl's scope is the root's own "
                            "directory)")  # fmt: skip
        result.url = answer.final_url
    if (
        choice.kind == "home"
        and urlsplit(result.url).path in ("", "/")
        and (link := docs_link(result.url, answer.body))
    ):
        docs = version_tree(link) or as_directory(link, result.name)
        there, found = prober.check(docs)
        if there:
            result.notes.append(f"{found.final_url}: the documentation its home page links as such ({link})")
            result.url = found.final_url
    result.verified = True
    result.notes.append(f"{result.url}: confirmed by its host")


def _unverified(result: Resolution, spec: str | None, evidence: list[Link], reason: str) -> None:
    """The entry from the registry's data alone: the pinned version kept as its label, its tree guessed from the
    host's layout (the names the metadata shows on that host first), and notes saying so."""
    result.verified = False
    version = result.package_version
    if spec and version:
        result.version = version
        trees = versioned_roots(result.url, version, evidence) if has_versioned_layout(result.url) else []
        if trees:
            result.url = trees[0]
            result.notes.append(
                f"unverified ({reason}): {trees[0]}: the tree of {version} as its host's layout "
                f"would name it, not confirmed (others: {', '.join(trees[1:3])}); run docsbot add again where the "
                "host can be reached, or give --url"
            )
        else:
            result.notes.append(
                f"unverified ({reason}), and {result.url} shows no versioned layout: the "
                f"docs there may describe another version than {version}; give --url if the host keeps a tree of it"
            )
        return
    result.notes.append(f"unverified ({reason}): the root is from the registry's data alone")


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
