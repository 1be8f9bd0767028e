"""docsbot as a Scrapy add-on (https://docs.scrapy.org/en/latest/topics/addons.html): ``ADDONS =
{"docsbot.addon.Docsbot": 0}`` (docsbot's settings module has it) configures every component a docs crawl needs,
before the crawler is built, and nothing changes a setting after that.

- **Merged, not replaced.** Each component is added to its component priority dictionary unless the project already
  names it (``setdefault_in_component_priority_dict``), so a project's own ``ITEM_PIPELINES``,
  ``DOWNLOADER_MIDDLEWARES`` or ``EXTENSIONS`` (a settings file, ``-s``, Scrapy Cloud's raw settings) sit beside
  docsbot's instead of replacing them; a project that sets one of docsbot's to ``None``, or to another priority,
  keeps its choice. The required ones are then checked (:func:`check_components`): one switched off or out of order
  stops the crawl before it writes anything, with one line naming it.
- **Plain settings** (the downloader, the log formatter, the download handlers: http(s), and ``file`` for folders)
  are set at the add-on priority: below the project's, so a settings file still wins. (The DNS resolver,
  ``TWISTED_DNS_RESOLVER``, stays in docsbot's settings module: Scrapy installs it for the whole process from the
  project's settings, which an add-on does not reach.)
- **Settings checked**: a malformed docsbot setting (the environment's, or one given with ``-s``) stops the crawl
  before anything is built, with one line naming it (:func:`check_settings`, against
  :class:`docsbot.config.DocsbotSettings`).
- **The browser** a render runs in (``PLAYWRIGHT_LAUNCH_OPTIONS``) is made of ``DOCSBOT_CHROMIUM`` and
  ``DOCSBOT_CHROMIUM_USER``, whatever set them (the environment, ``-s``), at the add-on priority: a project's own
  launch options win (:func:`docsbot.render.playwright_launch_options`).
- **The answers that mean gone** (``DOCSBOT_GONE_STATUSES``, 404 and 410 by default) are added to
  ``HTTPERROR_ALLOWED_CODES``, whatever set them (the environment, ``-s``): Scrapy's HttpErrorMiddleware must let
  them reach the spider, which deletes those pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from docsbot.config import DocsbotSettings, check_overrides
from docsbot.display import escape_log_records
from docsbot.errors import DocsbotError
from docsbot.render import playwright_launch_options

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings, Settings

__all__ = [
    "COMPONENTS", "REQUIRED_COMPONENTS", "ComponentError", "Docsbot", "SettingsError", "check_components",
    "check_settings",
]  # fmt: skip

# Per component priority dictionary: docsbot's entries (None: Scrapy's own, switched off for docsbot's subclass).
COMPONENTS: dict[str, dict[str, int | None]] = {
    # The spider keeps each page's depth itself (stored pages keep their stored depth; docsbot/refresh/ledger.py), so
    # Scrapy's DepthMiddleware, which would overwrite it with parent + 1, is off.
    "SPIDER_MIDDLEWARES": {"scrapy.spidermiddlewares.depth.DepthMiddleware": None},
    "DOWNLOADER_MIDDLEWARES": {
        # First: a request out of scope (a redirect hop to another host) is dropped before anything else, robots.txt
        # included, is asked of that host.
        "docsbot.downloadermiddlewares.scope.ScopeMiddleware": 50,
        # Scrapy's, fixed: all requests waiting for robots.txt are checked (see
        # docsbot.downloadermiddlewares.robotstxt).
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "docsbot.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 100,
        # A private docs host's headers, to its host alone (docsbot.downloadermiddlewares.credentials); beside
        # Scrapy's HttpAuthMiddleware (300), which docsbot does not configure.
        "docsbot.downloadermiddlewares.credentials.CredentialsMiddleware": 310,
        # Scrapy's retries, waiting what a 429/503's Retry-After asks (up to DOCSBOT_RETRY_AFTER_MAX s;
        # docsbot.downloadermiddlewares.retry).
        "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
        "docsbot.downloadermiddlewares.retry.RetryAfterMiddleware": 550,
        # Sees a response after the conditional-request middleware (580) and the redirect middleware (600).
        "docsbot.downloadermiddlewares.render.RenderMiddleware": 570,
        # Validators on stored pages (RFC 9110 §13.1), a 304 short-circuited.
        "docsbot.downloadermiddlewares.conditional.ConditionalRequestMiddleware": 580,
    },
    # The run's setup and bookkeeping (docsbot.extensions.run): built first, before every other docsbot component.
    # A terminal's progress bars (docsbot.extensions.progress), after the run it reads; off for a log file or a job.
    "EXTENSIONS": {"docsbot.extensions.run.IndexRun": 0, "docsbot.extensions.progress.CrawlProgress": 10},
    # HTML → Markdown → chunks, then one transaction per page, in that order.
    "ITEM_PIPELINES": {"docsbot.pipelines.chunk.ChunkPipeline": 300, "docsbot.pipelines.store.StorePipeline": 500},
}
SETTINGS: dict[str, Any] = {
    # Scrapy's downloader, holding a slot's concurrency when several requests are queued at once
    # (docsbot.core.downloader).
    "DOWNLOADER": "docsbot.core.downloader.Downloader",
    # Item errors and drops are one line (URL and reason), never the item (its embeddings are ~150 KB of text).
    "LOG_FORMATTER": "docsbot.logformatter.DocsbotLogFormatter",
}
# Scrapy's HTTP handler, handing pages to render to scrapy-playwright's (started on the first one).
DOWNLOAD_HANDLER = "docsbot.core.handler.DownloadHandler"
# A folder's files answered as a site's pages are, with validators and 304s (Scrapy's own file handler reads any file).
FILE_DOWNLOAD_HANDLER = "docsbot.core.files.FileDownloadHandler"
# The components a docs crawl cannot store correctly without, per component setting, in the order they must run.
REQUIRED_COMPONENTS: dict[str, tuple[str, ...]] = {
    "EXTENSIONS": ("docsbot.extensions.run.IndexRun",),
    "DOWNLOADER_MIDDLEWARES": (
        "docsbot.downloadermiddlewares.scope.ScopeMiddleware",
        "docsbot.downloadermiddlewares.conditional.ConditionalRequestMiddleware",
    ),
    "ITEM_PIPELINES": ("docsbot.pipelines.chunk.ChunkPipeline", "docsbot.pipelines.store.StorePipeline"),
}


class ComponentError(DocsbotError, RuntimeError):
    """A component docsbot needs is switched off or out of order in the crawl's settings, or the add-on itself is
    not enabled."""


class SettingsError(DocsbotError, ValueError):
    """A docsbot setting holds a value of the wrong type or out of range (the environment, ``-s``, a settings file):
    the crawl stops before it writes anything, naming the setting."""


def check_settings(settings: BaseSettings) -> None:
    """Raise :class:`SettingsError` naming every malformed docsbot setting: those the environment gave
    (``DOCSBOT_SETTINGS_ERRORS``, unless a higher priority overrides them) and those set above the project's
    priority (``-s``, a spider's custom settings), validated against :class:`docsbot.config.DocsbotSettings`."""
    project = SETTINGS_PRIORITIES["project"]
    overridden = [
        name
        for name in DocsbotSettings.model_fields
        if name in settings and (settings.getpriority(name) or 0) > project
    ]
    problems = [p for p in settings.getlist("DOCSBOT_SETTINGS_ERRORS") if p.split("=", 1)[0] not in overridden]
    problems += check_overrides(settings.get, overridden)
    if problems:
        raise SettingsError("; ".join(problems))


class Docsbot:
    """The add-on: :meth:`update_settings` is called by Scrapy (``ADDONS``) before any component is built."""

    def update_settings(self, settings: Settings) -> None:
        """Add docsbot's components and settings (see the module docstring). Raises :class:`SettingsError` for a
        malformed docsbot setting and :class:`ComponentError` when a required component is switched off or out of
        order."""
        escape_log_records()  # a name, URL or error in a log line cannot forge another line (docsbot.display)
        check_settings(settings)
        for name, components in COMPONENTS.items():
            for component, priority in components.items():
                settings.setdefault_in_component_priority_dict(name, load_object(component), priority)
        for name, value in SETTINGS.items():
            settings.set(name, value, "addon")
        settings.set("PLAYWRIGHT_LAUNCH_OPTIONS", playwright_launch_options(settings), "addon")
        # Two settings the add-on adds to, keeping what a project gave (at the project's priority, if higher).
        handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
        for scheme in ("http", "https"):
            handlers.setdefault(scheme, DOWNLOAD_HANDLER)
        handlers.setdefault("file", FILE_DOWNLOAD_HANDLER)
        _set_keeping_priority(settings, "DOWNLOAD_HANDLERS", handlers)
        gone = {int(code) for code in settings.getlist("DOCSBOT_GONE_STATUSES")}  # valid: check_settings passed
        allowed = {int(code) for code in settings.getlist("HTTPERROR_ALLOWED_CODES")}
        _set_keeping_priority(settings, "HTTPERROR_ALLOWED_CODES", sorted(allowed | gone))
        check_components(settings)


def _set_keeping_priority(settings: Settings, name: str, value: Any) -> None:
    settings.set(name, value, max(settings.getpriority(name) or 0, SETTINGS_PRIORITIES["addon"]))


def check_components(settings: BaseSettings) -> None:
    """Raise :class:`ComponentError` unless every :data:`REQUIRED_COMPONENTS` entry (or a subclass of it) is
    enabled, in that order (a project may set one of docsbot's to ``None`` or move it; the add-on keeps its choice)."""
    for setting, required in REQUIRED_COMPONENTS.items():
        enabled = [
            load_object(c) for c in build_component_list(settings.get_component_priority_dict_with_base(setting))
        ]
        positions = []
        for path in required:
            cls = load_object(path)
            found = [i for i, c in enumerate(enabled) if isinstance(c, type) and issubclass(c, cls)]
            if not found:
                raise ComponentError(
                    f"{path} is switched off in {setting}: a docs crawl needs {', '.join(required)} (the docsbot "
                    "add-on adds them; a project's settings set this one to None)"
                )
            positions.append(found[0])
        if positions != sorted(positions):
            raise ComponentError(f"{setting} must run {', '.join(required)} in this order")


def check_addon(settings: BaseSettings) -> None:
    """Raise :class:`ComponentError` unless ``ADDONS`` enables :class:`Docsbot` (or a subclass): without it a
    docs crawl would have none of its components. Called by the spider, which is built before the add-ons run."""
    for path in build_component_list(settings.get_component_priority_dict_with_base("ADDONS")):
        addon = load_object(path)
        if isinstance(addon, type) and issubclass(addon, Docsbot):
            return
    raise ComponentError(
        'the docsbot add-on is not enabled: ADDONS = {"docsbot.addon.Docsbot": 0} (docsbot.settings has it; a '
        "project's own ADDONS setting replaced it)"
    )
