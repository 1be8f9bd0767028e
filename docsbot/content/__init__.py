"""Content processing (pure: no Scrapy, no database): a page's HTML → Markdown, title, links, anchors and symbol table
(:mod:`~docsbot.content.extract`), its Markdown's structure as CommonMark reads it
(:mod:`~docsbot.content.commonmark`), Markdown → heading-aware chunks and definitions
(:mod:`~docsbot.content.chunking`), what changed on a page (:mod:`~docsbot.content.changes`); and the worker pool a
crawl runs them in, off the reactor thread (:mod:`~docsbot.content.pool`, the one module here that knows Scrapy).
"""
