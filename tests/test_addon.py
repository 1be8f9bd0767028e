"""docsbot's Scrapy add-on (docsbot.addon) on real Scrapy settings: what it adds, what a project's settings keep,
and what stops a crawl. A crawl through it is in tests/test_crawl.py (a project's own components beside docsbot's)."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from docsbot.addon import ComponentError, Docsbot, SettingsError, check_addon


def settings(**cmdline: object) -> Settings:
    """docsbot's settings module, with ``cmdline`` at the priority of ``-s``."""
    out = Settings()
    out.setmodule("docsbot.settings", priority="project")
    for name, value in cmdline.items():
        out.set(name, value, priority="cmdline")
    return out


def enabled(values: Settings, name: str) -> list[str]:
    return [
        f"{c.__module__}.{c.__qualname__}"
        for c in map(load_object, build_component_list(values.get_component_priority_dict_with_base(name)))
    ]


def test_docsbots_components_are_added_in_order_and_scrapys_replaced_ones_switched_off():
    values = settings()
    Docsbot().update_settings(values)
    pipelines = enabled(values, "ITEM_PIPELINES")
    assert pipelines == ["docsbot.pipelines.chunk.ChunkPipeline", "docsbot.pipelines.store.StorePipeline"]
    middlewares = enabled(values, "DOWNLOADER_MIDDLEWARES")
    scope = middlewares.index(
        "docsbot.downloadermiddlewares.scope.ScopeMiddleware"
    )  # before robots.txt is asked of another host
    assert scope < middlewares.index("docsbot.downloadermiddlewares.robotstxt.RobotsTxtMiddleware")
    assert "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware" not in middlewares
    assert "scrapy.downloadermiddlewares.retry.RetryMiddleware" not in middlewares
    assert (
        "docsbot.downloadermiddlewares.retry.RetryAfterMiddleware" in middlewares
        and "docsbot.downloadermiddlewares.robotstxt.RobotsTxtMiddleware" in middlewares
    )
    assert "docsbot.extensions.run.IndexRun" in enabled(values, "EXTENSIONS")
    assert "scrapy.spidermiddlewares.depth.DepthMiddleware" not in enabled(values, "SPIDER_MIDDLEWARES")
    assert values["DOWNLOADER"] == "docsbot.core.downloader.Downloader"
    assert values.getdict("DOWNLOAD_HANDLERS")["https"] == "docsbot.core.handler.DownloadHandler"
    assert values["TWISTED_DNS_RESOLVER"] == "docsbot.resolver.GuardedResolver"  # the module's: a process setting
    assert sorted(values.getlist("HTTPERROR_ALLOWED_CODES")) == [404, 410]


def test_a_projects_own_components_stay_beside_docsbots_and_its_choices_for_docsbots_are_kept():
    values = settings(
        ITEM_PIPELINES={"tests.extensions.CountingPipeline": 900, "docsbot.pipelines.store.StorePipeline": 550},
        EXTENSIONS={"scrapy.extensions.closespider.CloseSpider": 0},
        DOWNLOADER="scrapy.core.downloader.Downloader",
        DOWNLOAD_HANDLERS={"s3": None, "https": "scrapy.core.downloader.handlers.http2.H2DownloadHandler"},
    )
    Docsbot().update_settings(values)
    assert values.getdict("ITEM_PIPELINES") == {
        "tests.extensions.CountingPipeline": 900,
        "docsbot.pipelines.store.StorePipeline": 550,  # the project's priority for it
        load_object("docsbot.pipelines.chunk.ChunkPipeline"): 300,
    }
    assert set(values.getdict("EXTENSIONS")) == {
        "scrapy.extensions.closespider.CloseSpider",
        load_object("docsbot.extensions.run.IndexRun"),
        load_object("docsbot.extensions.progress.CrawlProgress"),
    }
    assert values["DOWNLOADER"] == "scrapy.core.downloader.Downloader"  # -s beats the add-on
    assert values.getdict("DOWNLOAD_HANDLERS") == {  # the project's kept, docsbot's added where it named none
        "s3": None,
        "https": "scrapy.core.downloader.handlers.http2.H2DownloadHandler",
        "http": "docsbot.core.handler.DownloadHandler",
        "file": "docsbot.core.files.FileDownloadHandler",
    }


def test_gone_statuses_given_on_the_command_line_reach_the_spider_beside_the_projects_allowed_codes():
    values = settings(DOCSBOT_GONE_STATUSES="403,404,410", HTTPERROR_ALLOWED_CODES=[402])
    Docsbot().update_settings(values)
    assert sorted(values.getlist("HTTPERROR_ALLOWED_CODES")) == [402, 403, 404, 410]
    with pytest.raises(SettingsError, match=r"^DOCSBOT_GONE_STATUSES='404,gone' is not valid: .*404,410\)$"):
        Docsbot().update_settings(settings(DOCSBOT_GONE_STATUSES="404,gone"))


@pytest.mark.parametrize(
    ("cmdline", "message"),
    [
        (
            {"ITEM_PIPELINES": {"docsbot.pipelines.store.StorePipeline": None}},
            "StorePipeline is switched off in ITEM_PIPELINES",
        ),
        ({"EXTENSIONS": {"docsbot.extensions.run.IndexRun": None}}, "IndexRun is switched off in EXTENSIONS"),
        ({"DOWNLOADER_MIDDLEWARES": {"docsbot.downloadermiddlewares.scope.ScopeMiddleware": 900}}, "must run"),
    ],
)
def test_a_required_component_switched_off_or_out_of_order_is_one_error(cmdline, message):
    with pytest.raises(ComponentError, match=message):
        Docsbot().update_settings(settings(**cmdline))


def test_the_spider_refuses_to_run_without_the_add_on():
    check_addon(settings())
    with pytest.raises(ComponentError, match="the docsbot add-on is not enabled"):
        check_addon(settings(ADDONS={}))
    check_addon(settings(ADDONS={"tests.test_addon.MyDocsbot": 5}))  # a subclass counts


class MyDocsbot(Docsbot):
    pass
