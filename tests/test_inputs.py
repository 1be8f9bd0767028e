"""Input from anyone is data, never control: a root URL's credentials never reach a log or the database; library
and version names are names (checked once, at every entry point, old ones still readable and removable); what is
printed to a terminal or a log, and every XML or HTML output, is safe whatever a stored string holds."""

from __future__ import annotations

import pytest

from docsbot.arguments import CrawlArguments, SpiderArgumentError
from docsbot.fleet.libraries import LibrariesFileError, parse

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
