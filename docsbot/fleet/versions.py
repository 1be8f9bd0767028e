"""Versions as each ecosystem means them (pure): which release a requirement picks, and whether an environment
marker holds for the environment docsbot reads a project for.

- **PyPI**: PEP 440 specifiers (``>=2,<3``, ``==2.31.*``, ``~=1.4``) with :mod:`packaging`, pre-releases only when
  no final release matches (``SpecifierSet.filter``); a bare version (``2.31.0``) is that version exactly.
  What PEP 440 does not parse is read as a Poetry constraint with Poetry's own library (``poetry.core``:
  ``^1.2`` is ``>=1.2,<2.0``, ``~1.2`` is ``>=1.2,<1.3``, ``1.*``, ``>=1 || ^0.9``), as Poetry's "Dependency
  specification" page defines them; there too a bare version is exact (``requests = "2.31"`` is 2.31 only).
- **npm**: node-semver's ranges (``^4.18``, ``~1.2``, ``5.x``, ``4 || 5``, ``1.2.3 - 2``, ``*``) with the
  ``node-semver`` package (a port of npm's own ``semver``), and dist-tags (``latest``, ``next``). As npm picks a
  release (npm-pick-manifest), the ``latest`` tag wins when it is inside the range, else the highest release inside.
- **Cargo**: Cargo's requirements ("Specifying Dependencies" in the Cargo Book): a bare ``1.0`` is a caret range
  (``^1.0``: ``>=1.0.0, <2.0.0``), ``=1.0.197`` is exact, comparators are separated by commas; each comparator means
  what it means in node-semver (caret, tilde, wildcard and partial comparisons agree, and so does the rule that a
  pre-release matches only a comparator with a pre-release of the same version), so they are matched by it.

:func:`newest` picks a release, :func:`check` says why a requirement does not parse, :func:`pinned` tells an exact
requirement's version and :func:`exactly` writes one. :class:`Environment` evaluates PEP 508 markers (and
Poetry's ``python``/``platform`` keys) for this interpreter and platform, or for the ``--python``/``--platform``
given. Raises :class:`VersionSpecError` for a requirement its ecosystem cannot parse.
"""

from __future__ import annotations

import platform as _platform
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["Environment", "VersionSpecError", "check", "exactly", "newest", "pinned", "why"]

_ANY = ("", "*", "latest")


class VersionSpecError(DocsbotError, ValueError):
    """A requirement its ecosystem's rules cannot parse; the message names it and the rules."""


def _pep440(spec: str):  # noqa: ANN202 - a packaging SpecifierSet, or None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        Version(spec)
    except InvalidVersion:
        pass
    else:
        spec = f"=={spec}"  # a bare version is exact, in pip's forms as in Poetry's
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        return None


def _poetry(spec: str):  # noqa: ANN202 - a poetry.core VersionConstraint, or None
    from poetry.core.constraints.version import parse_constraint
    from poetry.core.constraints.version.exceptions import ParseConstraintError

    try:
        return parse_constraint(spec)
    except (ParseConstraintError, ValueError):
        return None


def _cargo_range(spec: str) -> str:
    """A Cargo requirement as a node-semver range: comparators joined by a space (both mean "and"), a bare version
    given its caret."""
    parts = [part.strip() for part in spec.split(",")]
    return " ".join(f"^{part}" if part[:1].isdigit() else part for part in parts)


def _semver_range(spec: str, ecosystem: str) -> str | None:
    import nodesemver

    text = _cargo_range(spec) if ecosystem == "cargo" else spec
    if ecosystem == "cargo" and ("||" in spec or " - " in spec):
        return None  # npm's alternatives and hyphen ranges are not Cargo's
    return text if nodesemver.valid_range(text, loose=True) is not None else None


def check(spec: str | None, ecosystem: str, tags: Iterable[str] = ()) -> str | None:
    """Why ``spec`` is not a requirement of ``ecosystem`` (``pypi``, ``npm``, ``cargo``), or ``None`` when it is;
    ``tags``: npm's dist-tags, which are requirements too."""
    spec = (spec or "").strip()
    if spec in _ANY:
        return None
    if ecosystem == "pypi":
        if _pep440(spec) is None and _poetry(spec) is None:
            return f"{spec!r} is not a PEP 440 specifier (>=2,<3, ==2.31.*) nor a Poetry constraint (^2.31, ~2.31)"
        return None
    if ecosystem == "npm" and (spec in tags or re.fullmatch(r"[a-z][\w.-]*", spec, re.IGNORECASE)):
        return None  # a dist-tag: known only once the registry answers
    if _semver_range(spec, ecosystem) is None:
        if ecosystem == "cargo":
            return f"{spec!r} is not a Cargo version requirement (1.0, ^1.2, ~1.2, =1.2.3, >=1.2, <2, 1.*)"
        return f"{spec!r} is not an npm version range (^4.18, ~1.2, 5.x, 4 || 5, 1.2.3) nor a dist-tag"
    return None


def pinned(spec: str | None, ecosystem: str) -> str | None:
    """The version ``spec`` names exactly (``==2.31.0`` and a bare ``2.31.0`` on PyPI, ``4.18.2`` and ``=4.18.2``
    on npm, only ``=1.0.197`` in Cargo, where a bare version is a range), else ``None``."""
    spec = (spec or "").strip()
    if ecosystem == "pypi":
        found = re.fullmatch(r"(?:===?\s*)?([0-9][\w.!+-]*)", spec)
        return found.group(1) if found and "*" not in spec else None
    found = re.fullmatch(r"(=)?\s*v?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)", spec)
    if found is None or (ecosystem == "cargo" and not found.group(1)):
        return None
    import nodesemver

    return found.group(2) if nodesemver.valid(found.group(2), loose=True) else None


def exactly(version: str, ecosystem: str) -> str:
    """The requirement of ``ecosystem`` that admits ``version`` alone (a lock file's version, given to
    :func:`newest` or the registry's resolver)."""
    return f"={version}" if ecosystem == "cargo" else f"=={version}" if ecosystem == "pypi" else version


def newest(
    releases: Iterable[str], spec: str | None, ecosystem: str = "pypi", tags: Mapping[str, str] | None = None
) -> str | None:
    """The release of ``releases`` (the registry's version strings) that ``spec`` picks by ``ecosystem``'s rules
    (see the module's docstring; ``None``, ``""``, ``*``, ``latest``: the newest final release, or npm's ``latest``
    tag), or ``None`` when none is inside it. ``tags``: npm's dist-tags (``{"latest": "5.1.0"}``). Raises
    :class:`VersionSpecError` for a requirement that does not parse."""
    releases = list(releases)
    tags = dict(tags or {})
    spec = (spec or "").strip()
    if ecosystem in ("npm", "cargo"):
        return _newest_semver(releases, spec, ecosystem, tags)
    from packaging.version import InvalidVersion, Version

    parsed = []
    for text in releases:
        try:
            parsed.append((Version(text), text))
        except InvalidVersion:
            continue
    if spec in _ANY:
        finals = [p for p in parsed if not p[0].is_prerelease]
        return max(finals or parsed, default=(None, None))[1]
    specifier = _pep440(spec)
    if specifier is not None:
        inside = set(specifier.filter(v for v, _ in parsed))  # pre-releases only when no final release matches
        return max((p for p in parsed if p[0] in inside), default=(None, None))[1]
    constraint = _poetry(spec)
    if constraint is None:
        raise VersionSpecError(check(spec, ecosystem) or spec)
    from poetry.core.constraints.version import Version as PoetryVersion

    inside = [p for p in parsed if constraint.allows(PoetryVersion.parse(p[1]))]
    finals = [p for p in inside if not p[0].is_prerelease]  # Poetry prefers stable releases (its docs)
    return max(finals or inside, default=(None, None))[1]


def _newest_semver(releases: list[str], spec: str, ecosystem: str, tags: dict[str, str]) -> str | None:
    import nodesemver

    if ecosystem == "npm" and spec in tags:
        return tags[spec]
    text = "*" if spec in _ANY else _semver_range(spec, ecosystem)
    if text is None:
        if ecosystem == "npm" and check(spec, ecosystem) is None:
            known = ", ".join(sorted(tags)) or "none"
            raise VersionSpecError(f"{spec!r} is not a dist-tag of this package (its tags: {known})")
        raise VersionSpecError(check(spec, ecosystem) or spec)
    latest = tags.get("latest") if ecosystem == "npm" else None
    if latest and nodesemver.satisfies(latest, text, loose=True):
        return latest  # npm-pick-manifest: the default tag when the range allows it
    return nodesemver.max_satisfying(releases, text, loose=True)


def why(spec: str | None, ecosystem: str, version: str) -> str:
    """Why ``spec`` picked ``version``, in a line: ``pinned``, ``the newest release``, npm's ``latest tag``, or
    ``the newest release inside ^4.18 (npm's ranges)``, naming the rules that read it."""
    spec = (spec or "").strip()
    if pinned(spec, ecosystem) == version:
        return f"{version}: pinned"
    if spec in _ANY:
        return f"{version}: npm's latest tag" if ecosystem == "npm" else f"{version}: the newest release"
    if ecosystem == "pypi":
        rules = "PEP 440" if _pep440(spec) is not None else "Poetry's rules"
    elif ecosystem == "cargo":
        rules = "Cargo's rules, a bare version a caret range" if spec[:1].isdigit() else "Cargo's rules"
    elif _semver_range(spec, ecosystem) is None:
        return f"{version}: npm's {spec!r} tag"
    else:
        return f"{version}: npm's pick inside {spec} (its latest tag when inside, else the newest release)"
    return f"{version}: the newest release inside {spec} ({rules})"


_PLATFORMS = {  # --platform: sys_platform, platform_system, os_name
    "linux": ("linux", "Linux", "posix"),
    "windows": ("win32", "Windows", "nt"),
    "macos": ("darwin", "Darwin", "posix"),
}
_ALIASES = {"win32": "windows", "win": "windows", "darwin": "macos", "mac": "macos", "osx": "macos"}


@dataclass(frozen=True)
class Environment:
    """The environment a project's dependencies are read for: ``python`` (``"3.12"``; ``None``: this
    interpreter's) and ``platform`` (``linux``, ``windows``, ``macos``, or ``sys.platform``'s ``win32``/``darwin``;
    ``None``: this machine's). Raises :class:`VersionSpecError` for a version or platform it does not know."""

    python: str | None = None
    platform: str | None = None

    def __post_init__(self) -> None:
        if self.python is not None and not re.fullmatch(r"\d+\.\d+(\.\d+)?", self.python):
            raise VersionSpecError(f"--python: a Python version such as 3.12, got {self.python!r}")
        if self.platform is not None:
            name = _ALIASES.get(self.platform.lower(), self.platform.lower())
            if name not in _PLATFORMS:
                raise VersionSpecError(f"--platform: one of {', '.join(_PLATFORMS)}, got {self.platform!r}")
            object.__setattr__(self, "platform", name)

    @property
    def python_version(self) -> str:
        """``major.minor`` of the target Python."""
        return self.python.rsplit(".", 1)[0] if self.python and self.python.count(".") == 2 else (
            self.python or f"{sys.version_info.major}.{sys.version_info.minor}"
        )  # fmt: skip

    @property
    def os(self) -> str:
        """``linux``, ``windows``, ``macos`` (or this machine's ``sys.platform`` when it is none of these)."""
        if self.platform:
            return self.platform
        return _ALIASES.get(sys.platform, "linux" if sys.platform.startswith("linux") else sys.platform)

    def markers(self) -> dict[str, str]:
        """PEP 508's marker variables: :mod:`packaging`'s of this interpreter, with the target's Python version and
        platform put in; ``extra`` empty (no extra is asked for)."""
        from packaging.markers import default_environment

        env = dict(default_environment())
        if self.python:
            full = self.python if self.python.count(".") == 2 else f"{self.python}.0"
            env.update(python_version=self.python_version, python_full_version=full)
        if self.platform:
            sys_platform, system, os_name = _PLATFORMS[self.platform]
            env.update(sys_platform=sys_platform, platform_system=system, os_name=os_name)
            if self.platform != _ALIASES.get(sys.platform, "linux"):
                env["platform_release"] = env["platform_version"] = ""  # this machine's say nothing of the target
        env["extra"] = ""
        return env

    def describe(self) -> str:
        """``Python 3.12 on linux``."""
        return f"Python {self.python or _platform.python_version()} on {self.os}"

    def why_not(self, marker: str) -> str | None:
        """Why the PEP 508 ``marker`` excludes this environment (``sys_platform == "win32"`` is false for Python
        3.12 on linux; only with the extra ``socks``), or ``None`` when it holds. Raises :class:`VersionSpecError`
        for a marker that does not parse."""
        from packaging.markers import InvalidMarker, Marker

        try:
            parsed = Marker(marker)
        except InvalidMarker as exc:
            raise VersionSpecError(f"{marker!r} is not an environment marker ({exc})") from None
        if parsed.evaluate(self.markers()):
            return None
        extra = re.search(r"""\bextra\s*==\s*["']([^"']+)["']""", marker)
        if extra:
            return f"only with the extra {extra.group(1)!r}"
        return f"its marker {str(parsed)!r} is false for {self.describe()}"

    def why_not_python(self, constraint: str) -> str | None:
        """Why Poetry's ``python = "..."`` key (a Poetry constraint on the Python version) excludes this
        environment, or ``None``."""
        allowed = _poetry(constraint)
        if allowed is None:
            raise VersionSpecError(f"python = {constraint!r} is not a Poetry constraint")
        from poetry.core.constraints.version import Version as PoetryVersion

        if allowed.allows(PoetryVersion.parse(self.python or _platform.python_version())):
            return None
        return f"only for Python {constraint} (not {self.describe()})"

    def why_not_platform(self, name: str) -> str | None:
        """Why Poetry's ``platform = "..."`` key (a ``sys.platform`` value) excludes this environment, or ``None``."""
        wanted = _ALIASES.get(name.lower(), "linux" if name.lower().startswith("linux") else name.lower())
        return None if wanted == self.os else f"only on {name} (not {self.describe()})"
