"""A small OpenAI-compatible embeddings server computing real vectors with docsbot's local model, for the remote
backend's tests (tests/test_remote_embedding.py) and its benchmark (bench/remote.py):

    python bench/embedding_server.py --port 0 --model-dir ~/.local/share/docsbot/models/all-MiniLM-L6-v2 \\
        [--model-name NAME] [--api-key KEY] [--fail-429 N --retry-after S] [--fail-500 N] [--fail-from K]
        [--threads T] [--scale F]
    python bench/embedding_server.py --port 0 --stand-in 5000 [--dim 384]

``--stand-in RATE`` loads no model: it answers random unit vectors, one request at a time, each taking
len(input) / RATE seconds, an accelerator's pace (a GPU embeds all-MiniLM-L6-v2 at thousands of texts a
second, so what docsbot does around the model becomes the limit); usage counts words.

- ``POST /v1/embeddings`` with ``{"model", "input": str | [str], "encoding_format": "float" | "base64"}`` answers
  OpenAI's shape: ``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}], "model",
  "usage": {"prompt_tokens", "total_tokens"}}``. The vectors are :class:`docsbot.embedding.models.FastEmbedEmbedder`'s
  on the model directory: L2-normalized, as fastembed returns them, times ``--scale`` (default 1; another value
  stands for a server that does not normalize, as Ollama's). Usage counts the model tokenizer's tokens.
- A missing or wrong ``Authorization: Bearer`` key (when ``--api-key`` is given) is a 401, a model other than
  ``--model-name`` a 404, a malformed body a 400, each with OpenAI's error JSON (``{"error": {"message", "type",
  "param", "code"}}``). The first ``--fail-429`` embedding requests get a 429 with ``Retry-After: --retry-after``,
  the ``--fail-500`` after them a 500; ``--fail-from K`` lets the first K through first (a client's probe).
- ``GET /v1/models`` lists the one model; ``GET /stats`` counts what the server did: embedding ``requests``
  answered, ``texts`` embedded, ``max_batch`` (most texts in one request), ``max_in_flight`` (most embedding
  requests being handled at once), ``sent_429``, ``sent_500``, ``sent_401``, ``sent_404``, ``retried``
  (embedding requests that say they are a retry: the ``x-stainless-retry-count`` header of OpenAI's clients),
  ``model_seconds`` (wall time inside the model).

One thread per connection (``ThreadingHTTPServer``, HTTP/1.1 keep-alive); the model runs one request at a time
(onnxruntime already uses ``--threads`` cores for one batch; requests waiting for it queue, as in a single-worker
inference server). The model is loaded and warmed up before the server prints its one ready line on stdout,
``embedding server ready on http://127.0.0.1:PORT/v1``, which is what a caller waits for (``--port 0``: a free port,
read from that line).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docsbot.embedding.models import DEFAULT_MODEL, FastEmbedEmbedder  # noqa: E402

# What /stats counts (and model_seconds).
COUNTERS = ("requests", "texts", "max_batch", "max_in_flight", "retried")
COUNTERS += ("sent_429", "sent_500", "sent_401", "sent_404")


class EmbeddingService:
    """The model, the injected failures and the counters, shared by every request thread."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.model_name = args.model_name
        self.api_key = args.api_key
        self.scale = args.scale
        self.retry_after = args.retry_after
        self.stand_in = args.stand_in
        self.dim = args.dim
        if self.stand_in:  # no model: vectors of noise, paced to the rate a fast accelerator answers at
            self.embedder = self.tokenizer = None
        else:
            # the embedder's own batch size: one text per model call on the CPU, where it is fastest (a batch pads
            # every text to its longest), as docsbot's local path embeds
            self.embedder = FastEmbedEmbedder(args.model_name, args.model_dir, threads=args.threads)
            self.tokenizer = self.embedder.tokenizer()
        self._rng = np.random.default_rng(0)
        self._next = 0
        if self.stand_in:  # 4,096 distinct unit vectors, encoded once both ways, handed out in turn
            pool = self._rng.standard_normal((4096, self.dim), dtype=np.float32)
            pool /= np.linalg.norm(pool, axis=1, keepdims=True)
            self.encoded = {
                "float": [json.dumps(v.tolist()) for v in pool],
                "base64": [json.dumps(base64.b64encode(v.astype("<f4").tobytes()).decode()) for v in pool],
            }
        self._model_lock = threading.Lock()
        self._lock = threading.Lock()
        self._fail_429 = args.fail_429
        self._fail_500 = args.fail_500
        self._fail_from = args.fail_from
        self._in_flight = 0
        self.stats: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
        self.stats["model_seconds"] = 0.0

    def load(self) -> None:
        if self.embedder is not None:
            self.embedder.load()
            self.embedder.embed(["warm up"])

    def next_vector(self, n: int) -> int:
        with self._lock:
            start, self._next = self._next, self._next + n
        return start

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] += n

    def enter(self, retry: bool) -> str | None:
        """A new embedding request (``retry``: it says it is one): ``"429"``/``"500"`` if it is to fail."""
        with self._lock:
            self._in_flight += 1
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self._in_flight)
            self.stats["retried"] += retry
            if self._fail_from > 0:
                self._fail_from -= 1
            elif self._fail_429 > 0:
                self._fail_429 -= 1
                return "429"
            if self._fail_500 > 0:
                self._fail_500 -= 1
                return "500"
        return None

    def leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """Vectors (times ``scale``) and the number of tokens."""
        if self.stand_in:
            tokens = sum(len(t.split()) for t in texts)
            with self._model_lock:  # one accelerator: requests take turns, each for its share of the rate
                start = time.perf_counter()
                time.sleep(len(texts) / self.stand_in)
                took = time.perf_counter() - start
                vectors = None
        else:
            tokens = sum(len(e.ids) for e in self.tokenizer.encode_batch(texts))
            with self._model_lock:
                start = time.perf_counter()
                vectors = self.embedder.embed(texts)
                took = time.perf_counter() - start
        with self._lock:
            self.stats["model_seconds"] += took
            self.stats["requests"] += 1
            self.stats["texts"] += len(texts)
            self.stats["max_batch"] = max(self.stats["max_batch"], len(texts))
        return (None if vectors is None else vectors * np.float32(self.scale)), tokens


def make_handler(service: EmbeddingService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: clients hold their connections

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str, kind: str, code: str | None = None, param: str | None = None,
                   headers: dict[str, str] | None = None) -> None:  # fmt: skip
            self._send(status, {"error": {"message": message, "type": kind, "param": param, "code": code}}, headers)

        def _authorized(self) -> bool:
            if service.api_key is None or self.headers.get("Authorization") == f"Bearer {service.api_key}":
                return True
            service.count("sent_401")
            self._error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
            return False

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/stats":
                with service._lock:
                    self._send(200, dict(service.stats))
            elif self.path.rstrip("/") == "/v1/models":
                if self._authorized():
                    model = {"id": service.model_name, "object": "model", "created": 0, "owned_by": "docsbot"}
                    self._send(200, {"object": "list", "data": [model]})
            else:
                self._error(404, f"no route {self.path}", "invalid_request_error")

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))  # read it all: keep-alive
            if self.path.rstrip("/") != "/v1/embeddings":
                self._error(404, f"no route {self.path}", "invalid_request_error")
                return
            if not self._authorized():
                return
            failure = service.enter(int(self.headers.get("x-stainless-retry-count") or 0) > 0)
            try:
                if failure == "429":
                    service.count("sent_429")
                    self._error(429, "Rate limit reached; retry later.", "requests", "rate_limit_exceeded",
                                headers={"Retry-After": f"{service.retry_after:g}"})  # fmt: skip
                elif failure == "500":
                    service.count("sent_500")
                    self._error(500, "The server had an error while processing your request.", "server_error")
                else:
                    self._embeddings(body)
            finally:
                service.leave()

        def _embeddings(self, body: bytes) -> None:
            try:
                request = json.loads(body)
                texts = request["input"]
                model = request["model"]
            except (ValueError, KeyError, TypeError):
                self._error(400, "the body must be JSON with 'model' and 'input'", "invalid_request_error")
                return
            if model != service.model_name:
                service.count("sent_404")
                self._error(404, f"The model '{model}' does not exist", "invalid_request_error", "model_not_found",
                            "model")  # fmt: skip
                return
            if isinstance(texts, str):
                texts = [texts]
            if not texts or not all(isinstance(t, str) for t in texts):
                self._error(400, "'input' must be a string or a non-empty list of strings", "invalid_request_error",
                            param="input")  # fmt: skip
                return
            encoding = request.get("encoding_format") or "float"
            if encoding not in ("float", "base64"):
                self._error(400, f"unknown encoding_format {encoding!r}", "invalid_request_error",
                            param="encoding_format")  # fmt: skip
                return
            if service.stand_in:
                self._stand_in(texts, encoding)
                return
            vectors, tokens = service.embed(texts)
            if encoding == "base64":  # little-endian float32, as OpenAI sends it
                encoded: list[Any] = [base64.b64encode(v.astype("<f4").tobytes()).decode() for v in vectors]
            else:
                encoded = vectors.tolist()
            data = [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(encoded)]
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            self._send(200, {"object": "list", "data": data, "model": service.model_name, "usage": usage})

        def _stand_in(self, texts: list[str], encoding: str) -> None:
            """The stand-in's answer, assembled from vectors encoded once (its own JSON would cost more CPU than
            the client it serves)."""
            _, tokens = service.embed(texts)
            pool = service.encoded[encoding]
            start = service.next_vector(len(texts))
            items = ",".join(
                f'{{"object":"embedding","index":{i},"embedding":{pool[(start + i) % len(pool)]}}}'
                for i in range(len(texts))
            )
            usage = json.dumps({"prompt_tokens": tokens, "total_tokens": tokens})
            body = (
                f'{{"object":"list","data":[{items}],"model":{json.dumps(service.model_name)},"usage":{usage}}}'
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one, printed)")
    parser.add_argument("--model-dir", help="an exported ONNX model directory (`make model`)")
    parser.add_argument(
        "--stand-in",
        type=float,
        default=0.0,
        metavar="RATE",
        help="no model: answer random unit vectors at RATE texts per second (one request at a time)",
    )
    parser.add_argument("--dim", type=int, default=384, help="the stand-in's vector dimension")
    parser.add_argument("--model-name", default=DEFAULT_MODEL, help="the model name clients must send")
    parser.add_argument("--api-key", help="the Bearer key clients must send (default: none asked)")
    parser.add_argument("--fail-429", type=int, default=0, help="answer the first N embedding requests 429")
    parser.add_argument("--retry-after", type=float, default=1.0, help="the 429s' Retry-After, seconds")
    parser.add_argument("--fail-500", type=int, default=0, help="answer the N embedding requests after those 500")
    parser.add_argument("--fail-from", type=int, default=0, help="let K embedding requests through before failing")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime threads (default: every core)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every vector by this (1: normalized)")
    args = parser.parse_args(argv)
    if not args.model_dir and not args.stand_in:
        parser.error("--model-dir or --stand-in RATE is required")
    service = EmbeddingService(args)
    service.load()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(service))
    server.daemon_threads = True
    print(f"embedding server ready on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
