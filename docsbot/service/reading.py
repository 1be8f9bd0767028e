"""The service's reads of the index: search, a library's name resolved, a library's best sections for a topic, the
indexed versions with their counts and runs, and runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docsbot import store
from docsbot.service.core import IndexCore, check_text
from docsbot.service.errors import Invalid, NotFound
from docsbot.service.models import (
    CandidateVersion,
    DocsResult,
    DocsSection,
    LibraryCandidate,
    LibraryMatches,
    LibraryVersion,
    ListLibrariesResult,
    RunInfo,
    RunList,
    SearchDocsResult,
)
from docsbot.service.runs import iso, run_info
from docsbot.service.states import version_status
from docsbot.urls import Scope, without_credentials

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DOCS_MAX_TOKENS", "DOCS_MIN_TOKENS", "DOCS_PAGES", "REPLY_FORMS", "Reading", "reply_tokens"]


def _interval(value: Any) -> str | None:
    """A refresh interval as people write it: ``7d``, ``12h``, ``30m`` (the largest unit that divides it)."""
    if value is None:
        return None
    seconds = int(value.total_seconds())
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


DOCS_PAGES = 30  # get_docs: the pages search ranks for a topic, their sections packed in that order
# get_docs' budget: the floor holds the reply's own fields (version, links, headings, twice: as Markdown and as
# JSON) and the head of the top match; the ceiling keeps one answer within what agents take in at once.
DOCS_MIN_TOKENS = 300
DOCS_MAX_TOKENS = 100_000
REPLY_FORMS = ("markdown", "json")


def reply_tokens(result: DocsResult, forms: tuple[str, ...], count: Callable[[str], int]) -> int:
    """The tokens of ``result`` as an interface sends it, in ``forms`` (``markdown``: its Markdown; ``json``: its
    compact JSON, as MCP's structured content is serialized) together."""
    from docsbot.service.docs import docs_markdown

    total = count(docs_markdown(result)) if "markdown" in forms else 0
    return total + (count(result.model_dump_json()) if "json" in forms else 0)


def _fit_reply(pieces: list[Any], empty: DocsResult, forms: tuple[str, ...], count: Callable[[str], int]) -> DocsResult:
    """``empty`` filled with as much of ``pieces`` (:func:`docsbot.service.docs.pack`) as keeps the whole reply
    (:func:`reply_tokens`) within its ``max_tokens``, ``tokens`` set to the reply's count: the largest budget for
    the sections whose reply fits, found by bisection (each section costs its text twice and its title, headings
    and links besides, so that the sections' share of the reply depends on how many there are), then the top
    match grown into what room is left (whole blocks, else cut inside the next one), the other sections as they
    are. The bisections add up each section's cost (counts are remembered across tries: the same blocks are
    counted once); the reply chosen is then counted whole, and the budget lowered by what it is over, if
    anything. Raises :class:`Invalid` when not even the reply's own fields and a word of the top match fit."""
    from docsbot.service.docs import cut, pack, piece_text, section_markdown

    limit = empty.max_tokens
    count = _remembering(count)
    fixed = reply_tokens(empty.model_copy(update={"tokens": limit}), forms, count)

    def sections(budget: int) -> list[DocsSection] | None:
        packed = pack(pieces, budget, count)
        if pieces and not packed:  # not a word of the top match fits
            return None
        return [
            DocsSection(
                title=p.title,
                heading_path=list(p.heading_path),
                url=p.url,
                deep_link=p.deep_link,
                tokens=tokens,
                content=text,
            )  # fmt: skip
            for p, text, tokens in packed
        ]

    def estimate(found: list[DocsSection]) -> int:
        total = fixed
        for section in found:
            total += count(section_markdown(section)) if "markdown" in forms else 0
            total += count(section.model_dump_json()) + 1 if "json" in forms else 0  # and its comma
        return total

    def fits(budget: int) -> list[DocsSection] | None:
        found = sections(budget)
        return found if found is not None and estimate(found) <= limit else None

    def top_grown(tokens: int) -> list[DocsSection] | None:  # the others as they are, the top match longer
        text = piece_text(pieces[0], tokens, count, top=True)
        if text != pieces[0].content:  # not whole: into the next block if no whole one more fits
            longer = cut(pieces[0].fallback or pieces[0].content, tokens, count)
            text = longer if count(longer) > count(text) else text
        if count(text) <= best[0].tokens:
            return None
        found = [best[0].model_copy(update={"content": text, "tokens": count(text)}), *best[1:]]
        return found if estimate(found) <= limit else None

    def largest(low: int, high: int, attempt: Callable[[int], list[DocsSection] | None]) -> tuple[Any, int]:
        best, at = None, 0
        while low <= high:
            middle = (low + high) // 2
            found = attempt(middle)
            if found is not None:
                best, at, low = found, middle, middle + 1
            else:
                high = middle - 1
        return best, at

    best, budget = fits(limit), limit
    if best is None:
        best, budget = largest(1, limit - 1, fits)
    if best:  # room to spare (one more section would not fit, or its share was spent): the top match takes it
        grown, _ = largest(best[0].tokens + 1, limit, top_grown)
        best = grown or best
    while best is not None:  # the reply counted whole: joins and the count's own digits may differ a little
        result = _counted(empty.model_copy(update={"sections": best}), forms, count)
        if result.tokens <= limit:
            return result
        budget = min(budget - 1, sum(s.tokens for s in best) - (result.tokens - limit))
        best = sections(budget) if budget >= 1 else None
    raise Invalid(
        f"max_tokens: {limit} cannot hold the reply's own fields (version, topic, links, headings) and the top "
        f"match's first words; give more (at most {DOCS_MAX_TOKENS})"
    )


def _counted(result: DocsResult, forms: tuple[str, ...], count: Callable[[str], int]) -> DocsResult:
    """``result`` with ``tokens`` set to the count of the reply that states it (:func:`reply_tokens`): the count is
    part of the JSON it counts, so the number that states itself, or, where a tokenizer splits the digits so that
    none does (4689 one token fewer than 4690), the smallest number the reply counts at most (one or two over)."""
    result.tokens = 0
    total = reply_tokens(result, forms, count)
    bound = None
    for tokens in range(total, total + 6):
        result.tokens = tokens
        counted = reply_tokens(result, forms, count)
        if counted == tokens:
            return result
        if counted < tokens and bound is None:
            bound = tokens
    result.tokens = bound if bound is not None else total + 6
    return result


def _remembering(count: Callable[[str], int]) -> Callable[[str], int]:
    """``count`` remembering what it counted (for one answer: the same blocks are counted at every try)."""
    counted: dict[str, int] = {}

    def remembered(text: str) -> int:
        found = counted.get(text)
        if found is None:
            found = counted[text] = count(text)
        return found

    return remembered


class Reading(IndexCore):
    """:meth:`search`, :meth:`resolve_library`, :meth:`docs`, :meth:`version_names`, :meth:`libraries`, :meth:`run`
    and :meth:`runs` of :class:`~docsbot.service.index.DocsIndex`."""

    def search(
        self,
        query: str,
        library: str | None = None,
        version: str | None = None,
        limit: int = 5,
        kind: str | None = None,
        explain: bool = False,
    ) -> SearchDocsResult:
        """Page-level hybrid search (one result per page, its best section or definition); ``kind``: only pages of
        that kind (``docs``, ``changelog``, ``index``); ``explain``: each result says why it ranks there. Raises
        :class:`~docsbot.service.search.UnknownLibrary` and
        :class:`~docsbot.service.search.BadQuery`."""
        check_text(query=query, library=library, version=version, kind=kind)
        results = self.searcher.search(query, library or None, version, limit, kind=kind or None, explain=explain)
        return SearchDocsResult(query=query, results=results)

    def resolve_library(self, name: str, limit: int = 5) -> LibraryMatches:
        """The indexed libraries ``name`` may mean (:func:`docsbot.service.docs.name_matches`: case, separators,
        affixes like ``python-`` or ``.js``, then close spellings), best first, each with its versions (those with
        pages first, each group newest first), their page counts, state (:mod:`docsbot.service.states`) and when
        each was last refreshed, checked and changed. A library none of whose versions has pages scores half its
        name's score, so that it ranks below one that answers."""
        from docsbot.service.docs import name_matches
        from docsbot.service.search import version_key

        check_text(name=name)
        if not name.strip():
            raise Invalid("name: the library's name, e.g. 'requests'")
        rows = self.libraries(1).libraries
        candidates = []
        for library, score in name_matches(name, sorted({r.library for r in rows}), limit=len(rows)):
            versions = sorted((r for r in rows if r.library == library), key=lambda r: version_key(r.version),
                              reverse=True)  # fmt: skip
            versions.sort(key=lambda r: r.status != "ready")  # stable: newest first within each group
            if not any(v.status == "ready" for v in versions):
                score = round(score / 2, 3)
            candidates.append(
                LibraryCandidate(
                    library=library,
                    score=score,
                    versions=[
                        CandidateVersion(
                            version=v.version,
                            pages=v.pages,
                            status=v.status,
                            status_reason=v.status_reason,
                            last_refreshed=v.last_refreshed,
                            last_checked=v.last_checked,
                            last_changed=v.last_changed,
                        )  # fmt: skip
                        for v in versions
                    ],
                )
            )
        candidates.sort(key=lambda c: (-c.score, c.library))
        return LibraryMatches(name=name, candidates=candidates[:limit])

    def docs(
        self,
        library: str,
        version: str | None = None,
        topic: str | None = None,
        max_tokens: int = 5000,
        reply: tuple[str, ...] = REPLY_FORMS,
    ) -> DocsResult:
        """The best sections of ``library`` for ``topic`` (one per page, as search ranks the pages: the section or
        definition a result links, else its matching chunks), or without a topic the version's overview pages
        (the root and the pages near it), each whole or cut between blocks (a code example is cut only when it is
        the top match and nothing else of it fits), best first; the top match is always there.

        ``max_tokens`` bounds the whole reply as an interface sends it: ``reply`` names its forms, ``markdown``
        (:func:`docsbot.service.docs.docs_markdown`) and ``json`` (the result's compact JSON, as MCP's structured
        content carries it); their tokens (the embedding model's tokenizer, or characters / 4 without one) add up to
        at most ``max_tokens``, and the result's ``tokens`` says how many. ``version``: exact or loose (``latest``,
        ``3.x``); default the newest with pages. Raises :class:`Invalid` for a budget outside
        :data:`DOCS_MIN_TOKENS`-100,000 or one too small for the reply's own fields and a word of the top match,
        :class:`~docsbot.service.search.UnknownLibrary` for a library or version not indexed and
        :class:`~docsbot.service.search.VersionNotReady` for one without pages."""
        from docsbot.service.docs import Piece

        check_text(library=library, version=version, topic=topic)
        if not DOCS_MIN_TOKENS <= max_tokens <= DOCS_MAX_TOKENS:
            raise Invalid(f"max_tokens: from {DOCS_MIN_TOKENS} to {DOCS_MAX_TOKENS}, got {max_tokens}")
        unknown = set(reply) - set(REPLY_FORMS)
        if not reply or unknown:
            raise Invalid(f"reply: some of {', '.join(REPLY_FORMS)}, got {', '.join(sorted(unknown)) or 'none'}")
        topic = (topic or "").strip() or None
        found = self.searcher.versions(library, version if version is not None else "latest")
        (target,) = self.searcher.readable(found)
        count = self.token_counter()
        pieces: list[Piece] = []
        if topic is not None:
            hits = self.searcher.search(topic, target.library, target.name, DOCS_PAGES)
            for hit in hits:
                anchor = hit.deep_link.partition("#")[2] if hit.deep_link else ""
                section = ""
                path = tuple(hit.heading_path)
                if anchor:
                    try:
                        found = self.page(hit.deep_link)
                    except NotFound:
                        found = None
                    if found is not None:
                        section, path = found.markdown, tuple(found.heading_path) or path
                pieces.append(Piece(hit.title, hit.url, hit.deep_link or hit.url, path, section or hit.content,
                                    hit.content if section else ""))  # fmt: skip
        else:
            with self.connection() as conn:
                pages = store.overview_pages(conn, target.id, 20)
            pieces = [Piece(title, url, url, (), markdown) for url, title, markdown in pages]
        return _fit_reply(pieces, DocsResult(library=target.library, version=target.name, topic=topic,
                                             max_tokens=max_tokens, tokens=0, sections=[]), reply, count)  # fmt: skip

    def token_counter(self) -> Callable[[str], int]:
        """What ``get_docs`` counts tokens with (:class:`docsbot.service.docs.TokenCounter`): the embedding model's
        tokenizer, or characters / 4 when it has none; loaded once (the model's tokenizer.json is parsed, not read
        per call)."""
        if self._token_counter is None:
            from docsbot.service.docs import TokenCounter

            embedder = self.searcher.embedder
            self._token_counter = TokenCounter(embedder.tokenizer() if embedder is not None else None)
        return self._token_counter

    def version_names(self) -> list[dict[str, str]]:
        """Every indexed version's ``library`` and ``version``, by name: one cheap query (a form's choices),
        where :meth:`libraries` counts every page and chunk."""
        with self.connection() as conn:
            if not store.has_schema(conn):
                return []
            return [{"library": v.library, "version": v.name} for v in store.list_versions(conn)]

    def libraries(self, runs: int = 1) -> ListLibrariesResult:
        """Every indexed version with its state (:func:`docsbot.service.states.version_status`: ``ready``, or why it
        has no pages), counts, vector coverage and embedding progress, freshness, and its last ``runs`` runs
        (``last_run``, then ``recent_runs``)."""
        with self.connection() as conn:
            if not store.has_schema(conn):
                return ListLibrariesResult(libraries=[])
            rows = store.version_overview(conn, runs=max(1, runs))
            indexes = store.vector_indexes(conn)
        out = []
        for row in rows:
            waiting = row["waiting"]
            work = row["embedding"]
            if work is not None:
                rate = work["rate"] or None
                work = {**work, "seconds_left": round(waiting / rate) if rate else None}
            running = {row["id"]} if row["running"] else set()
            index = indexes.get(row["id"], store.VectorIndex("none"))
            infos = [
                run_info(
                    str(r["id"]),
                    {**r, "version_id": row["id"], "library": row["library"], "version": row["version"]},
                    running if i == 0 else set(),
                )
                for i, r in enumerate(row["runs"])
            ]
            latest = row["runs"][0] if row["runs"] else None
            status, reason = version_status(row["pages"], row["running"], latest)
            out.append(
                LibraryVersion(
                    library=row["library"],
                    version=row["version"],
                    status=status,
                    status_reason=reason,
                    root_url=without_credentials(row["root_url"]),
                    scope=_scope(row["root_url"], row["settings"]),
                    pages=row["pages"],
                    chunks=row["chunks"],
                    definitions=row["definitions"],
                    vectors=row["vectors"],
                    vectors_waiting=waiting,
                    embedding=work,
                    embedding_model=row["embedding_model"],
                    model_switch=row["model_switch"],
                    vector_index=index.state,
                    vector_index_bytes=index.bytes,
                    last_updated=iso(row["last_updated"]),
                    last_changed=iso(row["last_changed"]),
                    last_checked=iso(row["last_checked"]),
                    last_refreshed=iso(row["last_refreshed"]),
                    refreshing=row["running"],
                    refresh_interval=_interval(row["refresh_interval"]),
                    next_due=iso(row["next_due_at"]),
                    failures=row["failures"] or 0,
                    last_error=row["last_error"],
                    last_run=infos[0] if infos else None,
                    recent_runs=infos[1:],
                )
            )
        return ListLibrariesResult(libraries=out)

    def run(self, run_id: str) -> RunInfo:
        """A run: one this process started (its ``run_id``) or any ``crawl_runs`` id. Raises :class:`NotFound`."""
        check_text(run_id=run_id)
        run_id = run_id.strip()
        launch = self._launches.get(run_id)
        if launch is not None:
            with self.connection() as conn:
                return self.launcher.state(launch, conn)
        if run_id.isascii() and run_id.isdigit() and int(run_id) < 2**63:
            with self.connection() as conn:
                row = store.crawl_run(conn, int(run_id))
                running = store.running_version_ids(conn)
            if row is not None:
                return run_info(run_id, row, running)
        raise NotFound(
            f"no run {run_id!r}: pass the run_id a refresh returned (this server's runs) or a crawl_runs id as the "
            "list of libraries reports it"
        )

    def runs(self, library: str | None = None, version: str | None = None, limit: int = 20) -> RunList:
        """The latest ``limit`` runs (of a library or version), newest first, running ones included."""
        check_text(library=library, version=version)
        if not 1 <= limit <= 200:
            raise Invalid(f"limit must be between 1 and 200, got {limit}")
        versions = self.searcher.versions(library, version) if library else None
        with self.connection() as conn:
            rows = store.recent_runs(conn, [v.id for v in versions] if versions is not None else None, limit)
            running = store.running_version_ids(conn)
            latest = {row["version_id"]: row["id"] for row in reversed(rows)}
        return RunList(
            runs=[
                run_info(str(row["id"]), row, running if latest.get(row["version_id"]) == row["id"] else set())
                for row in rows
            ]
        )


def _scope(root_url: str, settings: dict[str, Any] | None) -> str | None:
    """What a version's crawls cover, in one line (:meth:`docsbot.urls.Scope.describe`); ``None`` for stored settings
    that no longer read."""
    try:
        return Scope.of_version(without_credentials(root_url), settings).describe()
    except ValueError:
        return None
