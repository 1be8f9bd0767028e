"""A tiny deterministic embedder for tests that do not need the real model (selected with DOCSBOT_EMBEDDER)."""

from __future__ import annotations

import hashlib
import os
import re
import time

import numpy as np

DIM = 384
_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Bag of hashed lower-cased words → 384 dims, L2-normalized: texts sharing words are near each other."""

    name = "test/hashing-384"
    dim = DIM
    max_tokens = 256

    @classmethod
    def from_settings(cls, settings: object) -> HashingEmbedder:
        return cls()

    def tokenizer(self) -> None:
        return None

    def embed(self, texts: list[str]) -> np.ndarray:
        dim = self.dim
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row, int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little") % dim] += 1
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out


class SlowEmbedder(HashingEmbedder):
    """The hashing embedder at a model's pace: ``SLOW_EMBEDDER_SECONDS_PER_TEXT`` (environment; default 0.03 s)
    of sleep per text, so that embedding, not downloading, is what a crawl waits for."""

    name = "test/slow-hashing-384"

    def embed(self, texts: list[str]) -> np.ndarray:
        time.sleep(float(os.environ.get("SLOW_EMBEDDER_SECONDS_PER_TEXT", "0.03")) * len(texts))
        return super().embed(texts)


class BrokenEmbedder(HashingEmbedder):
    """A model whose files are unusable: loading it fails the way FastEmbedEmbedder reports a load error."""

    name = "test/broken-384"

    def load(self) -> None:
        from docsbot.embedding.models import EmbeddingModelError

        raise EmbeddingModelError("cannot load embedding model 'test/broken-384': model.onnx is truncated")

    def embed(self, texts: list[str]) -> np.ndarray:
        self.load()
        return super().embed(texts)


class FailingEmbedder(HashingEmbedder):
    """A model that loads, then fails on every text (out of memory, a driver error): what a run meets mid-way."""

    name = "test/hashing-384"  # the hashing embedder's name: a version indexed with it can be refreshed with this

    def embed(self, texts: list[str]) -> np.ndarray:
        from docsbot.embedding.models import EmbeddingModelError

        raise EmbeddingModelError("the embedding model failed: CUDA out of memory")


class SlowLoadingEmbedder(HashingEmbedder):
    """A model that takes ``SLOW_LOAD_SECONDS`` (environment; default 120) to load, in C code as far as Python's
    signal handling is concerned (a blocking sleep): what a model hub download or a cold disk looks like."""

    name = "test/hashing-384"

    def load(self) -> None:
        print("loading the embedding model", flush=True)  # the test waits for this line
        time.sleep(float(os.environ.get("SLOW_LOAD_SECONDS", "120")))


class LoggingEmbedder(HashingEmbedder):
    """The hashing embedder that appends the key (``docsbot.embedding.texts.embed_key``) of every text it embeds to the
    file ``EMBED_LOG`` names, one per line, flushed at once, after ``SLOW_EMBEDDER_SECONDS_PER_TEXT`` (default 0)
    per text: what a test counts to prove that no text is embedded twice."""

    def embed(self, texts: list[str]) -> np.ndarray:
        from docsbot.embedding.texts import embed_key

        time.sleep(float(os.environ.get("SLOW_EMBEDDER_SECONDS_PER_TEXT", "0")) * len(texts))
        vectors = super().embed(texts)
        with open(os.environ["EMBED_LOG"], "a") as log:
            log.write("".join(embed_key(self.name, text) + "\n" for text in texts))
        return vectors


class TokenizedHashingEmbedder(HashingEmbedder):
    """The hashing embedder with the provisioned default model's tokenizer (``DOCSBOT_MODELS_DIR``'s
    all-MiniLM-L6-v2 ``tokenizer.json``): what get_docs counts its budget with on a real server, without loading
    the model."""

    @classmethod
    def from_settings(cls, settings: object) -> TokenizedHashingEmbedder:
        embedder = cls()
        embedder.models_dir = str(settings.get("DOCSBOT_MODELS_DIR"))  # type: ignore[attr-defined]
        return embedder

    def tokenizer(self):  # noqa: ANN201 - a tokenizers.Tokenizer
        from tokenizers import Tokenizer

        from docsbot.embedding.models import DEFAULT_MODEL_DIRNAME

        return Tokenizer.from_file(os.path.join(self.models_dir, DEFAULT_MODEL_DIRNAME, "tokenizer.json"))


class WideHashingEmbedder(LoggingEmbedder):
    """Another model for a model switch (``docsbot reembed``): the hashing embedder with 512 dimensions, under a
    name of its own, logging each text's key to ``EMBED_LOG`` when set (after ``SLOW_EMBEDDER_SECONDS_PER_TEXT``
    per text, default 0)."""

    name = "test/hashing-512"
    dim = 512

    def embed(self, texts: list[str]) -> np.ndarray:
        if os.environ.get("EMBED_LOG"):
            return super().embed(texts)
        return HashingEmbedder.embed(self, texts)


class HugeHashingEmbedder(HashingEmbedder):
    """A model answering 2,048-dimensional vectors: more than a version's HNSW index takes (2,000)."""

    name = "test/hashing-2048"
    dim = 2048
