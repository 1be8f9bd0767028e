"""The remote embedding backend (DOCSBOT_EMBEDDING_URL, :class:`docsbot.embedding.models.OpenAIEmbedder`) against a real
OpenAI-compatible server computing real vectors on this machine: bench/embedding_server.py, the local ONNX model
behind HTTP, started by the test as a process. Crawls and `docsbot embed` run as processes, as a user runs them,
against the real docs site of tests/docsite.py and a real PostgreSQL + pgvector."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from docsbot.embedding.models import DEFAULT_MODEL, DEFAULT_MODEL_DIRNAME, EmbeddingModelError, FastEmbedEmbedder
from docsbot.embedding.texts import embed_text
from tests.conftest import ROOT, _default_models_dir, docsbot_env
from tests.docsite import DocSiteServer
from tests.servers import ServerProcess
from tests.test_bench import free_port
from tests.test_embed_cli import cli, crawl, waiting
from tests.test_faults import fault_site

pytestmark = pytest.mark.model

MODEL_DIR = Path(_default_models_dir()) / DEFAULT_MODEL_DIRNAME
SERVER = ROOT / "bench/embedding_server.py"
TEXTS = [
    "create a task with asyncio",
    "Install the library with pip.",
    "Configuration lives in a TOML file.",
    "Run awaitables concurrently and collect their results.",
    "os.set_inheritable(fd, inheritable)",
    "",  # the empty text is a text too
    "a longer paragraph " * 60,
]


class EmbeddingServer(ServerProcess):
    """bench/embedding_server.py as a process: ``url`` (its /v1 base URL), ``stats()`` (its /stats)."""

    def __init__(self, log: Path, *options: str) -> None:
        command = [sys.executable, str(SERVER), "--port", "0", "--model-dir", str(MODEL_DIR), *options]
        super().__init__(command, dict(os.environ), log, r"ready on (\S+)")
        self.wait_ready(timeout=120)

    def stats(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/stats", timeout=10) as response:
            return json.load(response)

    def close(self) -> None:
        self.stop()


@pytest.fixture
def embedding_server(tmp_path):
    """Start servers with the given options (``embedding_server("--api-key", "k")``); stopped after the test."""
    if not (MODEL_DIR / "model.onnx").is_file():
        pytest.fail(f"the default model is not provisioned in {MODEL_DIR}: run `make model`")
    servers: list[EmbeddingServer] = []

    def start(*options: str) -> EmbeddingServer:
        servers.append(EmbeddingServer(tmp_path / f"embedding-server-{len(servers)}.log", *options))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="module")
def local_model():
    return FastEmbedEmbedder(DEFAULT_MODEL, MODEL_DIR)


def remote_env(database_url: str, tmp_path: Path, url: str, **extra: str) -> dict[str, str]:
    """A docsbot process's environment with the remote backend: DOCSBOT_EMBEDDER at its default, so that
    DOCSBOT_EMBEDDING_URL (``url``) selects OpenAIEmbedder; ``extra`` overrides any of it."""
    backend = {"DOCSBOT_EMBEDDER": "docsbot.embedding.models.FastEmbedEmbedder", "DOCSBOT_EMBEDDING_URL": url}
    return docsbot_env(database_url, tmp_path, **{**backend, **extra})


def stored_vectors(db) -> list[tuple[str, np.ndarray]]:
    """(the text the model embedded, its stored vector) of every chunk."""
    rows = db.execute(
        "SELECT context, content, (metadata ->> 'context_cut')::int, embedding::text FROM documents ORDER BY id"
    ).fetchall()
    return [
        (embed_text(ctx, content, cut), np.array(json.loads(vec), dtype=np.float32)) for ctx, content, cut, vec in rows
    ]


def assert_same_vectors(local_model, texts: list[str], vectors: np.ndarray) -> None:
    expected = local_model.embed(texts)
    assert vectors.shape == expected.shape
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # normalized
    cosine = (vectors * expected).sum(axis=1)
    assert cosine.min() > 0.999, cosine


def table_rows(db, table: str) -> int:
    """Rows of ``table``; 0 when it does not exist (a run that stopped before migrating the database)."""
    if db.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
        return 0
    return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def error_lines(stderr: str, words: str) -> list[str]:
    return [line for line in stderr.splitlines() if words in line]


# --- the client against the server --------------------------------------------------------------------------------


def test_vectors_from_the_endpoint_are_the_local_models_normalized(embedding_server, local_model):
    """Proves: OpenAIEmbedder's vectors are the local model's for the same texts (cosine > 0.999), blocking and on
    the event loop, and L2-normalized even from a server that does not normalize (this one multiplies every vector
    by 3, as Ollama answers unnormalized ones); ``aembed`` sends batch_size texts per request with at most
    ``concurrency`` requests in flight, and works again on a new event loop."""
    from docsbot.embedding.models import OpenAIEmbedder

    server = embedding_server("--scale", "3", "--api-key", "secret")
    remote = OpenAIEmbedder(DEFAULT_MODEL, server.url, "secret", batch_size=2, concurrency=3)

    async def aembed(texts: list[str]) -> np.ndarray:
        try:
            return await remote.aembed(texts)
        finally:
            await remote.aclose()  # as ModelRunner.aclose does at the end of a worker's run

    try:
        remote.load()
        assert remote.dim == 384
        assert_same_vectors(local_model, TEXTS, remote.embed(TEXTS))
        for _ in range(2):  # asyncio.run makes a new event loop each time
            assert_same_vectors(local_model, TEXTS, asyncio.run(aembed(TEXTS)))
    finally:
        remote.close()
    stats = server.stats()
    assert stats["requests"] == 1 + 3 * 4  # the probe, then 7 texts in 4 requests of at most 2, three times
    assert stats["texts"] == 1 + 3 * len(TEXTS) and stats["max_batch"] == 2
    assert 2 <= stats["max_in_flight"] <= 3


def test_probe_failures_are_one_line_each(embedding_server):
    """Proves: load() (the probe a crawl runs before it starts) turns each misconfiguration into one line naming
    what to fix: the key setting, a model the server does not have, a dimension that is not the server's, a
    server that is not there."""
    from docsbot.embedding.models import OpenAIEmbedder

    server = embedding_server("--api-key", "secret")
    cases = [
        (OpenAIEmbedder(DEFAULT_MODEL, server.url, "wrong"), "the API key was refused (DOCSBOT_EMBEDDING_API_KEY)"),
        (OpenAIEmbedder("no/such-model", server.url, "secret"), "not found"),
        (OpenAIEmbedder(DEFAULT_MODEL, server.url, "secret", dim=128), "not DOCSBOT_EMBEDDING_DIM=128"),
        (OpenAIEmbedder(DEFAULT_MODEL, f"http://127.0.0.1:{free_port()}/v1", retries=1), "cannot connect"),
    ]
    for embedder, message in cases:
        with pytest.raises(EmbeddingModelError) as caught:
            embedder.load()
        embedder.close()
        assert message in str(caught.value) and "\n" not in str(caught.value)


# --- crawls and `docsbot embed` with the remote backend ---------------------------------------------------------


def test_a_full_crawl_embeds_every_chunk_through_the_endpoint(
    embedding_server, local_model, database_url, db, tmp_path
):
    """Proves: with DOCSBOT_EMBEDDING_URL set, a full index gives every chunk the vector the local model computes
    for its text, several texts per request; the version records the model's name and the dimension the server
    answers (384, asked of it: DOCSBOT_EMBEDDING_DIM unset); a search embeds its query through the endpoint too,
    with one request."""
    server = embedding_server()
    env = remote_env(database_url, tmp_path, server.url)
    with DocSiteServer(fault_site(12)) as site:
        result = crawl(env, f"url={site.url}/docs/index.html", "library=testdocs", "version=1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    vectors = stored_vectors(db)
    assert len(vectors) >= 13 and waiting(db) == 0
    assert "HTTP Request: POST" not in result.stderr  # no log line per request
    assert_same_vectors(local_model, [t for t, _ in vectors], np.stack([v for _, v in vectors]))
    assert db.execute("SELECT embedding_model, embedding_dim FROM versions").fetchall() == [(DEFAULT_MODEL, 384)]
    stats = server.stats()
    assert stats["texts"] == len({t for t, _ in vectors}) + 1  # the probe, then each distinct text once
    assert stats["requests"] < stats["texts"] and stats["max_batch"] > 1  # batches, not a request per text
    found = cli(env, "search", "Paragraph 1 of page 4", "--json", "-k", "1")
    assert found.returncode == 0, found.stderr[-3000:]
    assert json.loads(found.stdout.splitlines()[0])["url"].endswith("/docs/p4.html")
    assert server.stats()["requests"] == stats["requests"] + 1  # the query


def test_a_misconfigured_endpoint_stops_the_crawl_before_it_fetches_or_writes_anything(
    embedding_server, database_url, db, tmp_path, docsite
):
    """Proves: a wrong API key, a model the server does not serve, DOCSBOT_EMBEDDING_DIM=128 against a 384-dimensional
    model and a server that is not running each stop `scrapy crawl` with exit 1 and one line saying what is wrong,
    before the docs site sees a request and before a version is written (so the dimension is not bound: the next
    run with the right settings indexes at 384 dimensions)."""
    server = embedding_server("--api-key", "secret")
    root = f"{docsite.url}/docs/index.html"
    cases = [
        ({"DOCSBOT_EMBEDDING_API_KEY": "wrong"}, "the API key was refused (DOCSBOT_EMBEDDING_API_KEY)"),
        ({"DOCSBOT_EMBEDDING_API_KEY": "secret", "DOCSBOT_EMBEDDING_MODEL": "no/such-model"}, "not found"),
        ({"DOCSBOT_EMBEDDING_API_KEY": "secret", "DOCSBOT_EMBEDDING_DIM": "128"},
         "answers 384-dimensional vectors, not DOCSBOT_EMBEDDING_DIM=128"),
        ({"DOCSBOT_EMBEDDING_URL": f"http://127.0.0.1:{free_port()}/v1", "DOCSBOT_EMBEDDING_RETRIES": "1"},
         "cannot connect"),
    ]  # fmt: skip
    for settings, message in cases:
        result = crawl(remote_env(database_url, tmp_path, server.url, **settings), f"url={root}", "library=testdocs",
                       "version=1.0")  # fmt: skip
        assert result.returncode == 1, result.stderr[-3000:]
        assert len(error_lines(result.stderr, message)) == 1, result.stderr[-3000:]
        assert "Traceback" not in result.stderr
        assert docsite.site.hits == [], [h.path for h in docsite.site.hits]
        assert table_rows(db, "versions") == 0
    stats = server.stats()
    assert (stats["sent_401"], stats["sent_404"]) == (1, 1)
    result = crawl(remote_env(database_url, tmp_path, server.url, DOCSBOT_EMBEDDING_API_KEY="secret"), f"url={root}",
                   "library=testdocs", "version=1.0")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert db.execute("SELECT embedding_dim FROM versions").fetchall() == [(384,)]
    assert waiting(db) == 0


def test_rate_limits_and_server_errors_are_retried_and_every_chunk_gets_its_vector(
    embedding_server, database_url, db, tmp_path
):
    """Proves: the endpoint's 429s (Retry-After: 1) and 500s during a crawl are retried, honouring Retry-After, and
    the crawl completes with every vector. The probe passes; the three embedding requests after it get 429, the
    two after those 500; the server sees each failed request again, marked as a retry."""
    server = embedding_server("--fail-from", "1", "--fail-429", "3", "--retry-after", "1", "--fail-500", "2")
    env = remote_env(database_url, tmp_path, server.url, DOCSBOT_EMBED_BATCH_SIZE="4")
    with DocSiteServer(fault_site(6)) as site:
        result = crawl(env, f"url={site.url}/docs/index.html", "library=testdocs", "version=1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert waiting(db) == 0 and table_rows(db, "documents") > 0
    stats = server.stats()
    assert (stats["sent_429"], stats["sent_500"]) == (3, 2)
    assert stats["retried"] == 5  # each failed request sent again
    assert "Retrying request in 1.000000 seconds" in result.stderr  # what Retry-After asked (the client logs it)


def test_docsbot_embed_drains_a_text_only_crawl_through_the_endpoint_with_requests_in_flight(
    embedding_server, local_model, database_url, db, tmp_path
):
    """Proves: a crawl with DOCSBOT_CRAWL_EMBED_WORKERS=0 stores text only (exit 4: vectors pending), and `docsbot
    embed` with the remote backend then gives every chunk its vector, the local model's for its text, sending
    DOCSBOT_EMBED_BATCH_SIZE texts per request with several requests in flight (DOCSBOT_EMBEDDING_CONCURRENCY)."""
    server = embedding_server()
    env = remote_env(database_url, tmp_path, server.url, DOCSBOT_CRAWL_EMBED_WORKERS="0")
    with DocSiteServer(fault_site(8)) as site:
        result = crawl(env, f"url={site.url}/docs/index.html", "library=testdocs", "version=1.0")
    assert result.returncode == 4, result.stderr[-3000:]
    chunks = waiting(db)
    assert chunks == table_rows(db, "documents") >= 16
    probes = server.stats()["requests"]  # the crawl's own probe: it checked the endpoint before starting
    embedded = cli({**env, "DOCSBOT_EMBED_BATCH_SIZE": "4", "DOCSBOT_EMBEDDING_CONCURRENCY": "3"}, "embed")
    assert embedded.returncode == 0, embedded.stderr[-3000:]
    assert "0 chunks still wait" in embedded.stdout
    assert waiting(db) == 0
    vectors = stored_vectors(db)
    assert_same_vectors(local_model, [t for t, _ in vectors], np.stack([v for _, v in vectors]))
    stats = server.stats()
    distinct = len({t for t, _ in vectors})
    assert stats["texts"] == 2 + distinct  # two probes (the crawl's, embed's), then each distinct text once
    assert stats["requests"] - probes - 1 >= distinct / 4 and stats["max_batch"] == 4
    assert 2 <= stats["max_in_flight"] <= 3


def test_vectors_are_read_from_base64_or_from_lists_and_a_bad_one_is_a_clear_error():
    """Proves: the endpoint's answer is read whether it is base64 (what docsbot asks for: the SDK would otherwise
    build an object per float) or, from a server that ignores ``encoding_format``, a list of floats; each vector is
    L2-normalized; a base64 string that is not float32s, or ragged vectors, is one EmbeddingModelError."""
    import base64
    from types import SimpleNamespace

    from docsbot.embedding.models import OpenAIEmbedder

    embedder = OpenAIEmbedder(DEFAULT_MODEL, "http://127.0.0.1:9/v1", None, dim=3)
    raw = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]], dtype="<f4")

    def answer(*embeddings):
        return SimpleNamespace(data=[SimpleNamespace(index=i, embedding=e) for i, e in enumerate(embeddings)])

    as_base64 = [base64.b64encode(v.tobytes()).decode() for v in raw]
    expected = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    assert np.allclose(embedder._vectors(answer(*as_base64), 2), expected)
    assert np.allclose(embedder._vectors(answer(*(v.tolist() for v in raw)), 2), expected)
    for bad in (answer("AAAA", as_base64[1]), answer([1.0, 2.0], [1.0, 2.0, 3.0]), answer("not base64!", "x")):
        with pytest.raises(EmbeddingModelError, match="unreadable vectors"):
            embedder._vectors(bad, 2)
