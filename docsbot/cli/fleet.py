"""``docsbot add``, ``sync`` and ``scheduler``: a fleet of library versions, declared in a libraries file (entries
found in the package registries, or a project's dependency files) and run when due, locally or on Scrapyd nodes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from docsbot.cli.common import project_settings

if TYPE_CHECKING:
    import argparse

__all__ = ["cmd_add", "cmd_scheduler", "cmd_sync"]


def cmd_add(args: argparse.Namespace) -> int:
    """Find a package's documentation root from its registry and add it to the libraries file."""
    import httpx

    from docsbot.fleet.libraries import DEFAULT_FILE, LibrariesFileError
    from docsbot.fleet.registry import RegistryError, resolve, toml_entry

    name, spec = _package_spec(args.package, args.ecosystem)
    path = Path(args.file or DEFAULT_FILE)
    try:
        with httpx.Client(timeout=20, follow_redirects=True, headers={"User-Agent": "docsbot"}) as client:
            found = resolve(name, spec, args.ecosystem, client=client, url=args.url)
    except RegistryError as exc:
        print(f"docsbot add: {exc}", file=sys.stderr)
        return 1
    entry = toml_entry(found, args.refresh)
    if args.dry_run:
        print(entry, end="")
        return 0
    try:
        added = _append_entries(path, [found], args.refresh)
    except LibrariesFileError as exc:
        print(f"docsbot add: {exc}; {path} left as it was", file=sys.stderr)
        return 2
    if not added:
        print(f"docsbot add: {path} declares {found.name}@{found.version} already; nothing written", file=sys.stderr)
        return 1
    print(entry, end="")
    checked = "confirmed by its host" if found.verified else "unverified: its host was not asked or could not tell"
    print(f"added {found.name}@{found.version} to {path} ({checked}); `docsbot sync {path}` indexes it")
    return 0


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


def _sync_from(files: list[str], path: Path) -> int:
    """`docsbot sync --from FILE`: the dependencies of each file, their docs found in their registries and added to
    the libraries file ``path``; one line per dependency whose docs cannot be found (the others go on). Returns
    how many could not be resolved."""
    import httpx

    from docsbot.fleet.dependencies import DependencyFileError, read_dependencies
    from docsbot.fleet.registry import RegistryError, resolve

    found, missed = [], 0
    with httpx.Client(timeout=20, follow_redirects=True, headers={"User-Agent": "docsbot"}) as client:
        for name in files:
            try:
                deps = read_dependencies(Path(name))
            except DependencyFileError as exc:
                print(f"docsbot sync: {exc}", file=sys.stderr)
                missed += 1
                continue
            for dep in deps:
                try:
                    found.append(resolve(dep.name, dep.spec, dep.ecosystem, client=client))
                except RegistryError as exc:
                    print(f"docsbot sync: {dep.name} ({dep.source}): {exc}", file=sys.stderr)
                    missed += 1
    added = _append_entries(path, found)
    for r in added:
        print(f"added {r.name}@{r.version} ({r.url}) to {path}" + (f": {r.notes[-1]}" if len(r.notes) > 1 else ""))
    return missed


def _package_spec(text: str, ecosystem: str) -> tuple[str, str | None]:
    """``NAME``, ``NAME==1.2``, ``NAME>=1,<2`` (PEP 508, with packaging), or npm's and cargo's ``NAME@^1.2``
    (``@scope/pkg@1``)."""
    if ecosystem in ("npm", "cargo"):
        at = text.rfind("@")
        return (text[:at], text[at + 1 :] or None) if at > 0 else (text, None)
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise SystemExit(f"docsbot add: {text!r} is not a package and version ({exc})") from None
    spec = str(req.specifier) or None
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    return req.name, (pinned[0] if len(pinned) == 1 and "*" not in pinned[0] else spec)


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
    """Declare a libraries file's entries, run the due ones (new ones are due at once), report each."""
    import logging

    from docsbot import store
    from docsbot.fleet.libraries import DEFAULT_FILE, load
    from docsbot.store.fleet import declared_versions, next_due_times

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s: %(message)s", stream=sys.stderr)
    fleet = _fleet(args)
    version_ids = None
    plan = None
    missed = 0
    if args.from_files:
        if args.due:
            print("docsbot sync: --from adds to a libraries file; --due reads none", file=sys.stderr)
            return 2
        from docsbot.fleet.libraries import LibrariesFileError

        try:
            missed = _sync_from(args.from_files, Path(args.file or DEFAULT_FILE))
        except LibrariesFileError as exc:
            print(f"docsbot sync: {exc}", file=sys.stderr)
            return 2
    if not args.due:
        path = Path(args.file or DEFAULT_FILE)
        entries = load(path)  # every entry checked before anything runs
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
    reports = fleet.run_due(version_ids)
    ran = {r.label for r in reports}
    for report in reports:
        print(report.line())
    with store.connect(fleet.dsn) as conn:
        due_times = next_due_times(conn, version_ids)
    idle = [
        (label, row["next_due_at"])
        for row in due_times
        if (label := store.version_label(row["library"], row["version"])) not in ran
    ]
    for label, due in idle:
        print(f"{label}: not due" + (f" (next {due:%Y-%m-%d %H:%M %Z})" if due else " (no refresh interval)"))
    failed = [r for r in reports if r.outcome not in ("complete", "vectors_pending", "scheduled")]
    kinds = {
        "indexed": sum(1 for r in reports if r.mode == "full" and r.outcome != "scheduled"),
        "refreshed": sum(1 for r in reports if r.mode == "refresh" and r.outcome != "scheduled"),
        "scheduled": sum(1 for r in reports if r.outcome == "scheduled"),
        "not due": len(idle),
        "failed": len(failed),
    }
    print(
        f"{len(reports) + len(idle)} versions: "
        + ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n or kind == "failed")
    )
    if missed:
        print(f"{missed} dependencies without docs found (above)")
    return 3 if failed or missed else 0


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
