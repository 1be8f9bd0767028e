"""The outcome of a run (pure): :func:`run_outcome`: the one rule behind its exit code, its summary line and its
``crawl_runs`` row: a run is *complete* only if every page it fetched was stored, confirmed unchanged, deleted by
rule or skipped by rule (not HTML, unparseable), every bookkeeping step was written, and every chunk of the
version has its vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "EXIT_COMPLETE",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_VECTORS_PENDING",
    "FAILURE_KINDS",
    "SKIPPED_KINDS",
    "RunOutcome",
    "run_outcome",
]

EXIT_COMPLETE = 0  # every page fetched is stored, unchanged, deleted or skipped by rule; every vector in place
EXIT_FAILED = 1  # the run did not finish (or could not start): nothing was deleted
EXIT_INCOMPLETE = 3  # it finished, but pages failed or a bookkeeping step could not be written
EXIT_VECTORS_PENDING = 4  # every page is stored, but chunks of the version still wait for their vectors

# Why a fetched page was not stored (stats ``docsbot/failed/<kind>``; ``docsbot/failed`` is their sum).
# What the site's rules keep from the crawler (stats docsbot/skipped/<kind>, skipped_pages): never a failure.
SKIPPED_KINDS = ("robots", "forbidden", "refused", "out_of_scope")

FAILURE_KINDS = {
    "fetch": "not fetched (5xx, 429, timeout, network, size cap, a stored page refused)",
    "extract": "extraction crashed or timed out",
    "store": "database unavailable after retries",
    "error": "an unexpected error in docsbot (logged with its traceback)",
    "dropped": "dropped by a pipeline of the project",
}


@dataclass(frozen=True)
class RunOutcome:
    """What a run amounts to: ``state`` (``complete``, ``incomplete``, ``vectors_pending``, ``failed``), the exit
    code of ``scrapy crawl`` (``EXIT_*``), and ``reason``, one line saying what is missing ("" when complete)."""

    state: str
    exit_code: int
    reason: str = ""


def _failures(counts: Mapping[str, int]) -> str:
    kinds = [(kind, counts.get(f"failed/{kind}", 0)) for kind in FAILURE_KINDS]
    return ", ".join(f"{kind} {n}" for kind, n in kinds if n)


def run_outcome(
    counts: Mapping[str, int],
    *,
    mode: str,
    crawl_completed: bool,
    stop_reason: str | None = None,
    problems: Sequence[str] = (),
    vectors_waiting: int = 0,
    vectors_note: str = "",
    responses: Mapping[str, int] | None = None,
) -> RunOutcome:
    """The outcome of a run, from its counts (the ``docsbot/…`` stats without the prefix: ``new``, ``modified``,
    ``unchanged``, ``failed/<kind>``, ``skipped/<reason>``…), in this order:

    1. ``crawl_completed`` false (the root failed, the run was stopped or could not start: ``stop_reason``):
       ``failed``, exit 1. Such a run deleted nothing; pages it stored stay stored, whole.
    2. A full index that stored no page at all: ``failed``, exit 1, saying what the server answered
       (``responses``: status → count) and what was skipped.
    3. Any failed page (``failed/<kind>``) or bookkeeping step that could not be written (``problems``, one line
       each: deletions, the pages' check marks): ``incomplete``, exit 3. Failed pages are kept as they were; the
       next refresh fetches them again.
    4. Chunks of the version still without a vector (``vectors_waiting``; ``vectors_note`` says why):
       ``vectors_pending``, exit 4. Their pages are searchable by text already; ``docsbot embed`` completes them.
    5. Otherwise ``complete``, exit 0.
    """
    if not crawl_completed:
        return RunOutcome(
            "failed", EXIT_FAILED, f"the run did not finish ({stop_reason or 'stopped'}): nothing deleted"
        )
    stored = sum(counts.get(key, 0) for key in ("new", "modified", "unchanged"))
    if mode == "full" and stored == 0:
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted((responses or {}).items()))
        skipped = ", ".join(
            f"{key}: {n}" for key, n in sorted(counts.items()) if key.startswith(("skipped/", "failed/")) and n
        )
        return RunOutcome(
            "failed",
            EXIT_FAILED,
            f"the full index stored no page (responses {statuses or 'none'}; {skipped or 'nothing skipped'})",
        )
    reasons = []
    failed = sum(counts.get(f"failed/{kind}", 0) for kind in FAILURE_KINDS)
    if failed:
        reasons.append(
            f"{failed} page{'s' if failed != 1 else ''} not stored ({_failures(counts)}): kept as they were, the next "
            "refresh fetches them again"
        )
    reasons.extend(problems)
    if reasons:
        return RunOutcome("incomplete", EXIT_INCOMPLETE, "; ".join(reasons))
    if vectors_waiting > 0:
        note = f" ({vectors_note})" if vectors_note else ""
        return RunOutcome(
            "vectors_pending",
            EXIT_VECTORS_PENDING,
            f"{vectors_waiting} chunk{'s' if vectors_waiting != 1 else ''} still wait for a vector{note}; their "
            "pages are searchable by text; `docsbot embed` completes them",
        )
    return RunOutcome("complete", EXIT_COMPLETE)
