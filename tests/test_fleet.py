"""Fleets: the libraries file (every error names the entry and the field, before anything runs), `docsbot sync`
against real sites (new versions indexed, due ones refreshed, the others not requested, removed entries reported or
pruned, a failing site retried with backoff), and atomic claims of due versions by concurrent schedulers."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from datetime import timedelta

import pytest

from docsbot import store
from docsbot.fleet.libraries import LibrariesFileError, parse
from docsbot.store import fleet as fleet_store
from tests.conftest import ROOT, build_site, docsbot_env
from tests.docsite import DocSiteServer

GOOD = """
[defaults]
refresh = "1d"

[[library]]
name = "python"
version = "3.11"
url = "https://docs.python.org/3.11/index.html"
max_depth = 4
gone_statuses = [403, 404, 410]

[[library]]
name = "flask"
url = "https://flask.palletsprojects.com/en/stable/"
refresh = "12h"
freshness = "http"
prune = "orphans"
settings = { DOCSBOT_RENDER_URLS = "/api/", CONCURRENT_REQUESTS = 4 }
"""


def test_a_libraries_file_gives_validated_entries_with_their_run_arguments():
    python, flask = parse(GOOD)
    assert (python.label, python.refresh, python.args) == ("python@3.11", timedelta(days=1), {"max_depth": "4"})
    assert python.settings() == {"DOCSBOT_GONE_STATUSES": "403,404,410"}
    assert python.spider_args("full") == {
        "library": "python", "version": "3.11", "mode": "full", "max_depth": "4",
        "url": "https://docs.python.org/3.11/index.html",
    }  # fmt: skip
    assert (flask.label, flask.refresh, flask.freshness) == ("flask", timedelta(hours=12), "http")
    assert flask.spider_args("refresh")["freshness"] == "http" and "url" not in flask.spider_args("refresh")
    assert flask.settings() == {"DOCSBOT_RENDER_URLS": "/api/", "CONCURRENT_REQUESTS": "4"}


def test_scope_patterns_and_private_docs_references_are_entry_fields_checked_by_the_spiders_model():
    """The libraries file takes the spider's scope and private docs arguments, lists as TOML arrays (or one
    comma-separated string) and headers as a table; a secret where a variable's name belongs is refused without
    being repeated."""
    (entry,) = parse(
        '[[library]]\nname = "handbook"\nurl = "https://docs.corp.example/handbook"\nscope = "domain"\n'
        'include = ["/handbook/*", "/api/*"]\nexclude = "*/changelog/*, /whatsnew/[0-9]+/"\n'
        'headers = { PRIVATE-TOKEN = "$DOCS_TOKEN", X-Team = "$TEAM" }\nhttp_auth = "$DOCS_USER:$DOCS_PASSWORD"\n'
    )
    assert entry.spider_args("refresh") == {
        "library": "handbook", "version": "", "mode": "refresh", "scope": "domain", "include": "/handbook/*,/api/*",
        "exclude": "*/changelog/*, /whatsnew/[0-9]+/", "headers": "PRIVATE-TOKEN=$DOCS_TOKEN,X-Team=$TEAM",
        "http_auth": "$DOCS_USER:$DOCS_PASSWORD",
    }  # fmt: skip
    for field, value, message in (
        ("headers", '{ PRIVATE-TOKEN = "glpat-s3cr3t" }', "(x): headers: the value of PRIVATE-TOKEN must be $VARIABLE"),
        ("http_auth", '"alice:s3cr3t"', "(x): http_auth: must be $USER_VARIABLE:$PASSWORD_VARIABLE"),
        ("scope", '"site"', "(x): scope: must be one of prefix, host, domain"),
        ("exclude", '["/(/"]', "(x): exclude: '/(/' is not a regular expression"),
        ("include", "[1, 2]", "(x): include: a string or an array of strings, got list"),
    ):
        with pytest.raises(LibrariesFileError) as error:
            parse(f'[[library]]\nname = "x"\nurl = "https://x.org/"\n{field} = {value}\n', "libs.toml")
        assert message in str(error.value) and "s3cr3t" not in str(error.value), str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[library]\nname=", "not valid TOML"),
        ("[libraries]\n", "unknown table libraries"),
        ('[[library]]\nversion = "1"\nurl = "https://x.org/"', "[[library]] #1: name: required"),
        ('[[library]]\nname = "x"', "[[library]] #1 (x): url: required"),
        ('[[library]]\nname = "x"\nurl = "https://x.org/"\nmax_depth = "deep"', "(x): max_depth: must be an integer"),
        ('[[library]]\nname = "x"\nurl = "https://x.org/"\nrefresh = "weekly"', "(x): refresh: a duration"),
        ('[[library]]\nname = "x"\nurl = "https://x.org/"\ncolour = "red"', "(x): unknown field colour"),
        ('[[library]]\nname = "x"\nurl = "not a url"', "(x): url:"),
        ('[[library]]\nname = "x"\nurl = "https://x.org/"\nfreshness = "always"', "(x): freshness: one of"),
        ('[[library]]\nname = "x"\nurl = "https://x.org/"\ngone_statuses = [500]', "(x): gone_statuses:"),
        (
            '[[library]]\nname = "x"\nurl = "https://x.org/"\n[[library]]\nname = "x"\nurl = "https://y.org/"',
            "[[library]] #2 (x) repeats [[library]] #1",
        ),
        ('[defaults]\nurl = "https://x.org/"', "[defaults]: unknown field url"),
        ('[[library]]\nname = "x"\nurl = "https://x.org/"\nsettings = { lower = 1 }', "(x): settings: lower = 1"),
    ],
)
def test_a_bad_file_or_entry_is_an_error_naming_the_entry_and_field(text, message):
    with pytest.raises(LibrariesFileError) as error:
        parse(text, "libs.toml")
    assert message in str(error.value) and str(error.value).startswith("libs.toml")


# --- docsbot sync against real sites ------------------------------------------------------------------------------


def sync(database_url, tmp_path, *args: str):
    env = docsbot_env(database_url, tmp_path)
    return subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "sync", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


def page_hits(site) -> list[str]:
    return [h.path for h in site.hits if h.path.endswith(".html")]


def test_sync_indexes_new_entries_refreshes_due_ones_and_leaves_the_others_alone(database_url, db, tmp_path):
    with DocSiteServer(build_site()) as one, DocSiteServer(build_site()) as two:
        libraries = tmp_path / "libraries.toml"
        libraries.write_text(
            f'[[library]]\nname = "one"\nversion = "1.0"\nurl = "{one.url}/docs/index.html"\nrefresh = "1d"\n'
            f'[[library]]\nname = "two"\nurl = "{two.url}/docs/index.html"\nrefresh = "2d"\nmax_depth = 1\n'
        )
        first = sync(database_url, tmp_path, str(libraries))
        assert first.returncode == 0, first.stdout + first.stderr[-3000:]
        assert re.search(r"^one@1.0 +indexed +5 new, 0 modified, 0 unchanged, 0 deleted, 0 failed", first.stdout, re.M)
        assert re.search(r"^two +indexed +3 new", first.stdout, re.M)  # max_depth = 1: index, guide, api
        assert "2 entries: 2 indexed, 0 refreshed, 0 not due, 0 failed, 0 skipped" in first.stdout
        due = dict(db.execute(
            "SELECT l.name, v.next_due_at - (SELECT max(finished_at) FROM crawl_runs r WHERE r.version_id = v.id) "
            "FROM versions v JOIN libraries l ON l.id = v.library_id"
        ).fetchall())  # fmt: skip
        assert timedelta(hours=23, minutes=59) < due["one"] <= timedelta(days=1)
        assert timedelta(days=1, hours=23, minutes=59) < due["two"] <= timedelta(days=2)

        one.site.hits.clear()
        two.site.hits.clear()
        again = sync(database_url, tmp_path, str(libraries))
        assert again.returncode == 0 and re.search(r"^one@1.0 +not due +next ", again.stdout, re.M)
        assert re.search(r"^two +not due +next ", again.stdout, re.M)
        assert page_hits(one.site) == page_hits(two.site) == []  # nothing requested

        db.execute("UPDATE versions SET next_due_at = now() - interval '1 minute' WHERE name = '1.0'")
        due_only = sync(database_url, tmp_path, "--due")
        assert re.search(r"^one@1.0 +refreshed +0 new, 0 modified, 5 unchanged", due_only.stdout, re.M), due_only.stdout
        assert re.search(r"^two +not due", due_only.stdout, re.M)
        assert {h.status for h in one.site.hits if h.path.endswith(".html")} == {304}
        assert page_hits(two.site) == []  # two was not due

        # an entry removed from the file is reported, and deleted only with --prune
        libraries.write_text(
            f'[[library]]\nname = "one"\nversion = "1.0"\nurl = "{one.url}/docs/index.html"\nrefresh = "1d"\n'
        )
        kept = sync(database_url, tmp_path, str(libraries))
        assert "no longer in" in kept.stdout and "two" in kept.stdout
        assert db.execute("SELECT count(*) FROM versions").fetchone()[0] == 2
        pruned = sync(database_url, tmp_path, str(libraries), "--prune")
        assert pruned.returncode == 0 and "removed (no longer in" in pruned.stdout
        assert [r[0] for r in db.execute("SELECT l.name FROM versions v JOIN libraries l ON l.id = v.library_id")] == [
            "one"
        ]


def test_a_bad_file_runs_nothing_and_a_failing_site_is_retried_with_backoff(database_url, db, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[library]]\nname = "x"\nurl = "http://127.0.0.1:9/"\nmax_pages = 0\n')
    refused = sync(database_url, tmp_path, str(bad))
    assert refused.returncode == 2 and "[[library]] #1 (x): max_pages: must be >= 1" in refused.stderr
    assert "Traceback" not in refused.stderr
    with DocSiteServer(build_site()) as site:
        site.site.failing["/docs/index.html"] = 500
        libraries = tmp_path / "libraries.toml"
        libraries.write_text(f'[[library]]\nname = "down"\nurl = "{site.url}/docs/index.html"\nrefresh = "1d"\n')
        failed = sync(database_url, tmp_path, str(libraries))
        assert failed.returncode == 3, failed.stdout + failed.stderr[-2000:]
        assert re.search(r"^down +failed +full index failed: ", failed.stdout, re.M), failed.stdout
        assert "1 entry: 0 indexed, 0 refreshed, 0 not due, 1 failed, 0 skipped" in failed.stdout
        failures, error, wait = db.execute(
            "SELECT failures, last_error, next_due_at - now() FROM versions"
        ).fetchone()  # fmt: skip
        assert failures == 1 and "root" in error and timedelta(minutes=4) < wait <= timedelta(minutes=5)
        status = subprocess.run([sys.executable, "-m", "docsbot.cli", "status"], cwd=ROOT, capture_output=True,
                                text=True, env=docsbot_env(database_url, tmp_path))  # fmt: skip
        assert "refreshed every 1d, next due" in status.stdout and "1 runs in a row did not complete" in status.stdout
        db.execute("UPDATE versions SET next_due_at = now()")
        del site.site.failing["/docs/index.html"]
        recovered = sync(database_url, tmp_path, str(libraries))
        assert recovered.returncode == 0 and re.search(r"^down +indexed +5 new", recovered.stdout, re.M)
        assert db.execute("SELECT failures, last_error FROM versions").fetchone() == (0, None)


def test_concurrent_claims_never_take_one_version_twice(database_url):
    with store.connect(database_url, autocommit=True) as conn:
        store.migrate(conn)
        for i in range(40):
            fleet_store.declare_version(conn, f"lib{i}", "", f"https://x{i}.org/", {}, timedelta(days=1), "f")
    claimed: list[list[int]] = []

    def scheduler(name: str) -> None:
        with store.connect(database_url, autocommit=True) as conn:
            mine = []
            while due := fleet_store.claim_due(conn, name, limit=3, lease=timedelta(hours=1)):
                mine += [v.id for v in due]
            claimed.append(mine)

    threads = [threading.Thread(target=scheduler, args=(f"s{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [vid for mine in claimed for vid in mine]
    assert len(everything) == len(set(everything)) == 40  # every due version claimed, none twice
    with store.connect(database_url) as conn:
        assert fleet_store.claim_due(conn, "late", limit=10, lease=timedelta(hours=1)) == []  # leased
        conn.execute("UPDATE versions SET claimed_until = now() - interval '1 second'")
        conn.commit()
        assert len(fleet_store.claim_due(conn, "late", limit=100, lease=timedelta(hours=1))) == 40  # expired leases


# --- agents: the fleet tools over MCP, loose versions ---------------------------------------------------------------


def test_agents_index_follow_list_cancel_and_remove_through_mcp(database_url, db, tmp_path):
    import anyio

    from tests.test_mcp import answer, error, stdio_session

    env = docsbot_env(database_url, tmp_path)
    with DocSiteServer(build_site()) as site, DocSiteServer(build_site()) as slow:
        slow.site.slow = {path: 2.0 for path in slow.site.pages}

        async def main() -> None:
            # the test sites are on loopback: the server allows it (crawls a caller starts reach public addresses only)
            allow = ("--allow-refresh", "--allow-network", "127.0.0.1")
            async with stdio_session(env, tmp_path / "mcp.log", *allow) as session:
                started = answer(await session.call_tool(
                    "index_library",
                    {"url": f"{site.url}/docs/index.html", "library": "lib", "version": "2.1", "refresh": "1d"},
                ))  # fmt: skip
                assert started["started"] and started["version"] == "2.1"
                for _ in range(600):
                    run = answer(await session.call_tool("get_run", {"run_id": started["run_id"]}))
                    if run["state"] not in ("starting", "running"):
                        break
                    await anyio.sleep(0.2)
                assert (run["state"], run["outcome"], run["mode"]) == ("finished", "complete", "full")
                same = {"url": f"{site.url}/docs/index.html", "library": "lib", "version": "2.1"}
                again = error(await session.call_tool("index_library", same))
                assert "lib@2.1 is already indexed" in again
                listed = answer(await session.call_tool("list_libraries", {}))["libraries"]
                assert [(v["version"], v["refresh_interval"]) for v in listed] == [("2.1", "1d")]
                assert listed[0]["next_due"] is not None
                # a loose version resolves to the newest matching one, and says which
                found = answer(await session.call_tool("search_docs", {"query": "install", "library": "lib",
                                                                       "version": "2.x"}))  # fmt: skip
                assert found["results"] and {r["version"] for r in found["results"]} == {"2.1"}
                latest = answer(await session.call_tool("get_changes", {"library": "lib", "version": "latest"}))
                assert latest["version"] == "2.1" and latest["counts"] == {"added": 5}

                # a run that takes long, cancelled: it ends failed (shutdown), its stored pages stay
                slow_run = answer(await session.call_tool(
                    "index_library", {"url": f"{slow.url}/docs/index.html", "library": "slow"}
                ))  # fmt: skip
                for _ in range(300):
                    run = answer(await session.call_tool("get_run", {"run_id": slow_run["run_id"]}))
                    if run["state"] == "running":
                        break
                    await anyio.sleep(0.2)
                cancelled = answer(await session.call_tool("cancel_run", {"run_id": slow_run["run_id"]}))
                assert cancelled["cancelled"], cancelled
                for _ in range(300):
                    run = answer(await session.call_tool("get_run", {"run_id": slow_run["run_id"]}))
                    if run["state"] not in ("starting", "running"):
                        break
                    await anyio.sleep(0.2)
                assert run["state"] == "failed" and run["finish_reason"] == "shutdown", run
                runs = answer(await session.call_tool("list_runs", {}))["runs"]
                assert [(r["library"], r["mode"], r["outcome"]) for r in runs] == [
                    ("slow", "full", "failed"), ("lib", "full", "complete")
                ]  # fmt: skip
                removed = answer(await session.call_tool("remove_library", {"library": "slow"}))
                assert [v["version"] for v in removed["removed"]] == ["slow"]

                # the spider's scope keys: a bad pattern is a tool error naming it; a good call crawls as it says
                root = f"{site.url}/docs/index.html"
                bad = error(await session.call_tool("index_library", {"url": root, "library": "s", "exclude": ["/(/"]}))
                assert "exclude: '/(/' is not a regular expression" in bad
                scoped = answer(await session.call_tool("index_library", {
                    "url": root, "library": "scoped", "scope": "host", "exclude": ["*/deep.html", "/outside.html"],
                }))  # fmt: skip
                for _ in range(600):
                    run = answer(await session.call_tool("get_run", {"run_id": scoped["run_id"]}))
                    if run["state"] not in ("starting", "running"):
                        break
                    await anyio.sleep(0.2)
                assert run["outcome"] == "complete", run
                listed = answer(await session.call_tool("list_libraries", {}))["libraries"]
                netloc = site.url.removeprefix("http://")
                assert {v["library"]: v["scope"] for v in listed} == {
                    "lib": f"prefix {netloc}/docs/",
                    "scoped": f"host {netloc}, exclude */deep.html /outside.html",
                }
                pages = db.execute(
                    "SELECT p.url FROM pages p JOIN versions v ON v.id = p.version_id JOIN libraries l "
                    "ON l.id = v.library_id WHERE l.name = 'scoped'"
                ).fetchall()
                assert {url.removeprefix(site.url) for (url,) in pages} == {
                    "/docs/index.html", "/docs/guide.html", "/docs/api.html", "/docs/flaky.html"
                }  # fmt: skip
                answer(await session.call_tool("remove_library", {"library": "scoped"}))

        anyio.run(main)
    assert [r[0] for r in db.execute("SELECT l.name FROM libraries l")] == ["lib"]


def test_loose_versions_resolve_to_the_newest_match():
    from docsbot.service.search import resolve_version, version_key
    from docsbot.store import VersionRow

    names = ["3.9", "3.10", "3.11rc1", "2.7"]
    rows = [VersionRow(i, "py", name, "", {}, None, None) for i, name in enumerate(names)]
    assert sorted(["3.10", "3.9", "3.11rc1", "3.11"], key=version_key) == ["3.9", "3.10", "3.11rc1", "3.11"]
    assert resolve_version(rows, "latest").name == "3.11rc1"
    assert resolve_version(rows, "3").name == "3.11rc1"
    assert resolve_version(rows, "3.x").name == "3.11rc1"
    assert resolve_version(rows, "3.1") is None  # 3.10 is not a 3.1 release
    assert resolve_version(rows, "2.*").name == "2.7"
    assert resolve_version(rows, "4") is None


# --- two schedulers, two Scrapyd nodes, one PostgreSQL ---------------------------------------------------------------


@pytest.mark.model
def test_two_schedulers_on_two_scrapyd_nodes_run_every_due_version_exactly_once_per_round(
    docsite, db, database_url, tmp_path
):
    """Six versions declared by a libraries file; two `docsbot scheduler` processes claim due versions every second
    and schedule them on two real Scrapyd daemons (each deployed with `scrapyd-deploy`, one job at a time). Every
    version is run exactly once per round: a first round (full indexes), then, all made due again, a second
    (refreshes); none is missed, none run twice, and the jobs are spread over both nodes."""
    import os
    import time

    from tests.test_deploy import Scrapyd, _default_models_dir

    node_env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "SCRAPY_", "PYTHON"))}
    node_env.update(
        DATABASE_URL=database_url,
        DOCSBOT_DATA_DIR=str(tmp_path / "node-data"),
        DOCSBOT_MODELS_DIR=os.environ.get("DOCSBOT_MODELS_DIR", _default_models_dir()),
    )
    nodes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        nodes.append(Scrapyd(tmp_path / name, node_env))
    schedulers: list[subprocess.Popen] = []
    logs = []
    try:
        for node in nodes:
            node.deploy()
        names = [f"lib{i}" for i in range(6)]
        libraries = tmp_path / "libraries.toml"
        libraries.write_text(
            "".join(
                f'[[library]]\nname = "{n}"\nurl = "{docsite.url}/docs/index.html"\nrefresh = "1h"\n' for n in names
            )
        )
        from docsbot.fleet.libraries import load
        from docsbot.fleet.scheduler import Fleet

        Fleet(database_url).declare(load(libraries), str(libraries))  # due at once, nothing run yet
        env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="docsbot.embedding.models.FastEmbedEmbedder")
        cmd = [sys.executable, "-m", "docsbot.cli", "scheduler", "--interval", "1"]
        cmd += [arg for node in nodes for arg in ("--scrapyd", node.url)]
        for i in range(2):
            logs.append((tmp_path / f"scheduler{i}.log").open("w"))
            schedulers.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=logs[-1], stderr=subprocess.STDOUT))

        def runs_per_version(expect: int, timeout: float = 600) -> dict[str, list[tuple[str, str]]]:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                rows = db.execute(
                    "SELECT l.name, r.mode, r.outcome FROM crawl_runs r JOIN versions v ON v.id = r.version_id "
                    "JOIN libraries l ON l.id = v.library_id ORDER BY r.id"
                ).fetchall()
                done = {n: [(m, o) for name, m, o in rows if name == n] for n in names}
                if all(len(done[n]) >= expect and all(o for _, o in done[n]) for n in names):
                    time.sleep(3)  # a second run of one version would have been claimed by now
                    return {
                        n: [(m, o) for name, m, o in db.execute(
                            "SELECT l.name, r.mode, r.outcome FROM crawl_runs r JOIN versions v ON v.id = r.version_id "
                            "JOIN libraries l ON l.id = v.library_id ORDER BY r.id"
                        ).fetchall() if name == n]
                        for n in names
                    }  # fmt: skip
                time.sleep(1)
            raise AssertionError(f"not every version ran: {done}")

        first = runs_per_version(1)
        assert first == {n: [("full", "complete")] for n in names}
        db.execute("UPDATE versions SET next_due_at = now()")  # the next round: every version due again
        second = runs_per_version(2)
        assert second == {n: [("full", "complete"), ("refresh", "complete")] for n in names}
        jobs = [len(node.get("listjobs.json", project="docsbot")["finished"]) for node in nodes]
        assert sum(jobs) == 12 and all(jobs), jobs  # twelve runs, spread over both nodes
        due = db.execute("SELECT min(next_due_at - now()) FROM versions").fetchone()[0]
        assert due > timedelta(minutes=55)  # each due again an interval after its run
    finally:
        for scheduler in schedulers:
            scheduler.terminate()
            scheduler.wait(timeout=30)
        for log in logs:
            log.close()
        for node in nodes:
            node.close()


def test_versions_on_one_host_share_its_budget_across_the_fleets_runs(database_url, db, tmp_path):
    """Two versions on one host under `docsbot sync --jobs 2`: each run would send 8 requests at once, so two at
    once doubled what the host saw; claims give a host at most its budget (DOCSBOT_HOST_CONCURRENCY, 8): the second
    run waits for the first, and both complete."""
    from tests.docsite import DocSite, html_page

    site = DocSite()
    site.put("/robots.txt", "User-agent: *\n", "text/plain")
    for tree in ("a", "b"):
        names = [f"p{i}.html" for i in range(24)]
        site.put(f"/{tree}/index.html", html_page(f"Docs {tree}", "<p>Start.</p>", names))
        for name in names:
            site.put(f"/{tree}/{name}", html_page(f"{tree} {name}", f"<p>Page {name} of {tree}.</p>"))
            site.slow[f"/{tree}/{name}"] = 0.3
    with DocSiteServer(site) as server:
        libraries = tmp_path / "libraries.toml"
        libraries.write_text(
            f'[[library]]\nname = "a"\nurl = "{server.url}/a/index.html"\n'
            f'[[library]]\nname = "b"\nurl = "{server.url}/b/index.html"\n'
        )
        result = sync(database_url, tmp_path, str(libraries), "--jobs", "2")
        assert result.returncode == 0, result.stdout + result.stderr[-3000:]
        assert "2 entries: 2 indexed, 0 refreshed, 0 not due, 0 failed, 0 skipped" in result.stdout
        assert site.max_in_flight <= 8, site.max_in_flight  # one run's worth: the host's budget
        assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 50


def test_the_fleet_guides_libraries_file_is_the_example_and_loads():
    """examples/libraries.toml is the fleet guide's example (docs/how-to/fleet.md), word for word, and a valid
    libraries file."""
    import re

    from docsbot.fleet.libraries import load

    example = ROOT / "examples" / "libraries.toml"
    readme = (ROOT / "docs" / "how-to" / "fleet.md").read_text(encoding="utf-8")
    shown = re.search(r"```toml\n(# libraries\.toml\n.*?)```", readme, re.S)
    assert shown is not None and shown.group(1) == example.read_text(encoding="utf-8")
    entries = {e.label: e for e in load(example)}
    assert set(entries) == {"python@3.11", "scrapy@2.13", "handbook"}
    python = entries["python@3.11"]
    assert (python.host_concurrency, python.freshness, sorted(python.gone_statuses)) == (16, "http", [403, 404, 410])
    assert entries["scrapy@2.13"].refresh.days == 1  # from [defaults]
    assert entries["scrapy@2.13"].args == {"exclude": "*/_modules/*"}
    assert entries["handbook"].args == {"headers": "PRIVATE-TOKEN=$HANDBOOK_TOKEN"}


def test_local_runs_share_the_cores_for_onnx_runtime():
    """`docsbot sync --jobs N`: each local run gets its share of the cores for the model (DOCSBOT_EMBED_THREADS),
    unless the user set it; one job keeps onnxruntime's default (every core)."""
    import os

    from docsbot.fleet.scheduler import Fleet

    cores = len(os.sched_getaffinity(0))
    base = {k: v for k, v in os.environ.items() if k != "DOCSBOT_EMBED_THREADS"}
    assert Fleet("postgresql:///x", jobs=2, env=base).run_env()["DOCSBOT_EMBED_THREADS"] == str(max(1, cores // 2))
    assert Fleet("postgresql:///x", jobs=64, env=base).run_env()["DOCSBOT_EMBED_THREADS"] == "1"
    assert "DOCSBOT_EMBED_THREADS" not in Fleet("postgresql:///x", jobs=1, env=base).run_env()
    mine = {**base, "DOCSBOT_EMBED_THREADS": "3"}
    assert Fleet("postgresql:///x", jobs=2, env=mine).run_env()["DOCSBOT_EMBED_THREADS"] == "3"


def test_scrapyd_jobs_go_to_the_least_loaded_node_ties_round_the_nodes_and_a_silent_node_is_passed_over():
    """The scheduler's node choice (daemonstatus.json's running + pending): the least loaded node wins; with equal
    loads (short jobs, over before the next pick) picks go round the nodes instead of all landing on the first;
    a node that does not answer is passed over, and no answering node at all is an Upstream error naming them."""
    from docsbot.fleet.scheduler import Fleet
    from docsbot.service.errors import Upstream

    fleet = Fleet("postgresql:///x", scrapyd=["http://a:6800", "http://b:6800", "http://c:6800"])
    load = {"http://a:6800": 0, "http://b:6800": 0, "http://c:6800": 0}

    def status(node):
        def answer():
            if load[node.url] is None:
                raise Upstream(f"Scrapyd at {node.url} did not answer daemonstatus.json within 15 s")
            return {"running": load[node.url], "pending": 0, "finished": 7}

        return answer

    for node in fleet.nodes:
        node.daemonstatus = status(node)
    picks = [fleet._pick_node().url for _ in range(6)]
    assert picks == ["http://a:6800", "http://b:6800", "http://c:6800"] * 2
    load.update({"http://a:6800": 2, "http://b:6800": 1, "http://c:6800": 3})
    assert [fleet._pick_node().url for _ in range(2)] == ["http://b:6800"] * 2
    load["http://b:6800"] = None
    assert fleet._pick_node().url == "http://a:6800"
    load.update({"http://a:6800": None, "http://c:6800": None})
    with pytest.raises(Upstream, match="no Scrapyd node answered: ") as error:
        fleet._pick_node()
    assert all(f"Scrapyd at {url} did not answer" in str(error.value) for url in load)


def test_sync_and_the_scheduler_run_on_the_scrapyd_nodes_of_the_settings_unless_given_their_own(monkeypatch):
    """DOCSBOT_SCRAPYD_URLS is declared in the settings model and read through it: space-separated in the
    environment, as before; ``--scrapyd`` replaces it."""
    import argparse

    from docsbot.cli import fleet as fleet_cli
    from docsbot.config import DocsbotSettings
    from docsbot.project_settings import ProjectSettings

    monkeypatch.setenv("DOCSBOT_SCRAPYD_URLS", " http://a:6800/  http://b:6800\n")
    declared = DocsbotSettings()  # the environment, read as docsbot.settings reads it
    assert declared.DOCSBOT_SCRAPYD_URLS == ["http://a:6800/", "http://b:6800"]
    overrides = {**declared.scrapy_settings(), "DATABASE_URL": "postgresql://unused@127.0.0.1:1/unused"}
    monkeypatch.setattr(fleet_cli, "project_settings", lambda: ProjectSettings("docsbot.settings", overrides))
    fleet = fleet_cli._fleet(argparse.Namespace(scrapyd=None, jobs=1))
    assert [node.url for node in fleet.nodes] == ["http://a:6800", "http://b:6800"]
    given = fleet_cli._fleet(argparse.Namespace(scrapyd=["http://c:6800/"], jobs=1))
    assert [node.url for node in given.nodes] == ["http://c:6800"]
    monkeypatch.delenv("DOCSBOT_SCRAPYD_URLS")
    assert DocsbotSettings().DOCSBOT_SCRAPYD_URLS == []  # unset: local runs
