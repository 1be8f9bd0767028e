"""Spiders of the docsbot project (``scrapy list`` shows them)."""
