"""docsbot: a Scrapy project that indexes documentation sites into PostgreSQL + pgvector and refreshes them."""

__version__ = "0.1.0"
