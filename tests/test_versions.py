"""Versions as each ecosystem means them (docsbot.fleet.versions): PEP 440, Poetry's constraints, npm's ranges and
dist-tags, Cargo's requirements, each at its edges, and environment markers for this machine or a target."""

from __future__ import annotations

import pytest

from docsbot.fleet.versions import Environment, VersionSpecError, check, exactly, newest, pinned

PYPI = ["1.0", "1.2.3", "1.2.4", "1.4.2", "2.0.0", "2.1.0", "2.31.0", "2.31.1", "3.0.0rc1", "not-a-version"]
NPM = ["3.1.0", "4.17.1", "4.18.2", "4.21.2", "4.22.1", "5.0.0", "5.1.0", "5.2.0-beta.1"]
NPM_TAGS = {"latest": "4.22.1", "next": "5.2.0-beta.1"}  # express's shape: 5.x released, latest still 4.x
CARGO = ["0.0.3", "0.0.4", "0.2.3", "0.2.9", "0.3.0", "1.0.0", "1.0.197", "1.1.0", "2.0.0", "2.1.0-alpha.1"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, "2.31.1"),  # the newest final release: no pre-release while a final one exists
        (">=1,<2", "1.4.2"),
        ("==1.2.3", "1.2.3"),
        ("1.2.3", "1.2.3"),  # a bare version is exact, in pip's forms and Poetry's
        ("2.31", "2.31.0"),  # Poetry: requests = "2.31" is 2.31 (== 2.31.0 by PEP 440), not ^2.31
        ("==2.31.*", "2.31.1"),
        ("~=1.2", "1.4.2"),  # PEP 440's compatible release: >=1.2, ==1.*
        ("~=1.2.3", "1.2.4"),
        (">=9", None),
        (">=3.0.0rc1", "3.0.0rc1"),  # a pre-release when nothing else matches
        # Poetry's own constraints (python-poetry.org "Dependency specification")
        ("^1.2", "1.4.2"),  # >=1.2.0 <2.0.0
        ("^1.2.3", "1.4.2"),
        ("^0.1", None),  # >=0.1.0 <0.2.0
        ("~1.2", "1.2.4"),  # >=1.2.0 <1.3.0, not PEP 440's ~=1.2
        ("~1", "1.4.2"),  # >=1.0.0 <2.0.0
        ("1.*", "1.4.2"),
        ("^1.2 || ^2.1", "2.31.1"),
        ("*", "2.31.1"),
    ],
)
def test_pypi_requirements_are_pep_440_or_poetrys_constraints(spec, expected):
    assert newest(PYPI, spec, "pypi") == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, "4.22.1"),  # npm installs the latest tag, not the highest release (5.1.0 here)
        ("latest", "4.22.1"),
        ("next", "5.2.0-beta.1"),  # a dist-tag names its release, pre-release or not
        ("*", "4.22.1"),
        ("5.x", "5.1.0"),  # the latest tag is outside the range: the highest release inside, no pre-release
        ("4 || 5", "4.22.1"),  # the latest tag is inside: npm-pick-manifest takes it
        ("^4.18", "4.22.1"),
        ("~4.17", "4.17.1"),
        ("4.18", "4.18.2"),  # a partial version is an X-range in npm
        ("4.18.2", "4.18.2"),
        ("=4.18.2", "4.18.2"),
        (">=4.18 <4.22", "4.21.2"),
        ("4.17.0 - 4.18", "4.18.2"),
        ("^6", None),
    ],
)
def test_npm_ranges_and_dist_tags_pick_as_npm_does(spec, expected):
    assert newest(NPM, spec, "npm", NPM_TAGS) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("1.0", "1.1.0"),  # a bare version is a caret range in Cargo: >=1.0.0, <2.0.0
        ("1", "1.1.0"),
        ("1.0.0", "1.1.0"),
        ("=1.0.0", "1.0.0"),  # only = is exact
        ("=1.0", "1.0.197"),  # a partial = is every 1.0.x
        ("0.2", "0.2.9"),  # ^0.2: >=0.2.0, <0.3.0
        ("0.0.3", "0.0.3"),  # ^0.0.3: >=0.0.3, <0.0.4
        ("^0.0", "0.0.4"),  # >=0.0.0, <0.1.0
        ("~1.0", "1.0.197"),
        (">= 1.0, < 1.1", "1.0.197"),  # comparators separated by commas
        ("1.*", "1.1.0"),
        ("*", "2.0.0"),  # pre-releases only when asked for
        (">=2.1.0-alpha.0", "2.1.0-alpha.1"),
    ],
)
def test_cargo_requirements_follow_the_cargo_book(spec, expected):
    assert newest(CARGO, spec, "cargo") == expected


def test_a_requirement_that_does_not_parse_is_named_with_its_ecosystems_forms():
    assert "not a PEP 440 specifier" in check("=>banana", "pypi")
    assert "not an npm version range" in check("^^1", "npm")
    assert "not a Cargo version requirement" in check("4 || 5", "cargo")  # npm's alternatives are not Cargo's
    assert check("next", "npm") is None and check("^2.31", "pypi") is None and check(None, "cargo") is None
    with pytest.raises(VersionSpecError, match="not a dist-tag of this package.*latest, next"):
        newest(NPM, "canary", "npm", NPM_TAGS)
    with pytest.raises(VersionSpecError, match="not a PEP 440"):
        newest(PYPI, "=>banana", "pypi")


def test_an_exact_requirement_is_told_apart_from_a_range_by_each_ecosystems_rules():
    assert pinned("==2.31.0", "pypi") == pinned("2.31.0", "pypi") == "2.31.0"
    assert pinned(">=2", "pypi") is pinned("==2.*", "pypi") is None
    assert pinned("4.18.2", "npm") == pinned("=4.18.2", "npm") == "4.18.2" and pinned("4.18", "npm") is None
    assert pinned("1.0.197", "cargo") is None and pinned("=1.0.197", "cargo") == "1.0.197"
    for version, ecosystem in (("2.31.0", "pypi"), ("4.18.2", "npm"), ("1.0.197", "cargo")):
        assert pinned(exactly(version, ecosystem), ecosystem) == version
        assert newest([version, "99.0.0"], exactly(version, ecosystem), ecosystem) == version


def test_markers_are_evaluated_for_this_machine_or_the_target_given():
    linux = Environment("3.12", "linux")
    assert linux.why_not('python_version < "3.13"') is None
    assert linux.why_not('sys_platform == "win32"') == (
        "its marker 'sys_platform == \"win32\"' is false for Python 3.12 on linux"
    )
    assert linux.why_not('extra == "socks"') == "only with the extra 'socks'"
    windows = Environment("3.14", "win32")  # sys.platform's spelling is taken too
    assert windows.platform == "windows" and windows.why_not('sys_platform == "win32"') is None
    assert "false for Python 3.14 on windows" in windows.why_not('python_version < "3.13"')
    assert windows.why_not('platform_system == "Windows" and os_name == "nt"') is None
    assert linux.why_not_python("^3.9") is None and "only for Python <3.11" in linux.why_not_python("<3.11")
    assert linux.why_not_platform("linux") is None and "only on darwin" in linux.why_not_platform("darwin")
    import sys

    here = Environment()
    assert here.why_not(f'python_version == "{sys.version_info.major}.{sys.version_info.minor}"') is None
    with pytest.raises(VersionSpecError, match="--platform: one of linux, windows, macos"):
        Environment(platform="beos")
    with pytest.raises(VersionSpecError, match="--python: a Python version"):
        Environment(python="three")
    with pytest.raises(VersionSpecError, match="not an environment marker"):
        linux.why_not("python_version <<< 3")
