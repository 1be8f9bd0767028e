"""The run's setup, before anything is fetched: what :class:`~docsbot.extensions.run.IndexRun` does when the crawler
builds it, synchronously.

The embedding model's provisioning checked (files only, no load), the settings the run reads once, the database's
migrations, the version's row (created by a full index, required by a refresh), the version's run lock, the
embedding model bound to the version, the network guard and the rendering policy, the scope; then the run's
:class:`~docsbot.extensions.context.IndexContext`. Any error here (:class:`~docsbot.errors.DocsbotError`) stops
``scrapy crawl`` with exit code 1 before anything is written, and the run lock is not held.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from docsbot import network, store
from docsbot.archives import ArchiveLimits, unpack_root
from docsbot.arguments import SCOPE_KEYS, SpiderArgumentError, parse_duration
from docsbot.embedding.models import load_embedder
from docsbot.extensions.context import IndexContext
from docsbot.extensions.vectors import RunVectors, ensure_vector_indexes
from docsbot.folders import is_archive, is_file_url, url_path
from docsbot.refresh import GONE_STATUSES, SKIP_STATUSES, parse_gone_statuses, parse_skip_statuses
from docsbot.render import RenderPolicy, check_rendering

if TYPE_CHECKING:
    import psycopg
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from docsbot.arguments import CrawlArguments, CrawlSettings, Credentials
    from docsbot.urls import Scope

__all__ = ["RunSetup", "local_root", "set_up"]

logger = logging.getLogger("docsbot.extensions.run")  # every line of the run under the extension's name


@dataclass
class RunSetup:
    """What the setup leaves the run: its ``context``, the database's ``dsn`` and the connection holding the
    version's run ``lock`` (:func:`docsbot.store.lock_version`), which the run closes at its end."""

    context: IndexContext
    dsn: str
    lock: psycopg.Connection


def set_up(crawler: Crawler, args: CrawlArguments) -> RunSetup:
    """Set the run up (see the module docstring). Raises :class:`~docsbot.errors.DocsbotError` (a model that is
    not provisioned, a malformed setting, a database that cannot be reached or migrated, a version to refresh
    that is not indexed or is being run, a model other than the version's, a network guard or a browser that
    cannot work here); the run lock is then released."""
    settings = crawler.settings
    embedder = load_embedder(settings)  # raises EmbeddingModelError now if the model is not provisioned
    check = getattr(embedder, "check", None)
    if check is not None:
        check()
    try:
        gone = parse_gone_statuses(settings.getlist("DOCSBOT_GONE_STATUSES", sorted(GONE_STATUSES)))
        skip = parse_skip_statuses(settings.getlist("DOCSBOT_SKIP_STATUSES", sorted(SKIP_STATUSES)), gone)
    except ValueError as exc:
        raise SpiderArgumentError(str(exc)) from None
    try:
        changes_keep = parse_duration(settings.get("DOCSBOT_CHANGES_KEEP", "90d"))
    except ValueError as exc:
        raise SpiderArgumentError(f"DOCSBOT_CHANGES_KEEP: {exc}") from None
    dsn = store.resolve_dsn(settings)
    lock: psycopg.Connection | None = None
    try:
        with store.connect(dsn, retry=store.RetryPolicy.from_settings(settings)) as conn:
            store.migrate(conn)
            existing = store.find_version(conn, args.library, args.version)
            if args.mode == "refresh":
                if existing is None:
                    known = ", ".join(store.version_label(v.library, v.name) for v in store.list_versions(conn))
                    raise store.DatabaseError(
                        f"nothing to refresh: library {args.library!r} version {args.version!r} is not indexed "
                        f"(indexed: {known or 'none'}); index it first with -a url=ROOT_URL"
                    )
                crawl = args.resolve(existing.root_url, existing.settings)
                guard_network(settings, crawl)
                render = rendering_policy(settings, crawl.render)
                scope, credentials = crawl_scope(crawl), private_docs(crawl, render)
                lock = store.lock_version(dsn, existing)
                version = existing
                given = {key: value for key, value in crawl.stored().items() if key in SCOPE_KEYS}
                given = {key: value for key, value in given.items() if getattr(args, key) is not None}
                if given:  # what the crawl covers, given again, holds for the next refreshes too
                    version = store.update_version_settings(conn, version, given)
            else:
                crawl = args.resolve()
                guard_network(settings, crawl)
                render = rendering_policy(settings, crawl.render)
                scope, credentials = crawl_scope(crawl), private_docs(crawl, render)
                if existing is not None:
                    lock = store.lock_version(dsn, existing)
                version = store.upsert_version(conn, args.library, args.version, crawl.root_url, crawl.stored())
                if existing is None:
                    lock = store.lock_version(dsn, version)
            store.bind_model(conn, version, embedder.name, lambda: embedder.dim)
        crawl = local_root(settings, crawl, version)  # the version keeps the archive's URL; the run crawls its folder
        if crawl.root_url != version.root_url:  # an archive: the scope is its folder's
            scope = crawl_scope(crawl)
        # After the connection's transaction ended: a CREATE INDEX CONCURRENTLY waits for every older one
        ensure_vector_indexes(dsn)
        label = store.version_label(version.library, version.name)
        context = IndexContext(
            version=version,
            args=args,
            crawl=crawl,
            store=store.PageStore.from_settings(dsn, settings),
            embedder=embedder,
            start_scope=scope,
            render=render,
            render_wait_until=settings.get("DOCSBOT_RENDER_WAIT_UNTIL"),
            label=label,
            gone_statuses=gone,
            skip_statuses=skip,
            changes_keep=changes_keep,
            credentials=credentials,
        )
        if settings.getint("DOCSBOT_CRAWL_EMBED_WORKERS", 1) > 0:
            context.vectors = RunVectors(dsn, embedder, settings, version, label)
    except BaseException:
        if lock is not None:
            lock.close()
        raise
    logger.info(
        "%s of %s from %s (scope %s, max_depth=%s, max_pages=%s, prune=%s, render=%s%s%s)",
        args.mode,
        context.label,
        crawl.root_url,
        scope.describe(),
        crawl.max_depth,
        crawl.max_pages,
        crawl.prune,
        crawl.render if render.all_pages or not render.enabled else "DOCSBOT_RENDER_URLS",
        ", network=public" if crawl.network == "public" else "",
        f", private docs: headers {credentials.describe()}" if credentials is not None else "",
    )
    assert lock is not None
    return RunSetup(context, dsn, lock)


def local_root(settings: BaseSettings, crawl: CrawlSettings, version: store.VersionRow) -> CrawlSettings:
    """``crawl`` with its root made a folder to crawl when it is a local folder or an archive: an archive (a path or a
    URL, :func:`docsbot.folders.is_archive`) is fetched and unpacked under ``DOCSBOT_DATA_DIR``
    (:func:`docsbot.archives.unpack_root`) and its folder is the root. Raises
    :class:`~docsbot.errors.DocsbotError` for a crawl started from the network (``-a network=public``: only the
    operator's command line indexes local files), a render, a folder that is not there, and an archive that cannot
    be fetched or unpacked safely (:class:`~docsbot.archives.ArchiveError`)."""
    root = crawl.root_url
    if not is_file_url(root) and not is_archive(root):
        return crawl
    if crawl.network == "public":
        raise SpiderArgumentError(
            f"-a network=public (a crawl started from the network) indexes no local folder or archive: {root}"
        )
    if crawl.render == "js":
        raise SpiderArgumentError(f"a folder or archive is read as it is: drop -a render=js for {root}")
    if not is_archive(root):
        if not url_path(root).exists():
            raise SpiderArgumentError(f"the folder {url_path(root)} is not there (the root of {version.library})")
        return crawl
    limits = ArchiveLimits(settings.getint("DOCSBOT_ARCHIVE_MAX_BYTES"), settings.getint("DOCSBOT_ARCHIVE_MAX_MEMBERS"))
    unpacked = unpack_root(
        root,
        Path(settings.get("DOCSBOT_DATA_DIR")),
        version.library,
        version.name,
        limits=limits,
        headers={"User-Agent": settings.get("USER_AGENT")},
        timeout=settings.getfloat("DOWNLOAD_TIMEOUT"),
    )
    logger.info("the archive %s", unpacked.message)
    return replace(crawl, root_url=unpacked.folder_url)


def crawl_scope(crawl: CrawlSettings) -> Scope:
    """The scope the run starts with (:meth:`~docsbot.arguments.CrawlSettings.crawl_scope`). Raises
    :class:`SpiderArgumentError` for a stored pattern that no longer reads (the database edited by hand)."""
    try:
        return crawl.crawl_scope()
    except ValueError as exc:
        raise SpiderArgumentError(f"the version's stored scope: {exc}") from None


def private_docs(crawl: CrawlSettings, render: RenderPolicy) -> Credentials | None:
    """The private docs' headers, read from the environment now, before anything is fetched
    (:meth:`~docsbot.arguments.CrawlSettings.credentials`; the process's environment is where Scrapyd and Scrapy
    Cloud put secrets, and the variable names are the user's, so no setting can declare them). Raises
    :class:`SpiderArgumentError` for a variable that is not set, or with rendering: a browser follows redirects
    and loads a page's resources on its own, where the headers cannot be held to the root's host."""
    credentials = crawl.credentials(os.environ)
    if credentials is not None and render.enabled:
        raise SpiderArgumentError(
            "private docs (-a headers, -a http_auth) are not rendered (a browser would carry the headers wherever the "
            "page leads): drop -a render=js and DOCSBOT_RENDER_URLS for this crawl"
        )
    return credentials


def guard_network(settings: BaseSettings, crawl: CrawlSettings) -> None:
    """``-a network=public`` (a crawl started from the network): this process connects only to public addresses
    and ``DOCSBOT_ALLOWED_NETWORKS`` (:mod:`docsbot.network`), enforced by :class:`docsbot.resolver.
    GuardedResolver`, which must be the process's resolver; nothing is rendered (a browser resolves and
    connects on its own). Raises :class:`SpiderArgumentError` when the guard cannot hold."""
    if crawl.network != "public":
        network.restrict(None)
        return
    from docsbot.resolver import GuardedResolver

    try:
        policy = network.NetworkPolicy.public(settings.get("DOCSBOT_ALLOWED_NETWORKS"))
    except ValueError as exc:
        raise SpiderArgumentError(str(exc)) from None
    resolver = load_object(settings.get("TWISTED_DNS_RESOLVER"))
    if not (isinstance(resolver, type) and issubclass(resolver, GuardedResolver)):
        raise SpiderArgumentError(
            f"-a network=public needs TWISTED_DNS_RESOLVER = docsbot.resolver.GuardedResolver (it is "
            f"{settings.get('TWISTED_DNS_RESOLVER')}): only that resolver keeps the crawl off private addresses"
        )
    try:
        render = RenderPolicy.from_settings(crawl.render, settings.get("DOCSBOT_RENDER_URLS"))
    except ValueError as exc:
        raise SpiderArgumentError(str(exc)) from None
    if render.enabled:
        raise SpiderArgumentError(
            "-a network=public renders nothing (a browser resolves and connects on its own): drop -a render=js "
            "and DOCSBOT_RENDER_URLS for this crawl"
        )
    network.restrict(policy)


def rendering_policy(settings: BaseSettings, mode: str) -> RenderPolicy:
    """Which pages go through the browser (docsbot.core.handler.DownloadHandler hands them to scrapy-playwright's
    handler); with any, whether that can work here is checked now, before anything is fetched."""
    try:
        policy = RenderPolicy.from_settings(mode, settings.get("DOCSBOT_RENDER_URLS"))
    except ValueError as exc:
        raise SpiderArgumentError(str(exc)) from None
    if policy.enabled:
        check_rendering(settings)
    return policy
