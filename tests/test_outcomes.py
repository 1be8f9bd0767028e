"""What a command or a run says is what happened: loose versions resolved where they delete, export files that never
overwrite each other, search statistics that count what the run stored."""

from __future__ import annotations

import subprocess
import sys

from docsbot import store
from docsbot.project_settings import ProjectSettings
from tests.conftest import docsbot_env
from tests.docsite import html_page


def test_remove_resolves_a_loose_version_to_the_one_it_deletes(database_url, tmp_path):
    from docsbot.service import DocsIndex

    with store.connect(database_url) as conn:
        store.migrate(conn)
        for name in ("1.9", "2.0", "1.10"):
            store.upsert_version(conn, "lib", name, f"http://docs.example/{name}/", {})
        conn.commit()
    settings = ProjectSettings("docsbot.settings", {"DOCSBOT_DATA_DIR": str(tmp_path)})
    with DocsIndex(settings, database_url, allow_writes=True) as index:
        removed = index.remove("lib", "latest")
        assert [v["version"] for v in removed.removed] == ["lib@2.0"]
        assert [v.version for v in index.libraries().libraries] == ["1.10", "1.9"]
        assert [v["version"] for v in index.remove("lib", "1.x").removed] == ["lib@1.10"]


def test_export_pages_that_would_share_a_file_get_one_each(crawl, docsite, database_url, tmp_path):
    site = docsite.site
    site.put("/docs/index.html", html_page("Welcome", "<p>Start.</p>", ["a.html", "a.htm", "a"]))
    for path, words in (("/docs/a.html", "first"), ("/docs/a.htm", "second"), ("/docs/a", "third")):
        site.put(path, html_page(f"A {words}", f"<p>The {words} page.</p>"))
    assert crawl(url=f"{docsite.url}/docs/index.html", library="lib", version="1").returncode == 0
    out = tmp_path / "export"
    result = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "export", "lib@1", "--format", "pages", "-o", str(out)],
        env=docsbot_env(database_url, tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    files = sorted(p.name for p in out.rglob("*.md"))
    assert files == ["a-2.md", "a-3.md", "a.md", "index.md"]
    assert "exported 4 pages" in result.stdout
    texts = sorted(p.read_text() for p in out.rglob("a*.md"))
    assert [next(w for w in ("first", "second", "third") if f"The {w} page" in t) for t in texts] == [
        "first", "second", "third"
    ]  # fmt: skip


def test_a_launch_is_found_by_its_token_and_claims_its_version(database_url, tmp_path):
    """The server's refresh claims the version as a scheduler would (a scheduler then starts nothing), passes its run
    id as -a launch, and reports the run recorded under it, not 'the first run since' (another run that starts
    in between is not its)."""
    import asyncio
    from datetime import timedelta

    from docsbot.service import DocsIndex
    from docsbot.store import fleet as fleet_store

    with store.connect(database_url) as conn:
        store.migrate(conn)
        version = store.upsert_version(conn, "lib", "1", "http://docs.example/1/", {})
        conn.execute("UPDATE versions SET next_due_at = now() - interval '1 hour' WHERE id = %s", (version.id,))
        conn.commit()
    settings = ProjectSettings("docsbot.settings", {"DOCSBOT_DATA_DIR": str(tmp_path)})
    started: list[list[str]] = []

    def start(launch):  # noqa: ANN001, ANN202 - the launcher's command, recorded instead of run
        started.append([launch.run_id])
        return "recorded"

    with DocsIndex(settings, database_url, allow_writes=True) as index, \
            DocsIndex(settings, database_url, allow_writes=True) as other_server:  # fmt: skip
        index.launcher.start = other_server.launcher.start = start
        with store.connect(database_url) as conn:
            first = index.refresh("lib", "1")
            assert first.started and started == [[first.run_id]]
            # a scheduler finds the version claimed: it starts nothing; nor does another server
            assert fleet_store.claim_due(conn, "scheduler", limit=5, lease=timedelta(hours=1)) == []
            again = other_server.refresh("lib", "1")
            assert not again.started and "claimed by" in again.message and len(started) == 1

            async def runs() -> tuple[int, int]:
                page_store = store.PageStore(database_url, 1)
                await page_store.open()
                try:
                    other = await page_store.start_run(version.id, "refresh", "someone-else")  # started in between
                    mine = await page_store.start_run(version.id, "refresh", first.run_id)
                    assert await page_store.start_run(version.id, "refresh", first.run_id) == mine  # a retry: once
                    return other, mine
                finally:
                    await page_store.close()

            other, mine = asyncio.run(runs())
            assert index.run(first.run_id).crawl_run_id == mine != other
            (rows,) = conn.execute("SELECT count(*) FROM crawl_runs WHERE launch = %s", (first.run_id,)).fetchone()
            assert rows == 1


def test_a_page_transaction_applied_and_retried_records_its_change_once(database_url):
    """A COMMIT whose answer was lost is retried: the page's upsert and chunks are idempotent, and so is its
    change-log row (one per page, run and kind)."""
    import asyncio

    from docsbot.items import Chunk, PageChange, PageItem

    with store.connect(database_url) as conn:
        store.migrate(conn)
        version = store.upsert_version(conn, "lib", "1", "http://docs.example/1/", {})
        conn.commit()
    item = PageItem(
        version_id=version.id, url="http://docs.example/1/a.html", title="A", markdown="# A\n\nText.",
        content_hash="h", depth=0, links=[], chunks=[Chunk("# A\n\nText.", ["A"], "A", "A\n\n# A\n\nText.", "k")],
        change=PageChange("added"),
    )  # fmt: skip

    async def save_twice() -> None:
        page_store = store.PageStore(database_url, 1)
        await page_store.open()
        try:
            run = await page_store.start_run(version.id, "full", "launch-1")
            await page_store.save_page(item, run)
            await page_store.save_page(item, run)  # the retry of an attempt that was applied after all
        finally:
            await page_store.close()

    asyncio.run(save_twice())
    with store.connect(database_url) as conn:
        assert conn.execute("SELECT kind, count(*) FROM page_changes GROUP BY kind").fetchall() == [("added", 1)]
        assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 1


def _lexical_stats(db) -> tuple:
    """The version's stored BM25 statistics, what they would be if computed now, and whether the last run's record
    was written after them (they were not refreshed again at the run's end)."""
    stored = db.execute("SELECT docs, avg_len, updated_at FROM lexical_stats").fetchone()
    now = db.execute(
        "SELECT count(*), coalesce(avg(length(content) + length(context)), 1.0) FROM documents WHERE kind = 0"
    ).fetchone()
    finished = db.execute("SELECT finished_at FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    return stored[:2], tuple(now), stored[2] < finished


def test_a_run_leaves_current_search_statistics_refreshed_once(crawl, docsite, db):
    """A complete run refreshes them when its crawl is done, and its end leaves them be; a run stopped before its
    crawl was done (CloseSpider) refreshes them at its end, over what it stored."""
    url = f"{docsite.url}/docs/index.html"
    stop = {"EXTENSIONS": '{"scrapy.extensions.closespider.CloseSpider": 0}', "CLOSESPIDER_ITEMCOUNT": "2"}
    result = crawl(url=url, library="testdocs", version="1.0", settings=stop)
    assert result.returncode == 4, result.stderr[-2000:]  # closed by Scrapy's extension before any vector
    stored, now, before_the_end = _lexical_stats(db)
    assert stored == now and not before_the_end
    assert crawl(url=url, library="testdocs", version="1.0").returncode == 0
    stored, now, before_the_end = _lexical_stats(db)
    assert stored == now and before_the_end
    docsite.site.put("/docs/deep.html", html_page("Deep dive", "<p>Internals of the scheduler, rewritten.</p>"))
    assert crawl(library="testdocs", version="1.0", mode="refresh").returncode == 0
    stored, now, before_the_end = _lexical_stats(db)
    assert stored == now and before_the_end
