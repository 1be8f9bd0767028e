"""docsbot's settings model (docsbot.config.DocsbotSettings, pydantic-settings): every setting once, typed, read from
the environment; a malformed value is one line naming it, never an exception at import."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from docsbot.config import DocsbotSettings, check_overrides, load_settings
from tests.conftest import ROOT


@pytest.fixture
def environment(monkeypatch):
    """Set docsbot's variables to the given ones only (every other one of the model unset)."""

    def given(values: dict[str, str]) -> None:
        for name in DocsbotSettings.model_fields:
            monkeypatch.delenv(name, raising=False)
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return given


def test_defaults_derive_the_paths_from_the_data_directory_and_feed_scrapys_names(environment):
    environment({"DOCSBOT_DATA_DIR": "/srv/docsbot"})
    values, problems = load_settings()
    assert problems == []
    assert (values.DOCSBOT_PGDATA, values.DOCSBOT_MODELS_DIR) == ("/srv/docsbot/pgdata", "/srv/docsbot/models")
    scrapy = values.scrapy_settings()
    assert scrapy["CONCURRENT_REQUESTS"] == 16 and "DOCSBOT_CONCURRENT_REQUESTS" not in scrapy
    assert scrapy["SCRAPER_SLOT_MAX_ACTIVE_SIZE"] == 2 * 1024 * 1024 and scrapy["LOG_LEVEL"] == "INFO"
    assert scrapy["DOCSBOT_GONE_STATUSES"] == [404, 410]


def test_environment_values_are_parsed_by_type(environment):
    environment({
        "DOCSBOT_GONE_STATUSES": "403, 404,410", "DOCSBOT_KEEP_HTML": "off", "DOCSBOT_EMBED_DURING_CRAWL": "1",
        "DOCSBOT_PG_IDLE_TIMEOUT": "0", "DOCSBOT_EXTRACT_POOL": "thread", "DOCSBOT_MASS_DELETE_SHARE": "0.5",
    })  # fmt: skip
    values, problems = load_settings()
    assert problems == []
    assert values.DOCSBOT_GONE_STATUSES == [403, 404, 410] and values.DOCSBOT_KEEP_HTML is False
    assert values.DOCSBOT_EMBED_DURING_CRAWL is True and values.DOCSBOT_PG_IDLE_TIMEOUT == 0.0
    assert (values.DOCSBOT_EXTRACT_POOL, values.DOCSBOT_MASS_DELETE_SHARE) == ("thread", 0.5)


def test_each_malformed_value_is_one_line_naming_it_and_takes_its_default(environment):
    environment({
        "DOCSBOT_DB_POOL_SIZE": "0", "DOCSBOT_EXTRACT_POOL": "fork", "DOCSBOT_MASS_DELETE_SHARE": "2",
        "DOCSBOT_EMBED_BATCH_SIZE": "64",
    })  # fmt: skip
    values, problems = load_settings()
    assert sorted(problems) == [
        "DOCSBOT_DB_POOL_SIZE='0' is not valid: input should be greater than or equal to 1",
        "DOCSBOT_EXTRACT_POOL='fork' is not valid: input should be 'process', 'thread' or 'inline'",
        "DOCSBOT_MASS_DELETE_SHARE='2' is not valid: input should be less than or equal to 1",
    ]
    assert (values.DOCSBOT_DB_POOL_SIZE, values.DOCSBOT_EXTRACT_POOL, values.DOCSBOT_MASS_DELETE_SHARE) == (
        4, "process", 0.25,
    )  # fmt: skip
    assert values.DOCSBOT_EMBED_BATCH_SIZE == 64  # the valid ones keep their values


@pytest.mark.e2e  # a fresh interpreter, with only this environment
def test_the_settings_module_imports_with_a_malformed_variable_and_lists_it():
    code = "import docsbot.settings as s; print(s.DOCSBOT_SETTINGS_ERRORS, s.CONCURRENT_REQUESTS)"
    env = {"PATH": "/usr/bin:/bin", "DOCSBOT_CONCURRENT_REQUESTS": "many", "HOME": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "[\"DOCSBOT_CONCURRENT_REQUESTS='many' is not valid: input should be a valid integer, unable to parse string "
        'as an integer"] 16'
    )


def test_overrides_given_as_scrapy_settings_are_checked_against_the_same_model():
    given = {"DOCSBOT_DB_RETRIES": "x", "DOCSBOT_CHANGES_KEEP": "90d", "DOCSBOT_SKIP_STATUSES": "401,403"}
    assert check_overrides(given.get, list(given)) == [
        "DOCSBOT_DB_RETRIES='x' is not valid: input should be a valid integer, unable to parse string as an integer"
    ]


def test_every_field_is_described_and_grouped():
    for name, field in DocsbotSettings.model_fields.items():
        assert name.isupper() and (name.startswith("DOCSBOT_") or name == "DATABASE_URL"), name
        assert field.description and len(field.description) > 20, name
        assert isinstance(field.json_schema_extra, dict) and field.json_schema_extra["group"], name


def test_the_browser_setting_from_s_beats_the_environments_and_a_projects_launch_options_win():
    """``-s DOCSBOT_CHROMIUM=...`` reaches the launch options and the check before a crawl, over the environment's
    (the settings module once made the launch options of the environment's value alone)."""
    from scrapy.settings import Settings

    from docsbot.addon import Docsbot
    from docsbot.render import RenderError, check_rendering, launch_options

    def crawl_settings(**given: object) -> Settings:
        settings = Settings()
        settings.setmodule("docsbot.settings", "project")
        settings.set("DOCSBOT_CHROMIUM", sys.executable, "project")  # as the environment gives it: an executable
        for name, value in given.items():
            settings.set(name, value, "cmdline")
        Docsbot().update_settings(settings)
        return settings

    settings = crawl_settings(DOCSBOT_CHROMIUM="/nonexistent/chromium", DOCSBOT_CHROMIUM_USER="nobody")
    options = settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    assert options == launch_options("/nonexistent/chromium", root=root, user="nobody")
    with pytest.raises(RenderError, match="rendering needs Chromium at /nonexistent/chromium "):
        check_rendering(settings)
    check_rendering(crawl_settings())  # the environment's
    own = {"executable_path": sys.executable, "headless": True}
    assert crawl_settings(PLAYWRIGHT_LAUNCH_OPTIONS=own).getdict("PLAYWRIGHT_LAUNCH_OPTIONS") == own


@pytest.mark.parametrize(
    ("path", "backend"),
    [
        ("docsbot.embedding.models.FastEmbedEmbedder", "FastEmbedEmbedder"),
        ("docsbot.embedding.FastEmbedEmbedder", "FastEmbedEmbedder"),  # named before the backends moved
        ("docsbot.embedding.OpenAIEmbedder", "OpenAIEmbedder"),
    ],
)
def test_an_embedder_named_by_its_former_import_path_is_still_found(tmp_path, path, backend):
    from docsbot.embedding.models import load_embedder
    from docsbot.project_settings import ProjectSettings

    settings = ProjectSettings(
        overrides={
            "DOCSBOT_EMBEDDER": path,
            "DOCSBOT_EMBEDDING_MODEL": "some/model",  # not the default: nothing is checked on disk
            "DOCSBOT_EMBEDDING_URL": "http://127.0.0.1:9/v1" if backend == "OpenAIEmbedder" else "",
            "DOCSBOT_MODELS_DIR": str(tmp_path),
        }
    )
    assert type(load_embedder(settings)).__name__ == backend
