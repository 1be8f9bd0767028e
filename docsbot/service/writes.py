"""The service's writes, allowed only when the index was opened with ``allow_writes``: a refresh and a full index
started (each claims its version first, as a scheduler does), a run this process started cancelled, a version
removed.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from docsbot import store
from docsbot.arguments import parse_duration
from docsbot.folders import is_archive, is_file_url
from docsbot.names import InvalidName, check_library, check_version
from docsbot.network import BlockedAddress, check_url
from docsbot.service.core import IndexCore, check_text
from docsbot.service.errors import Forbidden, Invalid, NotFound
from docsbot.service.models import (
    CancelResult,
    RefreshResult,
    RemoveResult,
)
from docsbot.service.runs import Launch
from docsbot.store import version_label
from docsbot.urls import has_credentials, page_key, without_credentials

if TYPE_CHECKING:
    import psycopg


__all__ = ["Writing"]


def _writable(library: str, version: str) -> None:
    """Raise :class:`Invalid` for a stored version whose name is not one (:mod:`docsbot.names`): it was indexed
    before names were checked, and nothing more is written under it; it stays readable and removable."""
    try:
        check_library(library)
        check_version(version)
    except InvalidName as exc:
        raise Invalid(
            f"{exc}; it was indexed before names were checked: it can be read and removed, not refreshed (remove it "
            "and index the docs again under a name that is one)"
        ) from None


class Writing(IndexCore):
    """:meth:`refresh`, :meth:`index`, :meth:`cancel` and :meth:`remove` of
    :class:`~docsbot.service.index.DocsIndex`."""

    def refresh(self, library: str, version: str | None = None) -> RefreshResult:
        """Start a refresh of a library version (``version`` only needed when it has several); returns at once.
        A run of that version already in progress (this process's, or any holding its run lock) is reported with
        ``started=False``, never started twice. Raises :class:`Forbidden`, :class:`NotFound`, :class:`Invalid`,
        and :class:`~docsbot.service.errors.Upstream` when Scrapyd refuses."""
        check_text(library=library, version=version)
        self._require_writes("refresh")
        target = self._one_version(library, version)
        _writable(target.library, target.name)
        label = version_label(target.library, target.name)
        backend = self.launcher.backend

        def result(run_id: str, started: bool, message: str, scrapyd_job: str | None = None) -> RefreshResult:
            return RefreshResult(
                run_id=run_id,
                library=target.library,
                version=target.name,
                started=started,
                backend=backend,
                scrapyd_job=scrapyd_job,
                message=message,
            )

        with self._refresh_lock:
            with self.connection() as conn:
                for launch in self._launches.values():
                    if launch.version.id == target.id and self.launcher.state(launch, conn).state in (
                        "starting",
                        "running",
                    ):
                        message = f"a refresh of {label} started by this server is already in progress"
                        return result(launch.run_id, False, message, launch.scrapyd_job)
                if target.id in store.running_version_ids(conn):
                    run = store.latest_run_id(conn, target.id)
                    message = f"another run of {label} is in progress (one run per version at a time); "
                    return result(str(run) if run else "", False, message + "nothing was started")
                since = store.database_now(conn)
                launch = Launch(f"run-{uuid.uuid4().hex[:12]}", target, since)
                held = self._claim(conn, target, launch)
                if held is not None:
                    message = f"{label} cannot start now ({held}); nothing was started, try again later"
                    return result("", False, message)
            message = self._start(launch)
        return result(launch.run_id, True, message + "; follow it with its run_id", launch.scrapyd_job)

    def _claim(self, conn: psycopg.Connection, target: store.VersionRow, launch: Launch) -> str | None:
        """Claim ``target`` for ``launch`` as a scheduler claims a due version (no scheduler starts a second run of
        it meanwhile; the run's end releases it). ``None`` when claimed, else who holds it."""
        from docsbot.store import fleet as fleet_store

        who = f"{socket.gethostname()}:{os.getpid()}:{launch.run_id}"
        return fleet_store.claim_version(
            conn, target.id, who, fleet_store.DEFAULT_LEASE,
            host_concurrency=int(self.settings.get("DOCSBOT_HOST_CONCURRENCY") or fleet_store.HOST_CONCURRENCY),
            per_run=int(self.settings.get("CONCURRENT_REQUESTS_PER_DOMAIN") or fleet_store.PER_RUN_CONCURRENCY),
        )  # fmt: skip

    def _start(self, launch: Launch) -> str:
        """Start the claimed ``launch``; a launch that cannot start gives its claim back (with the failure's
        backoff, as a scheduler's would) and raises."""
        from docsbot.store import fleet as fleet_store

        try:
            message = self.launcher.start(launch)
        except Exception as exc:
            with self.connection() as conn:
                fleet_store.release_claim(conn, launch.version.id, f"the run could not start: {exc}")
            raise
        self._launches[launch.run_id] = launch
        return message

    def index(
        self,
        url: str,
        library: str | None = None,
        version: str = "",
        refresh: str | None = None,
        *,
        max_pages: int | None = None,
        max_depth: int | None = None,
        scope: str | None = None,
        include: str | list[str] | None = None,
        exclude: str | list[str] | None = None,
    ) -> RefreshResult:
        """Start a full index of the docs at ``url`` as ``library`` (default: the URL's host) ``version``, on a
        network caller's behalf; with ``refresh`` (a duration: ``1d``, ``12h``), the version is then refreshed on
        that schedule (``docsbot scheduler``). Returns at once. ``scope`` (``prefix``, ``host``, ``domain``),
        ``include`` and ``exclude`` (patterns: a list, or one comma-separated string) are the spider's arguments of
        those names (:class:`docsbot.arguments.CrawlArguments`), stored with the version for its refreshes. A
        network caller gives no private docs headers: they would name the server's own environment variables.

        The crawl and every later run of the version connect only to public addresses and those the server allows
        (``-a network=public``, :mod:`docsbot.network`); ``url``'s host is checked here first, on its resolved
        addresses. It requests at most ``max_pages`` pages, ``max_depth`` links deep, each at most the server's
        ``DOCSBOT_NETWORK_MAX_PAGES`` / ``DOCSBOT_NETWORK_MAX_DEPTH`` (their default). A local folder or archive
        (a ``file:`` URL, a path, a ``.zip``/``.tar.gz`` by any URL) is never indexed on a network caller's behalf.
        ``refresh`` is at least ``DOCSBOT_NETWORK_MIN_REFRESH_HOURS``, and the server's bounds on what callers index
        hold (:meth:`_within_bounds`: one version per root URL and scope, a number of versions and of pages).
        Raises :class:`Forbidden` (writes off; a host the policy refuses; a local folder or an archive),
        :class:`Invalid` (a bad URL, one with credentials, a bad duration or limit, a refresh more often than the
        floor, a bound passed, or a version that is already indexed: refresh it instead) and
        :class:`~docsbot.service.errors.Upstream`."""
        self._require_writes("indexing")
        check_text(url=url, library=library, version=version, refresh=refresh)
        root = url.strip()
        if is_file_url(root) or root.startswith(("/", "~", "\\")) or is_archive(root):
            # Checked before the URL is parsed, which would tell whether such a path exists on this machine
            raise Forbidden(
                f"not indexing {root[:200]!r}: a local folder or an archive is indexed only from the operator's "
                "command line (docsbot index PATH); from here, give a site's http(s) URL"
            )
        from docsbot.arguments import CrawlArguments, SpiderArgumentError
        from docsbot.store import fleet as fleet_store

        page_cap, depth_cap = self.network_limits
        if max_pages is not None and not 1 <= max_pages <= page_cap:
            raise Invalid(f"max_pages must be between 1 and {page_cap} on this server, got {max_pages}")
        if max_depth is not None and not 0 <= max_depth <= depth_cap:
            raise Invalid(f"max_depth must be between 0 and {depth_cap} on this server, got {max_depth}")
        if has_credentials(root):  # before the spider's own check, which names -a arguments
            raise Invalid("a root URL with a user name or password is not indexed from the network: pass it without")
        try:
            args = CrawlArguments.parse(
                url=url, library=library, version=version, mode="full", scope=scope, include=include, exclude=exclude
            )
            interval = parse_duration(refresh) if refresh else None
        except (SpiderArgumentError, ValueError) as exc:
            raise Invalid(str(exc).replace("-a ", "")) from None
        floor = float(self._limit("DOCSBOT_NETWORK_MIN_REFRESH_HOURS", 1.0))
        if interval is not None and interval < timedelta(hours=floor):
            raise Invalid(f"refresh must be at least {floor:g}h on this server, got {refresh!r}")
        try:
            check_url(args.url, self.network)
        except BlockedAddress as exc:
            raise Forbidden(f"not indexing {args.url}: {exc}") from None
        label = version_label(args.library, args.version)
        limits = {"max_pages": max_pages or page_cap, "max_depth": depth_cap if max_depth is None else max_depth}
        run = {"network": "public", **{k: str(v) for k, v in limits.items()}}
        # what the crawl covers: stored with the version as a crawl stores it, passed to the crawl as -a strings
        shape = {
            "scope": args.scope or "prefix",
            "include": list(args.include or ()),
            "exclude": list(args.exclude or ()),
        }
        run.update({"scope": args.scope} if args.scope else {})
        run.update((key, ",".join(shape[key])) for key in ("include", "exclude") if shape[key])
        with self._refresh_lock:
            with self.connection() as conn:
                store.migrate(conn)  # a write: the schema may be new (or behind) here
                existing = store.find_version(conn, args.library, args.version)
                if existing is not None and store.has_pages(conn, existing.id):
                    root = without_credentials(existing.root_url)
                    raise Invalid(f"{label} is already indexed (from {root}); refresh it instead")
                settings = {**limits, "prune": "none", "render": "none", "network": "public", **shape}
                self._within_bounds(conn, args.url, (args.library, args.version), settings)
                fleet_store.declare_version(
                    conn, args.library, args.version, args.url, settings, interval, "mcp", {"args": run}
                )
                target = store.find_version(conn, args.library, args.version)
                since = store.database_now(conn)
                launch = Launch(f"run-{uuid.uuid4().hex[:12]}", target, since, mode="full", url=args.url, args=run)
                held = self._claim(conn, target, launch)  # declared due at once: no scheduler may start it too
                if held is not None:
                    raise Invalid(f"{label} cannot be indexed now ({held}); try again later")
            message = self._start(launch)
        schedule = f"; then refreshed every {refresh}" if interval else ""
        bounds = f" (at most {limits['max_pages']} pages, {limits['max_depth']} links deep"
        bounds += f"; scope {args.scope})" if args.scope and args.scope != "prefix" else ")"
        return RefreshResult(
            run_id=launch.run_id,
            library=target.library,
            version=target.name,
            started=True,
            backend=self.launcher.backend,
            scrapyd_job=launch.scrapyd_job,
            message=message + bounds + schedule + "; follow it with its run_id",
        )

    def _limit(self, name: str, default: float) -> float:
        value = self.settings.get(name)
        return default if value is None or value == "" else float(value)

    def _within_bounds(
        self, conn: psycopg.Connection, url: str, own: tuple[str, str], settings: dict[str, Any]
    ) -> None:
        """Refuse what a network caller's index would add past the server's bounds: a second version of one root
        URL and scope (``settings``' ``scope``, ``include``, ``exclude``), whatever its name and whoever indexed
        the first; more versions from callers than ``DOCSBOT_NETWORK_MAX_VERSIONS``; more pages requested by them
        in all (each version its ``max_pages``) than ``DOCSBOT_NETWORK_MAX_TOTAL_PAGES``. ``own`` (library,
        version) is the version being declared, which may be one declared before and never stored: it counts once.
        Raises :class:`Invalid`."""
        from docsbot.store import fleet as fleet_store

        parts = urllib.parse.urlsplit(url)
        for row in fleet_store.versions_on_site(conn, f"{parts.scheme}://{parts.netloc}/"):
            same = page_key(row["root_url"]) == page_key(url) and _shape(row["settings"]) == _shape(settings)
            if same and (row["library"], row["version"]) != own:
                label = version_label(row["library"], row["version"])
                raise Invalid(f"{url} is already indexed as {label}: search or refresh that one")
        others = [r for r in fleet_store.declared_settings(conn, "mcp") if (r["library"], r["version"]) != own]
        most = int(self._limit("DOCSBOT_NETWORK_MAX_VERSIONS", 50))
        if len(others) >= most:
            raise Invalid(f"this server holds {len(others)} versions indexed by callers, its limit: remove one first")
        budget = int(self._limit("DOCSBOT_NETWORK_MAX_TOTAL_PAGES", 100_000))
        used = sum(int((r["settings"] or {}).get("max_pages") or self.network_limits[0]) for r in others)
        if used + int(settings["max_pages"]) > budget:
            room = f"pass max_pages={budget - used} or less" if budget > used else "remove one first"
            raise Invalid(f"the versions callers indexed may request {used} of this server's {budget} pages: {room}")

    def cancel(self, run_id: str) -> CancelResult:
        """Stop a run this server started (a local crawl: SIGTERM; a Scrapyd job: ``cancel.json``). Pages it stored
        stay stored and it deletes nothing. Raises :class:`Forbidden` and :class:`NotFound`; a run started
        elsewhere is :class:`Invalid` (stop it where it runs)."""
        check_text(run_id=run_id)
        self._require_writes("cancelling runs")
        run_id = run_id.strip()
        launch = self._launches.get(run_id)
        if launch is None:
            by_row = next((x for x in self._launches.values() if str(x.crawl_run_id) == run_id), None)
            if by_row is None:
                if run_id.isascii() and run_id.isdigit():
                    raise Invalid(
                        f"run {run_id} was not started by this server: stop it where it runs (SIGTERM to its "
                        "`scrapy crawl`, or Scrapyd's cancel.json)"
                    )
                raise NotFound(f"no run {run_id!r} started by this server")
            launch = by_row
        with self.connection() as conn:
            state = self.launcher.state(launch, conn).state
        if state not in ("starting", "running"):
            return CancelResult(run_id=launch.run_id, cancelled=False, message=f"run {launch.run_id} is {state}")
        return CancelResult(run_id=launch.run_id, cancelled=True, message=self.launcher.cancel(launch))

    def remove(self, library: str, version: str | None = None) -> RemoveResult:
        """Delete a library version (``version=None``: every version, and the library) with its pages, chunks and
        runs, in one transaction, unless a run of it is in progress. Raises :class:`Forbidden`, :class:`NotFound`,
        and :class:`Invalid` when a run holds a version's lock (nothing is deleted then)."""
        check_text(library=library, version=version)
        self._require_writes("remove")
        targets = self.searcher.versions(library, version)
        locks = []
        try:
            for target in targets:
                try:
                    locks.append(store.lock_version(self.dsn, target))
                except store.DatabaseError as exc:
                    raise Invalid(f"{exc}; remove it once the run ends") from None
            with self.connection() as conn:  # the versions resolved and locked ("latest" names one by its number)
                deleted = store.delete_version(conn, library, version, [t.id for t in targets])
        finally:
            for lock in locks:
                lock.close()
        if not deleted:
            raise NotFound(f"nothing indexed as {version_label(library, version) if version is not None else library}")
        store.drop_version_indexes(self.dsn, [t.id for t in targets])
        return RemoveResult(removed=[{"version": label, "pages": pages} for label, pages in deleted])


def _shape(settings: dict[str, Any] | None) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What a version's crawl covers besides its root URL: its scope and its include and exclude patterns."""
    settings = settings or {}

    def patterns(value: Any) -> tuple[str, ...]:
        return tuple(sorted(value.split(",") if isinstance(value, str) else value or ()))

    return str(settings.get("scope") or "prefix"), patterns(settings.get("include")), patterns(settings.get("exclude"))
