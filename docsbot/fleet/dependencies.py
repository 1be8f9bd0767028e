"""A project's dependencies, read from its own files (pure): what `docsbot sync --from FILE` finds the docs of.

- ``requirements*.txt`` (pip's format: one PEP 508 requirement a line, ``-r other.txt`` followed; options, URLs,
  editable and local paths skipped) and ``pyproject.toml`` (PEP 621 ``[project] dependencies``, Poetry's
  ``[tool.poetry.dependencies]``): PyPI, parsed with :mod:`packaging`.
- ``package.json`` (``dependencies``), with the ``package-lock.json`` beside it for the exact versions installed:
  npm.
- ``Cargo.toml`` (``[dependencies]``), with ``Cargo.lock`` beside it: crates.io.

Raises :class:`DependencyFileError` (naming the file and the line or key) for a file that cannot be read.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Dependency", "DependencyFileError", "read_dependencies"]


class DependencyFileError(DocsbotError):
    """A dependency file that cannot be read: its path and what is wrong."""


@dataclass(frozen=True)
class Dependency:
    """``name``; ``spec``: an exact version (``"2.31.0"``), a range (``">=2,<3"``, npm's ``"^4.18"``) or ``None``;
    ``ecosystem``: ``pypi``, ``npm`` or ``cargo``; ``source``: the file (and line) it came from."""

    name: str
    spec: str | None
    ecosystem: str
    source: str


def _pep508(text: str, source: str) -> Dependency | None:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise DependencyFileError(f"{source}: {text!r} is not a requirement ({exc})") from None
    if req.url:
        return None  # a direct URL: no registry metadata to read
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    spec = pinned[0] if len(pinned) == 1 else (str(req.specifier) or None)
    return Dependency(req.name, spec, "pypi", source)


def _requirements(path: Path, seen: set[Path]) -> list[Dependency]:
    if path in seen:
        return []
    seen.add(path)
    out: list[Dependency] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    joined: list[tuple[int, str]] = []
    buffer, start = "", 0
    for n, line in enumerate(lines, 1):  # a backslash at a line's end continues it
        if not buffer:
            start = n
        buffer += line[:-1] if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append((start, buffer))
            buffer = ""
    for n, line in joined:
        text = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not text:
            continue
        if text.startswith(("-r ", "--requirement ", "-r\t")) or re.match(r"--requirement=", text):
            target = re.split(r"[=\s]", text, maxsplit=1)[1].strip()
            out += _requirements((path.parent / target).resolve(), seen)
            continue
        if text.startswith("-") or "://" in text.split(";")[0] or text.startswith((".", "/")):
            continue  # options (-c, -e, --hash, --index-url …), URLs, local paths
        text = re.split(r"\s--hash[= ]", text)[0].strip()
        dep = _pep508(text, f"{path}:{n}")
        if dep is not None:
            out.append(dep)
    return out


def _pyproject(path: Path, data: dict[str, Any]) -> list[Dependency]:
    out: list[Dependency] = []
    for n, text in enumerate((data.get("project") or {}).get("dependencies") or []):
        dep = _pep508(text, f"{path}: project.dependencies[{n}]")
        if dep is not None:
            out.append(dep)
    poetry = ((data.get("tool") or {}).get("poetry") or {}).get("dependencies") or {}
    for name, value in poetry.items():
        if name.lower() == "python":
            continue
        version = value.get("version") if isinstance(value, dict) else value
        if isinstance(value, dict) and ("path" in value or "git" in value or "url" in value):
            continue
        spec = None if version in (None, "*", "") else str(version)
        if spec and re.fullmatch(r"\d+(\.\d+)*", spec):
            spec = f"^{spec}"  # Poetry reads a bare version as a caret range
        out.append(Dependency(name, spec, "pypi", f"{path}: tool.poetry.dependencies.{name}"))
    return out


def _package_json(path: Path) -> list[Dependency]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DependencyFileError(f"{path}: not JSON ({exc})") from None
    locked: dict[str, str] = {}
    lock = path.with_name("package-lock.json")
    if lock.is_file():
        try:
            packages = json.loads(lock.read_text(encoding="utf-8")).get("packages") or {}
        except json.JSONDecodeError as exc:
            raise DependencyFileError(f"{lock}: not JSON ({exc})") from None
        for key, info in packages.items():
            if key.startswith("node_modules/") and isinstance(info, dict) and info.get("version"):
                locked[key.removeprefix("node_modules/")] = info["version"]
    out = []
    for name, spec in (data.get("dependencies") or {}).items():
        if not isinstance(spec, str) or spec.startswith(("file:", "git", "http", "link:", "workspace:")):
            continue
        out.append(Dependency(name, locked.get(name) or (spec if spec not in ("*", "latest") else None), "npm",
                              f"{path}: dependencies.{name}"))  # fmt: skip
    return out


def _cargo(path: Path, data: dict[str, Any]) -> list[Dependency]:
    locked: dict[str, str] = {}
    lock = path.with_name("Cargo.lock")
    if lock.is_file():
        try:
            for package in tomllib.loads(lock.read_text(encoding="utf-8")).get("package") or []:
                locked.setdefault(package["name"], package["version"])
        except (tomllib.TOMLDecodeError, KeyError) as exc:
            raise DependencyFileError(f"{lock}: not a Cargo.lock ({exc})") from None
    out = []
    for name, value in (data.get("dependencies") or {}).items():
        if isinstance(value, dict) and ("path" in value or "git" in value):
            continue
        crate = value.get("package", name) if isinstance(value, dict) else name
        version = value.get("version") if isinstance(value, dict) else value
        out.append(Dependency(crate, locked.get(crate) or version or None, "cargo", f"{path}: dependencies.{name}"))
    return out


def read_dependencies(path: Path) -> list[Dependency]:
    """The dependencies ``path`` declares (by its name: ``requirements*.txt`` or any ``.txt``, ``pyproject.toml``,
    ``package.json``, ``Cargo.toml``), in file order, each once."""
    if not path.is_file():
        raise DependencyFileError(f"{path}: no such file")
    name = path.name
    try:
        if name == "package.json":
            found = _package_json(path)
        elif name.endswith(".toml"):
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            if name == "Cargo.toml" or "package" in data and "dependencies" in data:
                found = _cargo(path, data)
            else:
                found = _pyproject(path, data)
        elif name.endswith((".txt", ".in")):
            found = _requirements(path.resolve(), set())
        else:
            raise DependencyFileError(
                f"{path}: not a dependency file docsbot reads (requirements*.txt, pyproject.toml, package.json, "
                "Cargo.toml)"
            )
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DependencyFileError(f"{path}: cannot be read ({exc})") from None
    seen: set[tuple[str, str]] = set()
    out = []
    for dep in found:
        key = (dep.ecosystem, re.sub(r"[-_.]+", "-", dep.name.lower()))
        if key not in seen:
            seen.add(key)
            out.append(dep)
    return out
