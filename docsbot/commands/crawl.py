"""``scrapy crawl`` whose exit code is the run's outcome, and which reports setup errors in one line.

Scrapy's own ``crawl`` exits 1 only when the crawler fails to start (``CrawlerProcess.bootstrap_failed``): a run
that stops because its root URL failed, that was told to stop, or that stored only part of what it fetched exits
0, so cron, ``make``, Scrapyd and ``&&`` cannot tell it from a good run. This command is Scrapy's, plus two things:

- the exit code is the run's outcome, decided by one rule (:func:`docsbot.refresh.run_outcome`, applied by
  :class:`docsbot.extensions.run.IndexRun` when the spider closes): **0** complete; **1** the run did not finish or
  could not start (root failed, stopped, model or database unavailable), or a full index stored no page; **3** it
  finished but pages were not stored (failed fetches, extractions, writes) or a bookkeeping step could not be
  written; **4** every page is stored but chunks still wait for their vectors (``docsbot embed`` completes
  them). The summary line and ``crawl_runs`` say the same;
- a :class:`~docsbot.errors.DocsbotError` raised while the run is set up (unreachable database, unknown library,
  missing model, browser or environment variable: the spider and :class:`docsbot.extensions.run.IndexRun`) is
  logged as its message alone, not as asyncio's "Task exception was never retrieved" with a traceback; the crawl does
  not start and the exit code is 1. An ``-a`` argument the spider does not know or cannot read
  (:class:`~docsbot.arguments.ArgumentUsageError`) is a usage error: exit code **2**, as Scrapy's own usage errors
  (``scrapy.cmdline`` exits 2 on ``UsageError``).

Only public Scrapy API is used: ``CrawlerProcess.create_crawler``, ``crawl`` (whose task or Deferred reports
the setup error) and ``start``, and the crawler's stats.

Scrapyd runs jobs through ``scrapy crawl`` too, so there a failed run ends its process with the same codes. Zyte
Scrapy Cloud starts spiders with its own runner and reports the close reason as the job's outcome.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

# Scrapy's HTTP/1.1 download handler, imported with this command rather than when the crawler builds its handlers:
# its TLS modules name three deprecated aliases with inspect.stack(), whose cost grows with the frames on the stack
# times the modules loaded (CPython #92041). Here, before the crawl's own modules load, that is about 70 ms of a
# run's start instead of 130-150 ms (an unchanged refresh of the Python docs takes about 2 s in all).
import scrapy.core.downloader.handlers.http11  # noqa: F401
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from twisted.internet.defer import Deferred

from docsbot.arguments import RUNNER_ARGUMENT_PREFIX, ArgumentUsageError, CrawlArguments
from docsbot.display import escape_log_records
from docsbot.errors import DocsbotError
from docsbot.refresh import EXIT_FAILED

if TYPE_CHECKING:
    import argparse

    from twisted.python.failure import Failure

logger = logging.getLogger("docsbot")
EXIT_USAGE = 2  # a spider argument the spider does not know or cannot read (Scrapy's code for a usage error)


def _report_setup_error(exc: BaseException) -> bool:
    """Log a setup error as its one-line message; ``True`` if it was one (anything else is Scrapy's to report)."""
    if isinstance(exc, DocsbotError):
        logger.error("%s", exc)
        return True
    return False


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's options, and the docs spider's ``-a`` arguments checked before the crawler process exists: an
        unknown or malformed one is argparse's two-line usage error with exit code 2, before Scrapy logs its version
        banner (``scrapy.cmdline`` builds the crawler process after this). The spider checks them again when built
        (Zyte Scrapy Cloud builds it without this command)."""
        super().process_options(args, opts)
        if args == ["docs"]:
            given = {k: v for k, v in opts.spargs.items() if not k.startswith(RUNNER_ARGUMENT_PREFIX)}
            try:
                CrawlArguments.parse(**given)
            except ArgumentUsageError as exc:
                raise UsageError(str(exc), print_help=False) from None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        escape_log_records()  # a name, URL or error in a log line cannot forge another line
        if len(args) != 1:
            raise UsageError("give the name of one spider: scrapy crawl docs -a url=…")
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler(args[0])
        running = self.crawler_process.crawl(crawler, **opts.spargs)
        setup_failed: list[BaseException] = []
        if isinstance(running, Deferred):

            def errback(failure: Failure) -> Failure | None:
                if _report_setup_error(failure.value):
                    setup_failed.append(failure.value)
                    return None
                return failure

            running.addErrback(errback)
        elif isinstance(running, asyncio.Future):

            def done(task: asyncio.Future[Any]) -> None:
                # Retrieving the exception keeps asyncio from logging it again as "never retrieved"
                if not task.cancelled() and _report_setup_error(exc := task.exception()):
                    setup_failed.append(exc)

            running.add_done_callback(done)
        self.crawler_process.start()
        if any(isinstance(exc, ArgumentUsageError) for exc in setup_failed):
            self.exitcode = EXIT_USAGE
            return
        if setup_failed or self.crawler_process.bootstrap_failed or crawler.stats is None:
            self.exitcode = EXIT_FAILED
            return
        self.exitcode = int(crawler.stats.get_value("docsbot/exit_code", EXIT_FAILED))
