"""Scrapy commands of the docsbot project (``COMMANDS_MODULE``): project commands replace Scrapy's own by name."""
