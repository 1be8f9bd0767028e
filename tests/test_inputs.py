"""Input from anyone is data, never control: a root URL's credentials never reach a log or the database; library
and version names are names (checked once, at every entry point, old ones still readable and removable); what is
printed to a terminal or a log, and every XML or HTML output, is safe whatever a stored string holds."""

from __future__ import annotations

import json

import pytest

from docsbot.arguments import CrawlArguments, SpiderArgumentError
from docsbot.fleet.libraries import LibrariesFileError, parse
from tests.test_web import serve  # noqa: F401 - the fixture

SECRET = "hunter2"


# --- credentials in URLs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", [f"http://user:{SECRET}@docs.example/", "https://user@docs.example/en/", f"http://:{SECRET}@h:8080/x"]
)
def test_a_root_url_with_credentials_is_refused_without_repeating_them(url):
    with pytest.raises(SpiderArgumentError, match=r"^-a url: a URL with a user name or password is not crawled") as e:
        CrawlArguments.parse(url=url, library="docs")
    assert SECRET not in str(e.value) and "user" not in str(e.value).split("user name")[1]
    assert "-a http_auth=$USER_VARIABLE:$PASSWORD_VARIABLE" in str(e.value)
    with pytest.raises(SpiderArgumentError, match=r"^-a sitemap: a URL with a user name"):
        CrawlArguments.parse(url="https://docs.example/", sitemap=url)
    with pytest.raises(LibrariesFileError, match=r"#1 \(docs\): url: a URL with a user name or password") as e:
        parse(f'[[library]]\nname = "docs"\nurl = "{url}"\n')
    assert SECRET not in str(e.value)
    # an @ in a path or query is no credential
    assert CrawlArguments.parse(url="https://docs.example/a@b/?q=c@d").url == "https://docs.example/a@b/?q=c%40d"


def test_a_crawl_of_a_root_url_with_a_password_stops_before_anything_and_logs_no_password(crawl, docsite, db):
    root = docsite.url.replace("http://", f"http://reader:{SECRET}@") + "/docs/index.html"
    result = crawl(url=root, library="private")
    assert result.returncode in (1, 2), result.stderr[-2000:]  # a setup error (2: a usage error, once it is one)
    assert "a URL with a user name or password is not crawled" in result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert docsite.site.hits == []
    assert db.execute("SELECT to_regclass('versions') IS NULL").fetchone()[0]  # nothing set up, nothing written


# --- names are names ----------------------------------------------------------------------------------------------

HOSTILE = {
    "escape": "lib\x1b[2J\x1b]0;owned\x07",  # clears the screen, sets the terminal's title
    "newline": "lib\n2026-01-01 00:00:00 [docsbot] INFO: forged",
    "rlo": "lib\u202egpj.exe",  # shown reversed
    "markup": "<script>alert(1)</script>",
    "path": "a/../b",
}


@pytest.mark.parametrize("name", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_name_that_is_not_one_is_refused_at_every_entry_point_with_one_line(name):
    from docsbot.names import InvalidName, check_library, check_version

    for check in (check_library, check_version):
        with pytest.raises(InvalidName) as refused:
            check(name)
        message = str(refused.value)
        assert "\n" not in message and "\x1b" not in message and "\u202e" not in message
        assert "name is ASCII letters, digits" in message
    with pytest.raises(SpiderArgumentError, match=r"^-a library: library name '.*' holds") as e:
        CrawlArguments.parse(url="https://docs.example/", library=name)
    assert "\n" not in str(e.value)
    with pytest.raises(SpiderArgumentError, match=r"^-a version: version name"):
        CrawlArguments.parse(url="https://docs.example/", library="ok", version=name)
    escaped = json.dumps(name)  # a TOML basic string: JSON's escapes are TOML's
    with pytest.raises(LibrariesFileError, match=r"#1: name: library name"):
        parse(f'[[library]]\nname = {escaped}\nurl = "https://docs.example/"\n')
    with pytest.raises(LibrariesFileError, match=r"#1 \(ok\): version: version name"):
        parse(f'[[library]]\nname = "ok"\nversion = {escaped}\nurl = "https://docs.example/"\n')


def test_names_registries_and_folders_give_are_names():
    from docsbot.folders import default_library
    from docsbot.names import check_library, check_version, library_name_of

    for name in ("python", "scrapy", "docs.python.org", "zope.interface", "c++", "3.11", "serde_json", "Flask-SQL"):
        assert check_library(name) == name
    for version in ("", "3.11", "2.0.0-beta.1", "1.0.0+local.7", "latest", "v4", "1.0@next"):
        assert check_version(version) == version
    assert library_name_of("@babel/core", "npm") == "babel__core"  # as DefinitelyTyped writes a scope
    assert library_name_of("Flask_SQLAlchemy", "pypi") == "flask-sqlalchemy"  # PEP 503
    assert library_name_of("serde_json", "cargo") == "serde_json"
    assert CrawlArguments.parse(url="http://[::1]:8000/docs/").library == "1"
    assert default_library("https://Docs.Example.org/en/") == "docs.example.org"
    assert default_library("file:///srv/acme/my%20d%C3%B6cs/") == "my-d-cs"


# --- what is printed, what is logged ------------------------------------------------------------------------------


def test_printable_escapes_what_acts_on_a_terminal_and_keeps_every_script():
    from docsbot.display import printable

    assert printable("Überblick — 概要 ½") == "Überblick — 概要 ½"
    assert printable("a\x1b[2Jb\rc\x9bd\u202ee\u200bf\nend") == "a\\x1b[2Jb\\rc\\u009bd\\u202ee\\u200bf\\nend"
    assert printable("two\nlines\tand\x07", lines=True) == "two\nlines\tand\\x07"


def test_a_log_record_stays_on_its_lines_whatever_its_values_hold(caplog):
    import logging

    from docsbot.display import EscapedLogRecord

    def formatted(msg, *args, exc=None):
        record = EscapedLogRecord("docsbot", logging.INFO, __file__, 1, msg, args, exc)
        return logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s").format(record)

    line = formatted("refresh of %s: %d unchanged, %.1f s", HOSTILE["newline"] + "\x1b[2J", 5, 1.25)
    forged = "lib\\n2026-01-01 00:00:00 [docsbot] INFO: forged\\x1b[2J"
    assert line.endswith(f"INFO: refresh of {forged}: 5 unchanged, 1.2 s")
    assert "\n" not in line
    dumped = formatted("Overridden settings:\n%(settings)s", {"settings": "{'A': 1,\n 'B': 2}"})
    assert dumped.endswith("Overridden settings:\n {'A': 1,\\n 'B': 2}")
    made_before = formatted(f"started {HOSTILE['newline']}")  # a message built before logging keeps its lines,
    assert made_before.splitlines()[1] == " 2026-01-01 00:00:00 [docsbot] INFO: forged"  # none at the margin
    try:
        raise ValueError(HOSTILE["newline"])
    except ValueError:
        import sys

        traceback = formatted("failed", exc=sys.exc_info())
    lines = traceback.splitlines()
    assert lines[1] == "Traceback (most recent call last):"  # written by logging, never by the data
    assert all(line[:1] in (" ", "") for line in lines[2:])
    assert lines[-1] == " 2026-01-01 00:00:00 [docsbot] INFO: forged"


def test_a_name_with_a_newline_forges_no_line_of_the_crawl_log(crawl, docsite, db):
    result = crawl(url=f"{docsite.url}/docs/index.html", library=HOSTILE["newline"])
    assert result.returncode in (1, 2)
    assert not any(line.startswith("2026-01-01 00:00:00") for line in result.stderr.splitlines())
    assert "-a library: library name 'lib\\n2026-01-01 00:00:00 [docsbot] INFO: forged' holds" in result.stderr
    assert docsite.site.hits == []


# --- names stored before names were checked -----------------------------------------------------------------------


def test_a_version_stored_under_a_hostile_name_is_shown_safely_everywhere_refused_a_refresh_and_removed(
    crawl,
    docsite,
    db,
    database_url,
    tmp_path,
    serve,  # noqa: F811
):
    import subprocess
    import sys
    import urllib.parse

    import feedparser

    from tests.conftest import docsbot_env
    from tests.test_changes import release
    from tests.test_web import get

    assert crawl(url=f"{docsite.url}/docs/index.html", library="victim", version="1.0").returncode == 0
    release(docsite.site)
    assert crawl(library="victim", version="1.0", mode="refresh").returncode in (0, 3)
    # what an older docsbot let in, as it was stored
    library = HOSTILE["escape"] + HOSTILE["newline"] + HOSTILE["rlo"] + HOSTILE["markup"]
    version = HOSTILE["path"]
    db.execute("UPDATE libraries SET name = %s", (library,))
    db.execute("UPDATE versions SET name = %s", (version,))
    db.commit()
    raw = ("\x1b", "\u202e", "\x07")

    def docsbot(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "docsbot.cli", *args], env=docsbot_env(database_url, tmp_path),
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    status = docsbot("status")
    assert status.returncode == 0, status.stderr
    assert not any(c in status.stdout for c in raw)
    assert status.stdout.splitlines()[0].startswith("lib\\x1b[2J\\x1b]0;owned\\x07lib\\n2026-01-01 00:00:00")
    assert not any(line.startswith("2026-01-01") for line in status.stdout.splitlines())
    changes = docsbot("changes", f"{library}@{version}", "--diff")
    assert changes.returncode == 0, changes.stderr
    assert "modified" in changes.stdout and not any(c in changes.stdout for c in raw)
    assert not any(line.startswith("2026-01-01") for line in changes.stdout.splitlines())

    server = serve()
    feed = get(f"{server.url}/changes.atom", params={"library": library, "version": version})
    assert feed.status_code == 200, feed.text[:500]
    parsed = feedparser.parse(feed.content)
    assert not parsed.bozo and parsed.entries and "\ufffd" in parsed.feed.title
    page = get(f"{server.url}/libraries")
    assert page.status_code == 200 and "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)" in page.text
    listed = get(f"{server.url}/llms.txt")
    assert listed.status_code == 200
    link = next(line for line in listed.text.splitlines() if "/llms.txt" in line).split("](")[1].split(")")[0]
    assert link == f"/docs/{urllib.parse.quote(f'{library}@{version}', safe='@')}/llms.txt"
    for path in (link, link.replace("/llms.txt", "/llms-full.txt")):
        answer = get(server.url + path)
        assert answer.status_code == 200 and "Welcome" in answer.text, (path, answer.status_code, answer.text[:300])
    for path in ("/changes", "/changes.json"):
        assert get(f"{server.url}{path}", params={"library": library, "version": version}).status_code == 200

    from docsbot.project_settings import ProjectSettings
    from docsbot.service import DocsIndex, Invalid

    settings = ProjectSettings("docsbot.settings", {"DOCSBOT_DATA_DIR": str(tmp_path)})
    with (
        DocsIndex(settings, database_url, allow_writes=True) as index,
        pytest.raises(Invalid, match="indexed before names were checked: it can be read and removed"),
    ):
        index.refresh(library, version)
    refused = crawl(library=library, version=version, mode="refresh")
    assert refused.returncode in (1, 2) and "-a library: library name" in refused.stderr
    removed = docsbot("delete", "--library", library)
    assert removed.returncode == 0, removed.stderr
    assert db.execute("SELECT count(*) FROM versions").fetchone()[0] == 0
