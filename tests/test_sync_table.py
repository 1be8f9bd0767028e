"""The table `docsbot sync` ends with (docsbot.fleet.scheduler): one row per entry in exactly one result, counts that
add up to the entries, a run that did not complete counted failed and never indexed too, a version never indexed
whose last run failed counted failed and never "not due"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from docsbot.fleet.scheduler import RunReport, SyncRow, idle_row, sync_table

LATER = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
COUNTS = {"new": 5, "modified": 0, "unchanged": 0, "deleted": 0, "failed": 0, "elapsed_seconds": 1.5}


def test_every_entry_is_in_one_row_and_the_counts_add_up(tmp_path):
    log = tmp_path / "dead.log"
    log.write_text(
        "2026-11-28 04:03:49 [scrapy.downloadermiddlewares.retry] ERROR: Gave up retrying <GET http://x/>\n"
        "2026-11-28 04:03:49 [spiders.docs] ERROR: the root URL http://x/ failed (Connection refused): stopping\n"
        "2026-11-28 04:03:49 [scrapy.core.engine] INFO: Closing spider (root_failed)\n"
    )
    reports = [
        RunReport("one@1.0", "full", "local", "complete", counts=COUNTS),
        RunReport("two", "refresh", "local", "vectors_pending", counts={**COUNTS, "new": 0, "unchanged": 5}),
        RunReport("dead@1.0", "full", "local", "failed", "the run did not finish (root_failed)", counts={}, log=log),
        RunReport("half", "full", "local", "incomplete", "3 pages failed", counts={**COUNTS, "failed": 3}),
        RunReport("far", "full", "http://node:6800", "scheduled", "job abc"),
    ]
    rows = [r.row() for r in reports]
    assert [(r.entry, r.result) for r in rows] == [
        ("one@1.0", "indexed"), ("two", "refreshed"), ("dead@1.0", "failed"), ("half", "failed"), ("far", "scheduled")
    ]  # fmt: skip  # a full run that failed is not also "indexed"
    assert rows[2].detail == (
        f"full index failed: the root URL http://x/ failed (Connection refused): stopping (log: {log})"
    )  # the spider's own words from the log, before the outcome's
    assert rows[3].detail.startswith("full index incomplete: 3 pages failed; 5 new, 0 modified")
    states = [
        {"library": "old", "version": "2", "next_due_at": LATER, "indexed": True, "failures": 0, "last_error": None},
        {"library": "never", "version": "", "next_due_at": LATER, "indexed": False, "failures": 1,
         "last_error": "the run did not finish (root_failed)"},
        {"library": "busy", "version": "", "next_due_at": None, "indexed": True, "failures": 0, "last_error": None,
         "claimed_by": "host:42", "claimed_until": LATER + timedelta(hours=6)},
        {"library": "flaky", "version": "", "next_due_at": LATER, "indexed": True, "failures": 2,
         "last_error": "the root answered 503"},
    ]  # fmt: skip
    idle = [idle_row(s) for s in states]
    assert idle == [
        SyncRow("old@2", "not due", "next 2026-11-29 03:00 UTC"),
        SyncRow("never", "failed", "never indexed: its last run failed: the run did not finish (root_failed) "
                "(tried again after 2026-11-29 03:00 UTC)"),
        SyncRow("busy", "skipped", "claimed by host:42 until 09:00 UTC"),
        SyncRow("flaky", "not due", "next 2026-11-29 03:00 UTC; retrying after 2 failed run(s): the root answered 503"),
    ]  # fmt: skip
    table = sync_table([*rows, *idle, SyncRow("-e ./local", "skipped", "an editable install")])
    lines = table.splitlines()
    assert lines[0].split() == ["entry", "result", "detail"] and len(lines) == 1 + 10 + 1
    assert lines[-1] == "10 entries: 1 indexed, 1 refreshed, 1 scheduled, 2 not due, 3 failed, 2 skipped"
    assert sync_table([SyncRow("x", "indexed")]).splitlines()[-1] == (
        "1 entry: 1 indexed, 0 refreshed, 0 not due, 0 failed, 0 skipped"
    )  # scheduled is shown only when there are any
