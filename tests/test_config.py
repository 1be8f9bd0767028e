"""docsbot.config.ProjectSettings: the values Scrapy's settings would give the front ends, without Scrapy."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from scrapy.settings import Settings

from docsbot.config import ProjectSettings
from tests.conftest import ROOT


def test_same_values_as_scrapys_settings_of_the_module():
    scrapy_settings = Settings()
    scrapy_settings.setmodule("docsbot.settings", priority="project")
    ours = ProjectSettings("docsbot.settings")
    names = [name for name in vars(importlib.import_module("docsbot.settings")) if name.startswith("DOCSBOT_")]
    assert "DOCSBOT_PGDATA" in names and "DOCSBOT_EMBEDDER" in names
    for name in [*names, "DATABASE_URL"]:
        assert ours.get(name) == scrapy_settings.get(name), name
    assert ours.getfloat("DOCSBOT_PG_IDLE_TIMEOUT") == scrapy_settings.getfloat("DOCSBOT_PG_IDLE_TIMEOUT")
    assert ours.getint("DOCSBOT_EMBED_BATCH_SIZE", 7) == scrapy_settings.getint("DOCSBOT_EMBED_BATCH_SIZE", 7)
    assert ours.get("NO_SUCH_SETTING", "x") == "x" and ours["NO_SUCH_SETTING"] is None


def test_getters_convert_like_scrapys():
    ours = ProjectSettings("docsbot.settings", {"A": "3", "B": "2.5", "C": "off", "D": "maybe"})
    assert (ours.getint("A"), ours.getfloat("B"), ours.getbool("C"), ours.getbool("A2", True)) == (3, 2.5, False, True)
    with pytest.raises(ValueError, match="D='maybe' is not a boolean"):
        ours.getbool("D")


def test_environment_variables_reach_it_through_the_settings_module(tmp_path):
    code = "from docsbot.config import ProjectSettings; print(ProjectSettings().get('DOCSBOT_PGDATA'))"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DOCSBOT_PGDATA": str(tmp_path / "pg")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / "pg")


def test_the_cli_imports_no_scrapy():
    heavy = "{'scrapy', 'twisted', 'fastembed'}"
    code = f"import sys, docsbot.cli; print(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy}))"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
