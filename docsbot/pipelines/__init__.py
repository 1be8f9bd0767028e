"""Item pipelines, in order: chunk (:mod:`docsbot.pipelines.chunk`, 300) → store (:mod:`docsbot.pipelines.store`, 500).

Each gets the run's :class:`docsbot.extensions.context.IndexContext` (version, page store, embedder, refresh ledger)
once, when it is built (``NotConfigured`` without the docs spider); a 304 never reaches them (see
:mod:`docsbot.downloadermiddlewares.conditional`). Nothing here waits for the embedding model: a page is stored text
first, and its chunks without a vector wait in the embedding queue, which the run's worker drains
(:mod:`docsbot.embedding.worker`).
"""
