"""Text embedding models behind one small interface; the default is fastembed's ONNX runtime.

The model runs on the CPU and is slow next to crawling (about 15-30 chunks of 256 tokens per second on two
cores), so it is loaded lazily: fastembed and onnxruntime are imported only when a text is embedded (or the
tokenizer or dimension of a model without local files is asked for), and a refresh in which nothing changed
never imports them. The tokenizer of a local model comes from its ``tokenizer.json`` (``tokenizers``). Callers
run :meth:`embed` off the reactor thread (see :class:`docsbot.pipelines.EmbedPipeline`).

A search embeds one short query, where importing fastembed alone (about 0.75 s) costs more than the query.
:meth:`FastEmbedEmbedder.embed_query` therefore runs the same exported model files with onnxruntime and
``tokenizers`` directly (:class:`OnnxQueryEncoder`), with fastembed's tokenization, mean pooling and L2
normalization; ``tests/test_model.py`` holds the two paths equal. Indexing keeps fastembed.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from scrapy.settings import BaseSettings
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbeddingModelError",
    "FastEmbedEmbedder",
    "OnnxQueryEncoder",
    "embed_query",
    "load_embedder",
]

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


def embed_query(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """``embedder.embed_query(texts)`` when the embedder has a cheaper path for a few short texts (search
    queries), else ``embedder.embed(texts)``; the same vectors either way."""
    return getattr(embedder, "embed_query", embedder.embed)(texts)


class OnnxQueryEncoder:
    """The model of an exported directory (``model.onnx``, ``tokenizer.json``, ``tokenizer_config.json``,
    optional ``special_tokens_map.json`` and ``config.json``) run with onnxruntime and ``tokenizers`` alone.

    Reproduces what fastembed 0.9 does for a mean-pooled, normalized model (its ``PooledNormalizedEmbedding``,
    the class of all-MiniLM-L6-v2): the tokenizer truncated to ``model_max_length`` (the stricter of it and
    ``max_length``) and padded to the longest text of the batch with the pad token's id, special tokens of
    ``special_tokens_map.json`` registered; ``token_type_ids`` all zeros; the last hidden state averaged over the
    attention mask in float64, L2-normalized (norm floored at 1e-12), cast to float32. Returns (len(texts), dim).

    Loads in about 0.2 s (weights read, graph optimized; one intra-op thread, which is what one short query
    needs and keeps the start-up free of a thread pool). Thread-safe: model calls are serialized.
    Raises :class:`EmbeddingModelError` when the files cannot be loaded.
    """

    def __init__(self, model_dir: str | Path, threads: int = 1) -> None:
        self.model_dir = Path(model_dir)
        self.threads = threads
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._inputs: set[str] = set()
        self._lock = threading.Lock()

    def _load(self) -> tuple[InferenceSession, Tokenizer]:
        if self._session is None or self._tokenizer is None:
            try:
                import onnxruntime as ort

                tokenizer = self._load_tokenizer()
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = self.threads
                session = ort.InferenceSession(
                    str(self.model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own exception types; tokenizers an Exception
                raise EmbeddingModelError(f"cannot load the embedding model in {self.model_dir}: {exc}") from exc
            self._inputs = {i.name for i in session.get_inputs()}
            self._session, self._tokenizer = session, tokenizer
        return self._session, self._tokenizer

    def _load_tokenizer(self) -> Tokenizer:
        """fastembed's ``load_tokenizer`` (fastembed/common/preprocessor_utils.py), for this directory."""
        from tokenizers import AddedToken, Tokenizer

        config = json.loads((self.model_dir / "tokenizer_config.json").read_text())
        model_config_path = self.model_dir / "config.json"
        model_config = json.loads(model_config_path.read_text()) if model_config_path.is_file() else {}
        special_path = self.model_dir / "special_tokens_map.json"
        special = json.loads(special_path.read_text()) if special_path.is_file() else {}
        limits = [
            v
            for v in (config.get("model_max_length"), config.get("max_length"))
            if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**63 - 1
        ]
        if not limits:
            raise ValueError("tokenizer_config.json gives no model_max_length")
        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        truncation = tokenizer.truncation or {}
        tokenizer.enable_truncation(
            max_length=min(limits), direction=config.get("truncation_side") or truncation.get("direction", "right")
        )
        for value in special.values():
            for token in value if isinstance(value, list) else [value]:
                if isinstance(token, str):
                    tokenizer.add_special_tokens([token])
                elif isinstance(token, dict):
                    tokenizer.add_special_tokens([AddedToken(**token)])
        padding = tokenizer.padding or {}
        pad_token = padding.get("pad_token") or config.get("pad_token")
        pad_id = padding.get("pad_id", model_config.get("pad_token_id"))
        if pad_id is None and pad_token is not None:
            pad_id = tokenizer.token_to_id(pad_token)
        if pad_token is None or pad_id is None:
            raise ValueError("no pad token")
        tokenizer.enable_padding(
            direction=config.get("padding_side") or padding.get("direction", "right"),
            pad_id=pad_id,
            pad_type_id=padding.get("pad_type_id", 0),
            pad_token=pad_token,
            pad_to_multiple_of=padding.get("pad_to_multiple_of"),
            length=None,
        )
        return tokenizer

    def load(self) -> OnnxQueryEncoder:
        """Load the model now (otherwise on the first call). Raises :class:`EmbeddingModelError`."""
        with self._lock:
            self._load()
        return self

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            session, tokenizer = self._load()
            encoded = tokenizer.encode_batch(texts)
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids}
            if "attention_mask" in self._inputs:
                feed["attention_mask"] = mask
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
        summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return (pooled / norm).astype(np.float32)


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
        self._query_encoder: OnnxQueryEncoder | None = None
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

    def embed_query(self, texts: list[str]) -> np.ndarray:
        """:meth:`embed` for a few short texts (search queries): with a local model directory, onnxruntime on
        its files without importing fastembed (:class:`OnnxQueryEncoder`; same vectors within float rounding);
        otherwise :meth:`embed`."""
        if self.model_path is None:
            return self.embed(texts)
        with self._lock:
            if self._query_encoder is None:
                self._query_encoder = OnnxQueryEncoder(self.model_path)
        return self._query_encoder(texts)


def load_embedder(settings: BaseSettings) -> Embedder:
    """Build the embedder named by ``DOCSBOT_EMBEDDER`` (``package.module.Class``) from settings (anything with
    ``get``/``getint``: Scrapy's settings or :class:`docsbot.config.ProjectSettings`). Imports the class's module
    only, not Scrapy. Raises ``ValueError``/``ImportError``/``AttributeError`` for a path that names no class."""
    path = settings.get("DOCSBOT_EMBEDDER")
    if not isinstance(path, str):  # a class given directly, as Scrapy's load_object accepts
        return path.from_settings(settings)
    module, _, name = path.rpartition(".")
    if not module:
        raise ValueError(f"DOCSBOT_EMBEDDER={path!r} is not a full import path (package.module.Class)")
    cls = getattr(importlib.import_module(module), name)
    return cls.from_settings(settings)
