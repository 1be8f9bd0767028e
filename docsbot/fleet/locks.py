"""Lock files (pure): the exact versions a project installs, read beside its manifest or on their own.

- ``uv.lock`` (TOML, uv's lock: ``[[package]] name, version, source``; the project itself is the package whose
  ``source`` is ``virtual`` or ``editable``, its ``dependencies`` the direct ones, ``optional-dependencies`` and
  ``dev-dependencies`` by extra and group) and ``poetry.lock`` (TOML, ``[[package]] name, version``, every package
  installed: it does not say which are direct), beside ``pyproject.toml``.
- ``package-lock.json`` / ``npm-shrinkwrap.json`` (npm's ``lockfileVersion`` 2 and 3: ``packages``, keyed by
  ``node_modules/NAME``, the project at ``""``; version 1: ``dependencies``) and ``pnpm-lock.yaml`` (pnpm's 5 to 9:
  ``importers["."]`` or, before 6, the top level; a version may carry its peers, ``18.2.0(react@18.2.0)``), beside
  ``package.json``.
- ``Cargo.lock`` (TOML, ``[[package]] name, version, source``; workspace members have no ``source``), beside
  ``Cargo.toml`` or at its workspace's root.

:func:`read_lock` gives a :class:`Lock`: every locked version by package name, and the project's direct dependencies
where the lock records them. Raises :class:`LockFileError` naming the file for one that cannot be read.

Every file of a project is read by :func:`read_file`: a regular file of at most :data:`MAX_FILE_BYTES`, inside the
folder the rules allow (an untrusted repository's files must not make docsbot read the rest of the machine: a
``-r /etc/passwd``, a lock file linked to a device); a file refused is never opened, so no message can show any of
it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "LOCK_FILES",
    "MAX_FILE_BYTES",
    "Lock",
    "LockFileError",
    "LockedDependency",
    "RefusedFile",
    "find_lock",
    "normalize",
    "read_file",
    "read_lock",
]

# The largest dependency or lock file read: the package-lock.json of a large monorepo is a few MiB (Babel's, 2 MiB;
# pnpm-lock.yaml files of a thousand packages, 1-3 MiB); 16 MiB keeps every real one and bounds the memory and the
# parse (well under a second) of anything else.
MAX_FILE_BYTES = 16 * 1024 * 1024

# Each manifest's lock files, in the order they are looked for beside it.
LOCK_FILES = {
    "pyproject.toml": ("uv.lock", "poetry.lock"),
    "package.json": ("package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml"),
    "Cargo.toml": ("Cargo.lock",),
}
_MANIFEST = {lock: manifest for manifest, locks in LOCK_FILES.items() for lock in locks}
_ECOSYSTEM = {"pyproject.toml": "pypi", "package.json": "npm", "Cargo.toml": "cargo"}


class LockFileError(DocsbotError):
    """A lock file that cannot be read: its path and what is wrong."""


class RefusedFile(LockFileError):
    """A file :func:`read_file` did not open (outside its folder, not a regular file, too large): the message names
    the file and why, and holds nothing of its content."""


def read_file(path: Path, folder: Path | None = None) -> str:
    """The UTF-8 text of ``path``, a regular file (a symbolic link to one is followed) of at most
    :data:`MAX_FILE_BYTES`, which must resolve inside ``folder`` (none: anywhere, the operator's own file). Raises
    :class:`RefusedFile` before opening anything else (a device, a FIFO, a directory, a file outside ``folder``),
    ``OSError`` when it cannot be read and ``UnicodeDecodeError`` when it is not UTF-8."""
    resolved = path.resolve()
    if folder is not None and not resolved.is_relative_to(folder := folder.resolve()):
        raise RefusedFile(f"{path}: outside {folder}, not read (a project's files stay in its folder)")
    info = os.stat(resolved)
    if not stat.S_ISREG(info.st_mode):
        raise RefusedFile(f"{path}: not a regular file, not read")
    if info.st_size > MAX_FILE_BYTES:
        raise RefusedFile(f"{path}: {info.st_size:,} bytes, over the {MAX_FILE_BYTES:,} read at most")
    with open(resolved, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)  # the file may have grown since it was looked at
    if len(data) > MAX_FILE_BYTES:
        raise RefusedFile(f"{path}: over the {MAX_FILE_BYTES:,} bytes read at most")
    return data.decode("utf-8")


@dataclass(frozen=True)
class LockedDependency:
    """A direct dependency as the lock records it: ``name``, its locked ``version`` (``None`` when it is not a
    registry release: ``reason`` says what it is), the ``group`` it belongs to (``""``: the project's own;
    ``dev``, an extra's or a group's name otherwise) and its PEP 508 ``marker``, if any."""

    name: str
    version: str | None
    group: str = ""
    marker: str | None = None
    reason: str | None = None


@dataclass
class Lock:
    """A lock file read: ``path``, ``ecosystem``, ``versions`` (a package's name, as :func:`normalize` gives it, to
    every version of it the lock installs, from its registry) and ``direct`` (the project's direct dependencies;
    ``None`` when the lock does not record which they are)."""

    path: Path
    ecosystem: str
    versions: dict[str, list[str]] = field(default_factory=dict)
    direct: list[LockedDependency] | None = None
    others: set[str] = field(default_factory=set)  # names locked from a path, a VCS or a URL, not a registry

    def add(self, name: str, version: str) -> None:
        found = self.versions.setdefault(normalize(name, self.ecosystem), [])
        if version not in found:
            found.append(version)

    def versions_of(self, name: str) -> list[str]:
        return self.versions.get(normalize(name, self.ecosystem), [])


def normalize(name: str, ecosystem: str) -> str:
    """A package's name as its registry compares names: PEP 503's for PyPI (``Foo_Bar`` is ``foo-bar``), as written
    for npm and crates.io."""
    return re.sub(r"[-_.]+", "-", name).lower() if ecosystem == "pypi" else name


def find_lock(manifest: Path) -> Path | None:
    """The lock file of ``manifest`` (``pyproject.toml``, ``package.json``, ``Cargo.toml``): beside it, or for
    ``Cargo.toml`` at the root of its workspace (the nearest directory above with a ``Cargo.lock``)."""
    for name in LOCK_FILES.get(manifest.name, ()):
        if (manifest.parent / name).is_file():
            return manifest.parent / name
    if manifest.name == "Cargo.toml":
        for parent in manifest.resolve().parent.parents:
            if (parent / "Cargo.lock").is_file() and (parent / "Cargo.toml").is_file():
                return parent / "Cargo.lock"
    return None


def manifest_of(lock: Path) -> Path | None:
    """The manifest beside the lock file ``lock``, if there is one."""
    name = _MANIFEST.get(lock.name)
    return lock.parent / name if name and (lock.parent / name).is_file() else None


def read_lock(path: Path, folder: Path | None = None) -> Lock:
    """The lock file at ``path`` (by its name: ``uv.lock``, ``poetry.lock``, ``package-lock.json``,
    ``npm-shrinkwrap.json``, ``pnpm-lock.yaml``, ``Cargo.lock``), which must resolve inside ``folder`` (default: its
    own folder). Raises :class:`LockFileError` (:class:`RefusedFile` for one :func:`read_file` does not open)."""
    readers = {
        "uv.lock": _uv,
        "poetry.lock": _poetry,
        "package-lock.json": _package_lock,
        "npm-shrinkwrap.json": _package_lock,
        "pnpm-lock.yaml": _pnpm,
        "Cargo.lock": _cargo,
    }
    if path.name not in readers:
        raise LockFileError(f"{path}: not a lock file docsbot reads ({', '.join(readers)})")
    try:
        text = read_file(path, path.parent if folder is None else folder)
    except (OSError, UnicodeDecodeError) as exc:
        raise LockFileError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    ecosystem = _ECOSYSTEM[_MANIFEST[path.name]]
    lock = Lock(path, ecosystem)
    try:
        readers[path.name](lock, text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise LockFileError(f"{path}: not a {path.name} ({exc})") from None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise LockFileError(f"{path}: not a {path.name} as docsbot knows them ({type(exc).__name__}: {exc})") from None
    return lock


def _uv(lock: Lock, text: str) -> None:
    packages = tomllib.loads(text).get("package") or []
    roots = []
    for package in packages:
        source = package.get("source") or {}
        if "virtual" in source or "editable" in source:
            roots.append(package)  # the project itself (each workspace member too)
        elif "registry" in source:
            lock.add(package["name"], package["version"])
        else:
            lock.others.add(normalize(package["name"], "pypi"))
    if not roots:
        return
    direct: list[LockedDependency] = []
    local = {normalize(p["name"], "pypi") for p in roots}

    def entry(dep: dict[str, Any], group: str) -> LockedDependency:
        name = dep["name"]
        versions = lock.versions_of(name)
        version = dep.get("version") or (versions[0] if len(versions) == 1 else None)
        reason = None
        if normalize(name, "pypi") in local:
            reason = "a member of this workspace"
        elif normalize(name, "pypi") in lock.others:
            reason = "locked from a path, a VCS or a URL, not from a registry"
        elif version is None and versions:
            version = max(versions, key=_sort_key)  # several, none named: the markers decide; the newest is shown
        return LockedDependency(name, version, group, dep.get("marker"), reason)

    root = roots[0]
    direct += [entry(dep, "") for dep in root.get("dependencies") or []]
    for extra, deps in (root.get("optional-dependencies") or {}).items():
        direct += [entry(dep, f"extra {extra}") for dep in deps]
    for group, deps in (root.get("dev-dependencies") or {}).items():
        direct += [entry(dep, f"group {group}") for dep in deps]
    lock.direct = direct


def _poetry(lock: Lock, text: str) -> None:
    for package in tomllib.loads(text).get("package") or []:
        source = package.get("source") or {}
        if source.get("type") in ("git", "directory", "file", "url"):
            lock.others.add(normalize(package["name"], "pypi"))
        else:
            lock.add(package["name"], package["version"])


def _package_lock(lock: Lock, text: str) -> None:
    data = json.loads(text)
    packages = data.get("packages")
    if isinstance(packages, dict):
        for key, info in packages.items():
            if not key.startswith("node_modules/") or "/node_modules/" in key or not isinstance(info, dict):
                continue  # the project, its workspaces, and packages nested under another (not what it requires)
            name = key.removeprefix("node_modules/")
            if info.get("link") or str(info.get("resolved", "")).startswith(("file:", "git")):
                lock.others.add(name)
            elif info.get("version"):
                lock.add(info.get("name") or name, info["version"])  # an alias (npm:chart.js@4) by its package
        root = packages.get("") or {}
        groups = (("dependencies", ""), ("devDependencies", "dev"), ("optionalDependencies", "optional"),
                  ("peerDependencies", "peer"))  # fmt: skip
        lock.direct = [
            _npm_direct(lock, name, str(spec), group)
            for key, group in groups
            for name, spec in (root.get(key) or {}).items()
        ]
        return
    for name, info in (data.get("dependencies") or {}).items():  # lockfileVersion 1: no record of the project's own
        if isinstance(info, dict) and info.get("version"):
            if str(info["version"]).startswith(("file:", "git", "http", "link:")):
                lock.others.add(name)
            else:
                lock.add(name, info["version"])


def _npm_direct(lock: Lock, name: str, spec: str, group: str) -> LockedDependency:
    if name in lock.others:
        return LockedDependency(name, None, group, reason="installed from a path, a link or a VCS, not a registry")
    alias = re.fullmatch(r"npm:((?:@[^/@]+/)?[^@]+)(?:@.*)?", spec)
    name = alias.group(1) if alias else name
    versions = lock.versions_of(name)
    if name in lock.others:
        return LockedDependency(name, None, group, reason="installed from a path, a link or a VCS, not a registry")
    return LockedDependency(name, versions[0] if versions else None, group)


def _pnpm(lock: Lock, text: str) -> None:
    import yaml

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {exc}") from None
    importer = (data.get("importers") or {}).get(".") or data  # pnpm 6+: importers; before: the top level
    groups = (("dependencies", ""), ("devDependencies", "dev"), ("optionalDependencies", "optional"))
    direct = []
    for key, group in groups:
        for name, value in (importer.get(key) or {}).items():
            version = value.get("version") if isinstance(value, dict) else value
            version = re.split(r"[(_]", str(version), maxsplit=1)[0]  # peers: 18.2.0(react@18.2.0), 18.2.0_react@18
            if version.startswith(("link:", "file:", "git", "http", "workspace:")):
                lock.others.add(name)
                kind = {"link": "a link to a local path", "file": "a local path", "workspace": "a package of this "
                        "workspace"}.get(version.split(":")[0], "a VCS checkout or a URL")  # fmt: skip
                direct.append(LockedDependency(name, None, group, reason=f"{kind}, not a registry release"))
            else:
                lock.add(name, version)
                direct.append(LockedDependency(name, version, group))
    lock.direct = direct


def _cargo(lock: Lock, text: str) -> None:
    members = []
    for package in tomllib.loads(text).get("package") or []:
        source = package.get("source")
        if source is None:
            members.append(package)  # a workspace member: the project itself
        elif str(source).startswith(("registry+", "sparse+")):
            lock.add(package["name"], package["version"])
        else:
            lock.others.add(package["name"])
    local = {p["name"] for p in members}
    direct, seen = [], set()
    for member in members:
        for dep in member.get("dependencies") or []:
            name, _, rest = str(dep).partition(" ")  # "serde", "serde 1.0.197", "serde 1.0.197 (registry+…)"
            if name in local or name in seen:
                continue
            seen.add(name)
            versions = lock.versions_of(name)
            version = rest.split(" ")[0] if rest else (versions[0] if len(versions) == 1 else None)
            if name in lock.others:
                direct.append(LockedDependency(name, None, reason="from a path or a VCS, not a registry"))
            else:
                direct.append(LockedDependency(name, version or (max(versions, key=_sort_key) if versions else None)))
    lock.direct = direct if members else None


def _sort_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.+-]", version))
