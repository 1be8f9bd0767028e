"""What a command says is what happened (issue 33): loose versions resolved where they delete, export files that never
overwrite each other."""

from __future__ import annotations

import subprocess
import sys

from docsbot import store
from docsbot.config import ProjectSettings
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
