"""The docs spider's arguments (docsbot/arguments.py): validation and what a refresh takes from the index."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest

from docsbot.arguments import ArgumentUsageError, CrawlArguments, SpiderArgumentError, parse_duration


def test_a_full_index_needs_a_url_and_defaults_library_to_its_host():
    args = CrawlArguments.parse(url="HTTP://Docs.Example.org:80/en/index.html#top")
    assert (args.url, args.library, args.version, args.mode) == (
        "http://docs.example.org/en/index.html",
        "docs.example.org",
        "",
        "full",
    )
    with pytest.raises(SpiderArgumentError, match="needs -a url"):
        CrawlArguments.parse(mode="full")


def test_a_refresh_needs_a_library():
    assert CrawlArguments.parse(library="x").mode == "refresh"
    with pytest.raises(SpiderArgumentError, match="needs -a library"):
        CrawlArguments.parse(mode="refresh")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "ftp://h/x"}, "-a url"),
        ({"url": "http://h/", "mode": "partial"}, "-a mode"),
        ({"url": "http://h/", "max_depth": "-1"}, "max_depth must be >= 0"),
        ({"url": "http://h/", "max_pages": "lots"}, "max_pages must be an integer"),
        ({"url": "http://h/", "prune": "all"}, "-a prune"),
        ({"url": "http://h/", "allow_mass_delete": "maybe"}, "allow_mass_delete must be 1 or 0"),
        ({"url": "http://h/", "min_recheck": "7 days"}, "duration"),
        ({"url": "http://h/", "sitemap": "sitemap.xml"}, "-a sitemap"),
        ({"url": "http://h/", "render": "chrome"}, "-a render"),
    ],
)
def test_malformed_arguments_are_one_clear_error(kwargs, message):
    with pytest.raises(SpiderArgumentError, match=message):
        CrawlArguments.parse(**kwargs)


def test_durations_and_flags():
    args = CrawlArguments.parse(library="x", min_recheck="12h", allow_mass_delete="yes", sitemap="none")
    assert (args.min_recheck, args.allow_mass_delete, args.sitemap) == (timedelta(hours=12), True, "none")
    assert args.as_json()["min_recheck"] == "12:00:00"


def test_a_refresh_reuses_what_the_index_stored_unless_given_again():
    stored = {"max_depth": 2, "max_pages": 100, "prune": "orphans", "render": "js"}
    crawl = CrawlArguments.parse(library="x", mode="refresh").resolve("http://h/docs/", stored)
    assert (crawl.root_url, crawl.max_depth, crawl.max_pages, crawl.prune, crawl.render) == (
        "http://h/docs/",
        2,
        100,
        "orphans",
        "js",
    )
    given = CrawlArguments.parse(library="x", mode="refresh", max_depth="0", prune="none").resolve("http://h/", stored)
    assert (given.max_depth, given.prune) == (0, "none")


def test_a_full_index_ignores_stored_settings_and_stores_its_own():
    args = CrawlArguments.parse(url="http://h/docs/", max_depth="3")
    crawl = args.resolve("http://old/", {"max_depth": 1, "prune": "orphans"})
    assert crawl.stored() == {
        "max_depth": 3, "max_pages": None, "prune": "none", "render": "none", "freshness": "validators",
        "network": "any", "scope": "prefix", "include": [], "exclude": [], "headers": [], "http_auth": "",
    }  # fmt: skip


def test_a_crawl_started_from_the_network_stays_public_on_every_refresh():
    """``-a network=public`` is stored with the version; its refreshes keep it unless their operator says otherwise."""
    stored = CrawlArguments.parse(url="http://h/docs/", network="public").resolve().stored()
    assert stored["network"] == "public"
    again = CrawlArguments.parse(library="h", mode="refresh").resolve("http://h/docs/", stored)
    assert again.network == "public"
    operator = CrawlArguments.parse(library="h", mode="refresh", network="any")
    assert operator.resolve("http://h/", stored).network == "any"
    with pytest.raises(SpiderArgumentError, match="-a network must be one of any, public"):
        CrawlArguments.parse(url="http://h/", network="private")


@pytest.mark.parametrize("zero", ["0", "0d", "0h", "0.0s", " 0w "])
def test_a_zero_duration_is_off_everywhere(zero):
    """DOCSBOT_CHANGES_KEEP=0d records nothing (as 0 does), refresh = "0h" schedules nothing: never a zero interval
    that is falsy in one place and due at every tick in another."""
    assert parse_duration(zero) is None


def test_the_arguments_are_one_model_whose_errors_name_the_argument():
    """Every argument is a field of one pydantic model (the reference page is generated from its fields); values
    arrive as strings and are normalized, and a call with a name the model does not know is refused by name (the
    spider passes Scrapyd's _job and other extras on as attributes, never to the model)."""
    assert CrawlArguments.parse(url="http://h/", mode=" REFRESH ", render="JS").model_dump(
        include={"mode", "render"}
    ) == {
        "mode": "refresh",
        "render": "js",
    }
    with pytest.raises(
        SpiderArgumentError, match=r"^-a depth: unknown argument; did you mean max_depth\? \(known: url, "
    ):
        CrawlArguments.parse(url="http://h/", depth="2")
    with pytest.raises(SpiderArgumentError, match=r"^-a url: not an absolute http\(s\) URL: 'none'$"):
        CrawlArguments.parse(url="none")
    with pytest.raises(ValueError, match="frozen"):  # what a run was started with does not change under it
        CrawlArguments.parse(library="x").max_pages = 3  # type: ignore[misc]


def test_an_unknown_argument_is_a_usage_error_with_the_nearest_name():
    """``-a max_page=3`` is a typo, not a full crawl: a usage error (``scrapy crawl`` exits 2) naming the argument, the
    nearest known one, and every known one; a name nothing resembles gets no guess."""
    with pytest.raises(ArgumentUsageError) as typo:
        CrawlArguments.parse(url="http://h/", max_page="3")
    assert str(typo.value).startswith("-a max_page: unknown argument; did you mean max_pages? (known: url, library,")
    assert "exclude" in str(typo.value) and "http_auth" in str(typo.value)
    with pytest.raises(ArgumentUsageError, match=r"^-a colour: unknown argument \(known: "):
        CrawlArguments.parse(url="http://h/", colour="blue")
    with pytest.raises(ArgumentUsageError, match="a full index needs -a url"):
        CrawlArguments.parse(mode="full")


def test_scope_and_patterns_are_checked_normalized_and_kept_by_refreshes():
    args = CrawlArguments.parse(url="http://h/docs/python", scope=" Domain ", include="/en/*, ,*/api/*", exclude="/x/")
    assert (args.scope, args.include, args.exclude) == ("domain", ("/en/*", "*/api/*"), ("/x/",))
    crawl = args.resolve()
    assert crawl.stored()["include"] == ["/en/*", "*/api/*"] and crawl.stored()["scope"] == "domain"
    assert crawl.crawl_scope().describe() == "domain h, include /en/* */api/*, exclude /x/"
    stored = crawl.stored()
    again = CrawlArguments.parse(library="h", mode="refresh").resolve("http://h/docs/python", stored)
    assert (again.scope, again.include, again.exclude) == ("domain", ("/en/*", "*/api/*"), ("/x/",))
    cleared = CrawlArguments.parse(library="h", mode="refresh", exclude="", scope="prefix").resolve("http://h/", stored)
    assert (cleared.scope, cleared.include, cleared.exclude) == ("prefix", ("/en/*", "*/api/*"), ())
    with pytest.raises(SpiderArgumentError, match="^-a scope must be one of prefix, host, domain, got 'site'$"):
        CrawlArguments.parse(url="http://h/", scope="site")
    with pytest.raises(SpiderArgumentError, match=r"^-a exclude: '/\(/' is not a regular expression: "):
        CrawlArguments.parse(url="http://h/", exclude="*/a/*,/(/")
    with pytest.raises(SpiderArgumentError, match="holds a comma, which separates patterns"):
        CrawlArguments.parse(url="http://h/", include=["/a{1,3}/"])  # a list's item (MCP, the libraries file)


SECRET = "hunter2-s3cr3t"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"headers": f"PRIVATE-TOKEN={SECRET}"}, "the value of PRIVATE-TOKEN must be $VARIABLE"),
        ({"headers": SECRET}, "item 1 is not Name=$VARIABLE"),
        ({"headers": f"X-Ok=$OK, {SECRET}"}, "item 2 is not Name=$VARIABLE"),
        ({"headers": "Host=$HOST"}, "Host cannot be set"),
        ({"http_auth": f"alice:{SECRET}"}, "must be $USER_VARIABLE:$PASSWORD_VARIABLE"),
        ({"http_auth": "$U:$P", "headers": "Authorization=$A"}, "not both"),
    ],
)
def test_private_docs_arguments_name_environment_variables_and_an_error_never_repeats_a_value(kwargs, message):
    """A secret given where a variable's name belongs is refused, and the error does not show it (the message goes
    to the log and to whoever started the crawl)."""
    with pytest.raises(ArgumentUsageError) as refused:
        CrawlArguments.parse(url="http://h/", **kwargs)
    assert message in str(refused.value) and SECRET not in str(refused.value)


def test_private_docs_values_come_from_the_environment_for_the_roots_host_only():
    args = CrawlArguments.parse(url="https://docs.corp:8443/x/", headers="PRIVATE-TOKEN=$TOK", http_auth="$U:$P")
    crawl = args.resolve()
    assert crawl.stored()["headers"] == ["PRIVATE-TOKEN=$TOK"] and crawl.stored()["http_auth"] == "$U:$P"
    credentials = crawl.credentials({"TOK": SECRET, "U": "alice", "P": "pässword"})
    assert (credentials.netloc, credentials.scheme) == ("docs.corp:8443", "https")
    assert dict(credentials.headers) == {
        "PRIVATE-TOKEN": SECRET.encode(),
        "Authorization": b"Basic " + base64.b64encode("alice:pässword".encode()),
    }
    assert SECRET not in repr(credentials) and SECRET not in repr(crawl) and SECRET not in str(args.as_json())
    assert repr(credentials) == "Credentials(PRIVATE-TOKEN, Authorization to docs.corp:8443)"
    with pytest.raises(SpiderArgumentError, match="^-a http_auth: the environment variable P is not set"):
        crawl.credentials({"TOK": SECRET, "U": "alice"})
    with pytest.raises(SpiderArgumentError, match="the value of TOK holds a line break") as broken:
        crawl.credentials({"TOK": SECRET + "\r\nX-Injected: 1", "U": "a", "P": "b"})
    assert SECRET not in str(broken.value)
    assert CrawlArguments.parse(url="http://h/").resolve().credentials({"TOK": SECRET}) is None
