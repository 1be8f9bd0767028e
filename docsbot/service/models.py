"""What the service answers: typed results shared by every interface (the MCP tools' output schemas, the web
pages' JSON twins and templates, the CLI's lines). Field descriptions are what an agent reads."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "DocsResult",
    "DocsSection",
    "LibraryCandidate",
    "LibraryMatches",
    "LibraryVersion",
    "ListLibrariesResult",
    "PageResult",
    "PageSection",
    "CancelResult",
    "RefreshResult",
    "RunList",
    "RemoveResult",
    "RunInfo",
    "RunState",
    "VersionStatus",
    "SearchDocsResult",
    "SearchHit",
    "PageChangeInfo",
    "ChangesResult",
    "SymbolRef",
    "VersionDiff",
]

RunState = Literal["starting", "running", "finished", "failed", "interrupted"]
# whether a version can answer: docsbot.service.states.version_status
VersionStatus = Literal["ready", "indexing", "empty", "failed", "not_indexed"]


class SearchHit(BaseModel):
    title: str
    url: str = Field(description="the page URL (pass it to get_page)")
    deep_link: str = Field(description="URL of the best-matching section (url#anchor), or the page URL")
    heading_path: list[str] = Field(description="headings the matching text sits under, outermost first")
    score: float = Field(description="fusion score; higher is better, not comparable across queries")
    content: str = Field(description="the matching Markdown")
    library: str
    version: str
    last_checked_at: str | None = Field(None, description="when a run last found the page (its last 304 or 200)")
    last_modified: str | None = Field(None, description="the server's Last-Modified for the page, as sent")
    changed_at: str | None = Field(None, description="when the page's text last changed in the index")
    explanation: dict[str, Any] | None = Field(
        None,
        description="asked for with explain: the result's rank in each candidate list (lists: vector_chunks, "
        "vector_definitions, bm25_chunks, bm25_pages, symbols; null where it is not a candidate) and every ranking "
        "knob that changed its score (factors: knob, value, effect); with a reranker on, rerank: reranker, score, "
        "rank_before, rank_after (or error when it failed and the fused order was kept)",
    )


class SearchDocsResult(BaseModel):
    query: str
    results: list[SearchHit]


class RunInfo(BaseModel):
    run_id: str = Field(description="the id to pass to get_run")
    crawl_run_id: int | None = Field(None, description="the run's row in crawl_runs, once it has one")
    library: str
    version: str
    mode: str
    state: RunState = Field(
        description="starting (launched, not yet crawling), running, finished (completed), failed (stopped "
        "early or could not start), interrupted (killed: it never recorded an end)"
    )
    started_at: str | None = None
    finished_at: str | None = None
    finish_reason: str | None = Field(None, description="Scrapy's close reason: finished, root_failed, shutdown…")
    outcome: str | None = Field(
        None,
        description="once it ended: complete, incomplete (pages not stored), vectors_pending (every page stored, "
        "chunks still waiting for a vector), failed, or interrupted",
    )
    outcome_reason: str | None = Field(None, description="what is missing, in one line (none when complete)")
    elapsed_seconds: float | None = Field(None, description="once it ended: how long it ran")
    counts: dict[str, int] = Field(
        default_factory=dict, description="unchanged, modified, new, deleted, failed, chunks_embedded…"
    )
    skipped: dict[str, int] = Field(
        default_factory=dict,
        description="pages the site's rules kept from the crawler, by reason: robots (robots.txt), forbidden (401, "
        "403), refused (another DOCSBOT_SKIP_STATUSES answer), out_of_scope; never a failure",
    )
    skipped_pages: dict[str, list[str]] = Field(
        default_factory=dict, description="their URLs by reason (the first 100 of each)"
    )
    progress: dict[str, Any] | None = Field(None, description="while running: pages written so far, elapsed")
    message: str = ""


class LibraryVersion(BaseModel):
    library: str
    version: str = Field(description="'' for a library indexed without a version")
    root_url: str
    scope: str | None = Field(
        None,
        description="what its crawls cover, from the root: 'prefix HOST/DIR/' (the root's directory), 'host HOST' or "
        "'domain DOMAIN', then its include and exclude patterns (the root's redirects may move it at each run)",
    )
    pages: int
    chunks: int = Field(description="chunks of the pages' text (what BM25 and the vectors search)")
    definitions: int = Field(0, description="definitions embedded on their own (found by vector, beside the chunks)")
    vectors: int = Field(
        description="chunks and definitions with their vector; the others are searchable by text until they get one"
    )
    vectors_waiting: int = Field(description="chunks and definitions still waiting for a vector")
    embedding: dict[str, Any] | None = Field(
        None,
        description="while workers embed this version: workers, rate (chunks per second), seconds_left; null when none",
    )
    embedding_model: str | None
    model_switch: dict[str, Any] | None = Field(
        None,
        description="while `docsbot reembed` switches it to another model (searches read the old vectors until the "
        "swap): model, dim, done (chunks and definitions with their new vector), total, rate (chunks per second, or "
        "null); null otherwise",
    )
    vector_index: str = Field(
        "none",
        description="how its vectors are searched: 'hnsw' (an HNSW graph of its own), 'building' (the graph is being "
        "built: searched by an exact scan meanwhile), 'exact' (no graph: an exact scan), 'none' (no model yet)",
    )
    vector_index_bytes: int = Field(0, description="the size of its HNSW graph on disk, in bytes")
    status: VersionStatus = Field(
        "ready",
        description="ready (it has pages to answer from), or, without pages: indexing (its first run is in "
        "progress), empty (its last run stored no page), failed (its last run failed), not_indexed (never run)",
    )
    status_reason: str | None = Field(None, description="without pages: why, in one line (its last run's reason)")
    last_updated: str | None = Field(None, description="when a page of it was last written in the index")
    last_changed: str | None = Field(None, description="when the text of a page of it last changed")
    last_checked: str | None = Field(None, description="when a run last found a page of it (a 304 or a 200)")
    last_refreshed: str | None = Field(
        None, description="when its last run that went through ended: a full index or a refresh, not failed"
    )
    refreshing: bool = Field(description="a run of this version is in progress now")
    refresh_interval: str | None = Field(None, description="how often it is refreshed on schedule (None: by hand)")
    next_due: str | None = Field(None, description="when its next scheduled refresh is due")
    failures: int = Field(0, description="scheduled runs in a row that did not complete (retried with a backoff)")
    last_error: str | None = Field(None, description="why the last scheduled run did not complete")
    last_run: RunInfo | None = None
    recent_runs: list[RunInfo] = Field(
        default_factory=list, description="the runs before last_run, newest first, when asked for (docsbot status)"
    )


class ListLibrariesResult(BaseModel):
    libraries: list[LibraryVersion]


class CandidateVersion(BaseModel):
    version: str = Field(description="'' for a library indexed without a version")
    pages: int
    status: VersionStatus = Field(
        "ready",
        description="ready (it has pages); without pages: indexing, empty (its last run stored none), failed, "
        "not_indexed: get_docs and search_docs answer an error for it",
    )
    status_reason: str | None = Field(None, description="without pages: why, in one line")
    last_refreshed: str | None = Field(None, description="when its last run that went through (index or refresh) ended")
    last_checked: str | None = Field(None, description="when a run last found a page of it (a 304 or a 200)")
    last_changed: str | None = Field(None, description="when the text of a page of it last changed")


class LibraryCandidate(BaseModel):
    library: str = Field(description="the indexed name: pass it as library= to search_docs and get_docs")
    score: float = Field(
        description="1: the same name up to case and separators; lower: a looser match, or a library none of "
        "whose versions has pages (its name's score halved, so it ranks below those that answer)"
    )
    versions: list[CandidateVersion] = Field(
        description="its indexed versions: those with pages first, each group newest first"
    )


class LibraryMatches(BaseModel):
    name: str
    candidates: list[LibraryCandidate] = Field(description="best first; empty when nothing indexed is close")


class DocsSection(BaseModel):
    title: str = Field(description="the page's title")
    heading_path: list[str] = Field(description="the section's headings, outermost first")
    url: str = Field(description="the page URL (pass it to get_page)")
    deep_link: str = Field(description="URL of the section or definition (url#anchor), or the page URL")
    tokens: int = Field(description="its tokens, counted with the embedding model's tokenizer")
    content: str = Field(description="its Markdown; code examples are never cut")


class DocsResult(BaseModel):
    library: str
    version: str = Field(description="the version the docs come from (the newest, when none was asked for)")
    topic: str | None = Field(None, description="what was asked; none: the version's overview pages")
    max_tokens: int
    tokens: int = Field(
        description="the whole reply's tokens as sent (its Markdown text and this JSON together; where this "
        "number's own digits keep it from stating itself, one or two over): never more than max_tokens"
    )
    sections: list[DocsSection] = Field(
        description="best first; the first is always there, cut inside a block (ending with …) when it must be"
    )


class PageSection(BaseModel):
    heading: str
    level: int
    anchor: str = Field(description="pass as get_page's section")


class PageResult(BaseModel):
    url: str
    title: str
    library: str
    version: str
    section: str | None = Field(None, description="the section asked for, if any")
    heading_path: list[str] = Field(default_factory=list, description="the section's headings, outermost first")
    markdown: str
    source: Literal["page", "chunks"] = Field(
        description="page: the stored Markdown; chunks: the page's chunks joined (a page stored before docsbot "
        "kept Markdown and unchanged since)"
    )
    updated_at: str | None = Field(None, description="when the index last wrote the page (new text, or new validators)")
    last_checked_at: str | None = Field(
        None, description="when a run last found it unchanged or stored it (its last 304 or 200)"
    )
    last_modified: str | None = Field(None, description="the server's Last-Modified for the page, as sent")
    changed_at: str | None = Field(None, description="when its text last changed in the index")
    sections: list[PageSection] = Field(
        default_factory=list, description="the page's sections (whole page only), for section="
    )


class RefreshResult(BaseModel):
    run_id: str = Field(description="pass to get_run")
    library: str
    version: str
    started: bool = Field(description="false: a run of this version was already in progress; run_id is that run")
    backend: Literal["local", "scrapyd"]
    scrapyd_job: str | None = None
    message: str


class RemoveResult(BaseModel):
    removed: list[dict[str, Any]] = Field(description="each version removed (library@version) with its page count")


class SectionChangeInfo(BaseModel):
    heading_path: list[str] = Field(description="the section's headings, outermost first ([]: before the first)")
    anchor: str | None = Field(None, description="the section's id on the page (url#anchor), when it has one")
    change: Literal["modified", "added", "removed"]


class PageChangeInfo(BaseModel):
    id: int = Field(description="the change's id in the change log")
    kind: Literal["added", "modified", "deleted", "moved"]
    url: str
    old_url: str | None = Field(None, description="moved: the URL it had")
    title: str
    sections: list[SectionChangeInfo] = Field(
        default_factory=list, description="modified: the sections whose text changed"
    )
    diff: str | None = Field(None, description="a unified diff of the page's Markdown, old against new (when asked)")
    at: str = Field(description="when the run stored the change")
    run_id: int | None = Field(None, description="the crawl_runs id of the run that recorded it")
    library: str
    version: str


class ChangesResult(BaseModel):
    library: str
    version: str | None = Field(None, description="the version asked for (None: every version of the library)")
    since: str | None = Field(None, description="changes recorded at or after this time (None: all kept)")
    counts: dict[str, int] = Field(description="pages per kind of change among those listed")
    changes: list[PageChangeInfo]
    truncated: bool = Field(False, description="more changes match than were listed; narrow since= to see them")


class SymbolRef(BaseModel):
    name: str
    url: str
    anchor: str | None = None
    deep_link: str


class VersionDiff(BaseModel):
    library: str
    old_version: str
    new_version: str
    added: list[SymbolRef] = Field(description="names the new version defines and the old does not")
    removed: list[SymbolRef] = Field(description="names the old version defined and the new does not")
    changed: list[SymbolRef] = Field(description="names both define whose documentation text differs")
    not_compared: int = Field(
        0, description="names in both whose text could not be compared (pages stored before docsbot recorded it)"
    )


class RunList(BaseModel):
    runs: list[RunInfo] = Field(description="newest first")


class CancelResult(BaseModel):
    run_id: str
    cancelled: bool
    message: str
