"""The refresh rules (docs/explanation/refresh.md) as code: pure, no Scrapy, no database.

One :class:`RefreshLedger` lives for one crawl of one library version. The spider asks it *what to request*
(:meth:`~RefreshLedger.plan`), tells it *what answered* (:meth:`~RefreshLedger.resolve` for a 200,
:meth:`~RefreshLedger.not_modified` for a 304, :meth:`~RefreshLedger.gone` for a 404/410 or a redirect out of
scope, :meth:`~RefreshLedger.failed` for anything else), the store pipeline tells it what was written
(:meth:`~RefreshLedger.stored`), and at the end of the run the run extension asks it *what to delete*
(:meth:`~RefreshLedger.deletion_plan`). The table, row by row:

=======================  =================================  =======================================  ==================
server answers           pages row                          documents rows                           links followed
=======================  =================================  =======================================  ==================
304 Not Modified         untouched                          untouched (same ids)                     the stored links
200, content changed     upsert title, validators, hash     deleted and re-inserted, one transaction links in the body
200, same content        validators updated only            untouched                                links in the body
404 / 410                deleted (end of a complete run)    deleted by cascade                       none
anything else / error    untouched                          untouched                                the stored links
redirect to new URL      moved to the final URL (no twin)   200/304 rules at the new URL             as above
=======================  =================================  =======================================  ==================

- The root URL is requested exactly once per run, whether or not it is stored.
- A stored page keeps its stored depth; a page found for the first time gets its parent's depth + 1;
  ``max_depth`` applies to both.
- Requests go to URLs the site linked, redirected to, named canonical or listed in a sitemap (no invented URL);
  one page reached under two URLs (``dir/`` and ``dir/index.html``: :func:`docsbot.urls.page_key`) is requested
  and stored once.
- The crawl stays in its :class:`~docsbot.urls.Scope`, taken from where the root's redirects lead
  (:meth:`~RefreshLedger.redirect_hop`); the root itself is always requested.
- Deletions (gone pages, stored pages now out of the scope, pruned orphans) happen only at the end of a run that
  completed and whose root answered, and never more than ``mass_delete_share`` of the version's pages unless allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from docsbot.urls import Scope, page_key

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "GONE_STATUSES",
    "SKIP_STATUSES",
    "DeletionPlan",
    "PlannedRequest",
    "RefreshLedger",
    "Resolution",
    "RootFailed",
    "StoredPage",
    "content_unchanged",
    "parse_gone_statuses",
    "parse_skip_statuses",
]

# RFC 9110 §15.5.5 and §15.5.11: the answers that delete a page by default (DOCSBOT_GONE_STATUSES may add 403)
GONE_STATUSES = frozenset({404, 410})


def parse_gone_statuses(values: Iterable[object]) -> frozenset[int]:
    """``DOCSBOT_GONE_STATUSES`` (``["404", "410"]``, ``[403, 404, 410]``) as status codes. Only a 4xx answer can
    mean "gone": a 5xx, a timeout, 408 (Request Timeout) or 429 (Too Many Requests) never deletes a page. Raises
    ``ValueError`` naming the setting otherwise."""
    values = list(values)
    try:
        codes = frozenset(int(v) for v in values)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise ValueError(f"DOCSBOT_GONE_STATUSES must be status codes, got {values!r}") from None
    if not codes or any(not 400 <= code < 500 or code in (408, 429) for code in codes):
        raise ValueError(f"DOCSBOT_GONE_STATUSES must be 4xx codes other than 408 and 429, got {values!r}")
    return codes


SKIP_STATUSES = frozenset({401, 403})  # DOCSBOT_SKIP_STATUSES' default


def parse_skip_statuses(values: Iterable[object], gone: frozenset[int]) -> frozenset[int]:
    """``DOCSBOT_SKIP_STATUSES`` (``["401", "403"]``): answers that, for a page never stored, mean the site keeps
    it from the crawler (a login, a forbidden directory): skipped, not failed. 4xx codes only, not 408 or 429; a code
    that is also one of ``gone`` (``DOCSBOT_GONE_STATUSES``: a site that sets 403 there) means gone. Raises
    ``ValueError`` naming the setting otherwise."""
    values = list(values)
    try:
        codes = frozenset(int(v) for v in values)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise ValueError(f"DOCSBOT_SKIP_STATUSES must be status codes, got {values!r}") from None
    if any(not 400 <= code < 500 or code in (408, 429) for code in codes):
        raise ValueError(f"DOCSBOT_SKIP_STATUSES must be 4xx codes other than 408 and 429, got {values!r}")
    return codes - gone


class RootFailed(Exception):  # noqa: N818 - a decision, not an error of docsbot's
    """The root URL answered something other than 200/304 (a gone status, an error, a redirect out of scope): the
    run stops at once and deletes nothing. ``reason`` says what it answered."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class StoredPage:
    """What a run needs to know of a stored page before fetching it (a few hundred bytes each)."""

    id: int
    url: str
    etag: str | None
    last_modified: str | None
    content_hash: str | None
    depth: int
    links: tuple[str, ...]
    last_checked_at: datetime | None = None
    extractor_version: int = 0  # docsbot.content.extract.EXTRACTOR_VERSION that produced the stored content
    fresh_until: datetime | None = None  # its last response's HTTP freshness (docsbot.refresh.freshness), None: stale
    has_html: bool = False  # its HTML is stored (pages.html): a newer extraction can run from it after a 304


@dataclass(frozen=True)
class PlannedRequest:
    """A request to send. ``validators`` (``(etag, last_modified)``, either may be ``None``) are present when a
    stored page is revalidated (RFC 9110 §13.1); ``render``: fetch it through the browser; ``render_after_200``:
    revalidate it over plain HTTP and render it only if it answers 200 (a browser cannot revalidate);
    ``reextract``: the stored page was extracted by an older version of docsbot's extraction and its HTML is
    stored, so a 304 is answered by extracting that HTML again (no download), a 200 as usual."""

    url: str
    depth: int
    stored: StoredPage | None = None
    validators: tuple[str | None, str | None] | None = None
    render: bool = False
    render_after_200: bool = False
    reextract: bool = False


@dataclass(frozen=True)
class Resolution:
    """Where a 200 response is stored.

    ``target``: the URL the page is stored under (the final URL after redirects, or its in-scope
    ``<link rel="canonical">``); ``page``: the stored row it updates (``None``: a new page); ``depth``: the
    page's depth (stored depth kept); ``retired``: a stored row that now redirects to, or duplicates, another
    stored page and goes (``None`` if none); ``duplicate``: the page was stored already this run under another
    URL, so nothing is stored now.
    """

    target: str
    page: StoredPage | None
    depth: int
    retired: StoredPage | None = None
    duplicate: bool = False


@dataclass
class DeletionPlan:
    """What the end of a run deletes: ``delete`` (page id → reason), of which ``orphans`` were stored pages no
    longer linked from the root and ``out_of_scope`` stored pages the run's scope no longer covers (a narrower
    ``-a scope``, an ``-a exclude``, a root that now redirects elsewhere); ``refused``: pages that would have gone
    but the mass-deletion guard kept; ``kept``: gone pages kept because the run did not complete (``completed``
    false: it did not, or its root did not answer)."""

    delete: dict[int, str] = field(default_factory=dict)
    orphans: dict[int, str] = field(default_factory=dict)
    out_of_scope: dict[int, str] = field(default_factory=dict)
    refused: int = 0
    kept: int = 0
    completed: bool = True


def content_unchanged(stored_hash: str | None, new_hash: str) -> bool:
    """A 200 whose extracted content hashes as stored (``docsbot.content.extract.content_hash``) changes nothing but the
    validators: no chunking, no embedding, no chunk writes."""
    return stored_hash is not None and stored_hash == new_hash


class RefreshLedger:
    """The state of one run: what is stored, what was requested, reached, stored and found gone.

    ``stored``: the version's pages at the start of the run. ``refresh``: revalidate stored pages with their
    validators (a full index fetches every page without them). ``render``: which URLs go through the browser.
    ``min_recheck``: stored pages checked more recently are not requested (their stored links are followed).
    ``http_freshness``: neither are stored pages whose last response is still fresh (RFC 9111 §4.2, ``fresh_until``
    in the future), the root included: a fresh root counts as answered (its stored links are its links).
    ``now`` is injectable for tests.
    """

    def __init__(
        self,
        root_url: str,
        stored: Iterable[StoredPage] = (),
        *,
        refresh: bool = True,
        max_depth: int | None = None,
        max_pages: int | None = None,
        min_recheck: timedelta | None = None,
        http_freshness: bool = False,
        render: Callable[[str], bool] = lambda url: False,
        scope: Scope | None = None,
        extractor_version: int | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.root_url = root_url
        self.scope = scope or Scope.from_root(root_url)
        self.refresh = refresh
        self.max_depth = max_depth
        self.max_pages = max_pages
        self.min_recheck = min_recheck
        self.http_freshness = http_freshness
        self.render = render
        self.extractor_version = extractor_version
        self._now = now
        self.pages: dict[str, StoredPage] = {page_key(p.url): p for p in stored}
        self.requested: set[str] = set()  # page keys requested this run (docsbot deduplicates, not Scrapy)
        self.linked: set[str] = set()  # page keys linked from any page this run, within scope and depth
        # Reachability from the root, told at the end (orphans): the links each page was found to have this run,
        # by the key of the URL it was requested under (the stored links of a 304 are the stored tuple itself).
        # Links given without a source (the root, sitemap entries) are where reachability starts.
        self.link_roots: set[str] = set()
        self.links_of: dict[str, list[Iterable[str]]] = {}
        self.claimed: set[str] = set()  # page keys stored (or moved there) this run
        self.moved: set[int] = set()  # stored page ids that moved to a new URL (redirect)
        self.checked: set[int] = set()  # stored page ids that answered 200/304 this run
        self.gone_pages: dict[int, str] = {}  # page id → "url (reason)", deleted at the end of a complete run
        self.truncated = False  # max_pages cut the crawl short: orphans cannot be told
        self.root_answered = False
        # The root's page keys: its own, and where it redirects (http -> https, a moved start page): that page's
        # answer is the root's, whichever of the two requests reaches it first.
        self.root_keys = {page_key(root_url)}
        self.answered_keys: set[str] = set()  # pages that answered 200/304 (or were fresh) this run
        self.skipped_recently_checked = 0
        self.skipped_fresh = 0  # requests saved by HTTP freshness
        self.fresh: dict[int, datetime | None] = {}  # stored page id → freshness of its 304 this run

    def stored_page(self, url: str) -> StoredPage | None:
        """The stored page ``url`` names (under either of its URLs), or ``None``."""
        return self.pages.get(page_key(url))

    def outdated(self, page: StoredPage) -> bool:
        """``page`` was extracted by an older version of docsbot's extraction than ``extractor_version``: a
        refresh stores it again as a full index would, even if the content hash is the same, from its stored HTML
        after a 304 or from a 200 (a page whose HTML is not stored is fetched without validators), and neither
        ``min_recheck`` nor HTTP freshness skips it."""
        return self.extractor_version is not None and page.extractor_version < self.extractor_version

    # --- what to request ---

    def seeds(self) -> list[PlannedRequest]:
        """The root URL, then every stored page in depth order (each requested once, by whichever request comes
        first: a seed or a link)."""
        planned = self.plan([self.root_url], -1)
        for page in sorted(self.pages.values(), key=lambda p: (p.depth, p.id)):
            planned += self.plan([page.url], page.depth - 1, linked=False)
        return planned

    def plan(
        self, urls: Iterable[str], parent_depth: int, *, linked: bool = True, source: str | None = None
    ) -> list[PlannedRequest]:
        """Requests for ``urls`` found at ``parent_depth`` + 1, skipping URLs out of scope, already requested, or
        past ``max_depth``/``max_pages``. ``linked``: the URLs come from links (not seeds); ``source``: the URL of
        the page that links them, as it was requested (``None``: the root itself, or a sitemap's entries). A page
        is reachable, and so not an orphan, when a chain of such links leads to it from the root."""
        out: list[PlannedRequest] = []
        if linked:
            urls = urls if isinstance(urls, tuple) else tuple(urls)
            if source is None:
                self.link_roots.update(page_key(url) for url in urls if url in self.scope)
            else:
                self.links_of.setdefault(page_key(source), []).append(urls)
        stack = [(url, parent_depth, linked) for url in reversed(list(urls))]
        while stack:
            url, parent, via_link = stack.pop()
            if url not in self.scope:
                continue
            key = page_key(url)
            stored = self.pages.get(key)
            depth = stored.depth if stored else parent + 1
            if self.max_depth is not None and depth > self.max_depth:
                continue
            if via_link:
                self.linked.add(key)
            if key in self.requested:
                continue
            if self.max_pages is not None and len(self.requested) >= self.max_pages:
                self.truncated = True
                continue
            self.requested.add(key)
            fresh = stored is not None and self._fresh(stored)
            if stored and (fresh or self._recently_checked(stored)) and not self.outdated(stored):
                if fresh:
                    self.skipped_fresh += 1
                    self.answered_keys.add(key)
                    if self.is_root(url):
                        self.root_answered = True
                else:
                    self.skipped_recently_checked += 1
                self.links_of.setdefault(key, []).append(stored.links)
                stack.extend((link, stored.depth, True) for link in reversed(stored.links))
                continue
            render = self.render(url)
            outdated = stored is not None and self.outdated(stored)
            # An outdated page is revalidated too when its HTML is stored (a 304 re-extracts it from there); one
            # stored before docsbot kept the HTML is fetched once without validators, so that it answers 200.
            revalidate = stored and self.refresh and (not outdated or stored.has_html)
            if revalidate and (stored.etag or stored.last_modified or not render):
                validators = (stored.etag, stored.last_modified)
                out.append(PlannedRequest(url, depth, stored, validators, render_after_200=render, reextract=outdated))
            else:
                out.append(PlannedRequest(url, depth, stored, render=render))
        return out

    def redirect_hop(self, origin: str, target: str) -> bool:
        """A request for ``origin`` is redirected to ``target``: whether to follow. Not when ``origin`` is no
        stored page (a link that names a page another way: Docusaurus links ``/Guides/Testing``, the server
        redirects to ``/Guides/Testing/``) and ``target`` was requested already this run (a refresh's seed): the
        hop would fetch the page a second time and count it twice; ``target`` is recorded as linked from
        ``origin`` instead. Followed, ``target`` counts as requested, so that its own seed or link does not
        request it again. A hop of the root's is always followed, and the scope is taken from there
        (:meth:`root_moved`)."""
        key, origin_key = page_key(target), page_key(origin)
        if key == origin_key:
            return True
        if origin_key in self.root_keys:
            self.root_moved(target)
        if key in self.requested and origin_key not in self.pages:
            self.links_of.setdefault(origin_key, []).append((target,))
            self.linked.add(key)
            return False
        if target in self.scope:
            self.requested.add(key)
        return True

    def root_moved(self, target: str) -> None:
        """The root's request was redirected to ``target`` (an HTTP redirect, or a browser's navigation): the root
        lives there now, and the crawl's scope is taken from there (:meth:`docsbot.urls.Scope.rebased`: ``…/python``
        redirecting to ``…/python/3.12/`` crawls ``/python/3.12/``)."""
        key = page_key(target)
        self.root_keys.add(key)
        if page_key(self.scope.base or self.root_url) != key:
            self.scope = self.scope.rebased(target)
        if key in self.answered_keys:  # its own request (a refresh's seed) answered first
            self.root_answered = True

    def validators_for(self, url: str) -> tuple[str | None, str | None] | None:
        """What to send to ``url`` reached by a redirect: its own stored validators when it is a stored page
        revalidated over plain HTTP in a refresh (never those of the URL that redirected), else ``None``."""
        page = self.stored_page(url)
        if not self.refresh or page is None or not (page.etag or page.last_modified) or self.render(url):
            return None
        if self.outdated(page):
            return None
        return (page.etag, page.last_modified)

    def _fresh(self, page: StoredPage) -> bool:
        return self.http_freshness and page.fresh_until is not None and page.fresh_until > self._now()

    def _recently_checked(self, page: StoredPage) -> bool:
        if self.min_recheck is None or page.last_checked_at is None or self.is_root(page.url):
            return False
        return page.last_checked_at > self._now() - self.min_recheck

    # --- what answered ---

    def is_root(self, url: str) -> bool:
        """``url`` is the root URL or the page it redirects to this run."""
        return page_key(url) in self.root_keys

    def resolve(self, origin: str, final: str, canonical: str | None, request_depth: int) -> Resolution:
        """A 200 for a request of ``origin`` that ended at ``final`` (after redirects), whose HTML names
        ``canonical``: which stored row it updates. The stored row of ``origin``, if it is not the target's,
        moves to the target URL unless the target has its own row or was stored already this run; then it is
        retired (deleted at the end of the run)."""
        target = final
        if canonical and page_key(canonical) != page_key(final) and canonical in self.scope:
            target = canonical
        key = page_key(target)
        if key != page_key(origin):  # reached through origin's link: the target is as reachable as origin
            self.links_of.setdefault(page_key(origin), []).append((target,))
            self.linked.add(key)
        page = self.pages.get(key)
        origin_page = self.pages.get(page_key(origin))
        retired = None
        if origin_page is not None and origin_page is not page:
            if page is None and key not in self.claimed:
                page = origin_page
                self.moved.add(page.id)
            else:
                retired = origin_page
        if key in self.claimed:
            return Resolution(target, page, page.depth if page else request_depth, retired, duplicate=True)
        self.claimed.add(key)
        self.requested.add(key)
        return Resolution(target, page, page.depth if page else request_depth, retired)

    def not_modified(self, url: str, fresh_until: datetime | None = None) -> StoredPage | None:
        """A 304: the stored page is current (its stored links are followed); ``fresh_until``: the freshness its
        headers give (written at the end of the run). Returns it."""
        self.answered_keys.add(page_key(url))
        if self.is_root(url):
            self.root_answered = True
        page = self.stored_page(url)
        if page is not None:
            self.checked.add(page.id)
            self.fresh[page.id] = fresh_until
        return page

    def not_modified_after_redirect(self, origin: str, final: str) -> tuple[StoredPage | None, StoredPage | None]:
        """A request for ``origin`` was redirected to ``final``, a stored page that answered 304 to its own
        validators. Returns ``(page at final, retired)``: ``retired`` is ``origin``'s stored row if it had one
        of its own, which now only redirects (deleted at the end of the run, like a redirect onto a stored page
        that answered 200)."""
        self.answered(origin)
        if page_key(final) != page_key(origin):
            self.links_of.setdefault(page_key(origin), []).append((final,))
            self.linked.add(page_key(final))
        page = self.not_modified(final)
        origin_page = self.stored_page(origin)
        if page is None or origin_page is None or origin_page.id == page.id:
            return page, None
        return page, origin_page

    def answered(self, url: str) -> None:
        """``url`` answered 200."""
        self.answered_keys.add(page_key(url))
        if self.is_root(url):
            self.root_answered = True

    def answered_gone(self, origin: str, status: int) -> StoredPage | None:
        """A request for ``origin`` answered a gone status (404/410, ``DOCSBOT_GONE_STATUSES``): the stored page to
        delete at the end of the run, or ``None`` (a link to a page that never existed). Raises
        :class:`RootFailed` for the root: a site whose start page is gone is not deleted page by page."""
        if self.is_root(origin):
            raise RootFailed(f"it answered {status}")
        return self.stored_page(origin)

    def failed(self, url: str, reason: str = "") -> StoredPage | None:
        """Any other failure (5xx, 429, timeout, DNS, refused connection, robots.txt, size cap, after Scrapy's
        retries): the stored page is kept as it was (its stored links are followed). Returns it. Raises
        :class:`RootFailed` for the root."""
        if self.is_root(url):
            raise RootFailed(reason or "it failed")
        return self.stored_page(url)

    def skipped_by_rule(self, url: str, reason: str) -> StoredPage | None:
        """The site's rules keep ``url`` from the crawler (robots.txt; a 401, 403 or other refusal of a page never
        stored): skipped, not failed; a stored page stays as it was (its stored links are followed). Returns it.
        Raises :class:`RootFailed` for the root: a site whose root is refused cannot be crawled."""
        if self.is_root(url):
            raise RootFailed(reason)
        return self.stored_page(url)

    def redirected_out_of_scope(self, url: str, target: str) -> StoredPage | None:
        """A request for ``url`` redirects out of the crawl's scope (never followed): the stored page goes at the
        end of the run. Raises :class:`RootFailed` for the root."""
        if self.is_root(url):
            raise RootFailed(f"it redirects out of scope to {target}")
        return self.stored_page(url)

    def content_unchanged(self, page_id: int | None, stored_hash: str | None, new_hash: str) -> bool:
        """Whether a 200 changes only the page's validators: a stored page (``page_id``) in a refresh whose
        extracted content hashes as stored (``stored_hash`` is ``None`` for a page an older extraction produced,
        which is stored again). A full index (``-a mode=full``) re-chunks every page."""
        return page_id is not None and self.refresh and content_unchanged(stored_hash, new_hash)

    def gone(self, page_id: int, url: str, reason: str) -> bool:
        """Stored page ``page_id`` at ``url`` is gone (404/410, a redirect out of scope, a duplicate of another
        stored page): deleted at the end of a complete run. Returns whether this is news."""
        if page_id in self.gone_pages:
            return False
        self.gone_pages[page_id] = f"{url} ({reason})"
        return True

    def stored(self, page_id: int) -> None:
        """The store pipeline wrote page ``page_id`` (new, modified or same content)."""
        self.checked.add(page_id)

    # --- what to delete ---

    def reachable(self) -> set[str]:
        """Page keys reached this run through a chain of links from the root (or a sitemap entry): a link counts
        only on a page that is itself reachable, so pages that only link each other (a manual whose index was
        deleted) are not, as a fresh index would not find them."""
        reached = set(self.link_roots & self.linked)
        todo = list(reached)
        while todo:
            for links in self.links_of.get(todo.pop(), ()):
                for url in links:
                    key = page_key(url)
                    if key not in reached and key in self.linked:
                        reached.add(key)
                        todo.append(key)
        return reached

    def orphans(self) -> dict[int, str]:
        """Stored pages in the scope that still answer but were not reached through links from the root this run
        (empty when ``max_pages`` truncated the crawl: then nothing can be told)."""
        if self.truncated:
            return {}
        reached = self.reachable()
        return {
            page.id: page.url
            for key, page in self.pages.items()
            if key not in reached
            and page.id not in self.gone_pages
            and page.id not in self.moved
            and page.url in self.scope  # one out of the scope is not an orphan: it goes whatever prune says
        }

    def deletion_plan(
        self, *, completed: bool, prune: str = "none", mass_delete_share: float = 1.0, allow_mass_delete: bool = False
    ) -> DeletionPlan:
        """What to delete now. Nothing unless the run ``completed`` and its root answered (200/304); gone pages,
        plus orphans with ``prune="orphans"``; nothing if that is more than ``mass_delete_share`` of the stored
        pages and ``allow_mass_delete`` is false."""
        if not completed or not self.root_answered:
            return DeletionPlan(kept=len(self.gone_pages), completed=False)
        orphans = self.orphans()
        doomed = dict(self.gone_pages)
        left = self.out_of_scope()
        doomed.update((page_id, f"{url} (out of scope: {self.scope.describe()})") for page_id, url in left.items())
        if prune == "orphans":
            doomed.update((page_id, f"{url} (orphan)") for page_id, url in orphans.items() if page_id not in doomed)
        if len(doomed) > mass_delete_share * max(len(self.pages), 1) and not allow_mass_delete:
            return DeletionPlan(orphans=orphans, out_of_scope=left, refused=len(doomed))
        return DeletionPlan(delete=doomed, orphans=orphans, out_of_scope=left)

    def out_of_scope(self) -> dict[int, str]:
        """Stored pages (page id → URL) the run's scope does not cover (never requested this run), less those gone or
        moved already."""
        return {
            page.id: page.url
            for page in self.pages.values()
            if page.url not in self.scope and page.id not in self.gone_pages and page.id not in self.moved
        }

    def checked_pages(self, plan: DeletionPlan) -> list[int]:
        """Stored pages to mark as checked this run: those that answered, less those deleted."""
        return sorted(self.checked - set(plan.delete))
