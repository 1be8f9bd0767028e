"""JavaScript rendering through scrapy-playwright, for documentation sites that build their pages in the browser.

Which pages are rendered: all of them with ``-a render=js``, and any page whose canonical URL matches the
``DOCSBOT_RENDER_URLS`` regular expression (``re.search``; a list of expressions in a settings file): their requests
carry ``meta["playwright"]``, which :class:`docsbot.core.handler.DownloadHandler` hands to scrapy-playwright's
handler. Everything else goes through Scrapy's plain HTTP handler; so does every *conditional* request: a stored
page is first revalidated with a plain conditional request (RFC 9110 §13.1) and rendered only when that answers
200, so an unchanged JavaScript site costs 304s, not browser renders. (Playwright does not handle conditional
requests: a 304 to a browser navigation hangs until the navigation timeout.)

The browser is the system Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``; the ``DOCSBOT_CHROMIUM``
setting names another, from the environment or ``-s``); it starts on the first render only. The add-on sets
``PLAYWRIGHT_LAUNCH_OPTIONS`` from it (:func:`playwright_launch_options`), unless a project sets its own. Pages are
closed after each render (scrapy-playwright's default without ``playwright_include_page``). A render that times
out (``PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT``, ms) or crashes fails the request: the stored page is kept.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.settings import BaseSettings

__all__ = [
    "RENDER_MODES",
    "RenderError",
    "RenderPolicy",
    "abort_request",
    "check_rendering",
    "launch_options",
    "playwright_launch_options",
]

RENDER_MODES = ("none", "js")
DEFAULT_CHROMIUM = "/usr/bin/chromium"  # DOCSBOT_CHROMIUM's default (docsbot.config)
DEFAULT_CHROMIUM_USER = "nobody"  # DOCSBOT_CHROMIUM_USER's default
# The unprivileged launcher's own arguments (docsbot/bin/chromium-unprivileged takes them out before the browser's)
_BROWSER_ARG = "--docsbot-chromium="
_USER_ARG = "--docsbot-chromium-user="
# Sub-resources a text extractor never needs; aborting them keeps renders fast and the browser small.
_SKIPPED_RESOURCES = frozenset({"image", "media", "font"})


class RenderError(DocsbotError, RuntimeError):
    """Rendering was asked for but cannot work here (scrapy-playwright missing, no Chromium at the path)."""


@dataclass(frozen=True)
class RenderPolicy:
    """Which URLs are rendered: every one when ``all_pages``, else those matching one of ``patterns``."""

    all_pages: bool = False
    patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_settings(cls, mode: str, patterns: str | Iterable[str] | None) -> RenderPolicy:
        """``mode`` is the ``render`` spider argument (``none``/``js``); ``patterns`` the ``DOCSBOT_RENDER_URLS``
        setting: one regular expression (a string) or several (a list). Raises ``ValueError`` for a bad one."""
        if isinstance(patterns, str):
            patterns = [patterns] if patterns.strip() else []
        compiled = []
        for pattern in patterns or ():
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"DOCSBOT_RENDER_URLS: bad regular expression {pattern!r}: {exc}") from None
        return cls(all_pages=mode == "js", patterns=tuple(compiled))

    @property
    def enabled(self) -> bool:
        return self.all_pages or bool(self.patterns)

    def __call__(self, url: str) -> bool:
        return self.all_pages or any(p.search(url) for p in self.patterns)


def check_rendering(settings: BaseSettings) -> None:
    """Raise :class:`RenderError` when rendering cannot work here: scrapy-playwright is not installed, or the browser
    ``PLAYWRIGHT_LAUNCH_OPTIONS`` names is missing (as root, the browser the unprivileged launcher starts). (The
    download handler, :class:`docsbot.core.handler.DownloadHandler`, hands a page to scrapy-playwright's handler when
    its request asks for a render.)"""
    try:
        import scrapy_playwright  # noqa: F401
    except ImportError:
        raise RenderError("rendering needs scrapy-playwright: pip install scrapy-playwright") from None
    options = settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS") or {}
    executable = options.get("executable_path")
    if executable and os.path.basename(executable) == "chromium-unprivileged":  # the browser it starts, as root
        given = [a.removeprefix(_BROWSER_ARG) for a in options.get("args") or () if a.startswith(_BROWSER_ARG)]
        executable = given[-1] if given else settings.get("DOCSBOT_CHROMIUM") or DEFAULT_CHROMIUM
    if executable and not os.access(executable, os.X_OK):
        raise RenderError(
            f"rendering needs Chromium at {executable} (Debian: apt-get install chromium); set DOCSBOT_CHROMIUM "
            "or PLAYWRIGHT_LAUNCH_OPTIONS['executable_path'] to another browser"
        )


def playwright_launch_options(settings: BaseSettings) -> dict[str, Any]:
    """``PLAYWRIGHT_LAUNCH_OPTIONS`` for the crawl whose settings these are: :func:`launch_options` for the browser
    ``DOCSBOT_CHROMIUM`` names and, as root, the user ``DOCSBOT_CHROMIUM_USER`` names (each from the environment,
    ``-s`` or a settings file, as any setting)."""
    return launch_options(
        settings.get("DOCSBOT_CHROMIUM") or DEFAULT_CHROMIUM,
        root=hasattr(os, "geteuid") and os.geteuid() == 0,
        user=settings.get("DOCSBOT_CHROMIUM_USER") or DEFAULT_CHROMIUM_USER,
    )


def unprivileged_launcher(user: str = "nobody") -> str | None:
    """The path of ``docsbot/bin/chromium-unprivileged`` when it can run here (an executable file on disk, with
    ``setpriv`` and ``user``, the user it switches to), else ``None``."""
    import pwd
    import shutil
    from importlib import resources

    try:
        path = resources.files("docsbot") / "bin" / "chromium-unprivileged"
        on_disk = os.fspath(path)  # type: ignore[arg-type]
    except (TypeError, FileNotFoundError):  # inside a zipped egg: no file to run
        return None
    try:
        pwd.getpwnam(user)
    except KeyError:
        return None
    if not os.access(on_disk, os.X_OK) or shutil.which("setpriv") is None:
        return None
    return on_disk


def launch_options(executable: str, *, root: bool, user: str = DEFAULT_CHROMIUM_USER) -> dict[str, Any]:
    """``PLAYWRIGHT_LAUNCH_OPTIONS`` for a headless system Chromium on a machine without outside network:
    background networking off (its connections would be refused). As root, Chromium refuses its sandbox: the
    browser is started through :func:`unprivileged_launcher` (``executable`` as the unprivileged ``user``, with its
    sandbox; both handed to the launcher as arguments of its own, which it takes out); only where that cannot run
    (no ``setpriv``, no such user, a zipped egg) does it fall back to ``--no-sandbox``."""
    args = [
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    if root:
        launcher = unprivileged_launcher(user)
        if launcher is not None:
            args += [f"{_BROWSER_ARG}{executable}", f"{_USER_ARG}{user}"]
            return {"executable_path": launcher, "headless": True, "args": args}
        args.append("--no-sandbox")
    return {"executable_path": executable, "headless": True, "args": args}


def abort_request(request: Any) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: skip images, media and fonts while rendering (text is all docsbot keeps)."""
    return request.resource_type in _SKIPPED_RESOURCES
