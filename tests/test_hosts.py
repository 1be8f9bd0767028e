"""Real hosts' behaviours, each served by nginx as its operators configure it: what docsbot stores, the
run's outcome and exit code, what the server saw, and, where the behaviour lets a refresh see every change, that a
refresh after an edit, an added page and a deleted one stores what a new index of the same site stores.

| host                                   | index             | refresh                                       |
|----------------------------------------|-------------------|-----------------------------------------------|
| robots.txt Disallow + Crawl-delay 1    | 0, 1 skipped      | 0, requests a Crawl-delay apart ≡ re-index    |
| 401 (auth_basic) and 403 (deny) areas  | 0, 2 skipped      | 0 ≡ re-index                                  |
| limit_req 2 r/s → 429 + Retry-After    | 0, every page     | 0 ≡ re-index                                  |
| http → https (301) of the root         | 0, https URLs     | 0, every page 304 over https ≡ re-index       |
| gzip (nginx's weak ETags)              | 0, W/"…" stored   | 0, every page 304 to W/"…" ≡ re-index         |
| Cache-Control: no-cache, freshness=http| 0                 | 0, every page asked again ≡ re-index          |
| Cache-Control: max-age, freshness=http | 0                 | 0, no page asked (fresh)                      |

nginx is what `make test` installs (Debian's package); without it these tests are skipped, saying so.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.conftest import BY_DESIGN, ROOT, docsbot_env
from tests.docsite import html_page
from tests.nginx import NGINX, NginxHost, can_listen, max_in_flight
from tests.test_web import get
from tests.test_web import serve as serve  # a fixture

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (`make test` installs it with apt)")

# Every page of the site: its path under the root, and the paths it links (relative, as documentation does).
SITE = {
    "docs/index.html": ["guide.html", "api.html", "tutorial/", "private/notes.html", "members/", "internal/"],
    "docs/guide.html": ["index.html", "tutorial/"],
    "docs/api.html": ["index.html"],
    "docs/tutorial/index.html": ["../guide.html", "step2.html"],
    "docs/tutorial/step2.html": ["index.html"],
    "docs/private/notes.html": ["../index.html"],
    "docs/members/index.html": ["../index.html"],
    "docs/internal/index.html": ["../index.html"],
}


def body(path: str, edition: int = 1) -> str:
    words = " ".join(f"{path.split('/')[-2]}-{path.rsplit('/', 1)[-1]}-word{i}" for i in range(120))
    return f"<h2>About {path}</h2><p>Edition {edition}. {words}</p><h2>Details</h2><p>More of {path}: {words}</p>"


def write_site(root: Path) -> None:
    for path, links in SITE.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html_page(path, body(path), links))


def edit_site(root: Path) -> None:
    """An edit (guide.html), a page added (tutorial/step3.html, linked from step2.html) and one deleted (api.html,
    and the index's link to it): what a refresh must see."""
    guide, step3 = "docs/guide.html", "docs/tutorial/step3.html"
    (root / guide).write_text(html_page(guide, body(guide, 2), SITE[guide]))
    (root / step3).write_text(html_page(step3, body(step3), ["index.html"]))
    (root / "docs/tutorial/step2.html").write_text(
        html_page("docs/tutorial/step2.html", body("docs/tutorial/step2.html"), ["index.html", "step3.html"])
    )
    (root / "docs/api.html").unlink()
    links = [link for link in SITE["docs/index.html"] if link != "api.html"]
    (root / "docs/index.html").write_text(html_page("docs/index.html", body("docs/index.html"), links))


def stored(db, library: str) -> dict[str, list[str]]:
    """Per page path (scheme and host left out): its chunks' texts in order."""
    rows = db.execute(
        "SELECT p.url, d.content FROM pages p JOIN versions v ON v.id = p.version_id "
        "JOIN libraries l ON l.id = v.library_id LEFT JOIN documents d ON d.page_id = p.id "
        "WHERE l.name = %s ORDER BY p.url, d.kind, d.sort_order",
        (library,),
    ).fetchall()
    out: dict[str, list[str]] = {}
    for url, content in rows:
        texts = out.setdefault("/" + url.split("/", 3)[3], [])
        if content is not None:
            texts.append(content)
    return out


def run_of(db, library: str) -> dict:
    outcome, stats = db.execute(
        "SELECT r.outcome, r.stats FROM crawl_runs r JOIN versions v ON v.id = r.version_id "
        "JOIN libraries l ON l.id = v.library_id WHERE l.name = %s ORDER BY r.id DESC LIMIT 1",
        (library,),
    ).fetchone()
    return {"outcome": outcome, **stats}


def stored_urls(db, library: str) -> set[str]:
    rows = db.execute(
        "SELECT p.url FROM pages p JOIN versions v ON v.id = p.version_id JOIN libraries l ON l.id = v.library_id "
        "WHERE l.name = %s",
        (library,),
    ).fetchall()
    return {url for (url,) in rows}


ALL = {"/docs/index.html", "/docs/guide.html", "/docs/api.html", "/docs/tutorial/", "/docs/tutorial/step2.html",
       "/docs/private/notes.html", "/docs/members/", "/docs/internal/"}  # fmt: skip
EDITED = ALL - {"/docs/api.html"} | {"/docs/tutorial/step3.html"}


@pytest.fixture
def site(tmp_path) -> Path:
    root = tmp_path / "site"
    write_site(root)
    return root


def host(site: Path, tmp_path: Path, **config: object) -> NginxHost:
    return NginxHost(site, tmp_path / "nginx", **config)


def index_and_refresh(crawl, db, nginx: NginxHost, site: Path, *, skipped: dict[str, list[str]] | None = None,
                      **args: str) -> None:  # fmt: skip
    """Index the site, check the run; edit it, refresh, check that the refresh stores what a new index stores."""
    skipped = skipped or {}
    expected = {p for p in ALL if p not in {u for paths in skipped.values() for u in paths}}
    result = crawl(url=f"{nginx.url}/docs/index.html", library="hosts", **args)
    assert result.returncode == 0, result.stderr[-3000:]
    run = run_of(db, "hosts")
    assert run["outcome"] == "complete" and run.get("failed", 0) == 0, run
    assert set(stored(db, "hosts")) == expected
    for reason, paths in skipped.items():
        assert sorted(u.split("/", 3)[3] for u in run["skipped_pages"][reason]) == sorted(p[1:] for p in paths)
    assert {k: n for k, n in run.items() if k.startswith("skipped/") and n} == {
        f"skipped/{reason}": len(paths) for reason, paths in skipped.items()
    }

    edit_site(site)
    nginx.clear()
    result = crawl(library="hosts", mode="refresh", **args)
    assert result.returncode == 0, result.stderr[-3000:]
    refreshed = run_of(db, "hosts")
    assert refreshed["outcome"] == "complete", refreshed
    assert set(stored(db, "hosts")) == (EDITED & expected) | {"/docs/tutorial/step3.html"}, result.stderr[-3000:]
    result = crawl(url=f"{nginx.url}/docs/index.html", library="hosts-reindexed", **args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert stored(db, "hosts") == stored(db, "hosts-reindexed")


def test_robots_disallow_and_crawl_delay(crawl, db, site, tmp_path):
    """A robots.txt that disallows a directory and asks for a Crawl-delay: the disallowed page is never requested and
    is listed as skipped (exit 0, complete), and the host sees one request at a time, a Crawl-delay apart."""
    (site / "robots.txt").write_text("User-agent: *\nDisallow: /docs/private/\nCrawl-delay: 1\n")
    with host(site, tmp_path) as nginx:
        index_and_refresh(crawl, db, nginx, site, skipped={"robots": ["/docs/private/notes.html"]})
        assert not [r for r in nginx.requests() if r.path.startswith("/docs/private/")]
        starts = sorted(r.start for r in nginx.pages())
        assert max_in_flight(nginx.requests()) == 1
        gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
        assert min(gaps) >= 0.95, gaps  # nginx's clock, milliseconds: 1 s less its rounding


def test_areas_behind_a_login_or_denied_are_skipped(crawl, db, site, tmp_path, database_url, serve):
    """A members' area behind HTTP Basic authentication (401) and a directory denied to everyone (403), linked from
    the index: never stored, listed as skipped (forbidden), exit 0 on the index and the refresh; `docsbot status`,
    `list_libraries` and the run's web page say so."""
    digest = base64.b64encode(hashlib.sha1(b"secret").digest()).decode()
    (tmp_path / "htpasswd").write_text(f"reader:{{SHA}}{digest}\n")
    server = (
        f'location /docs/members/ {{ auth_basic "Members"; auth_basic_user_file {tmp_path}/htpasswd; }}\n'
        "location /docs/internal/ { deny all; }"
    )
    with host(site, tmp_path, server=server) as nginx:
        statuses = {}
        index_and_refresh(crawl, db, nginx, site, skipped={"forbidden": ["/docs/members/", "/docs/internal/"]})
        for r in nginx.requests():
            statuses.setdefault(r.path, set()).add(r.status)
        assert statuses["/docs/members/"] == {401} and statuses["/docs/internal/"] == {403}
    skipped = sorted(f"{nginx.url}/docs/{area}/" for area in ("internal", "members"))
    status = subprocess.run([sys.executable, "-m", "docsbot.cli", "status"], cwd=ROOT, capture_output=True,
                            text=True, env=docsbot_env(database_url, tmp_path))  # fmt: skip
    assert "0 failed, skipped by the site's rules (forbidden 2)" in status.stdout, status.stdout + status.stderr
    base = serve().url
    (listed,) = [v for v in get(f"{base}/libraries.json").json()["libraries"] if v["library"] == "hosts"]
    run = listed["last_run"]
    assert (run["outcome"], run["skipped"], sorted(run["skipped_pages"]["forbidden"])) == (
        "complete", {"forbidden": 2}, skipped
    )  # fmt: skip
    page = get(f"{base}/runs/{run['crawl_run_id']}").text
    assert "Skipped by the site's rules" in page and all(f'href="{url}"' in page for url in skipped)


def test_a_rate_limit_answering_429_with_retry_after(crawl, db, site, tmp_path):
    """``limit_req`` at 2 requests a second, no burst, answering 429 with ``Retry-After: 1`` (what operators put in
    front of a documentation host): the crawl slows down to what the host allows, stores every page and completes;
    after a 429 and the requests in flight when it came, nothing goes to the host until its Retry-After has passed
    (Scrapy's own retries sent three requests within milliseconds, and the other pages' requests went on: 4 of the
    8 pages failed, exit 3)."""
    http = "limit_req_zone $binary_remote_addr zone=docs:1m rate=2r/s;"
    server = (
        "limit_req zone=docs; limit_req_status 429; error_page 429 @limited;\n"
        "location @limited { add_header Retry-After 1 always; return 429; }"
    )
    with host(site, tmp_path, server=server, http=http) as nginx:
        index_and_refresh(crawl, db, nginx, site)
        logged = nginx.requests()
        limited = [r for r in logged if r.status == 429]
        assert limited and all(r.retry_after == "1" for r in limited)
        for refused in limited:  # the host's pause: after what was in flight when the 429 came, nothing for 1 s
            sent = [r for r in logged if refused.end + 0.1 < r.start < refused.end + 0.95]
            assert not sent, (refused, sent)


@pytest.mark.skipif(
    os.geteuid() != 0, reason=BY_DESIGN + "nginx listens on ports 80 and 443, as the host it stands for: root only"
)
def test_an_http_root_redirected_to_https(crawl, db, site, tmp_path):
    """The root URL given as http://, the host redirecting every request to https:// (301): the pages are stored
    under their https URLs, and the refresh asks https for each of them and gets 304s."""
    nginx = host(site, tmp_path, tls=True)
    if not (can_listen(nginx.address, 80) and can_listen(nginx.address, 443)):
        pytest.skip(f"port 80 or 443 of {nginx.address} is taken here (a system web server on every address)")
    with nginx:
        index_and_refresh(crawl, db, nginx, site)
        assert all(url.startswith(nginx.tls_url) for url in stored_urls(db, "hosts"))
        nginx.clear()
        result = crawl(library="hosts", mode="refresh")
        assert result.returncode == 0, result.stderr[-3000:]
        root, *pages = nginx.pages()  # the root URL as given, then every page over https
        assert (root.scheme, root.status, root.path) == ("http", 301, "/docs/index.html")
        assert pages and {(r.scheme, r.status) for r in pages} == {("https", 304)}


def test_gzip_and_the_weak_etags_it_makes(crawl, db, site, tmp_path):
    """nginx compresses HTML when asked and then sends its ETag weak (``W/"…"``), as CDNs do: docsbot stores the weak
    ETag, sends it back, and nginx's weak comparison answers 304."""
    with host(site, tmp_path, server="gzip on; gzip_min_length 1;") as nginx:
        index_and_refresh(crawl, db, nginx, site)
        pages = [r for r in nginx.requests() if r.status == 200 and r.path.endswith(("/", ".html"))]
        assert pages and all(r.encoding == "gzip" and r.etag.startswith('W/"') for r in pages)
        etags = [etag for (etag,) in db.execute("SELECT etag FROM pages").fetchall()]
        assert etags and all(etag.startswith('W/"') for etag in etags)
        nginx.clear()
        assert crawl(library="hosts", mode="refresh").returncode == 0
        pages = nginx.pages()
        assert pages and all(r.status == 304 and r.inm.startswith('W/"') for r in pages)
        assert run_of(db, "hosts")["unchanged"] == len(EDITED)


def test_cache_control_no_cache_is_asked_again(crawl, db, site, tmp_path):
    """``Cache-Control: no-cache`` (validate before every use): a refresh that trusts HTTP freshness still asks for
    every page, conditionally."""
    with host(site, tmp_path, server="add_header Cache-Control no-cache;") as nginx:
        index_and_refresh(crawl, db, nginx, site, freshness="http")
        nginx.clear()
        assert crawl(library="hosts", mode="refresh", freshness="http").returncode == 0
        pages = nginx.pages()
        assert {r.path for r in pages} >= {"/docs/index.html", "/docs/guide.html", "/docs/tutorial/step3.html"}
        assert {r.status for r in pages} == {304}


def test_cache_control_max_age_is_not_asked_while_fresh(crawl, db, site, tmp_path):
    """``expires 1h`` (``Cache-Control: max-age=3600``): a refresh that trusts HTTP freshness asks for no page within
    the hour, completes, and stores nothing new; a refresh by validators asks for each of them (304)."""
    with host(site, tmp_path, server="expires 1h;") as nginx:
        result = crawl(url=f"{nginx.url}/docs/index.html", library="hosts", freshness="http")
        assert result.returncode == 0, result.stderr[-3000:]
        before = stored(db, "hosts")
        nginx.clear()
        result = crawl(library="hosts", mode="refresh", freshness="http")
        assert result.returncode == 0, result.stderr[-3000:]
        assert nginx.pages() == [] and run_of(db, "hosts")["outcome"] == "complete"
        assert stored(db, "hosts") == before
        result = crawl(library="hosts", mode="refresh", freshness="validators")
        assert result.returncode == 0, result.stderr[-3000:]
        assert {r.status for r in nginx.pages()} == {304} and len(nginx.pages()) == len(ALL)


def test_two_versions_on_one_host_stay_within_its_budget_under_the_scheduler(database_url, db, tmp_path):
    """Two versions on one nginx host, its budget 2 concurrent requests (``host_concurrency`` in the libraries file),
    `docsbot scheduler --jobs 2`: every response is slowed (``limit_rate``) so that requests overlap, and the
    server's own log shows at most 2 requests at a time, across both runs, and both runs complete."""
    import time

    from docsbot.fleet.libraries import load
    from docsbot.fleet.scheduler import Fleet

    root = tmp_path / "site"
    for tree in ("a", "b"):
        write_site(root / tree)
    with NginxHost(root, tmp_path / "nginx", server="limit_rate 4k;") as nginx:
        libraries = tmp_path / "libraries.toml"
        libraries.write_text(
            "".join(
                f'[[library]]\nname = "{tree}"\nurl = "{nginx.url}/{tree}/docs/index.html"\nhost_concurrency = 2\n'
                for tree in ("a", "b")
            )
        )
        Fleet(database_url).declare(load(libraries), str(libraries))
        env = docsbot_env(database_url, tmp_path)
        log = open(tmp_path / "scheduler.log", "w")  # noqa: SIM115 - closed in finally
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "docsbot.cli", "scheduler", "--jobs", "2", "--interval", "0.5"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 300
            outcomes: list = []
            while time.monotonic() < deadline:
                outcomes = db.execute(
                    "SELECT l.name, r.outcome FROM crawl_runs r JOIN versions v ON v.id = r.version_id "
                    "JOIN libraries l ON l.id = v.library_id WHERE r.finished_at IS NOT NULL ORDER BY l.name"
                ).fetchall()
                if len(outcomes) == 2:
                    break
                time.sleep(0.5)
        finally:
            scheduler.terminate()
            scheduler.wait(timeout=60)
            log.close()
        assert outcomes == [("a", "complete"), ("b", "complete")], (tmp_path / "scheduler.log").read_text()[-3000:]
        logged = nginx.requests()
        assert {r.path.split("/")[1] for r in logged if r.path.endswith(".html")} == {"a", "b"}
        assert max_in_flight(logged) == 2  # its budget, used and never exceeded (8 a run before claims shared it)


def test_a_fleet_does_not_back_off_a_site_for_its_rules(database_url, db, site, tmp_path):
    """`docsbot sync` of a site whose robots.txt disallows a page and whose server forbids a directory: exit 0, the
    version due again a whole interval later with no failure counted (a failing site is retried 5 minutes later,
    doubling)."""
    from datetime import timedelta

    (site / "robots.txt").write_text("User-agent: *\nDisallow: /docs/private/\n")
    with host(site, tmp_path, server="location /docs/internal/ { deny all; }") as nginx:
        libraries = tmp_path / "libraries.toml"
        libraries.write_text(f'[[library]]\nname = "ruled"\nurl = "{nginx.url}/docs/index.html"\nrefresh = "1d"\n')
        for _ in range(2):  # the index, then (due again by hand) a refresh
            env = docsbot_env(database_url, tmp_path)
            result = subprocess.run([sys.executable, "-m", "docsbot.cli", "sync", str(libraries)], cwd=ROOT,
                                    capture_output=True, text=True, env=env)  # fmt: skip
            assert result.returncode == 0, result.stdout + result.stderr[-3000:]
            assert "1 versions: " in result.stdout and "0 failed" in result.stdout
            failures, error, wait = db.execute(
                "SELECT failures, last_error, next_due_at - now() FROM versions"
            ).fetchone()  # fmt: skip
            assert (failures, error) == (0, None) and wait > timedelta(hours=23)
            db.execute("UPDATE versions SET next_due_at = now()")
        assert run_of(db, "ruled")["outcome"] == "complete"
        assert {k: v for k, v in run_of(db, "ruled").items() if k.startswith("skipped/") and v} == {
            "skipped/robots": 1,
            "skipped/forbidden": 1,
        }
