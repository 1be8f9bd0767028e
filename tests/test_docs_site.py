"""The documentation site (mkdocs.yml, docs/): it builds in strict mode, and its reference pages, generated from the
code by scripts/docs_reference.py, name every command option, spider argument, setting, environment variable and MCP
tool the code has; the web guide names every route of the web app."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _reference():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _reference()


def _sections(page: str) -> dict[str, str]:
    """``{heading text: the text under it, up to the next heading of any level}``."""
    parts = re.split(r"^#{2,6} (.+)$", page, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_the_cli_reference_names_every_command_and_each_of_its_options_in_that_commands_section():
    sections = _sections(reference.cli_page())
    expected = reference.cli_options()
    assert {("docsbot search", "--library"), ("docsbot search", "query"), ("docsbot serve", "--allow-writes")} <= set(
        expected
    )
    assert {command for command, _ in expected} >= {"docsbot sync", "docsbot scheduler", "docsbot add"}
    missing = [(command, name) for command, name in expected if f"`{name}`" not in sections.get(f"`{command}`", "")]
    assert not missing, missing
    assert "`docsbot db migrate`" in sections and "`docsbot status`" in sections  # commands without arguments too


def test_the_cli_reference_shows_defaults_and_choices():
    sections = _sections(reference.cli_page())
    search = sections["`docsbot search`"]
    assert "| `-k` `K` | `5` | number of results (default 5) |" in search, search
    assert "one of" in sections["`docsbot export`"]


def test_the_spider_arguments_reference_names_every_field_of_crawl_arguments():
    page = reference.spider_arguments_page()
    names = reference.spider_argument_names()
    assert {"url", "mode", "max_depth", "freshness", "network"} <= names
    assert [name for name in names if f"`{name}`" not in page] == []


def test_the_mcp_reference_has_every_tool_with_each_argument_and_its_answers_fields():
    page = reference.mcp_page()
    sections = _sections(page)
    tools = reference.mcp_tools()
    assert len(tools) >= 13
    for tool in tools:
        body = sections.get(f"`{tool.name}`")
        assert body is not None, tool.name
        for argument in tool.input_schema.get("properties", {}):
            assert f"| `{argument}` |" in body, (tool.name, argument)
        for field in (tool.output_schema or {}).get("properties", {}):
            assert f"| `{field}` |" in body, (tool.name, field)
    assert "listed only with `--allow-refresh`" in sections["`index_library`"]
    assert "*read-only*" in sections["`search_docs`"]


@pytest.mark.e2e  # imports the settings module in a process of its own, without docsbot's environment
def test_the_settings_reference_has_every_setting_described_and_every_variable_the_code_reads():
    rows = reference.settings_table()
    assert [row["name"] for row in rows if not row["doc"]] == []  # each setting has its description or comment
    page = reference.settings_page()
    listed = [f"| `{row['env']}`" if row["env"] else f"| `{row['name']}` |" for row in rows]
    assert [entry for entry in listed if entry not in page] == []
    assert "| `DOCSBOT_CONCURRENT_REQUESTS` (Scrapy's `CONCURRENT_REQUESTS`) | int | `16` |" in page
    read = reference.names_read_by_code()
    assert {"DATABASE_URL", "DOCSBOT_MCP_TOKEN", "SCRAPYD_URL", "DOCSBOT_EMBEDDING_URL", "DOCSBOT_CHUNK_TOKENS"} <= read
    assert sorted(name for name in read if f"`{name}`" not in page) == []
    from docsbot.addon import COMPONENTS

    assert all(f"`{component}`" in page for components in COMPONENTS.values() for component in components)
    by_name = {row["name"]: row for row in rows}
    assert by_name["SCRAPER_SLOT_MAX_ACTIVE_SIZE"]["env"] == "DOCSBOT_MAX_BYTES_IN_FLIGHT"
    assert by_name["DOCSBOT_DB_RETRIES"]["type"] == "int" and by_name["USER_AGENT"]["doc"]
    assert by_name["DOCSBOT_DB_RETRIES"]["default"] == "4"
    assert by_name["DOCSBOT_DATA_DIR"]["default"].startswith("'~")  # the home directory, whoever builds the site


def test_the_web_guide_names_every_route_of_the_web_app():
    source = "\n".join(f.read_text(encoding="utf-8") for f in (ROOT / "docsbot" / "web").glob("*.py"))
    guide = (ROOT / "docs" / "guide" / "web.md").read_text(encoding="utf-8")
    routes = set(re.findall(r'Route\("(/[^"{]*)', source)) - {"/", "/static/"}
    assert {"/search.json", "/libraries", "/llms.txt", "/login"} <= routes
    assert sorted(route for route in routes if f"`{route}" not in guide) == []


def test_the_exit_codes_reference_has_every_exit_code_and_kind():
    from docsbot import refresh

    page = reference.exit_codes_page()
    for name in ("EXIT_COMPLETE", "EXIT_FAILED", "EXIT_INCOMPLETE", "EXIT_VECTORS_PENDING"):
        code = getattr(refresh, name)
        assert f"| {code} | `{name.removeprefix('EXIT_').lower()}` |" in page
    assert all(f"`{kind}`" in page for kind in refresh.FAILURE_KINDS)
    assert all(f"`docsbot/skipped/{kind}`" in page for kind in refresh.SKIPPED_KINDS)


def test_the_readme_is_short_and_links_to_the_site():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert "make index" in readme and "make test" in readme  # the two commands
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


@pytest.mark.e2e
def test_the_site_builds_in_strict_mode_with_the_generated_reference(tmp_path):
    """`make docs`: a broken link, an unknown page or a warning fails the build."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    settings = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "DOCSBOT_EMBEDDING_URL" in settings and "DOCSBOT_MCP_TOKEN" in settings
    tools = (tmp_path / "site" / "reference" / "mcp-tools" / "index.html").read_text(encoding="utf-8")
    assert "search_docs" in tools and "index_library" in tools
