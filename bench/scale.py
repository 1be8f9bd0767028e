"""What a refresh holds in memory for every stored page, measured on a real index and projected to 100,000 pages
("Scale"). `make matrix MATRIX_ARGS="--scale gtk4"` runs it; by hand:

    python bench/scale.py ledger DSN LIBRARY            # JSON: pages, links, RSS of the refresh's page state
    python bench/scale.py replicate DSN LIBRARY COPIES NEW_LIBRARY

``ledger`` does in one process what a refresh does before its first response: loads the version's stored pages
(:meth:`docsbot.store.PageStore.stored_pages`), builds the :class:`~docsbot.refresh.RefreshLedger`, plans the seeds
and builds one Scrapy request per seed as the spider does. (Scrapy's engine reads ``start()`` ahead into the
scheduler's queue whenever the downloader is full, so a refresh used to hold a request for every stored page; the
spider's seeds now wait for the scheduler to run dry, so the requests counted here are an upper bound.) It
reports the process's resident memory before and after, and its peak (``VmHWM``: the libpq result the rows are
read from included).

``replicate`` copies a version ``COPIES`` times into a new library, each copy's URLs (and links) under its own
directory (``c0/``, ``c1/``...) under the same root URL, so that a 9,000-page index stands for a 100,000-page site
with as many distinct URLs and the same links per page, all in scope.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _version(conn: Any, library: str) -> tuple[int, str]:
    row = conn.execute(
        "SELECT v.id, v.root_url FROM versions v JOIN libraries l ON l.id = v.library_id WHERE l.name = %s "
        "ORDER BY v.id LIMIT 1",
        (library,),
    ).fetchone()
    if row is None:
        raise SystemExit(f"no version of {library!r}")
    return row[0], row[1]


async def ledger(dsn: str, library: str) -> dict[str, Any]:
    """The refresh's per-page state for ``library``; sizes in MiB."""
    import scrapy

    from docsbot import store
    from docsbot.refresh import RefreshLedger
    from docsbot.urls import Scope

    with store.connect(dsn, autocommit=True) as conn:
        version_id, root = _version(conn, library)
    store = store.PageStore(dsn, 1)
    await store.open()
    base = _status_kib("VmRSS")
    stored = await store.stored_pages(version_id)
    await store.close()
    loaded = _status_kib("VmRSS")
    ledger = RefreshLedger(root, stored.values(), refresh=True, scope=Scope.from_root(root))
    planned = ledger.seeds()

    def callback(_: object) -> None:
        return None

    requests = [
        scrapy.Request(
            p.url,
            callback=callback,
            errback=callback,
            meta={"depth": p.depth, "docsbot_page": True, "docsbot_validators": p.validators},
            dont_filter=True,
        )
        for p in planned
    ]
    held = _status_kib("VmRSS")
    pages = len(stored)
    links = sum(len(p.links) for p in stored.values())
    return {
        "library": library,
        "pages": pages,
        "links": links,
        "requests": len(requests),
        "rss_base_mib": round(base / 1024, 1),
        "stored_pages_mib": round((loaded - base) / 1024, 1),
        "ledger_and_requests_mib": round((held - loaded) / 1024, 1),
        "held_mib": round((held - base) / 1024, 1),
        "peak_above_base_mib": round((_status_kib("VmHWM") - base) / 1024, 1),
        "kib_per_page": round((held - base) / max(pages, 1), 2),
    }


def replicate(dsn: str, library: str, copies: int, new_library: str) -> int:
    """Copy ``library``'s first version ``copies`` times into ``new_library`` (replaced if it exists); returns
    the number of pages written."""
    from docsbot import store

    with store.connect(dsn, autocommit=True) as conn:
        version_id, root = _version(conn, library)
        prefix = root.rsplit("/", 1)[0] + "/"
        conn.execute("DELETE FROM libraries WHERE name = %s", (new_library,))
        library_id = conn.execute("INSERT INTO libraries (name) VALUES (%s) RETURNING id", (new_library,)).fetchone()[0]
        new_version = conn.execute(
            "INSERT INTO versions (library_id, name, root_url, settings, embedding_model, embedding_dim) "
            "SELECT %s, name, root_url, settings, embedding_model, embedding_dim FROM versions WHERE id = %s "
            "RETURNING id",
            (library_id, version_id),
        ).fetchone()[0]
        cur = conn.execute(
            "INSERT INTO pages (version_id, url, title, etag, last_modified, content_type, content_hash, depth, links) "
            "SELECT %(new)s, replace(p.url, %(prefix)s, %(prefix)s || 'c' || k || '/'), p.title, p.etag, "
            "p.last_modified, p.content_type, p.content_hash, p.depth, "
            "ARRAY(SELECT replace(l, %(prefix)s, %(prefix)s || 'c' || k || '/') FROM unnest(p.links) AS l) "
            "FROM pages p, generate_series(0, %(copies)s - 1) AS k WHERE p.version_id = %(old)s",
            {"new": new_version, "prefix": prefix, "copies": copies, "old": version_id},
        )
        return cur.rowcount


def main() -> int:
    command, *args = sys.argv[1:] or ["help"]
    if command == "ledger" and len(args) == 2:
        print(json.dumps(asyncio.run(ledger(*args))))
        return 0
    if command == "replicate" and len(args) == 4:
        print(replicate(args[0], args[1], int(args[2]), args[3]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
