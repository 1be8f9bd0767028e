"""``docsbot add``, ``sync`` and ``scheduler``: a fleet of library versions, declared in a libraries file (entries
found in the package registries, or a project's dependency files) and run when due, locally or on Scrapyd nodes."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docsbot.cli.common import project_settings
from docsbot.display import printable

if TYPE_CHECKING:
    import argparse

    from docsbot.fleet.dependencies import Dependency, DependencyFile
    from docsbot.fleet.registry import Resolution
    from docsbot.fleet.scheduler import SyncRow
    from docsbot.fleet.versions import Environment

__all__ = ["cmd_add", "cmd_scheduler", "cmd_sync"]


class _Refused(Exception):
    """A one-line refusal of a command's input, and its exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def cmd_add(args: argparse.Namespace) -> int:
    """Find a package's documentation root from its registry and add it to the libraries file."""
    import httpx

    from docsbot.fleet.libraries import DEFAULT_FILE, LibrariesFileError
    from docsbot.fleet.registry import RegistryError, resolve, toml_entry
    from docsbot.fleet.versions import Environment, VersionSpecError
    from docsbot.names import InvalidName

    try:
        environment = Environment(args.python, args.platform)
        name, spec = _package_spec(args.package, args.ecosystem, environment)
    except VersionSpecError as exc:
        print(f"docsbot add: {printable(exc)}", file=sys.stderr)
        return 2
    except _Refused as exc:
        print(f"docsbot add: {printable(exc)}", file=sys.stderr)
        return exc.code
    path = Path(args.file or DEFAULT_FILE)
    try:
        with httpx.Client(timeout=20, follow_redirects=True, headers={"User-Agent": "docsbot"}) as client:
            found = _named(resolve(name, spec, args.ecosystem, client=client, url=args.url))
    except (RegistryError, VersionSpecError, InvalidName) as exc:
        print(f"docsbot add: {printable(exc)}", file=sys.stderr)
        return 1
    _note_version(found, spec)
    entry = toml_entry(found, args.refresh)
    if args.dry_run:
        print(entry, end="")
        return 0
    try:
        added = _append_entries(path, [found], args.refresh)
    except LibrariesFileError as exc:
        print(f"docsbot add: {printable(exc)}; {path} left as it was", file=sys.stderr)
        return 2
    if not added:
        print(f"docsbot add: {path} declares {found.name}@{found.version} already; nothing written", file=sys.stderr)
        return 1
    print(entry, end="")
    checked = "confirmed by its host" if found.verified else "unverified: its host was not asked or could not tell"
    print(f"added {found.name}@{found.version} to {path} ({checked}); `docsbot sync {path}` indexes it")
    return 0


def _named(found: Resolution) -> Resolution:
    """``found`` under its library name (:func:`docsbot.names.library_name_of`: a registry's name as its ecosystem
    writes it in a flat namespace, checked), its version label checked. Raises
    :class:`~docsbot.names.InvalidName`."""
    from docsbot.names import check_version, library_name_of

    found.name = library_name_of(found.name, found.ecosystem)
    found.version = check_version(found.version)
    return found


def _note_version(found: Resolution, requirement: str | None, locked_note: str | None = None) -> None:
    """Put why this release was taken first among ``found``'s notes (they become the entry's comments)."""
    from docsbot.fleet.versions import why

    if found.package_version:
        line = f"{found.package_version}: exact, {locked_note}" if locked_note else why(
            requirement, found.ecosystem, found.package_version
        )  # fmt: skip
        found.notes.insert(0, f"version {line}")


def _package_spec(text: str, ecosystem: str, environment: Environment) -> tuple[str, str | None]:
    """A package as its ecosystem's files and tools write it: PEP 508 for PyPI (``flask>=2``, ``requests==2.31.0;
    python_version < "3.13"``, whose marker must hold for ``environment``) or Poetry's ``NAME@CONSTRAINT``
    (``requests@^2.31``); ``NAME@RANGE`` for npm (``express@^4.18``, ``@scope/pkg@5.x``, ``react@next``) and Cargo
    (``serde@1.0``, a caret range there). Raises :class:`_Refused` (exit 2 for what is not a package and version,
    1 for a requirement whose marker excludes ``environment``)."""
    from docsbot.fleet.versions import check

    text = text.strip()
    at = re.fullmatch(r"((?:@[^/@\s]+/)?[^@\s;\[]+)(?:\[[^\]]*\])?@([^@\s]*)", text)
    if at and (ecosystem != "pypi" or not re.search(r"\s@\s|://", text)):
        name, spec = at.group(1), at.group(2).strip() or None
    elif ecosystem == "pypi":
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise _Refused(f"{text!r} is not a package and version ({exc})") from None
        if req.url:
            raise _Refused(f"{text!r} names a URL, not a release: docsbot finds docs from a registry's metadata")
        if req.marker is not None and (reason := environment.why_not(str(req.marker))):
            raise _Refused(f"{text!r} is not for this environment: {reason}; nothing written", 1)
        name, spec = req.name, str(req.specifier) or None
    else:
        name, spec = text, None
    if not re.fullmatch(r"(@[\w.-]+/)?[\w.-]+", name):
        raise _Refused(f"{text!r} is not a package name (and version)")
    problem = check(spec, ecosystem)
    if problem:
        raise _Refused(problem)
    return name, None if spec in ("*", "latest") and ecosystem != "npm" else spec


def _append_entries(path: Path, found: list, refresh: str | None = None) -> list:
    """Append the resolutions of ``found`` (:class:`docsbot.fleet.registry.Resolution`) that ``path`` does not declare
    yet to the libraries file ``path`` (created when missing), then read it back; on any error the file is left as
    it was and :class:`~docsbot.fleet.libraries.LibrariesFileError` raised. Returns those appended."""
    from docsbot.fleet.libraries import LibrariesFileError, load
    from docsbot.fleet.registry import toml_entry

    before = path.read_text(encoding="utf-8") if path.exists() else None
    labels = {e.label for e in load(path)} if before is not None else set()
    new = []
    for r in found:
        label = f"{r.name}@{r.version}" if r.version else r.name
        if label not in labels:
            labels.add(label)
            new.append(r)
    if not new:
        return []
    text = (before.rstrip("\n") + "\n\n" if before else "") + "\n".join(toml_entry(r, refresh) for r in new)
    try:
        path.write_text(text, encoding="utf-8")
        load(path)  # what was written reads back as valid entries
    except (LibrariesFileError, OSError):
        if before is not None:
            path.write_text(before, encoding="utf-8")
        elif path.exists():
            path.unlink()
        raise
    return new


@dataclass
class _Planned:
    """A dependency of a ``--from`` file, once looked up: its ``found`` resolution, or the ``error`` that says why
    its docs were not found; ``declared`` when the libraries file (or an earlier dependency) has its entry."""

    file: DependencyFile
    dependency: Dependency
    found: Resolution | None = None
    error: str | None = None
    declared: bool = False

    @property
    def label(self) -> str:
        if self.found is None:
            return self.dependency.name
        return f"{self.found.name}@{self.found.version}" if self.found.version else self.found.name


def _plan(names: list[str], environment: Environment, path: Path) -> tuple[list[DependencyFile], list[_Planned]]:
    """Read every ``--from`` file first (a file that cannot be read stops everything before a registry is asked),
    then look each dependency up in its registry. Raises :class:`DependencyFileError` and
    :class:`~docsbot.fleet.libraries.LibrariesFileError` (the libraries file ``path`` unreadable)."""
    import httpx

    from docsbot.fleet.dependencies import read_dependencies
    from docsbot.fleet.libraries import load
    from docsbot.fleet.registry import RegistryError, resolve
    from docsbot.fleet.versions import VersionSpecError
    from docsbot.names import InvalidName

    files = [read_dependencies(Path(name), environment) for name in names]
    labels = {e.label for e in load(path)} if path.exists() else set()
    planned = []
    with httpx.Client(timeout=20, follow_redirects=True, headers={"User-Agent": "docsbot"}) as client:
        for file in files:
            for dep in file.dependencies:
                item = _Planned(file, dep)
                try:
                    item.found = _named(resolve(dep.name, dep.requirement, dep.ecosystem, client=client))
                except (RegistryError, VersionSpecError, InvalidName) as exc:
                    item.error = str(exc)
                else:
                    _note_version(item.found, dep.requirement, dep.note if dep.locked else None)
                    item.declared = item.label in labels
                    labels.add(item.label)
                planned.append(item)
    return files, planned


def _print_plan(files: list[DependencyFile], planned: list[_Planned], environment: Environment, path: Path) -> None:
    """Each file's dependencies: what each resolved to, where its docs are and why; what was skipped and why."""
    for file in files:
        lock = f"exact versions from {file.lock}" if file.lock else "no lock file"
        print(f"{file.path} (for {environment.describe()}; {lock}):")
        if not file.dependencies and not file.skipped:
            print("  no dependencies")
        for item in (p for p in planned if p.file is file):
            dep = item.dependency
            asked = f"{dep.name} {dep.spec}" if dep.spec else dep.name
            if item.found is None:
                print(f"  no docs   {asked}: {item.error}")
            elif item.declared:
                print(f"  declared  {asked} -> {item.label}: {path} has it")
            else:
                print(f"  add       {asked} -> {item.label} {item.found.url} ({'; '.join(item.found.notes)})")
        for skipped in file.skipped:
            print(f"  skipped   {skipped.entry}: {skipped.reason} ({skipped.source})")
    counts = (
        f"{sum(1 for p in planned if p.found and not p.declared)} to add",
        f"{sum(1 for p in planned if p.declared)} declared already",
        f"{sum(1 for p in planned if p.found is None)} without docs found",
        f"{sum(len(f.skipped) for f in files)} skipped",
    )
    print(f"plan for {path}: {', '.join(counts)}")


def _plan_rows(files: list[DependencyFile], planned: list[_Planned]) -> list[SyncRow]:
    """The sync table's rows of the dependencies that are no entry of the libraries file: those whose docs were
    not found (failed) and those skipped."""
    from docsbot.fleet.scheduler import SyncRow

    rows = [
        SyncRow(p.dependency.name, "failed", f"no docs found: {p.error} ({p.dependency.source})")
        for p in planned
        if p.found is None
    ]
    rows += [SyncRow(s.entry, "skipped", f"{s.reason} ({s.source})") for f in files for s in f.skipped]
    return rows


def _fleet(args: argparse.Namespace):  # noqa: ANN202 - docsbot.fleet.scheduler.Fleet
    from docsbot import store
    from docsbot.fleet.scheduler import Fleet

    settings = project_settings()
    scrapyd = args.scrapyd or list(settings.get("DOCSBOT_SCRAPYD_URLS") or [])
    return Fleet(
        store.resolve_dsn(settings),
        jobs=args.jobs,
        scrapyd=scrapyd,
        log_dir=Path(settings.get("DOCSBOT_DATA_DIR")).expanduser() / "fleet-runs",
        retry=store.RetryPolicy.from_settings(settings),
        host_concurrency=settings.getint("DOCSBOT_HOST_CONCURRENCY", 8),
        per_run=settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8),
    )


def cmd_sync(args: argparse.Namespace) -> int:
    """Declare a libraries file's entries, run the due ones (new ones are due at once), and end with a table of
    every entry (and every dependency of ``--from`` files that is none) whose counts add up. Exit codes: 0, 3 when
    anything failed, 2 for bad input, 1 when ``--from`` found nothing to add to a libraries file that does not
    exist."""
    import logging

    from docsbot import store
    from docsbot.fleet.dependencies import DependencyFileError
    from docsbot.fleet.libraries import DEFAULT_FILE, LibrariesFileError, load
    from docsbot.fleet.scheduler import idle_row, sync_table
    from docsbot.fleet.versions import Environment, VersionSpecError
    from docsbot.store.fleet import declared_versions, next_due_times

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    path = Path(args.file or DEFAULT_FILE)
    extra_rows: list[SyncRow] = []
    if not args.from_files and (args.dry_run or args.python or args.platform):
        print("docsbot sync: --dry-run, --python and --platform go with --from DEPFILE", file=sys.stderr)
        return 2
    if args.from_files:
        if args.due:
            print("docsbot sync: --from adds to a libraries file; --due reads none", file=sys.stderr)
            return 2
        try:
            environment = Environment(args.python, args.platform)
            files, planned = _plan(args.from_files, environment, path)
        except (VersionSpecError, DependencyFileError, LibrariesFileError) as exc:
            print(f"docsbot sync: {printable(exc)}; nothing written", file=sys.stderr)
            return 2
        _print_plan(files, planned, environment, path)
        extra_rows = _plan_rows(files, planned)
        failed = any(row.result == "failed" for row in extra_rows)
        if args.dry_run:
            print("--dry-run: nothing written, nothing run")
            return 3 if failed else 0
        new = [p.found for p in planned if p.found is not None and not p.declared]
        if not new and not path.exists():
            print(f"docsbot sync: no dependency to add; {path} not created", file=sys.stderr)
            return 3 if failed else 1
        try:
            _append_entries(path, new)
        except LibrariesFileError as exc:
            print(f"docsbot sync: {printable(exc)}; {path} left as it was", file=sys.stderr)
            return 2
    fleet = _fleet(args)
    version_ids = None
    if not args.due:
        try:
            entries = load(path)  # every entry checked before anything runs
        except LibrariesFileError as exc:
            print(f"docsbot sync: {printable(exc)}", file=sys.stderr)
            return 2
        source = str(path.resolve())
        plan = fleet.declare(entries, source)
        labels = {entry.label for entry in entries}
        with store.connect(fleet.dsn) as conn:
            version_ids = [
                row["id"]
                for row in declared_versions(conn, source)
                if store.version_label(row["library"], row["version"]) in labels
            ]
        if plan.removed:
            if args.prune:
                for problem in fleet.remove(plan.removed):
                    print(f"docsbot sync: {problem}", file=sys.stderr)
                print(f"removed (no longer in {path}): {', '.join(plan.removed)}")
            else:
                print(f"no longer in {path}, kept (--prune deletes them): {', '.join(plan.removed)}")
    bars = _SyncBars.when_wanted(fleet, version_ids)
    try:
        reports = fleet.run_due(version_ids, watch=bars)
    finally:
        if bars is not None:
            bars.close()
    ran = {r.label for r in reports}
    with store.connect(fleet.dsn) as conn:
        states = next_due_times(conn, version_ids)
    rows = [r.row() for r in reports]
    rows += [idle_row(s) for s in states if store.version_label(s["library"], s["version"]) not in ran]
    rows += extra_rows
    print(sync_table(rows))
    return 3 if any(row.result == "failed" for row in rows) else 0


class _SyncBars:
    """``docsbot sync``'s bars on a terminal (``DOCSBOT_PROGRESS``, :func:`docsbot.progress.progress_wanted`): the
    libraries done of those due at the start, and the pages the running crawls have written so far (a run's own
    bars are not drawn: its output goes to its log file). Called by :meth:`docsbot.fleet.scheduler.Fleet.run_due`."""

    def __init__(self, dsn: str, due: int) -> None:
        from docsbot.progress import bar, log_past_bars

        self.dsn = dsn
        self._logging = log_past_bars()
        self._logging.__enter__()
        self.libraries = bar("libraries", "library", total=due)
        self.pages = bar("pages", "page", position=1)
        self._running: tuple[str, ...] = ()

    @classmethod
    def when_wanted(cls, fleet: Any, version_ids: list[int] | None) -> _SyncBars | None:
        """The bars, if a person watches and the runs are local (Scrapyd's are scheduled, not awaited)."""
        from docsbot import store
        from docsbot.progress import progress_wanted
        from docsbot.store.fleet import next_due_times

        if fleet.nodes or not progress_wanted(project_settings().get("DOCSBOT_PROGRESS", "auto")):
            return None
        with store.connect(fleet.dsn) as conn:
            now = store.database_now(conn)
            states = next_due_times(conn, version_ids)
        due = sum(1 for s in states if s["next_due_at"] is not None and s["next_due_at"] <= now and not s["claimed_by"])
        return cls(fleet.dsn, due)

    def __call__(self, reports: list[Any], running: list[tuple[str, int, Any]]) -> None:
        from docsbot import store
        from docsbot.progress import advance

        advance(self.libraries, len(reports), self.libraries.total or 0)
        labels = tuple(label for label, _, _ in running)
        if labels and labels != self._running:  # another library started: its pages from 0 (the last one's stay)
            self._running = labels
            self.pages.reset()
            self.pages.set_description_str(f"pages of {printable(', '.join(labels))}")
        if running:
            with store.connect(self.dsn) as conn:
                written = sum(store.pages_written_since(conn, version_id, since) for _, version_id, since in running)
            advance(self.pages, written, None)

    def close(self) -> None:
        self.pages.close()
        self.libraries.close()
        self._logging.__exit__(None, None, None)


def cmd_scheduler(args: argparse.Namespace) -> int:
    import logging
    import signal

    from docsbot.fleet.scheduler import Scheduler

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    scheduler = Scheduler(_fleet(args), interval=args.interval)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: scheduler.stop())
    print(f"docsbot scheduler: claiming due versions every {args.interval:g} s", file=sys.stderr, flush=True)
    scheduler.run()
    return 0
