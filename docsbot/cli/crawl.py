"""``docsbot index`` and ``docsbot refresh``: the ``docs`` spider run in the foreground, from any folder.

Both run ``scrapy crawl docs`` with docsbot's settings (``SCRAPY_SETTINGS_MODULE=docsbot.settings``, what a checkout's
``scrapy.cfg`` says), as a child process of this Python: the same spider, settings, log (on stderr) and exit codes as
``scrapy crawl docs`` run in the checkout (:mod:`docsbot.commands.crawl`: 0 complete, 1 did not finish or could not
start, 3 pages not stored, 4 vectors still waiting). Every ``-a name=value`` and ``-s NAME=VALUE`` is passed on as
given; the spider arguments are checked here first (:meth:`docsbot.arguments.CrawlArguments.parse`), so an unknown or
malformed one is one line and exit code 2 before any crawl starts. Ctrl-C stops the crawl as it stops ``scrapy crawl``
(pages stored stay stored, nothing is deleted): this process waits for it and exits with its code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from docsbot.cli.common import library_version

if TYPE_CHECKING:
    import argparse

__all__ = ["cmd_index", "cmd_refresh", "crawl_command"]

SETTINGS_MODULE = "docsbot.settings"


def _pairs(values: list[str] | None, option: str) -> list[tuple[str, str]]:
    """``name=value`` strings as pairs; raises ``SystemExit(2)`` with one line for one without ``=``."""
    pairs = []
    for value in values or ():
        name, sep, rest = value.partition("=")
        if not sep or not name.strip():
            print(f"docsbot: {option} takes NAME=VALUE, got {value!r}", file=sys.stderr)
            raise SystemExit(2)
        pairs.append((name.strip(), rest))
    return pairs


def _checked(spider_args: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``spider_args`` if the docs spider would take them; else ``SystemExit(2)`` after one line naming the first
    unknown or malformed argument (the same words the spider would log, without a crawl's start-up lines)."""
    from docsbot.arguments import RUNNER_ARGUMENT_PREFIX, ArgumentUsageError, CrawlArguments

    try:
        CrawlArguments.parse(**{k: v for k, v in spider_args if not k.startswith(RUNNER_ARGUMENT_PREFIX)})
    except ArgumentUsageError as exc:
        print(f"docsbot: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return spider_args


def crawl_command(spider_args: list[tuple[str, str]], settings: list[tuple[str, str]] = ()) -> list[str]:
    """The ``scrapy crawl docs`` command line these spider arguments and settings make, run by this Python."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "docs"]
    for name, value in spider_args:
        cmd += ["-a", f"{name}={value}"]
    for name, value in settings:
        cmd += ["-s", f"{name}={value}"]
    return cmd


def _run(cmd: list[str]) -> int:
    """Run ``cmd`` in the foreground with docsbot's settings module; its exit code (128 + N when signal N ended it,
    as a shell says). Ctrl-C reaches the crawl, which stops cleanly; this process only waits for it."""
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": SETTINGS_MODULE}
    process = subprocess.Popen(cmd, env=env)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the crawl, in the same process group, gets it
    try:
        code = process.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code


def _root(text: str) -> str:
    """A root given as a relative path that exists here (``./docs``, ``docs.zip``) as an absolute one; anything else
    (a URL, an absolute path) as given: the spider reads it."""
    if "://" in text or text.startswith(("file:", "/", "~")):
        return text
    path = Path(text)
    return str(path.absolute()) if path.exists() else text


def cmd_index(args: argparse.Namespace) -> int:
    spider_args = [("url", _root(args.url))]
    if args.library is not None:
        spider_args.append(("library", args.library))
    if args.version is not None:
        spider_args.append(("version", args.version))
    spider_args = _checked(spider_args + _pairs(args.arguments, "-a"))
    return _run(crawl_command(spider_args, _pairs(args.settings, "-s")))


def cmd_refresh(args: argparse.Namespace) -> int:
    library, version = library_version(args.library)
    spider_args = [("library", library), ("mode", "refresh")]
    if version is not None:
        spider_args.append(("version", version))
    spider_args = _checked(spider_args + _pairs(args.arguments, "-a"))
    return _run(crawl_command(spider_args, _pairs(args.settings, "-s")))
