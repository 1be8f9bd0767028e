"""Whether a version can answer (pure): a version with stored pages is ``ready``; one without is ``indexing`` (a run
of it is in progress), ``empty`` (its last run went through and stored nothing), ``failed`` (its last run failed
or was interrupted) or ``not_indexed`` (declared, as a libraries file does, and never run). ``resolve_library`` and
``list_libraries`` report the state; ``get_docs``, ``search_docs`` and ``diff_versions`` answer a version without
pages with an error that says which state it is in and what to do, not with an empty success.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from docsbot.service.models import VersionStatus

__all__ = ["not_ready_message", "version_status"]

# Scrapy's close reasons of a crawl that ran to its end (the CloseSpider extension's limits included): a run that
# ended so and stored no page met a root with nothing to store, not a failure to reach it.
_RAN_THROUGH = ("finished", "closespider_")


def version_status(pages: int, running: bool, last_run: Mapping[str, Any] | None) -> tuple[VersionStatus, str | None]:
    """``(status, reason)`` of a version with ``pages`` stored pages, ``running`` when its run lock is held now, and
    ``last_run`` its most recently started ``crawl_runs`` row (``outcome``, ``outcome_reason``, ``finished_at``,
    ``finish_reason`` or ``stats``; ``None`` when it never ran). ``reason`` is one line for a version without pages
    (what its last run said), ``None`` for a ready one. A version with pages is ``ready`` whatever its last run did:
    its pages answer while a refresh runs or after one failed (``last_run`` says so)."""
    if pages:
        return "ready", None
    if running:
        return "indexing", "a run of it is in progress"
    if last_run is None:
        return "not_indexed", "declared, never indexed"
    finish = last_run.get("finish_reason") or (last_run.get("stats") or {}).get("finish_reason") or ""
    outcome = last_run.get("outcome")
    reason = last_run.get("outcome_reason")
    if last_run.get("finished_at") is None:
        return "failed", f"its last run was interrupted: {reason or 'it ended without recording its end'}"
    if finish.startswith(_RAN_THROUGH) and outcome != "interrupted":
        return "empty", f"its last run stored no page{f' ({reason})' if reason else ''}"
    return "failed", f"its last run failed{f' ({reason})' if reason else f' ({finish})' if finish else ''}"


_WHAT_TO_DO = {
    "indexing": "try again when the run ends (get_run or list_libraries shows its progress)",
    "empty": "check its root URL (a page with no links under it, or pages the site's rules keep from the crawler), "
    "then index it again",
    "failed": "index or refresh it again once the site answers (the run's log says more)",
    "not_indexed": "index it first (docsbot sync, or refresh_library)",
}


def not_ready_message(label: str, status: VersionStatus, reason: str | None, others: list[str]) -> str:
    """One line for a tool error: ``label`` (``library@version``) has no pages, in which ``status`` and why
    (``reason``), what to do, and ``others``: the labels of the library's versions that have pages, if any."""
    state = {"indexing": "being indexed", "not_indexed": "not indexed yet"}.get(status, status)
    text = f"{label} has no pages ({state}: {reason or status}); {_WHAT_TO_DO.get(status, 'index it again')}"
    if others:
        text += f"; versions with pages: {', '.join(others)}"
    return text
