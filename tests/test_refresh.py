"""The refresh rules as pure code (docsbot/refresh/), row by row; docs/explanation/refresh.md has the table.

End-to-end versions of the same rules, against a real server and database, are in tests/test_refresh_rules.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from docsbot.refresh import RefreshLedger, StoredPage, content_unchanged
from docsbot.urls import Scope

ROOT = "http://h/docs/index.html"


def page(id: int, path: str, depth: int, links: tuple[str, ...] = (), *, etag='"e"', checked=None) -> StoredPage:
    return StoredPage(id, f"http://h/docs/{path}", etag, "Mon, 01 Jan 2024 00:00:00 GMT", f"hash{id}", depth, links,
                      checked)  # fmt: skip


def site() -> list[StoredPage]:
    """index → guide, api; guide → deep."""
    return [
        page(1, "index.html", 0, ("http://h/docs/guide.html", "http://h/docs/api.html")),
        page(2, "guide.html", 1, ("http://h/docs/deep.html",)),
        page(3, "api.html", 1),
        page(4, "deep.html", 2),
    ]


def urls(planned) -> list[str]:
    return [p.url.removeprefix("http://h/docs/") for p in planned]


# | 304 Not Modified | untouched | untouched (same ids) | the stored links |
def test_304_keeps_the_page_and_hands_back_its_stored_links():
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    stored = ledger.not_modified("http://h/docs/guide.html")
    assert stored is not None and stored.links == ("http://h/docs/deep.html",)
    assert ledger.checked == {2}
    ledger.not_modified(ROOT)
    assert ledger.root_answered and ledger.checked == {1, 2}
    assert ledger.deletion_plan(completed=True).delete == {}


# Stored pages carry their validators, byte for byte (RFC 9110 §13.1); a full index sends none.
def test_stored_pages_are_revalidated_with_their_validators_and_keep_their_depth():
    planned = {p.url: p for p in RefreshLedger(ROOT, site()).seeds()}
    deep = planned["http://h/docs/deep.html"]
    assert (deep.depth, deep.validators) == (2, ('"e"', "Mon, 01 Jan 2024 00:00:00 GMT"))
    assert all(p.validators is None for p in RefreshLedger(ROOT, site(), refresh=False).seeds())


# The root URL is processed exactly once per run, whether or not it is stored; every page is requested once.
def test_every_page_is_requested_once_the_root_first():
    ledger = RefreshLedger(ROOT, site())
    assert urls(ledger.seeds()) == ["index.html", "guide.html", "api.html", "deep.html"]
    assert ledger.plan(["http://h/docs/guide.html", "http://h/docs/index.html"], 0) == []
    assert urls(RefreshLedger(ROOT, []).seeds()) == ["index.html"]


# | 200, content changed | upsert ... depth | deleted and re-inserted | links in the new body |
# A page found for the first time gets its parent's depth + 1; a stored page keeps its stored depth.
def test_new_pages_get_parent_depth_plus_one_stored_pages_keep_theirs():
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    new = ledger.plan(["http://h/docs/new.html"], 1)
    assert [(p.url, p.depth, p.stored) for p in new] == [("http://h/docs/new.html", 2, None)]
    found = ledger.resolve("http://h/docs/deep.html", "http://h/docs/deep.html", None, request_depth=2)
    assert (found.page.id, found.depth) == (4, 2)
    shortcut = RefreshLedger(ROOT, site())
    assert [p.depth for p in shortcut.plan(["http://h/docs/deep.html"], 0)] == [2]  # linked from the root now


def test_max_depth_applies_to_stored_and_new_pages():
    ledger = RefreshLedger(ROOT, site(), max_depth=1)
    assert urls(ledger.seeds()) == ["index.html", "guide.html", "api.html"]
    assert ledger.plan(["http://h/docs/new.html"], 1) == []


# | 200, same content | validators updated only | untouched | links in the body |
def test_same_content_is_detected_by_hash():
    assert content_unchanged("abc", "abc")
    assert not content_unchanged("abc", "abd")
    assert not content_unchanged(None, "abc")  # a page never stored has no content to compare


# | 404 / 410 | deleted | deleted by cascade | none |
def test_gone_pages_are_deleted_at_the_end_of_a_complete_run_only():
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    ledger.not_modified(ROOT)
    assert ledger.gone(4, "http://h/docs/deep.html", "404")
    assert not ledger.gone(4, "http://h/docs/deep.html", "410")  # reported once
    plan = ledger.deletion_plan(completed=True)
    assert plan.delete == {4: "http://h/docs/deep.html (404)"}
    stopped = ledger.deletion_plan(completed=False)
    assert (stopped.delete, stopped.kept, stopped.completed) == ({}, 1, False)


def test_nothing_is_deleted_when_the_root_did_not_answer():
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    ledger.gone(4, "http://h/docs/deep.html", "404")
    assert ledger.deletion_plan(completed=True).delete == {}


# | anything else / error | untouched | untouched | the stored links |
def test_a_failure_keeps_the_page_and_its_links_are_followed():
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    stored = ledger.failed("http://h/docs/guide.html")
    assert stored is not None and stored.id == 2
    ledger.not_modified(ROOT)
    assert ledger.deletion_plan(completed=True).delete == {}
    assert 2 not in ledger.checked  # not marked as checked this run


# | redirect to new URL | moved to the final URL (no twin) | 200/304 rules at the new URL | as above |
def test_a_redirect_moves_the_stored_row_to_the_new_url():
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    found = ledger.resolve("http://h/docs/api.html", "http://h/docs/reference/api.html", None, request_depth=1)
    assert (found.target, found.page.id, found.retired, found.duplicate) == (
        "http://h/docs/reference/api.html",
        3,
        None,
        False,
    )
    ledger.not_modified(ROOT)
    assert 3 not in ledger.orphans()  # a moved page is not an orphan


def test_a_redirect_onto_another_stored_page_retires_the_old_row():
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    found = ledger.resolve("http://h/docs/deep.html", "http://h/docs/guide.html", None, request_depth=2)
    assert (found.page.id, found.retired.id) == (2, 4)


def test_one_page_under_two_urls_is_stored_once():
    ledger = RefreshLedger(ROOT, [])
    first = ledger.resolve("http://h/docs/api/index.html", "http://h/docs/api/index.html", None, 1)
    again = ledger.resolve("http://h/docs/api/", "http://h/docs/api/", None, 1)
    assert (first.duplicate, again.duplicate) == (False, True)
    # a canonical link inside the scope names the stored URL
    canon = ledger.resolve("http://h/docs/b.html", "http://h/docs/b.html", "http://h/docs/a.html", 1)
    assert canon.target == "http://h/docs/a.html"
    outside = ledger.resolve("http://h/docs/c.html", "http://h/docs/c.html", "http://other/c.html", 1)
    assert outside.target == "http://h/docs/c.html"


# docsbot never invents a URL: a directory index is requested the way the site links it.
def test_urls_are_requested_as_linked_and_a_directory_and_its_index_are_one_page():
    ledger = RefreshLedger(ROOT, [page(9, "dir/index.html", 1)])
    planned = ledger.plan(["http://h/docs/dir/index.html", "http://h/docs/dir/"], 0)
    assert urls(planned) == ["dir/index.html"]
    assert ledger.stored_page("http://h/docs/dir/").id == 9


def test_out_of_scope_urls_are_never_requested():
    ledger = RefreshLedger(ROOT, [])
    assert ledger.plan(["http://h/other/x.html", "http://elsewhere/docs/x.html", "http://h/docs/x.html"], 0)[0].url == (
        "http://h/docs/x.html"
    )


def test_the_roots_redirect_sets_the_scope_for_everything_planned_after_it():
    """``…/docs/python`` redirecting to ``…/docs/python/3.12/``: the crawl covers that directory, not its
    siblings, and the root's every URL counts as the root."""
    ledger = RefreshLedger("http://h/docs/python", [], refresh=False, scope=Scope.from_root("http://h/docs/python"))
    assert [p.url for p in ledger.seeds()] == ["http://h/docs/python"]
    assert ledger.redirect_hop("http://h/docs/python", "http://h/docs/python/3.12/")
    assert ledger.is_root("http://h/docs/python/3.12/") and ledger.scope.path_prefix == "/docs/python/3.12/"
    ledger.answered("http://h/docs/python/3.12/index.html")
    assert ledger.root_answered
    links = ["http://h/docs/python/3.12/os.html", "http://h/docs/python/3.11/os.html", "http://h/docs/cpp/"]
    assert [p.url for p in ledger.plan(links, 0, source="http://h/docs/python")] == links[:1]
    # a browser's navigation tells the ledger the same way (the spider calls root_moved)
    rendered = RefreshLedger("http://h/docs/python", [], refresh=False)
    rendered.root_moved("https://docs.example/python/")
    assert rendered.scope.netloc == "docs.example" and rendered.is_root("https://docs.example/python/")


def test_stored_pages_the_scope_no_longer_covers_are_deleted_within_the_guard():
    """A refresh with a narrower scope (an exclude, here) deletes what left it at the end of a completed run, as
    gone pages go: counted in the mass-deletion guard, and never when the root did not answer."""
    narrower = Scope.from_root(ROOT, exclude=["*/deep.html"])
    ledger = RefreshLedger(ROOT, site(), scope=narrower)
    assert urls(ledger.seeds()) == ["index.html", "guide.html", "api.html"]  # deep.html is not requested
    assert ledger.deletion_plan(completed=True).delete == {}  # the root has not answered
    ledger.not_modified(ROOT)
    plan = ledger.deletion_plan(completed=True)
    assert plan.out_of_scope == {4: "http://h/docs/deep.html"} and 4 not in plan.orphans
    assert plan.delete == {4: "http://h/docs/deep.html (out of scope: prefix h/docs/, exclude */deep.html)"}
    guarded = RefreshLedger(ROOT, site(), scope=Scope.from_root(ROOT, include=["*/index.html"]))
    guarded.seeds()
    guarded.not_modified(ROOT)
    refused = guarded.deletion_plan(completed=True, mass_delete_share=0.25)
    assert refused.delete == {} and refused.refused == 3 and len(refused.out_of_scope) == 3
    assert len(guarded.deletion_plan(completed=True, mass_delete_share=0.25, allow_mass_delete=True).delete) == 3


# Orphans: stored pages no longer linked from the root (kept unless prune=orphans).
def test_orphans_are_reported_and_pruned_on_request():
    ledger = RefreshLedger(ROOT, site())
    ledger.plan([ROOT], -1)
    ledger.not_modified(ROOT)
    ledger.plan(["http://h/docs/guide.html"], 0)  # the root no longer links api.html; guide → deep not followed
    ledger.plan(["http://h/docs/deep.html"], 1)
    for seed in site():
        ledger.plan([seed.url], seed.depth - 1, linked=False)
    assert ledger.orphans() == {3: "http://h/docs/api.html"}
    assert ledger.deletion_plan(completed=True).delete == {}
    assert ledger.deletion_plan(completed=True, prune="orphans").delete == {3: "http://h/docs/api.html (orphan)"}


def test_pages_linked_only_from_pages_the_root_no_longer_reaches_are_orphans():
    # A manual's index is deleted: its pages still link each other, but nothing reachable from the root links
    # them. A fresh index would not find them, so a refresh with prune=orphans must delete them (found on the GTK
    # docs: 39 pages of gdk4-wayland kept after gdk4-wayland/index.html was deleted).
    stored = [
        page(1, "index.html", 0, ("http://h/docs/guide.html", "http://h/docs/m/index.html")),
        page(2, "guide.html", 1),
        page(5, "m/index.html", 1, ("http://h/docs/m/a.html", "http://h/docs/m/b.html")),
        page(6, "m/a.html", 2, ("http://h/docs/m/b.html", "http://h/docs/m/index.html")),
        page(7, "m/b.html", 2, ("http://h/docs/m/a.html", "http://h/docs/guide.html")),
    ]
    ledger = RefreshLedger(ROOT, stored)
    ledger.seeds()
    ledger.not_modified(ROOT)
    ledger.plan(stored[0].links, 0, source=ROOT)
    ledger.not_modified("http://h/docs/guide.html")
    ledger.gone(5, "http://h/docs/m/index.html", "404")
    for pg in stored[3:]:  # requested as seeds; both answer 304 and their stored links are followed
        ledger.not_modified(pg.url)
        ledger.plan(pg.links, pg.depth, source=pg.url)
    assert ledger.orphans() == {6: "http://h/docs/m/a.html", 7: "http://h/docs/m/b.html"}
    # Reached through a link from a reachable page, under a URL that redirects, they are not orphans.
    ledger = RefreshLedger(ROOT, stored)
    ledger.seeds()
    ledger.plan(["http://h/docs/guide.html", "http://h/docs/m"], 0, source=ROOT)
    found = ledger.resolve("http://h/docs/m", "http://h/docs/m/index.html", None, 1)
    ledger.plan(stored[2].links, found.depth, source="http://h/docs/m")
    for pg in stored[3:]:
        ledger.plan(pg.links, pg.depth, source=pg.url)
    assert ledger.orphans() == {}
    # A stored page that nothing links any more but a redirect from a linked URL: reachable too.
    moved = [page(1, "index.html", 0, ("http://h/docs/n",)), page(8, "n/index.html", 1)]
    ledger = RefreshLedger(ROOT, moved)
    ledger.seeds()
    ledger.plan(moved[0].links, 0, source=ROOT)
    ledger.not_modified_after_redirect("http://h/docs/n", "http://h/docs/n/index.html")
    assert ledger.orphans() == {}


def test_max_pages_truncation_means_no_orphans():
    ledger = RefreshLedger(ROOT, site(), max_pages=2)
    assert urls(ledger.seeds()) == ["index.html", "guide.html"]
    ledger.not_modified(ROOT)
    assert ledger.truncated and ledger.orphans() == {}
    assert ledger.deletion_plan(completed=True, prune="orphans").delete == {}


@pytest.mark.parametrize(("gone", "allowed", "deleted"), [(1, False, 1), (2, False, 0), (2, True, 2)])
def test_mass_deletion_guard(gone, allowed, deleted):
    ledger = RefreshLedger(ROOT, site())
    ledger.seeds()
    ledger.not_modified(ROOT)
    for page_id in range(2, 2 + gone):
        ledger.gone(page_id, f"http://h/docs/{page_id}.html", "404")
    plan = ledger.deletion_plan(completed=True, mass_delete_share=0.25, allow_mass_delete=allowed)
    assert len(plan.delete) == deleted
    assert plan.refused == (gone if not deleted else 0)


def test_min_recheck_skips_recent_pages_but_follows_their_links():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    recent = now - timedelta(hours=1)
    stored = [
        page(1, "index.html", 0, ("http://h/docs/guide.html",), checked=recent),
        page(2, "guide.html", 1, ("http://h/docs/deep.html",), checked=recent),
        page(4, "deep.html", 2, checked=now - timedelta(days=30)),
    ]
    ledger = RefreshLedger(ROOT, stored, min_recheck=timedelta(days=1), now=lambda: now)
    planned = ledger.plan([ROOT], -1)
    assert urls(planned) == ["index.html"]  # the root is always checked
    assert urls(ledger.plan(stored[0].links, 0)) == ["deep.html"]  # guide skipped, its link followed
    assert ledger.skipped_recently_checked == 1


def test_rendered_pages_are_revalidated_over_http_first():
    def render(url: str) -> bool:
        return url.endswith("app.html")

    stored = [page(1, "index.html", 0), page(5, "app.html", 1), page(6, "app2.html", 1, etag=None)]
    refresh = {p.url: p for p in RefreshLedger(ROOT, stored, render=render).seeds()}
    assert refresh["http://h/docs/app.html"].render_after_200 and not refresh["http://h/docs/app.html"].render
    full = {p.url: p for p in RefreshLedger(ROOT, stored, refresh=False, render=render).seeds()}
    assert full["http://h/docs/app.html"].render and full["http://h/docs/app.html"].validators is None


def test_a_redirect_target_that_is_stored_is_revalidated_with_its_own_validators():
    stored = [page(1, "start.html", 0, ("http://h/docs/guide.html",)), page(2, "guide.html", 1)]
    ledger = RefreshLedger(ROOT, stored)
    assert ledger.validators_for("http://h/docs/start.html") == ('"e"', "Mon, 01 Jan 2024 00:00:00 GMT")
    assert ledger.validators_for("http://h/docs/new.html") is None
    assert RefreshLedger(ROOT, stored, refresh=False).validators_for("http://h/docs/start.html") is None
    found, retired = ledger.not_modified_after_redirect(ROOT, "http://h/docs/start.html")
    assert (found.id, retired, ledger.root_answered, ledger.checked) == (1, None, True, {1})
    # a stored row that now only redirects to another stored page goes
    found, retired = ledger.not_modified_after_redirect("http://h/docs/guide.html", "http://h/docs/start.html")
    assert (found.id, retired.id) == (1, 2)


# | a page extracted by an older docsbot (pages.extractor_version) | fetched without validators, once | stored as a
#   full index would store it (chunks reused by text) |
def test_a_page_extracted_by_an_older_version_is_fetched_without_validators_and_not_skipped():
    now = datetime(2026, 11, 23, tzinfo=UTC)
    old = StoredPage(2, "http://h/docs/guide.html", '"e"', None, "hash2", 1, (), now, extractor_version=1)
    current = StoredPage(3, "http://h/docs/api.html", '"e"', None, "hash3", 1, (), now, extractor_version=2)
    ledger = RefreshLedger(
        ROOT, [site()[0], old, current], extractor_version=2, min_recheck=timedelta(hours=1), now=lambda: now
    )
    planned = {p.url: p for p in ledger.seeds()}
    assert planned["http://h/docs/guide.html"].validators is None  # unconditional: its 200 is re-extracted
    assert "http://h/docs/api.html" not in planned  # checked recently and current: min_recheck skips it
    assert ledger.outdated(old) and not ledger.outdated(current)
    assert ledger.validators_for("http://h/docs/guide.html") is None
    # Without an extractor version (a caller that does not care), nothing is outdated.
    assert not RefreshLedger(ROOT, [old]).outdated(old)


# | a page extracted by an older docsbot, its HTML stored | revalidated | a 304 re-extracts the stored HTML |
def test_a_page_extracted_by_an_older_version_with_its_html_stored_is_revalidated_to_be_extracted_again():
    now = datetime(2026, 11, 23, tzinfo=UTC)
    old = StoredPage(
        2, "http://h/docs/guide.html", '"e"', None, "hash2", 1, (), now, extractor_version=1, has_html=True
    )
    current = StoredPage(
        3, "http://h/docs/api.html", '"e"', None, "hash3", 1, (), None, extractor_version=2, has_html=True
    )
    ledger = RefreshLedger(
        ROOT, [site()[0], old, current], extractor_version=2, min_recheck=timedelta(hours=1), now=lambda: now
    )
    planned = {p.url: p for p in ledger.seeds()}
    assert planned["http://h/docs/guide.html"].validators == ('"e"', None)
    assert planned["http://h/docs/guide.html"].reextract and not planned["http://h/docs/api.html"].reextract


# --- the answers that stop a run, and the unchanged gate ------------------------------------------------------


def test_the_root_answering_gone_failing_or_leaving_the_scope_stops_the_run():
    from docsbot.refresh import RootFailed

    ledger = RefreshLedger(ROOT, site())
    for decide in (
        lambda: ledger.answered_gone(ROOT, 404),
        lambda: ledger.failed(ROOT, "500 Internal Server Error"),
        lambda: ledger.redirected_out_of_scope(ROOT, "http://elsewhere/"),
    ):
        with pytest.raises(RootFailed):
            decide()
    assert ledger.answered_gone("http://h/docs/deep.html", 410).id == 4  # a stored page goes
    assert ledger.answered_gone("http://h/docs/never.html", 404) is None  # a broken link: nothing to delete
    assert ledger.failed("http://h/docs/api.html", "timeout").id == 3  # kept; its stored links are followed


def test_only_a_refresh_skips_the_chunks_of_a_page_whose_content_is_unchanged():
    refresh, full = RefreshLedger(ROOT, site()), RefreshLedger(ROOT, site(), refresh=False)
    assert refresh.content_unchanged(2, "h", "h")
    assert not refresh.content_unchanged(2, "h", "other")  # changed
    assert not refresh.content_unchanged(None, "h", "h")  # a new page
    assert not refresh.content_unchanged(2, None, "h")  # an older extraction's page is stored again
    assert not full.content_unchanged(2, "h", "h")  # -a mode=full re-chunks everything


@pytest.mark.parametrize(
    ("values", "codes"), [(["404", "410"], {404, 410}), ([403, 404, 410], {403, 404, 410}), (["410"], {410})]
)
def test_gone_statuses(values, codes):
    from docsbot.refresh import parse_gone_statuses

    assert parse_gone_statuses(values) == codes


@pytest.mark.parametrize("values", [[], ["x"], [500], [404, 429], [408], [301], [None]])
def test_gone_statuses_never_include_a_server_error_a_timeout_or_throttling(values):
    from docsbot.refresh import parse_gone_statuses

    with pytest.raises(ValueError, match="DOCSBOT_GONE_STATUSES"):
        parse_gone_statuses(values)


# --- the outcome of a run, case by case -----------------------------------------------------------------------


def outcome(counts=None, **kwargs):
    from docsbot.refresh import run_outcome

    kwargs.setdefault("mode", "refresh")
    kwargs.setdefault("crawl_completed", True)
    return run_outcome(counts or {"unchanged": 5}, **kwargs)


def test_a_run_that_stored_or_confirmed_everything_is_complete():
    result = outcome({"unchanged": 3, "modified": 1, "new": 1, "gone": 1})
    assert (result.state, result.exit_code, result.reason) == ("complete", 0, "")
    result = outcome({"new": 5, "skipped/not_html": 2}, mode="full")  # skipped by rule: still complete
    assert (result.state, result.exit_code, result.reason) == ("complete", 0, "")


@pytest.mark.parametrize("reason", ["root_failed", "shutdown", "embedding_model_error", "database_unavailable"])
def test_a_run_that_did_not_finish_failed_whatever_it_stored(reason):
    result = outcome({"new": 40}, crawl_completed=False, stop_reason=reason, mode="full")
    assert (result.state, result.exit_code) == ("failed", 1)
    assert reason in result.reason and "nothing deleted" in result.reason


def test_a_full_index_that_stored_nothing_failed_and_says_what_the_server_answered():
    result = outcome({"skipped/not_html": 1, "failed/fetch": 1}, mode="full", responses={"200": 1, "500": 3})
    assert (result.state, result.exit_code) == ("failed", 1)
    assert "200: 1, 500: 3" in result.reason and "skipped/not_html: 1" in result.reason
    assert outcome({}, mode="refresh").exit_code == 0  # a refresh of pages that all answered 304 elsewhere


@pytest.mark.parametrize("kind", ["fetch", "extract", "store", "error", "dropped"])
def test_any_failed_page_makes_the_run_incomplete_and_names_its_kind(kind):
    result = outcome({"unchanged": 9, f"failed/{kind}": 2})
    assert (result.state, result.exit_code) == ("incomplete", 3)
    assert result.reason.startswith(f"2 pages not stored ({kind} 2)")


def test_failures_of_several_kinds_are_counted_together():
    result = outcome({"new": 3, "failed/fetch": 1, "failed/store": 2}, mode="full")
    assert result.exit_code == 3 and result.reason.startswith("3 pages not stored (fetch 1, store 2)")


def test_a_bookkeeping_step_that_could_not_be_written_makes_the_run_incomplete():
    result = outcome(problems=["deletions not applied: database unavailable"])
    assert (result.state, result.exit_code) == ("incomplete", 3)
    assert result.reason == "deletions not applied: database unavailable"


def test_missing_vectors_are_pending_unless_pages_failed_too():
    pending = outcome(vectors_waiting=12, vectors_note="stopped while embedding")
    assert (pending.state, pending.exit_code) == ("vectors_pending", 4)
    assert "12 chunks still wait for a vector (stopped while embedding)" in pending.reason
    both = outcome({"unchanged": 1, "failed/fetch": 1}, vectors_waiting=12)
    assert (both.state, both.exit_code) == ("incomplete", 3)  # failed pages come first
    assert outcome(vectors_waiting=12, crawl_completed=False).exit_code == 1
