"""A project's dependencies, read from its own files (pure): what `docsbot sync --from FILE` finds the docs of.

- ``requirements*.txt`` (pip's format: one PEP 508 requirement a line, ``-r other.txt`` followed) and
  ``pyproject.toml`` (PEP 621 ``[project] dependencies``; Poetry's ``[tool.poetry.dependencies]``, whose
  constraints keep Poetry's meaning, a bare version exact), with ``uv.lock`` or ``poetry.lock`` beside it: PyPI.
- ``package.json`` (``dependencies``; ``npm:NAME@RANGE`` aliases), with ``package-lock.json``,
  ``npm-shrinkwrap.json`` or ``pnpm-lock.yaml`` beside it: npm.
- ``Cargo.toml`` (``[dependencies]``, ``[target.'cfg(…)'.dependencies]``, ``workspace = true``), with the
  ``Cargo.lock`` beside it or at its workspace's root: crates.io.
- A lock file given on its own: read with the manifest beside it, else the direct dependencies it records (all but
  ``poetry.lock`` and npm's ``lockfileVersion`` 1, which do not say which are direct).

A lock file's exact version is taken when it is inside the manifest's requirement (a stale lock's is not). What is
not a registry release the project runs on is **skipped, with the reason**: editable installs, paths, URLs, VCS
checkouts, ``file:``/``link:``/``workspace:`` specs, optional dependencies, dev dependencies and groups, and
requirements whose environment marker is false for the environment read for
(:class:`docsbot.fleet.versions.Environment`: this machine's, or ``--python``/``--platform``).

Only files under the first file's own folder are read (a ``-r`` file, a lock file beside it, a Cargo workspace's
members; Cargo's workspace root above a member is looked for by its rule, each file inside its own folder), each a
regular file of at most :data:`docsbot.fleet.locks.MAX_FILE_BYTES`; what is refused is never opened and is reported
as skipped, one line naming it and why (``-r /etc/passwd``: outside the folder; ``-r /dev/zero``: not a regular
file). ``-c`` constraint files are not read: they constrain, they add no dependency.

Raises :class:`DependencyFileError` (naming the file and the line or key) for a file that cannot be read.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from docsbot.errors import DocsbotError
from docsbot.fleet import locks
from docsbot.fleet.versions import Environment, VersionSpecError, check, exactly, newest

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Dependency", "DependencyFile", "DependencyFileError", "Skipped", "read_dependencies"]

_FORMS = "requirements*.txt, pyproject.toml, package.json, Cargo.toml, or one of their lock files"


class DependencyFileError(DocsbotError):
    """A dependency file that cannot be read: its path and what is wrong."""


@dataclass(frozen=True)
class Dependency:
    """``name``; ``spec``: the requirement as the file writes it, in its ecosystem's syntax (``">=2,<3"``, Poetry's
    ``"^2.31"``, npm's ``"^4.18"``, Cargo's ``"1.0"``; ``None``: any release); ``ecosystem``: ``pypi``, ``npm`` or
    ``cargo``; ``source``: the file and line or key it came from; ``locked``: the exact version its lock file
    installs; ``note``: what the lock said, when it was looked in."""

    name: str
    spec: str | None
    ecosystem: str
    source: str
    locked: str | None = None
    note: str | None = None

    @property
    def requirement(self) -> str | None:
        """What the registry is asked for: the locked version exactly, else ``spec``."""
        return exactly(self.locked, self.ecosystem) if self.locked else self.spec


@dataclass(frozen=True)
class Skipped:
    """An entry of a dependency file that docsbot does not look up: ``entry`` as written, ``reason`` and
    ``source``."""

    entry: str
    reason: str
    source: str


@dataclass
class DependencyFile:
    """A dependency file read: its ``dependencies`` (in file order, each name once), the entries ``skipped`` with
    their reasons, and the ``lock`` file whose exact versions were taken."""

    path: Path
    dependencies: list[Dependency] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    lock: Path | None = None

    @property
    def folder(self) -> Path:
        """The folder every other file read must be in: the first file's."""
        return self.path.parent


def _text(path: Path, folder: Path | None) -> str:
    """``path``'s text through :func:`docsbot.fleet.locks.read_file` (inside ``folder``, regular, bounded). Raises
    :class:`~docsbot.fleet.locks.RefusedFile`, and :class:`DependencyFileError` for a file that cannot be read."""
    try:
        return locks.read_file(path, folder)
    except OSError as exc:
        raise DependencyFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_dependencies(path: Path, environment: Environment | None = None) -> DependencyFile:
    """The dependencies ``path`` declares (by its name: ``requirements*.txt`` or any ``.txt``/``.in``,
    ``pyproject.toml``, ``package.json``, ``Cargo.toml``, or a lock file), for ``environment`` (this machine's by
    default). Raises :class:`DependencyFileError`."""
    environment = environment or Environment()
    if not path.exists():
        raise DependencyFileError(f"{path}: no such file")
    out = DependencyFile(path)
    try:
        if path.name in locks.LOCK_FILES["pyproject.toml"] + locks.LOCK_FILES["package.json"] + ("Cargo.lock",):
            manifest = locks.manifest_of(path)
            if manifest is None:
                _lock_alone(path, environment, out)
                return out
            _text(path, None)  # the file given: read as a lock below, refused here first if it is no regular file
            _manifest(manifest, environment, out, path)
        elif path.name in ("package.json", "Cargo.toml") or path.name.endswith(".toml"):
            _manifest(path, environment, out, locks.find_lock(path))
        elif path.name.endswith((".txt", ".in")):
            _requirements(path, environment, out, set())
        else:
            raise DependencyFileError(f"{path}: not a dependency file docsbot reads ({_FORMS})")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DependencyFileError(f"{path}: cannot be read ({exc})") from None
    except locks.RefusedFile as exc:  # the file given itself: a device, a FIFO, too large
        raise DependencyFileError(str(exc)) from None
    except (locks.LockFileError, VersionSpecError) as exc:
        raise DependencyFileError(str(exc)) from None
    seen: set[tuple[str, str]] = set()
    unique = []
    for dep in out.dependencies:
        key = (dep.ecosystem, locks.normalize(dep.name, dep.ecosystem))
        if key not in seen:
            seen.add(key)
            unique.append(dep)
    out.dependencies = unique
    return out


def _manifest(path: Path, environment: Environment, out: DependencyFile, lock_path: Path | None) -> None:
    text = _text(path, None if path == out.path else out.folder)
    if path.name == "package.json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DependencyFileError(f"{path}: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise DependencyFileError(f"{path}: not a package.json (a JSON object)")
        _package_json(path, data, out)
    else:
        data = tomllib.loads(text)
        if path.name == "Cargo.toml" or ("package" in data and "dependencies" in data) or "workspace" in data:
            _cargo(path, data, environment, out)
        else:
            _pyproject(path, data, environment, out)
    if lock_path is not None:
        try:
            lock = locks.read_lock(lock_path, None if lock_path == out.path else lock_path.parent)
        except locks.RefusedFile as exc:
            out.skipped.append(Skipped(str(lock_path), f"the lock file: {_why(exc, lock_path)}", str(path)))
        else:
            _apply_lock(lock, out)


def _why(refused: locks.RefusedFile, path: Path) -> str:
    """What :class:`~docsbot.fleet.locks.RefusedFile` says, without the path it starts with."""
    return str(refused).removeprefix(f"{path}: ")


def _apply_lock(lock: locks.Lock, out: DependencyFile) -> None:
    """Each dependency's exact version from ``lock``: the newest it locks inside the manifest's requirement."""
    out.lock = lock.path
    applied = []
    for dep in out.dependencies:
        versions = lock.versions_of(dep.name)
        try:
            version = newest(versions, dep.spec, dep.ecosystem) if versions else None
        except VersionSpecError:  # npm's dist-tag (next, beta): the lock says which release it was
            version = versions[-1]
        if version:
            note = f"{version} from {lock.path.name}"
        elif versions:
            note = f"{lock.path.name} locks {', '.join(versions)}, outside {dep.spec!r} (a stale lock): not taken"
        else:
            note = f"not in {lock.path.name}"
        applied.append(Dependency(dep.name, dep.spec, dep.ecosystem, dep.source, version, note))
    out.dependencies = applied


def _lock_alone(path: Path, environment: Environment, out: DependencyFile) -> None:
    lock = locks.read_lock(path, path.resolve().parent)  # the file given, wherever it is
    if lock.direct is None:
        raise DependencyFileError(
            f"{path}: it does not record which packages the project depends on directly; give the manifest it "
            "locks (pyproject.toml, package.json), with this file beside it"
        )
    out.lock = path
    for dep in lock.direct:
        source = f"{path}: {dep.name}"
        entry = f"{dep.name} {dep.version}" if dep.version else dep.name
        if dep.group:
            out.skipped.append(Skipped(entry, _group_reason(dep.group), source))
        elif dep.reason:
            out.skipped.append(Skipped(entry, dep.reason, source))
        elif dep.marker and (why := environment.why_not(dep.marker)):
            out.skipped.append(Skipped(f"{entry}; {dep.marker}", why, source))
        elif dep.version is None:
            out.skipped.append(Skipped(entry, f"{path.name} locks no registry release of it", source))
        else:
            out.dependencies.append(
                Dependency(dep.name, None, lock.ecosystem, source, dep.version, f"{dep.version} from {path.name}")
            )


def _group_reason(group: str) -> str:
    if group in ("dev", "group dev"):
        return "a development dependency, not what the project runs on"
    if group.startswith("extra ") or group == "optional":
        return f"optional ({group})" if group != "optional" else "optional"
    if group == "peer":
        return "a peer dependency: the installing project's to choose"
    return f"in the dependency {group}, not the project's own"


# --- pip's requirements files and PEP 508 ---------------------------------------------------------------------------

_VCS = ("git+", "hg+", "svn+", "bzr+")
# pip options that are not requirements: they change where and how pip installs, and are not reported.
_OPTIONS = re.compile(
    r"^(-i|--index-url|--extra-index-url|--no-index|-f|--find-links|--pre|--prefer-binary|--trusted-host|"
    r"--no-binary|--only-binary|--require-hashes|--use-feature|-c|--constraint)\b"
)


def _pep508(text: str, source: str, environment: Environment, out: DependencyFile, skipped_as: str = "") -> None:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise DependencyFileError(f"{source}: {text!r} is not a requirement ({exc})") from None
    if skipped_as:
        out.skipped.append(Skipped(text, skipped_as, source))
    elif req.url:
        kind = "a VCS checkout" if req.url.startswith(_VCS) else "a local path" if req.url.startswith("file:") else (
            "a direct URL")  # fmt: skip
        out.skipped.append(Skipped(text, f"{kind} ({req.url}), not a registry release", source))
    elif req.marker is not None and (why := environment.why_not(str(req.marker))):
        out.skipped.append(Skipped(text, why, source))
    else:
        out.dependencies.append(Dependency(req.name, str(req.specifier) or None, "pypi", source))


def _requirements(path: Path, environment: Environment, out: DependencyFile, seen: set[Path]) -> None:
    if path.resolve() in seen:
        return
    lines = _text(path, None if path == out.path else out.folder).splitlines()
    seen.add(path.resolve())  # once read: a file refused is said to be each time it is named
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
        source = f"{path}:{n}"
        if not text or _OPTIONS.match(text):
            continue
        option = re.match(r"^(-r|--requirement|-e|--editable)(?:\s+|=)(.+)$", text)
        if option and option.group(1) in ("-r", "--requirement"):
            included = path.parent / option.group(2).strip()
            try:
                _requirements(included, environment, out, seen)
            except locks.RefusedFile as exc:
                out.skipped.append(Skipped(text, _why(exc, included), source))
        elif option:
            out.skipped.append(Skipped(text, "an editable install (-e): built from a path or a checkout", source))
        elif text.startswith("-"):
            continue  # another pip option
        elif text.startswith((".", "/", "~")) or text.startswith("file:"):
            out.skipped.append(Skipped(text, "a local path, not a registry release", source))
        elif "://" in text.split(";")[0] and "@" not in text.split("://")[0]:
            kind = "a VCS checkout" if text.startswith(_VCS) else "a direct URL"
            out.skipped.append(Skipped(text, f"{kind}, not a registry release", source))
        else:
            _pep508(re.split(r"\s--hash[= ]", text)[0].strip(), source, environment, out)


# --- pyproject.toml: PEP 621, PEP 735, uv, Poetry ---------------------------------------------------------------------


def _pyproject(path: Path, data: dict[str, Any], environment: Environment, out: DependencyFile) -> None:
    project = data.get("project") or {}
    for n, text in enumerate(project.get("dependencies") or []):
        _pep508(text, f"{path}: project.dependencies[{n}]", environment, out)
    for extra, texts in (project.get("optional-dependencies") or {}).items():
        for n, text in enumerate(texts or []):
            where = f"{path}: project.optional-dependencies.{extra}[{n}]"
            _pep508(text, where, environment, out, f"optional: only with the extra {extra!r}")
    for group, texts in (data.get("dependency-groups") or {}).items():
        for n, text in enumerate(texts or []):
            if isinstance(text, str):
                where = f"{path}: dependency-groups.{group}[{n}]"
                _pep508(text, where, environment, out, f"in the dependency group {group!r}, not the project's own")
    uv = (data.get("tool") or {}).get("uv") or {}
    for n, text in enumerate(uv.get("dev-dependencies") or []):
        _pep508(text, f"{path}: tool.uv.dev-dependencies[{n}]", environment, out, "a development dependency (uv)")
    sources = {locks.normalize(name, "pypi"): value for name, value in (uv.get("sources") or {}).items()}
    for dep in list(out.dependencies):  # uv installs these from where tool.uv.sources says, not from PyPI
        source = sources.get(locks.normalize(dep.name, "pypi"))
        keys = source if isinstance(source, dict) else {}
        origin = next((key for key in ("workspace", "path", "git", "url") if key in keys), None)
        if origin:
            out.dependencies.remove(dep)
            kind = "a member of this workspace" if origin == "workspace" else _poetry_origin(origin).split(",")[0]
            out.skipped.append(Skipped(dep.name, f"{kind} (tool.uv.sources), not a registry release", dep.source))
    poetry = (data.get("tool") or {}).get("poetry") or {}
    for name, value in (poetry.get("dependencies") or {}).items():
        if name.lower() != "python":
            _poetry_dependency(name, value, f"{path}: tool.poetry.dependencies.{name}", environment, out)
    groups = [("dev", poetry.get("dev-dependencies") or {})]
    groups += [(group, (table or {}).get("dependencies") or {}) for group, table in (poetry.get("group") or {}).items()]
    for group, table in groups:
        for name, value in table.items():
            where = f"{path}: tool.poetry.group.{group}.dependencies.{name}"
            if group == "main":
                _poetry_dependency(name, value, where, environment, out)
            elif name.lower() != "python":
                out.skipped.append(Skipped(name, f"in Poetry's group {group!r}, not the project's own", where))


def _poetry_dependency(name: str, value: Any, source: str, environment: Environment, out: DependencyFile) -> None:
    """One entry of ``[tool.poetry.dependencies]``: a constraint, a table (``version``, ``python``, ``platform``,
    ``markers``, ``optional``; ``path``, ``git``, ``url``), or a list of tables for different environments (the
    first that holds here is taken)."""
    options = value if isinstance(value, list) else [value]
    why = None
    for option in options:
        table = option if isinstance(option, dict) else {"version": option}
        for key in ("path", "git", "url"):
            if key in table:
                out.skipped.append(Skipped(f"{name} = {{ {key} = {table[key]!r} }}", _poetry_origin(key), source))
                return
        why = (
            (environment.why_not_python(str(table["python"])) if "python" in table else None)
            or (environment.why_not_platform(str(table["platform"])) if "platform" in table else None)
            or (environment.why_not(str(table["markers"])) if "markers" in table else None)
        )
        if why:
            continue
        if table.get("optional"):
            out.skipped.append(Skipped(name, "optional: only with one of the project's extras", source))
            return
        version = str(table.get("version") or "").strip()
        spec = None if version in ("", "*") else version
        if spec and (problem := check(spec, "pypi")):
            raise DependencyFileError(f"{source}: {problem}")
        out.dependencies.append(Dependency(name, spec, "pypi", source))
        return
    out.skipped.append(Skipped(name, why or "no constraint holds here", source))


def _poetry_origin(key: str) -> str:
    return {"path": "a local path", "git": "a VCS checkout", "url": "a direct URL"}[key] + ", not a registry release"


# --- package.json -----------------------------------------------------------------------------------------------------

_NPM_GROUPS = (
    ("devDependencies", "a development dependency, not what the project runs on"),
    ("optionalDependencies", "optional"),
    ("peerDependencies", "a peer dependency: the installing project's to choose"),
)


def _npm_origin(spec: str) -> str | None:
    """What a package.json spec that is not a registry range points at, or ``None`` for a range or a tag."""
    prefixes = {"file:": "a local path", "link:": "a link to a local path", "portal:": "a local path",
                "workspace:": "a package of this workspace", "patch:": "a patched package",
                "catalog:": "a pnpm catalog entry"}  # fmt: skip
    for prefix, kind in prefixes.items():
        if spec.startswith(prefix):
            return kind
    if spec.startswith(("git+", "git:", "git@", "github:", "gitlab:", "bitbucket:", "gist:")):
        return "a VCS checkout"
    if spec.startswith(("http://", "https://")):
        return "a tarball URL"
    if re.fullmatch(r"[\w.-]+/[\w.-]+(#.*)?", spec):
        return "a GitHub repository (user/repo)"
    if spec.startswith((".", "/", "~/")):
        return "a local path"
    return None


def _package_json(path: Path, data: dict[str, Any], out: DependencyFile) -> None:
    for name, spec in (data.get("dependencies") or {}).items():
        source = f"{path}: dependencies.{name}"
        spec = str(spec).strip()
        alias = re.fullmatch(r"npm:((?:@[^/@]+/)?[^@]+)(?:@(.*))?", spec)
        if alias:  # "my-react": "npm:react@^18": the package is react
            name, spec = alias.group(1), (alias.group(2) or "").strip()
        kind = _npm_origin(spec)
        if kind:
            out.skipped.append(Skipped(f"{name}: {spec}", f"{kind}, not a registry release", source))
            continue
        if spec in ("", "*", "x", "X"):
            spec = None
        elif problem := check(spec, "npm"):
            raise DependencyFileError(f"{source}: {problem}")
        out.dependencies.append(Dependency(name, spec, "npm", source))
    for group, reason in _NPM_GROUPS:
        for name, spec in (data.get(group) or {}).items():
            out.skipped.append(Skipped(f"{name}: {spec}", reason, f"{path}: {group}.{name}"))


# --- Cargo.toml -------------------------------------------------------------------------------------------------------


def _cargo(path: Path, data: dict[str, Any], environment: Environment, out: DependencyFile) -> None:
    workspace = _workspace_dependencies(path, data)
    if "package" not in data and "dependencies" not in data:  # a virtual manifest: its members' dependencies
        patterns = [str(p) for p in (data.get("workspace") or {}).get("members") or []]
        for pattern in [p for p in patterns if p.startswith(("/", "~")) or ".." in re.split(r"[/\\]", p)]:
            out.skipped.append(Skipped(pattern, "a workspace member outside the folder, not read", str(path)))
            patterns.remove(pattern)  # not even listed: a pattern reaching out would walk the machine's folders
        members = sorted({m for pattern in patterns for m in path.parent.glob(f"{pattern}/Cargo.toml")})
        for member in members:
            try:
                text = _text(member, out.folder)
            except locks.RefusedFile as exc:
                out.skipped.append(Skipped(str(member), f"a workspace member: {_why(exc, member)}", str(path)))
                continue
            _cargo(member, tomllib.loads(text), environment, out)
        if not members:
            for name, value in workspace.items():
                _crate(name, value, f"{path}: workspace.dependencies.{name}", workspace, out)
        return
    for name, value in (data.get("dependencies") or {}).items():
        _crate(name, value, f"{path}: dependencies.{name}", workspace, out)
    for table in ("dev-dependencies", "build-dependencies"):
        for name in data.get(table) or {}:
            reason = "a development dependency" if table.startswith("dev") else "a build dependency (build.rs)"
            out.skipped.append(Skipped(name, f"{reason}, not what the crate runs on", f"{path}: {table}.{name}"))
    for target, tables in (data.get("target") or {}).items():
        for name, value in (tables.get("dependencies") or {}).items():
            source = f"{path}: target.{target!r}.dependencies.{name}"
            holds = _cfg(target, environment)
            if holds is None:
                out.skipped.append(Skipped(name, f"only for the target {target}, which docsbot does not evaluate",
                                           source))  # fmt: skip
            elif not holds:
                out.skipped.append(Skipped(name, f"only for {target} (not {environment.os})", source))
            else:
                _crate(name, value, source, workspace, out)


def _workspace_dependencies(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """``[workspace.dependencies]`` of ``path``'s workspace: its own, or the nearest Cargo.toml above with one."""
    if "workspace" in data:
        return (data["workspace"] or {}).get("dependencies") or {}
    for parent in path.resolve().parent.parents:
        manifest = parent / "Cargo.toml"
        if manifest.is_file():
            try:
                found = tomllib.loads(locks.read_file(manifest, parent))
            except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError, locks.RefusedFile):
                continue
            if "workspace" in found:
                return (found["workspace"] or {}).get("dependencies") or {}
    return {}


def _crate(name: str, value: Any, source: str, workspace: dict[str, Any], out: DependencyFile) -> None:
    table = value if isinstance(value, dict) else {"version": value}
    if table.get("workspace") is True:
        inherited = workspace.get(name)
        if inherited is None:
            out.skipped.append(Skipped(name, "workspace = true, but no [workspace.dependencies] names it", source))
            return
        table = {**(inherited if isinstance(inherited, dict) else {"version": inherited}), **table}
    crate = str(table.get("package") or name)
    for key, kind in (("path", "a local path"), ("git", "a git repository")):
        if key in table:
            out.skipped.append(Skipped(f"{name} = {{ {key} = {table[key]!r} }}", f"{kind}, not crates.io", source))
            return
    if table.get("registry") and table["registry"] != "crates-io":
        out.skipped.append(Skipped(name, f"from the registry {table['registry']!r}, not crates.io", source))
        return
    if table.get("optional"):
        out.skipped.append(Skipped(name, "optional: only with one of the crate's features", source))
        return
    spec = str(table.get("version") or "").strip() or None
    if spec and (problem := check(spec, "cargo")):
        raise DependencyFileError(f"{source}: {problem}")
    out.dependencies.append(Dependency(crate, None if spec == "*" else spec, "cargo", source))


_CFG_TOKEN = re.compile(r'\s*(?:(?P<word>[A-Za-z_][\w]*)|(?P<string>"[^"]*")|(?P<punct>[(),=]))')


def _cfg(target: str, environment: Environment) -> bool | None:
    """Whether a ``[target.…]`` key holds for ``environment``: ``cfg(unix)``, ``cfg(windows)``,
    ``cfg(target_os = "linux")``, ``cfg(target_family = …)`` with ``any``/``all``/``not``, or a target triple;
    ``None`` for what docsbot does not evaluate (``target_arch``, ``feature``, …)."""
    os_name = {"macos": "macos", "windows": "windows"}.get(environment.os, environment.os)
    family = "windows" if os_name == "windows" else "unix"
    if not target.startswith("cfg("):
        parts = target.split("-")
        triple_os = "windows" if "windows" in parts else "macos" if "darwin" in parts or "apple" in parts else (
            "linux" if "linux" in parts else None)  # fmt: skip
        return None if triple_os is None else triple_os == os_name
    tokens = [m.group(m.lastgroup) for m in _CFG_TOKEN.finditer(target)]
    position = 0

    def expression() -> bool | None:
        nonlocal position
        word = tokens[position]
        position += 1
        if word in ("any", "all", "not") and tokens[position] == "(":
            position += 1
            values = []
            while tokens[position] != ")":
                values.append(expression())
                if tokens[position] == ",":
                    position += 1
            position += 1
            if word == "not":
                return None if values[0] is None else not values[0]
            if word == "any":
                return True if True in values else None if None in values else False
            return False if False in values else None if None in values else True
        if position < len(tokens) and tokens[position] == "=":
            value = tokens[position + 1].strip('"')
            position += 2
            known = {"target_os": os_name, "target_family": family}
            return (value == known[word]) if word in known else None
        return {"unix": family == "unix", "windows": family == "windows"}.get(word)

    try:
        position = 2  # past "cfg" and "("
        return expression()
    except (IndexError, KeyError):
        return None
