"""Scrapy's engine parts, as a docs crawl needs them: the downloader (:mod:`~docsbot.core.downloader`) and the HTTP
download handler (:mod:`~docsbot.core.handler`)."""
