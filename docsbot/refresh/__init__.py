"""The refresh core (pure: no Scrapy, no database): the rules of docs/explanation/refresh.md as code.

- :mod:`~docsbot.refresh.ledger`: :class:`RefreshLedger`, what to request, what each answer means for a stored page,
  what is deleted at the end of a run;
- :mod:`~docsbot.refresh.outcome`: :func:`run_outcome`, the one rule behind a run's state and exit code;
- :mod:`~docsbot.refresh.freshness`: HTTP freshness (RFC 9111 §4.2), until when a stored response needs no request.

The names below are the core's API (``from docsbot.refresh import RefreshLedger``).
"""

from __future__ import annotations

from docsbot.refresh.ledger import (
    GONE_STATUSES,
    SKIP_STATUSES,
    DeletionPlan,
    PlannedRequest,
    RefreshLedger,
    Resolution,
    RootFailed,
    StoredPage,
    content_unchanged,
    parse_gone_statuses,
    parse_skip_statuses,
)
from docsbot.refresh.outcome import (
    EXIT_COMPLETE,
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_VECTORS_PENDING,
    FAILURE_KINDS,
    SKIPPED_KINDS,
    RunOutcome,
    run_outcome,
)

__all__ = [
    "EXIT_COMPLETE",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_VECTORS_PENDING",
    "FAILURE_KINDS",
    "GONE_STATUSES",
    "SKIPPED_KINDS",
    "SKIP_STATUSES",
    "DeletionPlan",
    "PlannedRequest",
    "RefreshLedger",
    "Resolution",
    "RootFailed",
    "RunOutcome",
    "StoredPage",
    "content_unchanged",
    "parse_gone_statuses",
    "parse_skip_statuses",
    "run_outcome",
]
