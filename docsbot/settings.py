"""Scrapy settings for docsbot.

docsbot's own settings (``DOCSBOT_*``, ``DATABASE_URL``, and the Scrapy settings they feed, such as
``CONCURRENT_REQUESTS`` from ``DOCSBOT_CONCURRENT_REQUESTS``) are declared once, typed and described, in
:class:`docsbot.config.DocsbotSettings`, and read from the environment when this module is imported (how Scrapyd and
Zyte Scrapy Cloud pass secrets). A malformed value does not raise here: it takes its default and is listed in
``DOCSBOT_SETTINGS_ERRORS``, on which the crawl (its add-on) and the ``docsbot`` command stop with one line naming
it. Each can be overridden by ``-s NAME=VALUE`` on the command line, checked against the same model, and the
crawl-shaped ones by spider arguments (``-a max_depth=2``). Below: the Scrapy settings docsbot sets, each with why.
"""

from __future__ import annotations

from docsbot.config import load_settings

# docsbot's settings, from the environment: every name of docsbot.config.DocsbotSettings (or the Scrapy setting it
# feeds), and the one line per malformed value the crawl and the CLI stop on.
_docsbot, DOCSBOT_SETTINGS_ERRORS = load_settings()
globals().update(_docsbot.scrapy_settings())

# The project's name (Scrapy's logs and the default User-Agent).
BOT_NAME = "docsbot"
# Where Scrapy finds the docs spider.
SPIDER_MODULES = ["spiders"]
# Where `scrapy genspider` would put a new one.
NEWSPIDER_MODULE = "spiders"
COMMANDS_MODULE = "docsbot.commands"  # `scrapy crawl` exits 1 when a run does not finish

# --- Crawl ------------------------------------------------------------------------------------------------
# What the crawler says it is.
USER_AGENT = "docsbot/0.1 (documentation indexer; +https://pypi.org/project/scrapy/)"
# robots.txt is obeyed (Disallow and Crawl-delay); a page it disallows is skipped by rule, never a failure.
ROBOTSTXT_OBEY = True
# Politeness is bounded by the per-domain concurrency (DOCSBOT_CONCURRENT_REQUESTS_PER_DOMAIN), robots.txt
# (Crawl-delay included) and Scrapy's retries of 429/503. AutoThrottle is off: it paces every request by a delay
# derived from measured latency, which on an all-304 refresh is mostly the crawler's own event-loop time, and it
# never lowers that delay on non-200 answers; with it, an unchanged refresh of 538 pages took 2.2-4.8 s here where a
# bare Scrapy spider takes 1.6 s. Turn it on for a fragile server with -s AUTOTHROTTLE_ENABLED=1
# (AUTOTHROTTLE_START_DELAY=0 keeps a refresh from starting slow).
AUTOTHROTTLE_ENABLED = False
# AutoThrottle's first delay (seconds), when it is turned on.
AUTOTHROTTLE_START_DELAY = 0
# AutoThrottle's longest delay (seconds).
AUTOTHROTTLE_MAX_DELAY = 10
# AutoThrottle's target of requests in flight per host.
AUTOTHROTTLE_TARGET_CONCURRENCY = 8
# Outputs of one callback processed in parallel. A page yields its links and at most one item, and Scrapy starts
# this many asyncio tasks for every callback and errback (each 304 included): 100, the default, cost 0.6 s of
# an all-304 refresh of 538 pages here.
CONCURRENT_ITEMS = 4
# Seconds a download may take.
DOWNLOAD_TIMEOUT = 30
# Breadth-first: requests leave in the order the spider planned them (the root, then stored pages by depth, then
# links as found), as Scrapy's FAQ describes; its default LIFO queues fetch the last-queued seed first, so on a
# busy machine the root's own links came last.
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
# The same order for a crawl with a JOBDIR.
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
# Scrapy's retries of a failed download (5xx, timeouts, connection errors).
RETRY_TIMES = 2
# No warning for large pages: DOWNLOAD_MAXSIZE (DOCSBOT_MAX_PAGE_BYTES) is the limit.
DOWNLOAD_WARNSIZE = 0

# --- JavaScript rendering (scrapy-playwright; see docsbot.render) ----------------------------------------------
# The browser scrapy-playwright drives.
PLAYWRIGHT_BROWSER_TYPE = "chromium"
# How it is launched (PLAYWRIGHT_LAUNCH_OPTIONS) is not set here: the add-on makes it of the crawl's DOCSBOT_CHROMIUM
# and DOCSBOT_CHROMIUM_USER, whatever set them (the environment, -s), unless a project sets its own.
# Images, media and fonts are not loaded by a render.
PLAYWRIGHT_ABORT_REQUEST = "docsbot.render.abort_request"

# --- Components ---------------------------------------------------------------------------------------------
# docsbot's Scrapy add-on (docsbot.addon.Docsbot): adds docsbot's middlewares, pipelines, run extension, downloader,
# log formatter and download handler beside a project's own, and lets the answers that mean gone
# (DOCSBOT_GONE_STATUSES) reach the spider; nothing is changed after the crawler is built.
ADDONS = {"docsbot.addon.Docsbot": 0}

# --- Network (docsbot/network.py) ------------------------------------------------------------------------------
# Every name a crawl resolves goes through this resolver (Scrapy's CachingHostnameResolver, IPv4 and IPv6): a crawl
# started from the network (-a network=public: MCP's index_library, the web pages) is refused every address that is
# not public (loopback, private, link-local...), at every connection, redirects and robots.txt included. Scrapy
# installs it for the whole process, from the project's settings (an add-on cannot set it).
TWISTED_DNS_RESOLVER = "docsbot.resolver.GuardedResolver"

# --- Logging and control servers -------------------------------------------------------------------------------
# A crawler that holds database credentials exposes no control servers unless a user turns them on.
TELNETCONSOLE_ENABLED = False
# ... nor Scrapy's remote-control server.
REMOTE_CONTROL_ENABLED = False
# Feeds (-o items.jsonl) are written as UTF-8, not escaped ASCII.
FEED_EXPORT_ENCODING = "utf-8"
