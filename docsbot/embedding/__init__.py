"""Embedding: the models behind one interface (:mod:`~docsbot.embedding.models`: fastembed/ONNX on the CPU or a GPU, an
OpenAI-compatible endpoint, the query encoder search uses), and the workers that drain the embedding queue
(:mod:`~docsbot.embedding.worker`: claim the chunks without a vector, embed each text once per model, write).
"""

from __future__ import annotations

from typing import Any

# `DOCSBOT_EMBEDDER` values written before the backends moved into docsbot.embedding.models
# (`docsbot.embedding.FastEmbedEmbedder`, `docsbot.embedding.OpenAIEmbedder`) still name them; looked up on first use,
# so that importing the package loads nothing.
_BACKENDS = ("FastEmbedEmbedder", "OpenAIEmbedder")


def __getattr__(name: str) -> Any:
    if name in _BACKENDS:
        from docsbot.embedding import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
