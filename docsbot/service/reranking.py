"""The reranking stage of search, off by default: the first ``DOCSBOT_RERANK_CANDIDATES`` fused results re-scored by
a cross-encoder, which reads the query and a result's text together (the fused lists compare them apart).

Two kinds of reranker, chosen by ``DOCSBOT_RERANKER``:

- a local ONNX cross-encoder folder (:class:`OnnxReranker`): ``model.onnx``, ``tokenizer.json`` and
  ``tokenizer_config.json`` (``special_tokens_map.json``, ``config.json`` optional), the layout of an exported
  Hugging Face model such as ``cross-encoder/ms-marco-MiniLM-L-6-v2``; run with onnxruntime and ``tokenizers``,
  nothing downloaded;
- an HTTP endpoint (:class:`HttpReranker`) in one of two shapes: text-embeddings-inference's ``POST /rerank``
  ``{query, texts}`` → ``[{index, score}]``, or the hosted APIs' (Cohere, Jina, Voyage, Infinity, vLLM)
  ``POST /v1/rerank`` ``{model, query, documents, top_n}`` → ``{results: [{index, relevance_score}]}``.

A reranker that fails (:class:`RerankError`: the endpoint down or slow, a malformed answer, the model failing) does
not fail the search: :class:`~docsbot.service.search.Searcher` keeps the fused order and says so.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

import numpy as np

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

__all__ = [
    "RERANK_FILES",
    "HttpReranker",
    "OnnxReranker",
    "RerankError",
    "Reranker",
    "RerankerConfigError",
    "load_reranker",
    "rerank_text",
]

logger = logging.getLogger(__name__)

RERANK_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json")
TEXT_CHARS = 2000  # of a result's text sent to the reranker: a cross-encoder reads ~512 tokens at most anyway
OFF = {"", "off", "none", "0", "false", "no"}


class RerankerConfigError(DocsbotError, ValueError):
    """``DOCSBOT_RERANKER`` names no usable reranker (a missing folder, a folder without the model's files, an
    unknown API shape); raised when the searcher is built, before any search."""


class RerankError(RuntimeError):
    """One reranking failed (endpoint down, timeout, HTTP error, malformed answer, model error); the search keeps
    its fused order."""


class Reranker(Protocol):
    """Scores ``texts`` against ``query``: one float per text, in their order, higher is more relevant. Raises
    :class:`RerankError`."""

    name: str

    def score(self, query: str, texts: list[str]) -> list[float]: ...


def rerank_text(title: str, heading_path: list[str], content: str) -> str:
    """What a reranker reads of a result: its title and section path on a line, then its text, cut at
    :data:`TEXT_CHARS` characters."""
    path = heading_path[1:] if heading_path[:1] == [title] else heading_path
    head = " > ".join([title, *path]) if title else " > ".join(path)
    return f"{head}\n{content}"[:TEXT_CHARS] if head else content[:TEXT_CHARS]


class OnnxReranker:
    """A cross-encoder in ``model_dir`` run with onnxruntime on ``threads`` threads (0: its default): each (query,
    text) pair tokenized together (``[CLS] query [SEP] text [SEP]``, token type ids 0 then 1, truncated
    longest-first to the tokenizer's ``model_max_length``), in batches of ``batch_size`` pairs; the score is the
    first output's logit (its last column when the model gives two classes). Loads on the first call (or
    :meth:`load`); thread-safe (calls are serialized). Raises :class:`RerankError` when the model cannot be loaded
    or run."""

    def __init__(self, model_dir: str | Path, threads: int = 0, batch_size: int = 16) -> None:
        self.model_dir = Path(model_dir)
        self.name = self.model_dir.name
        self.threads = threads
        self.batch_size = batch_size
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._inputs: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def check(model_dir: Path) -> None:
        """Raise :class:`RerankerConfigError` naming ``model_dir`` if it is not a folder with :data:`RERANK_FILES`."""
        if not model_dir.is_dir():
            raise RerankerConfigError(f"DOCSBOT_RERANKER: no reranker model folder {model_dir}")
        missing = [name for name in RERANK_FILES if not (model_dir / name).is_file()]
        if missing:
            raise RerankerConfigError(
                f"DOCSBOT_RERANKER: the folder {model_dir} has no {', '.join(missing)} (an exported ONNX cross-encoder)"
            )

    def _load(self) -> tuple[InferenceSession, Tokenizer]:
        if self._session is None or self._tokenizer is None:
            try:
                import onnxruntime as ort

                from docsbot.embedding.models import OnnxQueryEncoder

                # the same tokenizer set-up as the embedding model's (truncation, padding, special tokens)
                tokenizer = OnnxQueryEncoder(self.model_dir)._load_tokenizer()
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = self.threads
                session = ort.InferenceSession(
                    str(self.model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime and tokenizers raise their own types
                raise RerankError(f"cannot load the reranker in {self.model_dir}: {exc}") from exc
            self._inputs = {i.name for i in session.get_inputs()}
            self._session, self._tokenizer = session, tokenizer
        return self._session, self._tokenizer

    def load(self) -> OnnxReranker:
        """Load the model now rather than on the first search. Raises :class:`RerankError`."""
        with self._lock:
            self._load()
        return self

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores: list[float] = []
        with self._lock:
            session, tokenizer = self._load()
            for start in range(0, len(texts), self.batch_size):
                pairs = [(query, text) for text in texts[start : start + self.batch_size]]
                encoded = tokenizer.encode_batch(pairs)
                feed = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64)}
                if "attention_mask" in self._inputs:
                    feed["attention_mask"] = np.array([e.attention_mask for e in encoded], dtype=np.int64)
                if "token_type_ids" in self._inputs:
                    feed["token_type_ids"] = np.array([e.type_ids for e in encoded], dtype=np.int64)
                try:
                    logits = np.asarray(session.run(None, feed)[0], dtype=np.float64)
                except Exception as exc:
                    raise RerankError(f"the reranker in {self.model_dir} failed: {exc}") from exc
                logits = logits.reshape(len(pairs), -1)[:, -1]
                scores.extend(float(x) for x in logits)
        return scores


class HttpReranker:
    """A rerank endpoint at ``url``, of the ``api`` shape ``tei`` (``POST {url}`` ``{"query", "texts",
    "truncate": true}`` → ``[{"index", "score"}]``) or ``cohere`` (``POST {url}`` ``{"model", "query",
    "documents", "top_n"}`` → ``{"results": [{"index", "relevance_score"}]}``). ``url`` is the endpoint itself; a
    bare base URL gets ``/rerank`` (tei) or ``/v1/rerank`` (cohere). ``api_key`` is sent as a bearer token (never
    logged). One request per search, ``timeout`` seconds at most, no retry (a search waits for nobody). Raises
    :class:`RerankError`."""

    def __init__(
        self, url: str, api: Literal["tei", "cohere"], model: str = "", api_key: str = "", timeout: float = 5.0
    ) -> None:
        import httpx

        path = urlsplit(url).path.rstrip("/")
        if path == "/v1":
            url = url.rstrip("/") + "/rerank"
        elif not path:
            url = url.rstrip("/") + ("/rerank" if api == "tei" else "/v1/rerank")
        self.url, self.api, self.model = url, api, model
        self.name = model or urlsplit(url).netloc
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, follow_redirects=False)

    def score(self, query: str, texts: list[str]) -> list[float]:
        import httpx

        if self.api == "tei":
            body: dict[str, Any] = {"query": query, "texts": texts, "truncate": True}
        else:
            body = {"query": query, "documents": texts, "top_n": len(texts)}
            if self.model:
                body["model"] = self.model
        try:
            response = self._client.post(self.url, json=body)
            response.raise_for_status()
            answer = response.json()
        except httpx.HTTPStatusError as exc:
            raise RerankError(f"{self.url} answered {exc.response.status_code}") from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise RerankError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        rows, key = (answer, "score") if self.api == "tei" else ((answer or {}).get("results"), "relevance_score")
        scores: list[float | None] = [None] * len(texts)
        try:
            for row in rows:
                scores[int(row["index"])] = float(row[key])
        except (TypeError, KeyError, ValueError, IndexError) as exc:
            raise RerankError(f"{self.url} answered no list of {{index, {key}}}: {json.dumps(answer)[:200]}") from exc
        if any(s is None for s in scores):
            raise RerankError(f"{self.url} scored {sum(s is not None for s in scores)} of {len(texts)} texts")
        return [float(s) for s in scores]  # type: ignore[arg-type]

    def close(self) -> None:
        self._client.close()


def load_reranker(settings: Any) -> Reranker | None:
    """The reranker ``settings`` (anything with ``get``) name in ``DOCSBOT_RERANKER``, or ``None`` when it is off
    (the default: empty or ``off``). An ``http(s)://`` URL is an endpoint (:class:`HttpReranker`, its shape
    ``DOCSBOT_RERANKER_API``: ``tei``, ``cohere``, or ``auto``, ``cohere`` for a URL whose path ends in
    ``/v1/rerank`` or ``/v1``, else ``tei``); anything else a model folder (:class:`OnnxReranker`). Raises
    :class:`RerankerConfigError` for a missing folder or an unknown shape."""
    value = str(settings.get("DOCSBOT_RERANKER") or "").strip()
    if value.lower() in OFF:
        return None
    if value.startswith(("http://", "https://")):
        api = str(settings.get("DOCSBOT_RERANKER_API") or "auto").lower()
        if api == "auto":
            api = "cohere" if urlsplit(value).path.rstrip("/").endswith(("/v1/rerank", "/v1")) else "tei"
        if api not in ("tei", "cohere"):
            raise RerankerConfigError(f"DOCSBOT_RERANKER_API={api!r} is not one of auto, tei, cohere")
        return HttpReranker(
            value,
            api,  # type: ignore[arg-type]
            model=str(settings.get("DOCSBOT_RERANKER_MODEL") or ""),
            api_key=str(settings.get("DOCSBOT_RERANKER_API_KEY") or ""),
            timeout=float(settings.get("DOCSBOT_RERANKER_TIMEOUT") or 5.0),
        )
    folder = Path(value).expanduser()
    OnnxReranker.check(folder)
    return OnnxReranker(folder, threads=int(settings.get("DOCSBOT_EMBED_THREADS") or 0))
