"""docsbot's Scrapy extensions: the run of one docs crawl, by concern.

- :mod:`~docsbot.extensions.run`: :class:`~docsbot.extensions.run.IndexRun`, the extension (``EXTENSIONS``), which
  wires Scrapy's signals to the parts below;
- :mod:`~docsbot.extensions.context`: the run's context the spider, middlewares and pipelines look up, and how they
  report a page fetched but not stored;
- :mod:`~docsbot.extensions.setup`: the setup before anything is fetched (migrations, the version and its run lock,
  the model bound, the network guard, the rendering policy);
- :mod:`~docsbot.extensions.vectors`: the run's embedding worker and the version's HNSW graph;
- :mod:`~docsbot.extensions.ending`: the end of the crawl and of the run (deletions, check marks, statistics, the
  outcome, ``crawl_runs``, the summary line).
"""
