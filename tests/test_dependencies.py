"""A project's dependency files (docsbot.fleet.dependencies, docsbot.fleet.locks): each format with and without its
lock file (real-shaped projects in tests/data/dependencies/), markers for this machine or a target, and every entry
that is not looked up reported with its reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from docsbot.fleet.dependencies import DependencyFileError, read_dependencies
from docsbot.fleet.versions import Environment

DATA = Path(__file__).parent / "data" / "dependencies"
LINUX = Environment("3.12", "linux")


def found(result) -> list[tuple[str, str | None, str | None]]:
    return [(d.name, d.spec, d.locked) for d in result.dependencies]


def skipped(result) -> dict[str, str]:
    return {s.entry.split(":")[0].split(" ")[0].split(";")[0].split(">")[0]: s.reason for s in result.skipped}


def without_lock(tmp_path: Path, project: str, manifest: str) -> Path:
    shutil.copy(DATA / project / manifest, tmp_path / manifest)
    return tmp_path / manifest


def test_a_requirements_file_gives_its_requirements_and_says_why_it_skips_the_rest():
    result = read_dependencies(DATA / "pip" / "requirements.txt", LINUX)
    assert found(result) == [
        ("click", ">=8.1", None),  # from -r base.txt, which includes requirements.txt again: read once
        ("flask", "<4,>=2.3", None),
        ("requests", "==2.31.0", None),  # its --hash continuation line read with it
        ("SQLAlchemy", "~=2.0.25", None),
    ]
    assert result.lock is None and result.dependencies[0].source.endswith("base.txt:1")
    reasons = {s.entry: s.reason for s in result.skipped}
    assert reasons == {
        'pywin32>=306; sys_platform == "win32"': "its marker 'sys_platform == \"win32\"' is false for Python 3.12 on "
        "linux",
        'tomli>=2; python_version < "3.11"': "its marker 'python_version < \"3.11\"' is false for Python 3.12 on linux",
        'requests-oauthlib; extra == "oauth"': "only with the extra 'oauth'",
        "-e ./packages/shared": "an editable install (-e): built from a path or a checkout",
        "-e git+https://github.com/example/tooling.git@v1.2#egg=tooling": (
            "an editable install (-e): built from a path or a checkout"
        ),
        "./vendor/legacy-1.0.tar.gz": "a local path, not a registry release",
        "internal-sdk @ https://files.example.com/internal_sdk-3.1-py3-none-any.whl": (
            "a direct URL (https://files.example.com/internal_sdk-3.1-py3-none-any.whl), not a registry release"
        ),
        "git+https://github.com/example/plugin.git#egg=plugin": "a VCS checkout, not a registry release",
    }  # options (--index-url, -c) are not dependencies, and are not reported
    # the same file read for Windows and an older Python: pywin32 and tomli are in, and say so
    windows = read_dependencies(DATA / "pip" / "requirements.txt", Environment("3.10", "windows"))
    assert [d.name for d in windows.dependencies][-2:] == ["pywin32", "tomli"]


def test_a_uv_project_takes_its_lock_files_versions_and_skips_extras_groups_and_workspace_members(tmp_path):
    locked = read_dependencies(DATA / "uv" / "pyproject.toml", LINUX)
    assert locked.lock == DATA / "uv" / "uv.lock"
    assert found(locked) == [
        ("httpx", ">=0.27", "0.28.1"),
        ("pydantic", "<3,>=2.7", "2.11.7"),
        ("rich", None, "14.1.0"),
    ]
    assert locked.dependencies[0].requirement == "==0.28.1" and locked.dependencies[0].note == "0.28.1 from uv.lock"
    assert skipped(locked) == {
        "pywin32": "its marker 'sys_platform == \"win32\"' is false for Python 3.12 on linux",
        "socksio": "optional: only with the extra 'socks'",
        "pytest": "in the dependency group 'dev', not the project's own",
        "ruff": "in the dependency group 'dev', not the project's own",
        "mypy": "a development dependency (uv)",
        "shared-utils": "a member of this workspace (tool.uv.sources), not a registry release",
    }
    alone = read_dependencies(without_lock(tmp_path, "uv", "pyproject.toml"), LINUX)
    assert alone.lock is None and found(alone) == [("httpx", ">=0.27", None), ("pydantic", "<3,>=2.7", None),
                                                   ("rich", None, None)]  # fmt: skip


def test_poetrys_own_rules_a_bare_version_exact_python_platform_markers_and_multiple_constraints(tmp_path):
    result = read_dependencies(DATA / "poetry" / "pyproject.toml", LINUX)
    assert found(result) == [
        ("requests", "2.31.0", "2.31.0"),  # exact in Poetry
        ("pendulum", "^3.0", "3.1.0"),
        ("attrs", "~23.1", "23.1.0"),
        ("click", "8.1", "8.1.0"),  # exact: 8.1 is 8.1.0, not ^8.1
        ("uvloop", ">=0.19", "0.21.0"),  # its markers hold on linux
        ("numpy", "^2.1", "2.1.3"),  # of two constraints, the one for Python >= 3.12; the lock's matching version
    ]
    assert skipped(result) == {
        "tomli": "only for Python <3.11 (not Python 3.12 on linux)",
        "colorama": "only on win32 (not Python 3.12 on linux)",
        "boto3": "optional: only with one of the project's extras",
        "localpkg": "a local path, not a registry release",
        "fork": "a VCS checkout, not a registry release",
        "pytest": "in Poetry's group 'dev', not the project's own",
        "black": "in Poetry's group 'dev', not the project's own",
        "mkdocs": "in Poetry's group 'docs', not the project's own",
    }
    older = read_dependencies(without_lock(tmp_path, "poetry", "pyproject.toml"), Environment("3.11", "windows"))
    assert ("numpy", "<2.0", None) in found(older) and ("colorama", "^0.4", None) in found(older)
    assert ("tomli", "^2.0.1", None) not in found(older) and "uvloop" in skipped(older)  # 3.11 is not <3.11


def test_package_json_takes_the_lock_inside_each_range_aliases_and_dist_tags(tmp_path):
    result = read_dependencies(DATA / "npm" / "package.json", LINUX)
    assert found(result) == [
        ("express", "^4.18.0", "4.19.2"),
        ("chalk", "5.x", "5.3.0"),
        ("react", "^19.0.0", None),  # the lock's 18.3.1 is outside ^19: a stale lock is not taken
        ("lodash", "4 || 5", "4.17.21"),
        ("zod", "latest", "3.23.8"),
        ("chart.js", "^4.4.0", "4.4.4"),  # "chart": "npm:chart.js@^4.4.0" is chart.js
        ("@types/node", None, "22.5.4"),
    ]
    assert "a stale lock" in result.dependencies[2].note and result.dependencies[2].requirement == "^19.0.0"
    assert skipped(result) == {
        "ui-kit": "a local path, not a registry release",
        "shared": "a package of this workspace, not a registry release",
        "left-pad": "a VCS checkout, not a registry release",
        "legacy": "a tarball URL, not a registry release",
        "jest": "a development dependency, not what the project runs on",
        "typescript": "a development dependency, not what the project runs on",
        "fsevents": "optional",
        "react-dom": "a peer dependency: the installing project's to choose",
    }
    alone = read_dependencies(without_lock(tmp_path, "npm", "package.json"), LINUX)
    assert alone.lock is None and found(alone)[:2] == [("express", "^4.18.0", None), ("chalk", "5.x", None)]
    pnpm = read_dependencies(DATA / "pnpm" / "package.json", LINUX)
    assert pnpm.lock == DATA / "pnpm" / "pnpm-lock.yaml"
    assert found(pnpm) == [  # pnpm's peer suffixes, 3.4.38(typescript@5.5.4), are not part of the version
        ("vue", "^3.4.0", "3.4.38"), ("pinia", "~2.1.7", "2.1.7"), ("@vueuse/core", "^10.9.0", "10.11.1"),
        ("dayjs", "1.11.10", "1.11.10"),
    ]  # fmt: skip
    assert skipped(pnpm)["design-system"] == "a package of this workspace, not a registry release"


def test_a_crate_in_a_workspace_takes_the_workspaces_versions_lock_and_target_rules(tmp_path):
    result = read_dependencies(DATA / "cargo" / "crates" / "app" / "Cargo.toml", LINUX)
    assert result.lock == DATA / "cargo" / "Cargo.lock"  # at the workspace's root
    assert found(result) == [
        ("serde", "1.0", "1.0.204"),  # workspace = true: the workspace's requirement
        ("tokio", "1.38", "1.38.1"),
        ("anyhow", "1", "1.0.86"),
        ("regex", "=1.10.4", "1.10.4"),
        ("clap", "4.5", "4.5.9"),
        ("rand_core", "0.6", "0.6.4"),  # of the two rand_core the lock holds, the one inside ^0.6
        ("nix", "0.29", "0.29.0"),  # cfg(unix) holds on linux
    ]
    assert result.dependencies[0].requirement == "=1.0.204"  # Cargo's exact form: a bare version is a range there
    assert skipped(result) == {
        "reqwest": "optional: only with one of the crate's features",
        "helpers": "a local path, not crates.io",
        "forked": "a git repository, not crates.io",
        "proptest": "a development dependency, not what the crate runs on",
        "cc": "a build dependency (build.rs), not what the crate runs on",
        "windows-sys": "only for cfg(windows) (not linux)",
        "wasm-bindgen": 'only for the target cfg(target_arch = "wasm32"), which docsbot does not evaluate',
    }
    windows = read_dependencies(DATA / "cargo" / "crates" / "app" / "Cargo.toml", Environment(platform="windows"))
    assert ("windows-sys", "0.52", "0.52.0") in found(windows) and "nix" in skipped(windows)
    # the workspace's root manifest reads its members; without the lock, the requirements as written
    shutil.copytree(DATA / "cargo", tmp_path / "cargo", ignore=shutil.ignore_patterns("Cargo.lock"))
    alone = read_dependencies(tmp_path / "cargo" / "Cargo.toml", LINUX)
    assert alone.lock is None and found(alone)[:3] == [("serde", "1.0", None), ("tokio", "1.38", None),
                                                       ("anyhow", "1", None)]  # fmt: skip


@pytest.mark.parametrize(
    ("project", "lock", "expected"),
    [
        ("uv", "uv.lock", [("httpx", "0.28.1"), ("pydantic", "2.11.7"), ("rich", "14.1.0")]),
        ("npm", "package-lock.json", [("@types/node", "22.5.4"), ("chalk", "5.3.0"), ("chart.js", "4.4.4"),
                                      ("express", "4.19.2"), ("lodash", "4.17.21"), ("react", "18.3.1"),
                                      ("zod", "3.23.8")]),
        ("pnpm", "pnpm-lock.yaml", [("@vueuse/core", "10.11.1"), ("dayjs", "1.11.10"), ("pinia", "2.1.7"),
                                    ("vue", "3.4.38")]),
        ("cargo", "Cargo.lock", [("anyhow", "1.0.86"), ("cc", "1.1.6"), ("clap", "4.5.9"), ("nix", "0.29.0"),
                                 ("proptest", "1.5.0"), ("rand_core", "0.6.4"), ("regex", "1.10.4"),
                                 ("serde", "1.0.204"), ("tokio", "1.38.1"), ("windows-sys", "0.52.0")]),
    ],
)  # fmt: skip
def test_a_lock_file_on_its_own_gives_the_direct_dependencies_it_records(tmp_path, project, lock, expected):
    shutil.copy(DATA / project / lock, tmp_path / lock)
    result = read_dependencies(tmp_path / lock, LINUX)
    assert [(d.name, d.locked) for d in result.dependencies] == expected
    assert all(d.spec is None and d.note == f"{d.locked} from {lock}" for d in result.dependencies)
    if project == "uv":
        assert skipped(result)["mypy"] == "a development dependency, not what the project runs on"
        assert skipped(result)["shared-utils"] == "a member of this workspace"
    if project == "npm":
        assert skipped(result)["ui-kit"] == "installed from a path, a link or a VCS, not a registry"


def test_a_file_that_cannot_be_read_is_one_error_naming_it_and_an_empty_one_is_empty(tmp_path):
    shutil.copy(DATA / "poetry" / "poetry.lock", tmp_path / "poetry.lock")
    with pytest.raises(DependencyFileError, match="does not record which packages the project depends on directly"):
        read_dependencies(tmp_path / "poetry.lock", LINUX)
    (tmp_path / "bad.txt").write_text("requests>=>1\n")
    with pytest.raises(DependencyFileError, match="bad.txt:1: 'requests>=>1' is not a requirement"):
        read_dependencies(tmp_path / "bad.txt", LINUX)
    (tmp_path / "package.json").write_text('{"dependencies": {"express": "^^4"}}')
    with pytest.raises(DependencyFileError, match="dependencies.express: '\\^\\^4' is not an npm version range"):
        read_dependencies(tmp_path / "package.json", LINUX)
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "x"\n[dependencies]\nserde = "4 || 5"\n')
    with pytest.raises(DependencyFileError, match="dependencies.serde: '4 || 5' is not a Cargo version requirement"):
        read_dependencies(tmp_path / "Cargo.toml", LINUX)
    (tmp_path / "setup.cfg").write_text("[metadata]\n")
    with pytest.raises(DependencyFileError, match="not a dependency file docsbot reads"):
        read_dependencies(tmp_path / "setup.cfg", LINUX)
    with pytest.raises(DependencyFileError, match="no such file"):
        read_dependencies(tmp_path / "missing.txt", LINUX)
    (tmp_path / "requirements.txt").write_text("# nothing yet\n\n")
    empty = read_dependencies(tmp_path / "requirements.txt", LINUX)
    assert empty.dependencies == [] and empty.skipped == []


def test_only_regular_files_under_the_first_files_folder_are_read_and_each_refusal_is_one_line(tmp_path):
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (tmp_path / "outside.txt").write_text("secret-package-name==1.0\n")
    (project / "sub" / "more.txt").write_text("click>=8\n")
    (project / "link.txt").symlink_to(tmp_path / "outside.txt")
    (project / "requirements.txt").write_text(
        "flask>=2\n-r /etc/passwd\n-r /dev/zero\n-r ../outside.txt\n--requirement=link.txt\n-r sub/more.txt\n"
        "-c /etc/shadow\n"
    )
    result = read_dependencies(project / "requirements.txt", LINUX)
    assert found(result) == [("flask", ">=2", None), ("click", ">=8", None)]
    reasons = {s.entry: s.reason for s in result.skipped}
    assert reasons == {
        "-r /etc/passwd": f"outside {project}, not read (a project's files stay in its folder)",
        "-r /dev/zero": f"outside {project}, not read (a project's files stay in its folder)",
        "-r ../outside.txt": f"outside {project}, not read (a project's files stay in its folder)",
        "--requirement=link.txt": f"outside {project}, not read (a project's files stay in its folder)",
    }
    assert "secret-package-name" not in repr(result) and "root:" not in repr(result)


def test_a_device_a_fifo_or_a_huge_file_is_refused_unread(tmp_path, monkeypatch):
    import os

    from docsbot.fleet import locks

    (tmp_path / "requirements.txt").write_text("flask\n-r devnull.txt\n-r fifo.txt\n-r big.txt\n")
    (tmp_path / "devnull.txt").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.txt")  # opening it would block for ever
    (tmp_path / "big.txt").write_text("requests\n" * 20)
    monkeypatch.setattr(locks, "MAX_FILE_BYTES", 100)
    result = read_dependencies(tmp_path / "requirements.txt", LINUX)
    assert [d.name for d in result.dependencies] == ["flask"]
    assert {s.entry: s.reason for s in result.skipped} == {
        "-r devnull.txt": f"outside {tmp_path}, not read (a project's files stay in its folder)",
        "-r fifo.txt": "not a regular file, not read",
        "-r big.txt": "180 bytes, over the 100 read at most",
    }
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "requirements.txt").symlink_to("/dev/zero")
    with pytest.raises(DependencyFileError, match=r"zero/requirements.txt: not a regular file, not read$"):
        read_dependencies(tmp_path / "zero" / "requirements.txt", LINUX)  # the file given: one line, no MemoryError
    (tmp_path / "package.json").write_text('{"dependencies": {"express": "^4"}}')
    (tmp_path / "package-lock.json").symlink_to("/etc/passwd")
    npm = read_dependencies(tmp_path / "package.json", LINUX)
    assert found(npm) == [("express", "^4", None)] and npm.lock is None
    assert [(s.entry, s.reason) for s in npm.skipped] == [
        (str(tmp_path / "package-lock.json"), f"the lock file: outside {tmp_path}, not read (a project's files "
         "stay in its folder)"),
    ]  # fmt: skip


def test_a_cargo_workspace_reads_no_member_outside_its_folder(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "Cargo.toml").write_text('[package]\nname = "x"\n[dependencies]\nsecret = "1"\n')
    root = tmp_path / "repo"
    (root / "crates" / "a").mkdir(parents=True)
    (root / "crates" / "a" / "Cargo.toml").write_text('[package]\nname = "a"\n[dependencies]\nserde = "1"\n')
    (root / "Cargo.toml").write_text('[workspace]\nmembers = ["crates/*", "../elsewhere", "/etc"]\n')
    result = read_dependencies(root / "Cargo.toml", LINUX)
    assert found(result) == [("serde", "1", None)]
    assert {s.entry: s.reason for s in result.skipped} == {
        "../elsewhere": "a workspace member outside the folder, not read",
        "/etc": "a workspace member outside the folder, not read",
    }
