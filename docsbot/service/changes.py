"""What changed: the pages a library's runs added, modified, deleted or moved, and what two versions of a library
define differently (API diffs, from their symbol tables).
"""

from __future__ import annotations

from datetime import UTC, datetime

from docsbot import store
from docsbot.arguments import parse_duration
from docsbot.service.core import IndexCore, check_text
from docsbot.service.errors import Invalid
from docsbot.service.models import (
    ChangesResult,
    PageChangeInfo,
    SymbolRef,
    VersionDiff,
)
from docsbot.service.runs import iso

__all__ = ["ChangeReading", "parse_since"]


def parse_since(value: str | None, now: datetime) -> datetime | None:
    """``since`` as a time: ``None``/``''`` for none; a duration back from ``now`` (``7d``, ``12h``, ``2w``); or a
    date or time in ISO 8601 (``2026-11-20``, ``2026-11-20T08:00:00+00:00``; without a zone, UTC). Raises
    :class:`Invalid` for anything else."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    try:
        duration = parse_duration(text)
    except ValueError:
        duration = None
    if duration is not None:
        try:
            return now - duration
        except OverflowError:
            raise Invalid(f"since= {text!r} reaches back before the year 1") from None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise Invalid(f"since= takes a duration (7d, 12h, 2w) or a date or time (2026-11-20); got {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _deep_link(url: str, anchor: str | None) -> str:
    return f"{url}#{anchor}" if anchor else url


class ChangeReading(IndexCore):
    """:meth:`changes` and :meth:`diff_versions` of :class:`~docsbot.service.index.DocsIndex`."""

    def changes(
        self,
        library: str,
        version: str | None = None,
        since: str | None = None,
        *,
        run: int | None = None,
        limit: int = 200,
        diffs: bool = False,
    ) -> ChangesResult:
        """The pages a library's runs added, modified (with the sections that changed; ``diffs``: the diff of its
        Markdown), deleted or moved, newest first: of one version, or of all the library's versions (``version``
        None); ``since`` a duration back from now (``7d``, ``12h``) or a date or time (``2026-11-20``, ISO 8601);
        ``run`` a ``crawl_runs`` id. Raises :class:`NotFound` for a library or version that is not indexed and
        :class:`Invalid` for a ``since`` it cannot read or a ``limit`` outside 1-1000."""
        check_text(library=library, version=version, since=since)
        if not 1 <= limit <= 1000:
            raise Invalid(f"limit must be between 1 and 1000, got {limit}")
        versions = self.searcher.versions(library, version)
        with self.connection() as conn:
            start = parse_since(since, store.database_now(conn))
            rows = store.list_changes(
                conn, [v.id for v in versions], since=start, run_id=run, limit=limit + 1, with_diff=diffs
            )
        listed = [
            PageChangeInfo(
                id=row["id"],
                kind=row["kind"],
                url=row["url"],
                old_url=row["old_url"],
                title=row["title"],
                sections=row["sections"],
                diff=row["diff"],
                at=iso(row["created_at"]),
                run_id=row["run_id"],
                library=row["library"],
                version=row["version"],
            )
            for row in rows[:limit]
        ]
        counts: dict[str, int] = {}
        for change in listed:
            counts[change.kind] = counts.get(change.kind, 0) + 1
        return ChangesResult(
            library=library,
            version=versions[0].name if version is not None and len(versions) == 1 else version,
            since=iso(start),
            counts=counts,
            changes=listed,
            truncated=len(rows) > limit,
        )

    def diff_versions(self, library: str, old_version: str, new_version: str, limit: int = 1000) -> VersionDiff:
        """What ``new_version`` of a library defines that ``old_version`` does not, what it no longer defines,
        and the names whose documentation text changed, from the two versions' symbol tables, with deep links.
        Raises :class:`NotFound` for a version that is not indexed or has no pages."""
        check_text(library=library, old_version=old_version, new_version=new_version)
        # a version without pages defines nothing: its "diff" would list every name as removed or added
        (old,) = self.searcher.readable(self.searcher.versions(library, old_version))
        (new,) = self.searcher.readable(self.searcher.versions(library, new_version))
        with self.connection() as conn:
            found = store.symbol_diff(conn, old.id, new.id, limit)

        def refs(rows: list[dict]) -> list[SymbolRef]:
            return [
                SymbolRef(name=r["name"], url=r["url"], anchor=r["anchor"], deep_link=_deep_link(r["url"], r["anchor"]))
                for r in rows
            ]

        return VersionDiff(
            library=library,
            old_version=old.name,
            new_version=new.name,
            added=refs(found["added"]),
            removed=refs(found["removed"]),
            changed=refs(found["changed"]),
            not_compared=found["unknown"],
        )
