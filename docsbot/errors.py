"""The base of docsbot's errors a user can act on."""


class DocsbotError(Exception):
    """An error whose message says what is wrong and what to do (a bad spider argument, an unreachable database,
    an unknown library, a missing model or browser). Raised before a crawl starts, it stops ``scrapy crawl`` with
    exit code 1 and that message, without a traceback (:mod:`docsbot.commands.crawl`), and nothing is written."""
