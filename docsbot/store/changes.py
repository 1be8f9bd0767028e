"""What changed: the change log runs write (``page_changes``), the freshness of pages, the symbol tables of two
versions compared, and a version's pages read out whole (export)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from psycopg.rows import dict_row

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import datetime

    import psycopg

__all__ = ["change_counts", "list_changes", "page_freshness", "symbol_diff", "version_pages"]


def list_changes(
    conn: psycopg.Connection,
    version_ids: list[int],
    *,
    since: datetime | None = None,
    run_id: int | None = None,
    limit: int = 200,
    with_diff: bool = False,
) -> list[dict[str, Any]]:
    """The change log of these versions, newest first, at most ``limit`` rows: ``id, run_id, run_mode, library,
    version, kind, url, old_url, title, sections, created_at`` (and ``diff`` with ``with_diff``), since ``since``
    (database clock) or of one run."""
    diff = "c.diff" if with_diff else "NULL::text"
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"""
            SELECT c.id, c.run_id, r.mode AS run_mode, l.name AS library, v.name AS version, c.kind, c.url,
                   c.old_url, c.title, c.sections, {diff} AS diff, c.created_at
            FROM page_changes c
            JOIN versions v ON v.id = c.version_id JOIN libraries l ON l.id = v.library_id
            LEFT JOIN crawl_runs r ON r.id = c.run_id
            WHERE c.version_id = ANY(%(versions)s)
              AND (%(since)s::timestamptz IS NULL OR c.created_at >= %(since)s)
              AND (%(run)s::bigint IS NULL OR c.run_id = %(run)s)
            ORDER BY c.created_at DESC, c.id DESC
            LIMIT %(limit)s
            """,  # noqa: S608 - `diff` is one of two literals above
            {"versions": version_ids, "since": since, "run": run_id, "limit": limit},
        ).fetchall()


def change_counts(conn: psycopg.Connection, run_id: int) -> dict[str, int]:
    """How many pages of each kind run ``run_id`` changed: ``{added, modified, deleted, moved}`` (those present)."""
    rows = conn.execute("SELECT kind, count(*) FROM page_changes WHERE run_id = %s GROUP BY kind", (run_id,))
    return dict(rows.fetchall())


def page_freshness(conn: psycopg.Connection, page_ids: list[int]) -> dict[int, dict[str, Any]]:
    """``{page id: {last_checked_at, last_modified, content_changed_at}}``: when a run last found the page (its last
    200 or 304), the server's ``Last-Modified`` as stored, and when its text last changed."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "SELECT id, last_checked_at, last_modified, content_changed_at FROM pages WHERE id = ANY(%s)",
            (page_ids,),
        ).fetchall()
    return {row.pop("id"): row for row in rows}


def symbol_diff(conn: psycopg.Connection, old_version: int, new_version: int, limit: int = 5000) -> dict[str, Any]:
    """The symbol tables of two versions compared by name: ``added`` (in the new only), ``removed`` (in the old
    only), ``changed`` (in both, with different documentation text: ``symbols.doc_hash``), each a list of ``{name,
    url, anchor}`` (the new version's page, or the old one's for removed names), by name, at most ``limit`` each;
    and ``unknown``: names in both whose text cannot be compared (stored before doc hashes were recorded)."""
    # The names compared first (one scan of each version's symbols, no join), then the few that differ given their
    # page (the shallowest defining page of the version that has the name).
    query = """
        WITH a AS (SELECT name, min(doc_hash) AS h FROM symbols WHERE version_id = %(old)s GROUP BY name),
             b AS (SELECT name, min(doc_hash) AS h FROM symbols WHERE version_id = %(new)s GROUP BY name),
             d AS (SELECT COALESCE(b.name, a.name) AS name,
                          CASE WHEN a.name IS NULL THEN 'added' WHEN b.name IS NULL THEN 'removed'
                               WHEN a.h IS NULL OR b.h IS NULL THEN 'unknown' ELSE 'changed' END AS kind
                   FROM a FULL JOIN b ON a.name = b.name
                   WHERE a.name IS NULL OR b.name IS NULL OR a.h IS DISTINCT FROM b.h)
        SELECT d.kind, d.name, p.url, s.anchor
        FROM d
        LEFT JOIN LATERAL (
            SELECT sy.anchor, sy.page_id FROM symbols sy JOIN pages pg ON pg.id = sy.page_id
            WHERE sy.version_id = CASE WHEN d.kind = 'removed' THEN %(old)s ELSE %(new)s END AND sy.name = d.name
              AND d.kind <> 'unknown'
            ORDER BY pg.depth, pg.id LIMIT 1
        ) s ON true
        LEFT JOIN pages p ON p.id = s.page_id
        ORDER BY d.name
    """
    out: dict[str, Any] = {"added": [], "removed": [], "changed": [], "unknown": 0}
    with conn.cursor(row_factory=dict_row) as cur:
        for row in cur.execute(query, {"old": old_version, "new": new_version}):
            kind = row.pop("kind")
            if kind == "unknown":
                out["unknown"] += 1
            elif len(out[kind]) < limit:
                out[kind].append(row)
    return out


def version_pages(conn: psycopg.Connection, version_id: int) -> Iterator[tuple[str, str, str]]:
    """``(url, title, markdown)`` of every page of the version, by depth then URL, read 100 rows at a time (a
    server-side cursor): the version's pages whole, for an export. A page stored before docsbot kept its Markdown
    gives its chunks joined."""
    with conn.transaction(), conn.cursor(name="version_pages") as cur:
        cur.itersize = 100
        cur.execute(
            """
            SELECT p.url, p.title, COALESCE(p.markdown, (SELECT string_agg(d.content, E'\\n\\n' ORDER BY d.sort_order)
                                                   FROM documents d WHERE d.page_id = p.id AND d.kind = 0), '')
            FROM pages p WHERE p.version_id = %s ORDER BY p.depth, p.url
            """,
            (version_id,),
        )
        yield from cur


def overview_pages(conn: psycopg.Connection, version_id: int, limit: int = 20) -> list[tuple[str, str, str]]:
    """``(url, title, markdown)`` of the version's first ``limit`` documentation pages by depth then URL (the root
    and the pages it links: its overview), release notes and index pages left out (``pages.kind``)."""
    return conn.execute(
        """
        SELECT p.url, p.title, COALESCE(p.markdown, (SELECT string_agg(d.content, E'\\n\\n' ORDER BY d.sort_order)
                                               FROM documents d WHERE d.page_id = p.id AND d.kind = 0), '')
        FROM pages p WHERE p.version_id = %s AND p.kind = 'docs' ORDER BY p.depth, p.url LIMIT %s
        """,
        (version_id, limit),
    ).fetchall()


def page_list(conn: psycopg.Connection, version_id: int) -> list[tuple[str, str, str]]:
    """``(url, title, kind)`` of every page of the version, by depth then URL (``pages.kind``: docs, changelog,
    index)."""
    return conn.execute(
        "SELECT url, title, kind FROM pages WHERE version_id = %s ORDER BY depth, url", (version_id,)
    ).fetchall()
