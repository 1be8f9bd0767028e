"""Under `make test` (DOCSBOT_STRICT_SKIPS=1) a skipped test fails the run, unless its reason says CI cannot meet its
condition by design: the hook of tests/conftest.py, run on a test file of its own in a separate pytest."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SKIPS = """
import pytest
from tests.conftest import BY_DESIGN

def test_a_missing_install_step():
    pytest.skip("chromium is not installed")

@pytest.mark.skipif(True, reason=BY_DESIGN + "no GPU here")
def test_a_gpu_path():
    pass

def test_passes():
    pass
"""


@pytest.mark.parametrize("strict", [False, True])
def test_a_skip_fails_the_run_in_strict_mode_unless_it_is_by_design(tmp_path, strict):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_runtest_makereport  # noqa: F401\n")
    (tmp_path / "test_skipping.py").write_text(SKIPS)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCSBOT_STRICT_SKIPS": "1" if strict else ""}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if strict:
        assert run.returncode == 1, run.stdout
        assert "1 failed, 1 passed, 1 skipped" in run.stdout, run.stdout
        assert "FAILED" in run.stdout and "chromium is not installed" in run.stdout
    else:
        assert run.returncode == 0, run.stdout
        assert "1 passed, 2 skipped" in run.stdout, run.stdout
