"""The real embedding model (all-MiniLM-L6-v2, ONNX, provisioned by `make model`) end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scrapy.settings import Settings

from docsbot.content.chunking import Chunker
from docsbot.embedding.models import DEFAULT_MODEL, FastEmbedEmbedder, load_embedder
from tests.conftest import BY_DESIGN, ROOT

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def embedder():
    settings = Settings()
    settings.setmodule("docsbot.settings")
    model = load_embedder(settings)
    if model.model_path is None:
        pytest.fail(f"the default model is not provisioned in {settings['DOCSBOT_MODELS_DIR']}: run `make model`")
    return model


def test_vectors_match_sentence_transformers(embedder):
    reference = json.loads((Path(embedder.model_path) / "reference.json").read_text())
    got = embedder.embed(reference["sentences"])
    assert got.shape == (len(reference["sentences"]), 384) and got.dtype == np.float32
    cosine = (got * np.asarray(reference["vectors"])).sum(axis=1)
    assert cosine.min() > 0.9999


def test_texts_embedded_one_at_a_time_by_default_get_a_batchs_vectors(embedder):
    """DOCSBOT_EMBED_BATCH_SIZE=0 (the default) embeds one text per model call on the CPU (the fastest there, with
    no padding); the vectors are those of texts padded together in a batch, and a set size is kept."""
    assert embedder.batch_size == 1
    texts = [*QUERY_TEXTS, "short", "a longer text about the event loop and its tasks " * 6]
    batched = FastEmbedEmbedder(DEFAULT_MODEL, embedder.model_path, 32)
    assert batched.batch_size == 32
    one, many = embedder.embed(texts), batched.embed(texts)
    assert one.shape == many.shape == (len(texts), 384)
    assert (one * many).sum(axis=1).min() > 1 - 1e-5
    settings = Settings({"DOCSBOT_EMBED_BATCH_SIZE": 8})
    settings.setmodule("docsbot.settings", priority="default")
    assert load_embedder(settings).batch_size == 8


QUERY_TEXTS = [
    "create a task with asyncio",
    "os.set_inheritable()",
    "x",
    "Ünïcödé — 日本語のテキスト, émojis 🐍, ß and ﬁ ligatures",
    "Как создать задачу? ¿Cómo crear una tarea con asyncio?",
    "asyncio event loop coroutine " * 120,  # far over the 256-token limit: truncated the same way
]


def test_the_query_path_gives_fastembeds_vectors_without_importing_it(embedder):
    """docsbot search embeds the query with onnxruntime + tokenizers on the same files (no fastembed import);
    it must give the vectors indexing stored, batched or one by one."""
    indexed = embedder.embed(QUERY_TEXTS)
    fresh = FastEmbedEmbedder(DEFAULT_MODEL, embedder.model_path)
    batched = fresh.embed_query(QUERY_TEXTS)
    single = np.vstack([fresh.embed_query([t]) for t in QUERY_TEXTS])
    for got in (batched, single):
        assert got.shape == indexed.shape and got.dtype == np.float32
        assert (got * indexed).sum(axis=1).min() > 1 - 1e-5
        assert np.abs(np.linalg.norm(got, axis=1) - 1).max() < 1e-5
    assert fresh._model is None  # fastembed was never loaded by this embedder
    assert (single[0] * single[1]).sum() < 0.9  # different texts, different vectors: the check can fail


def test_token_limit_is_the_trained_256(embedder):
    assert embedder.name == DEFAULT_MODEL and embedder.dim == 384
    assert embedder.max_tokens == 256
    tokenizer = embedder.tokenizer()
    text = "\n\n".join(f"## Section {i}\n\n" + "asyncio event loop coroutine " * 40 for i in range(10))
    chunks = Chunker(224, tokenizer).chunks(text)
    tokenizer.no_truncation()
    assert max(len(tokenizer.encode(c.content, add_special_tokens=False).ids) for c in chunks) <= 224


PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/library")


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="no Python docs: apt-get install python3.11-doc (make corpora)")
def test_chunks_sized_from_word_counts_are_the_splitters_on_real_pages(embedder):
    """The model's tokenizer (BERT's pre-tokenizer) sizes text from the cached counts of its pieces between spaces
    and newlines; the same tokenizer with a normalizer that could reach across words (a Replace of a string no page
    holds) is sized by semantic-text-splitter itself, each candidate tokenized anew. Every chunk of 40 real
    library pages is the same."""
    from docsbot.content.chunking import _words_are_local
    from docsbot.content.extract import extract_page

    tokenizer = embedder.tokenizer()
    config = json.loads(tokenizer.to_str())
    replace = {"type": "Replace", "pattern": {"String": "@@never@@"}, "content": "x"}
    config["normalizer"] = {"type": "Sequence", "normalizers": [config["normalizer"], replace]}
    by_splitter = type(tokenizer).from_str(json.dumps(config))
    assert _words_are_local(tokenizer) and not _words_are_local(by_splitter)
    pages = [extract_page(p.read_bytes(), f"http://h/{p.name}") for p in sorted(PYTHON_DOCS.glob("*.html"))[:40]]
    fast, slow = Chunker(224, tokenizer), Chunker(224, by_splitter)
    total = 0
    for page in pages:
        chunks = fast.chunks(page.markdown, page.anchors)
        assert [(c.content, c.heading_path, c.anchor) for c in chunks] == [
            (c.content, c.heading_path, c.anchor) for c in slow.chunks(page.markdown, page.anchors)
        ]
        total += len(chunks)
    assert total > 800  # enough chunks compared (1,000 on these pages with html-to-markdown's Markdown)


def test_missing_model_directory_is_a_clear_error(tmp_path):
    from docsbot.embedding.models import EmbeddingModelError

    with pytest.raises(EmbeddingModelError, match="make model"):
        FastEmbedEmbedder(DEFAULT_MODEL, tmp_path)


def test_index_then_search_with_the_real_model(crawl, docsite, database_url, db):
    result = crawl(
        url=f"{docsite.url}/docs/index.html", library="testdocs", embedder="docsbot.embedding.models.FastEmbedEmbedder"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert db.execute("SELECT DISTINCT embedding_model FROM versions").fetchone()[0] == DEFAULT_MODEL

    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)}
    search = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "search", "how do I schedule a coroutine?", "--json", "-k", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert search.returncode == 0, search.stderr
    hits = [json.loads(line) for line in search.stdout.splitlines()]
    assert len(hits) == 3
    assert hits[0]["url"].endswith("/docs/api.html")
    assert "Schedule a coroutine" in hits[0]["content"]
    assert set(hits[0]) == {
        "url", "deep_link", "title", "heading_path", "score", "content", "library", "version",
        "last_checked_at", "last_modified", "changed_at",
    }  # fmt: skip
    assert hits[0]["last_checked_at"] and hits[0]["changed_at"]
    assert len({hit["url"] for hit in hits}) == 3  # one result per page

    # The search process imports neither fastembed nor Scrapy (together over 1 s of every search).
    timed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "docsbot.cli", "search", "schedule a coroutine", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert timed.returncode == 0, timed.stderr[-3000:]
    assert json.loads(timed.stdout.splitlines()[0])["url"].endswith("/docs/api.html")
    imported = {line.rsplit("|", 1)[1].strip() for line in timed.stderr.splitlines() if line.startswith("import time:")}
    assert "onnxruntime" in imported and "tokenizers" in imported
    assert not {m for m in imported if m.split(".")[0] in {"fastembed", "scrapy", "twisted"}}

    human = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "search", "install with pip", "--library", "testdocs"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert human.returncode == 0, human.stderr
    assert human.stdout.startswith("1. Guide")
    assert "/docs/guide.html" in human.stdout.splitlines()[1]


def _cuda_available() -> bool:
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


NO_CUDA = BY_DESIGN + (
    "no CUDAExecutionProvider in this onnxruntime (needs fastembed-gpu, which brings onnxruntime-gpu, and an NVIDIA "
    "GPU with CUDA 12 and cuDNN 9): the CUDA path runs only where one exists"
)


@pytest.mark.skipif(
    _cuda_available(), reason=BY_DESIGN + "this machine has a CUDA provider: the GPU tests below run instead"
)
def test_cuda_asked_for_without_a_cuda_provider_stops_before_the_first_request(crawl, docsite, db):
    result = crawl(
        url=f"{docsite.url}/docs/index.html",
        library="testdocs",
        embedder="docsbot.embedding.models.FastEmbedEmbedder",
        env={"DOCSBOT_EMBEDDING_DEVICE": "cuda"},
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "DOCSBOT_EMBEDDING_DEVICE=cuda but onnxruntime offers no CUDAExecutionProvider" in result.stderr
    assert "fastembed-gpu" in result.stderr and "Traceback" not in result.stderr
    assert docsite.site.hits == []  # not even robots.txt
    assert db.execute("SELECT to_regclass('pages')").fetchone()[0] is None  # checked before anything is written


def test_a_device_that_is_neither_cpu_nor_cuda_is_refused(embedder):
    from docsbot.embedding.models import EmbeddingModelError

    with pytest.raises(EmbeddingModelError, match="must be cpu, cuda or cuda:N, got 'gpu'"):
        FastEmbedEmbedder(DEFAULT_MODEL, embedder.model_path, device="gpu")


@pytest.mark.skipif(not _cuda_available(), reason=NO_CUDA)
def test_the_cuda_provider_gives_the_cpu_vectors(embedder):
    gpu = FastEmbedEmbedder(DEFAULT_MODEL, embedder.model_path, device="cuda")
    gpu.load()
    texts = QUERY_TEXTS + [f"chunk {i}: " + "the event loop runs tasks " * (i % 30) for i in range(200)]
    on_gpu, on_cpu = gpu.embed(texts), embedder.embed(texts)
    assert on_gpu.shape == on_cpu.shape == (len(texts), 384)
    assert (on_gpu * on_cpu).sum(axis=1).min() > 0.999


@pytest.mark.skipif(not _cuda_available(), reason=NO_CUDA)
def test_an_index_embedded_on_the_gpu_is_complete(crawl, docsite, db):
    result = crawl(
        url=f"{docsite.url}/docs/index.html",
        library="testdocs",
        embedder="docsbot.embedding.models.FastEmbedEmbedder",
        env={"DOCSBOT_EMBEDDING_DEVICE": "cuda"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "on cuda" in result.stderr  # the model's load line names the device
    waiting = db.execute("SELECT count(*) FROM documents WHERE embedding IS NULL").fetchone()[0]
    assert waiting == 0 and db.execute("SELECT count(*) FROM documents").fetchone()[0] > 0


def test_the_benchmarks_raw_embedding_rate_feeds_fastembed_as_the_worker_does(embedder):
    """`make bench` times fastembed alone with the texts per call of the index's worker (one on the CPU, the
    embedder's batch_size); DOCSBOT_EMBED_BATCH_SIZE's default of 0 once reached fastembed as a batch size and the
    bench stopped there."""
    sys.path.insert(0, str(ROOT))
    from bench.run import raw_embedding_rate

    calls = []
    model = embedder._load()
    real_embed = model.embed

    def spy(texts, batch_size=None, **kwargs):
        calls.append(batch_size)
        return real_embed(texts, batch_size=batch_size, **kwargs)

    model.embed = spy
    try:
        rate = raw_embedding_rate(embedder, [f"text number {i} about tasks" for i in range(20)], group=8)
    finally:
        del model.embed
    assert rate > 0 and calls and set(calls) == {embedder.batch_size} == {1}
