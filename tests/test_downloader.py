"""docsbot.core's uses of Scrapy's and scrapy-playwright's private API (docsbot/core/downloader.py and handler.py say
why each is there): each test fails when the library changes what the private use relies on, so that the copy or the
call is read again against the new version. tests/test_hosts.py and tests/test_render.py test the behaviour."""

from __future__ import annotations

import ast
import inspect
import textwrap

from scrapy.core.downloader import Downloader as ScrapyDownloader

from docsbot.core.downloader import Downloader


def _body(function: object) -> list[ast.stmt]:
    """The statements of a function's body, comments and docstring aside."""
    (node,) = ast.parse(textwrap.dedent(inspect.getsource(function))).body
    assert isinstance(node, ast.FunctionDef)
    return [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]


def _without(statements: list[ast.stmt], unparsed: str) -> list[ast.stmt]:
    """``statements`` with every statement whose source is ``unparsed`` taken out, at any depth."""

    class Remove(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST | None:
            if isinstance(node, ast.stmt) and ast.unparse(node) == unparsed:
                return None
            return super().generic_visit(node)

    return [Remove().visit(s) for s in statements]


def test_the_downloader_is_scrapys_queue_processing_but_for_one_line():
    ours = _body(Downloader._process_queue)
    added = "slot.transferring.add(request)"
    assert ast.unparse(ours).count(added) == 1
    assert ast.dump(ast.Module(_without(ours, added), [])) == ast.dump(
        ast.Module(_body(ScrapyDownloader._process_queue), [])
    )
    for name in ("_latercall", "_wait_for_download"):  # what the copy calls, as Scrapy's method does
        assert callable(getattr(ScrapyDownloader, name))
    assert list(inspect.signature(ScrapyDownloader._wait_for_download).parameters) == [
        "self", "slot", "request", "queue_dfd"
    ]  # fmt: skip


def test_scrapy_playwright_still_starts_playwright_by_its_launch_coroutine():
    from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler as Handler

    assert inspect.iscoroutinefunction(Handler._launch)
    assert list(inspect.signature(Handler._launch).parameters) == ["self"]
    started = inspect.getsource(Handler._maybe_launch_in_thread)  # what engine_started runs (Scrapy >= 2.14)
    assert "self._launch()" in started
    assert "_maybe_launch_in_thread" in inspect.getsource(Handler.__init__)
