"""Text embedding models behind one small interface; the default is fastembed's ONNX runtime.

The model runs on the CPU and is slow next to crawling (about 15-30 chunks of 256 tokens per second on two
cores), so it is loaded lazily: fastembed and onnxruntime are imported only when a text is embedded (or the
tokenizer or dimension of a model without local files is asked for), and a refresh in which nothing changed
never imports them. The tokenizer of a local model comes from its ``tokenizer.json`` (``tokenizers``). Callers
run :meth:`embed` off the reactor thread (see :class:`docsbot.pipelines.EmbedPipeline`).
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from tokenizers import Tokenizer

__all__ = ["Embedder", "EmbeddingModelError", "FastEmbedEmbedder", "load_embedder", "DEFAULT_MODEL"]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# Where `make model` puts the offline export of DEFAULT_MODEL, under DOCSBOT_MODELS_DIR.
DEFAULT_MODEL_DIRNAME = "all-MiniLM-L6-v2"
# Vector dimensions of models docsbot knows (lower-cased names): a first run binds a version to its model without
# importing fastembed and onnxruntime (about 1.2 s here) or loading the weights.
KNOWN_DIMENSIONS = {DEFAULT_MODEL.lower(): 384}


class EmbeddingModelError(DocsbotError, RuntimeError):
    """The embedding model cannot be loaded (missing files, unknown name, no network for a download) or does
    not match the index (another model's vectors are already stored)."""


class Embedder(Protocol):
    """What docsbot needs of a model. ``embed`` returns a float32 array of shape (len(texts), dim) whose rows
    are L2-normalized; it is called from a worker thread, never concurrently with itself."""

    name: str

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def tokenizer(self) -> Tokenizer | None: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding``.

    ``model_path``: a directory with ``model.onnx``, ``tokenizer.json`` and ``tokenizer_config.json`` (loaded
    with ``specific_model_path``, no network). Without it fastembed downloads ``model_name`` from its hub.
    ``max_tokens`` is the tokenizer's truncation length (``model_max_length`` of tokenizer_config.json: 256 for
    the default model as docsbot provisions it).

    Raises :class:`EmbeddingModelError` when the model cannot be loaded.
    """

    def __init__(self, model_name: str, model_path: str | Path | None = None, batch_size: int = 32) -> None:
        self.name = model_name
        self.model_path = Path(model_path) if model_path else None
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()
        if self.model_path is not None and not (self.model_path / "model.onnx").is_file():
            raise EmbeddingModelError(
                f"no model.onnx in {self.model_path} (DOCSBOT_EMBEDDING_MODEL_PATH); "
                "run `make model` to provision the default model offline"
            )

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FastEmbedEmbedder:
        name = settings.get("DOCSBOT_EMBEDDING_MODEL") or DEFAULT_MODEL
        path = settings.get("DOCSBOT_EMBEDDING_MODEL_PATH") or None
        if path is None and name == DEFAULT_MODEL:
            provisioned = Path(settings.get("DOCSBOT_MODELS_DIR")) / DEFAULT_MODEL_DIRNAME
            if (provisioned / "model.onnx").is_file():
                path = provisioned
        return cls(name, path, settings.getint("DOCSBOT_EMBED_BATCH_SIZE", 32))

    def _load(self):  # noqa: ANN202 - fastembed.TextEmbedding
        with self._lock:
            if self._model is None:
                from fastembed import TextEmbedding

                try:
                    self._model = TextEmbedding(
                        self.name, specific_model_path=str(self.model_path) if self.model_path else None
                    )
                except Exception as exc:  # fastembed raises ValueError, OSError, hub errors...
                    hint = (
                        "run `make model` to provision the default model offline, "
                        "or set DOCSBOT_EMBEDDING_MODEL_PATH to an ONNX model directory"
                    )
                    raise EmbeddingModelError(f"cannot load embedding model {self.name!r}: {exc}; {hint}") from exc
                logger.info("loaded embedding model %s from %s", self.name, self.model_path or "fastembed cache")
            return self._model

    def tokenizer(self) -> Tokenizer:
        if self.model_path is not None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.model_path / "tokenizer.json"))
            config = json.loads((self.model_path / "tokenizer_config.json").read_text())
            tok.enable_truncation(int(config.get("model_max_length", 512)))
            return tok
        return self._load().model.tokenizer

    @property
    def max_tokens(self) -> int:
        truncation = self.tokenizer().truncation
        return int(truncation["max_length"]) if truncation else 512

    @property
    def dim(self) -> int:
        """The vector dimension: from :data:`KNOWN_DIMENSIONS` without loading anything, else from fastembed's
        model list (imports fastembed, about 1-2 s), else by embedding a probe text (loads the model)."""
        known = KNOWN_DIMENSIONS.get(self.name.lower())
        if known is not None:
            return known
        from fastembed import TextEmbedding

        for description in TextEmbedding.list_supported_models():
            if description["model"].lower() == self.name.lower():
                return int(description["dim"])
        return int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        return np.asarray(list(model.embed(texts, batch_size=self.batch_size)), dtype=np.float32)


def load_embedder(settings: BaseSettings) -> Embedder:
    """Build the embedder named by ``DOCSBOT_EMBEDDER`` (an import path) from Scrapy settings."""
    from scrapy.utils.misc import load_object

    cls = load_object(settings.get("DOCSBOT_EMBEDDER"))
    return cls.from_settings(settings)
