"""docsbot's Scrapy extensions: the run's setup and bookkeeping (:mod:`~docsbot.extensions.run`)."""
