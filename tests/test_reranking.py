"""The reranking stage of search (docsbot.service.reranking): a rerank endpoint started here (both API shapes,
scoring by word overlap), a tiny ONNX cross-encoder (tests/data/reranker, made by scripts/make_test_reranker.py)
with the embedding model's tokenizer, the searcher's reordering and its fallback when the reranker fails."""

from __future__ import annotations

import json
import logging
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from docsbot.cli.search import explanation_text
from docsbot.config import DocsbotSettings
from docsbot.service.models import SearchHit
from docsbot.service.reranking import (
    HttpReranker,
    OnnxReranker,
    RerankerConfigError,
    RerankError,
    load_reranker,
    rerank_text,
)
from docsbot.service.search import Searcher
from tests.conftest import ROOT, docsbot_env
from tests.embedders import HashingEmbedder

WORD = re.compile(r"[a-z0-9]+")


def overlap(query: str, text: str) -> float:
    """The stand-in endpoint's relevance: distinct query words the text holds, less a little per text word."""
    words = WORD.findall(text.lower())
    return len(set(WORD.findall(query.lower())) & set(words)) - 0.001 * len(words)


class RerankEndpoint(ThreadingHTTPServer):
    """A rerank endpoint on a free port: ``POST /rerank`` (text-embeddings-inference) and ``POST /v1/rerank``
    (Cohere-style), scoring by :func:`overlap`. ``requests`` holds (path, JSON body, Authorization header);
    ``delay`` seconds before each answer; ``status`` other than 200 answers that; ``body`` overrides the answer."""

    daemon_threads = True

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict, str | None]] = []
        self.delay = 0.0
        self.status = 200
        self.body: bytes | None = None
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: RerankEndpoint

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body, self.headers.get("Authorization")))
        time.sleep(self.server.delay)
        if self.path == "/rerank":
            scores = [overlap(body["query"], t) for t in body["texts"]]
            answer: object = sorted(({"index": i, "score": s} for i, s in enumerate(scores)), key=lambda r: -r["score"])
        elif self.path == "/v1/rerank":
            scores = [overlap(body["query"], t) for t in body["documents"]]
            rows = sorted(({"index": i, "relevance_score": s} for i, s in enumerate(scores)), key=lambda r: -r[
                "relevance_score"])  # fmt: skip
            answer = {"model": body.get("model"), "results": rows[: body.get("top_n") or len(rows)]}
        else:
            self.send_error(404)
            return
        data = self.server.body if self.server.body is not None else json.dumps(answer).encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint():
    server = RerankEndpoint()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def dead_url() -> str:
    """A URL nothing listens on: a port the system gave and took back."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/rerank"


QUERY = "configure the cache timeout"
TEXTS = ["the cache", "nothing at all here", "configure cache timeout values", "timeout"]


@pytest.mark.e2e
def test_both_endpoint_shapes_score_each_text_in_order(endpoint):
    tei = HttpReranker(endpoint.url, "tei", api_key="s3cret")  # a base URL gets /rerank
    assert tei.score(QUERY, TEXTS) == pytest.approx([overlap(QUERY, t) for t in TEXTS])
    path, body, auth = endpoint.requests[-1]
    assert (path, body, auth) == ("/rerank", {"query": QUERY, "texts": TEXTS, "truncate": True}, "Bearer s3cret")

    cohere = HttpReranker(f"{endpoint.url}/v1", "cohere", model="rerank-test")
    assert cohere.score(QUERY, TEXTS) == pytest.approx([overlap(QUERY, t) for t in TEXTS])
    path, body, auth = endpoint.requests[-1]
    assert path == "/v1/rerank" and auth is None
    assert body == {"model": "rerank-test", "query": QUERY, "documents": TEXTS, "top_n": len(TEXTS)}


@pytest.mark.e2e
def test_a_dead_slow_failing_or_garbled_endpoint_is_a_rerank_error(endpoint):
    with pytest.raises(RerankError, match="ConnectError"):
        HttpReranker(dead_url(), "tei").score(QUERY, TEXTS)
    endpoint.delay = 1.0
    with pytest.raises(RerankError, match="Timeout"):
        HttpReranker(endpoint.url, "tei", timeout=0.2).score(QUERY, TEXTS)
    endpoint.delay = 0.0
    endpoint.status = 503
    with pytest.raises(RerankError, match="answered 503"):
        HttpReranker(endpoint.url, "tei").score(QUERY, TEXTS)
    endpoint.status, endpoint.body = 200, b'{"error": "no"}'
    with pytest.raises(RerankError, match="answered no list of"):
        HttpReranker(endpoint.url, "tei").score(QUERY, TEXTS)
    endpoint.body = b'[{"index": 0, "score": 1.0}]'
    with pytest.raises(RerankError, match="scored 1 of 4 texts"):
        HttpReranker(endpoint.url, "tei").score(QUERY, TEXTS)


def test_the_setting_chooses_the_reranker_and_a_missing_folder_is_named(tmp_path):
    assert load_reranker({}) is None
    assert load_reranker({"DOCSBOT_RERANKER": "off"}) is None
    assert DocsbotSettings().DOCSBOT_RERANKER == "off"  # off by default
    missing = tmp_path / "ms-marco"
    with pytest.raises(RerankerConfigError, match=f"^DOCSBOT_RERANKER: no reranker model folder {missing}$"):
        load_reranker({"DOCSBOT_RERANKER": str(missing)})
    missing.mkdir()
    (missing / "model.onnx").write_bytes(b"x")
    with pytest.raises(RerankerConfigError, match=r"has no tokenizer\.json, tokenizer_config\.json"):
        load_reranker({"DOCSBOT_RERANKER": str(missing)})
    for url, api, shape, sent_to in [
        ("http://tei:8080", "auto", "tei", "http://tei:8080/rerank"),
        ("http://tei:8080/rerank", "auto", "tei", "http://tei:8080/rerank"),
        ("https://api.example/v1/rerank", "auto", "cohere", "https://api.example/v1/rerank"),
        ("http://infinity:7997/v1", "auto", "cohere", "http://infinity:7997/v1/rerank"),
        ("http://infinity:7997", "cohere", "cohere", "http://infinity:7997/v1/rerank"),
    ]:
        reranker = load_reranker({"DOCSBOT_RERANKER": url, "DOCSBOT_RERANKER_API": api})
        assert isinstance(reranker, HttpReranker) and (reranker.api, reranker.url) == (shape, sent_to)
    with pytest.raises(RerankerConfigError, match="'jina' is not one of auto, tei, cohere"):
        load_reranker({"DOCSBOT_RERANKER": "http://x/", "DOCSBOT_RERANKER_API": "jina"})
    settings = DocsbotSettings(DOCSBOT_RERANKER="http://x/v1/rerank", DOCSBOT_RERANKER_API_KEY="s3cret")
    assert "s3cret" not in repr(settings)


def hit(n: int, content: str, explanation: bool = True) -> SearchHit:
    return SearchHit(
        title=f"Page {n}",
        url=f"http://h/{n}.html",
        deep_link=f"http://h/{n}.html",
        heading_path=[f"Page {n}", "Section"],
        score=1.0 / n,
        content=content,
        library="lib",
        version="1",
        explanation={"score": 1.0 / n, "lists": {}, "factors": []} if explanation else None,
    )


class Scripted:
    """A reranker that scores by ``scores`` (text → score) or raises ``error``; it keeps what it was asked."""

    name = "scripted"

    def __init__(self, scores: dict[str, float] | None = None, error: Exception | None = None) -> None:
        self.scores, self.error, self.asked = scores or {}, error, []

    def score(self, query: str, texts: list[str]) -> list[float]:
        self.asked.append((query, texts))
        if self.error is not None:
            raise self.error
        return [next(s for word, s in self.scores.items() if word in t) for t in texts]


def test_the_searcher_sorts_its_candidates_by_the_reranker_and_explains_the_move():
    reranker = Scripted({"alpha": 0.1, "beta": 0.9, "gamma": 0.5, "delta": 2.0})
    searcher = Searcher("postgresql:///unused", HashingEmbedder(), reranker=reranker, rerank_candidates=3)
    hits = [hit(1, "alpha"), hit(2, "beta"), hit(3, "gamma"), hit(4, "delta")]
    ranked = searcher._rerank("q", hits)
    # the first 3 in the reranker's order; the 4th, past the candidates, is not re-scored and stays after them
    assert [h.content for h in ranked] == ["beta", "gamma", "alpha", "delta"]
    assert reranker.asked == [("q", [rerank_text(h.title, h.heading_path, h.content) for h in hits[:3]])]
    assert reranker.asked[0][1][0] == "Page 1 > Section\nalpha"
    assert ranked[0].explanation["rerank"] == {"reranker": "scripted", "score": 0.9, "rank_before": 2, "rank_after": 1}
    assert ranked[2].explanation["rerank"]["rank_before"] == 1 and ranked[2].explanation["rerank"]["rank_after"] == 3
    assert "rerank" not in ranked[3].explanation
    assert "reranker scripted: score 0.9000, rank 2 → 1" in explanation_text(ranked[0].explanation)


def test_a_failing_reranker_leaves_the_fused_order_and_says_so(caplog):
    searcher = Searcher("postgresql:///unused", HashingEmbedder(), reranker=Scripted(error=RerankError("down")))
    hits = [hit(1, "alpha"), hit(2, "beta")]
    with caplog.at_level(logging.WARNING, logger="docsbot.service.search"):
        ranked = searcher._rerank("q", hits)
    assert [h.content for h in ranked] == ["alpha", "beta"]
    assert "the reranker scripted failed; results in the fused order: down" in caplog.text
    assert ranked[0].explanation["rerank"] == {"reranker": "scripted", "error": "down"}
    assert explanation_text(ranked[0].explanation).endswith("reranker scripted failed, fused order kept: down")
    # a reranker answering the wrong number of scores is a failure too, whatever it raises or not
    wrong = Searcher("postgresql:///unused", HashingEmbedder(), reranker=Scripted({"a": 1.0}))
    wrong.reranker.score = lambda query, texts: [1.0]
    plain = [hit(1, "alpha", explanation=False), hit(2, "beta", explanation=False)]
    assert [h.content for h in wrong._rerank("q", plain)] == ["alpha", "beta"]


# --- the ONNX path: a real onnxruntime session over a tiny word-overlap cross-encoder --------------------------------


@pytest.fixture
def onnx_folder(tmp_path):
    """tests/data/reranker/model.onnx beside the provisioned embedding model's tokenizer files."""
    from docsbot.settings import DOCSBOT_MODELS_DIR

    source = Path(DOCSBOT_MODELS_DIR) / "all-MiniLM-L6-v2"
    if not (source / "tokenizer.json").is_file():
        pytest.fail(f"the default model is not provisioned in {source}: run `make model`")
    folder = tmp_path / "tiny-cross-encoder"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        shutil.copy(source / name, folder / name)
    shutil.copy(ROOT / "tests" / "data" / "reranker" / "model.onnx", folder / "model.onnx")
    return folder


@pytest.mark.model
def test_the_onnx_reranker_scores_query_and_text_pairs_in_batches(onnx_folder):
    texts = ["nothing at all", "configure the cache", "cache timeout", "configure the cache timeout now", "timeout"]
    reranker = load_reranker({"DOCSBOT_RERANKER": str(onnx_folder)})
    assert isinstance(reranker, OnnxReranker)
    scores = reranker.score(QUERY, texts)
    # the model's rule from the tokens alone: the text's WordPieces and its [SEP] that occur among the query's
    # ([CLS] query [SEP]; ids modulo 512), less 0.001 a text token. Only the pair tokenized together, with its token
    # types, gives these (all zeros as token types would score every text 0)
    tokenizer = Tokenizer.from_file(str(onnx_folder / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128 tokens; the reranker pads to the batch's longest pair
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    in_query = {i % 512 for i in [cls, *tokenizer.encode(QUERY, add_special_tokens=False).ids, sep]}
    expected = []
    for text in texts:
        ids = [*tokenizer.encode(text, add_special_tokens=False).ids, sep]
        expected.append(sum(i % 512 in in_query for i in ids) - 0.001 * len(ids))
    assert scores == pytest.approx(expected, abs=1e-5)
    assert scores[3] > scores[1] > scores[2] > scores[4] > scores[0]
    batched = OnnxReranker(onnx_folder, batch_size=2).score(QUERY, texts)
    assert batched == pytest.approx(scores, abs=1e-5)
    searcher = Searcher("postgresql:///unused", HashingEmbedder(), reranker=reranker)
    ranked = searcher._rerank(QUERY, [hit(n, t) for n, t in enumerate(texts, 1)])
    assert [h.content for h in ranked] == [texts[3], texts[1], texts[2], texts[4], texts[0]]


@pytest.mark.model
def test_a_broken_onnx_model_is_a_rerank_error(onnx_folder):
    (onnx_folder / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(RerankError, match=f"cannot load the reranker in {onnx_folder}"):
        OnnxReranker(onnx_folder).score(QUERY, ["x"])


# --- end to end: `docsbot search` over a real index ---------------------------------------------------------------


def index_pages(database_url: str) -> None:
    from docsbot import store
    from tests.test_search_ranking import page, save

    with store.connect(database_url, autocommit=True) as conn:
        store.migrate(conn)
        row = store.upsert_version(conn, "lib", "1", "http://h/", {})
        store.bind_model(conn, row, HashingEmbedder.name, lambda: HashingEmbedder.dim)
        version = store.find_version(conn, "lib", "1")
    filler = "Words about the library that every page repeats in its own way. "
    save(
        database_url,
        [
            # many mentions of one query word: BM25 and the bag-of-words vectors like it best
            page(version.id, "caches", [("Caches", "cache " * 12 + filler, "caches")]),
            page(version.id, "timeouts", [("Timeouts", "timeout " * 8 + filler, "timeouts")]),
            # every query word once, in a long text: the overlap endpoint likes it best
            page(version.id, "settings", [("Settings", filler * 4 + "configure the cache timeout", "settings")]),
            page(version.id, "other", [("Other", filler * 2, "other")]),
        ],
    )


def search_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "search", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_docsbot_search_follows_the_endpoint_and_falls_back_when_it_is_down(database_url, tmp_path, endpoint):
    index_pages(database_url)
    env = docsbot_env(database_url, tmp_path)
    query = "configure cache timeout"

    def order(result: subprocess.CompletedProcess) -> list[str]:
        assert result.returncode == 0, result.stderr[-2000:]
        return [json.loads(line)["url"].rsplit("/", 1)[1] for line in result.stdout.splitlines()]

    fused = order(search_cli(env, query, "--json", "-k", "4"))
    assert fused[0] != "settings.html"  # else the endpoint would have nothing to change
    reranked = search_cli({**env, "DOCSBOT_RERANKER": f"{endpoint.url}/v1/rerank"}, query, "--json", "-k", "2")
    assert order(reranked)[0] == "settings.html"
    (path, body, _) = endpoint.requests[-1]
    assert path == "/v1/rerank" and len(body["documents"]) == 4  # every candidate, though 2 are shown
    explained = search_cli({**env, "DOCSBOT_RERANKER": endpoint.url}, query, "--explain", "-k", "1")
    before = fused.index("settings.html") + 1
    assert re.search(rf"reranker 127\.0\.0\.1:\d+: score -?[\d.]+, rank {before} → 1$", explained.stdout, re.M)

    down = {**env, "DOCSBOT_RERANKER": dead_url()}
    assert order(search_cli(down, query, "--json", "-k", "4")) == fused
    fallback = search_cli(down, query, "--explain", "-k", "4")
    assert "fused order kept: " in fallback.stdout and "ConnectError" in fallback.stdout
    assert "the reranker 127.0.0.1" in fallback.stderr and "results in the fused order" in fallback.stderr

    missing = search_cli({**env, "DOCSBOT_RERANKER": str(tmp_path / "nowhere")}, query)
    assert missing.returncode == 2  # a setting to fix, as every DocsbotError
    assert missing.stderr == f"docsbot: DOCSBOT_RERANKER: no reranker model folder {tmp_path / 'nowhere'}\n"


def test_the_mcp_server_and_web_pages_search_with_the_reranker_the_settings_name(tmp_path):
    from docsbot.service import DocsIndex

    settings = {
        "DOCSBOT_DATA_DIR": str(tmp_path),
        "DOCSBOT_RERANKER": "http://tei:8080",
        "DOCSBOT_RERANK_CANDIDATES": 12,
    }
    index = DocsIndex(settings, "postgresql:///unused", HashingEmbedder(), env={})
    assert isinstance(index.searcher.reranker, HttpReranker) and index.searcher.reranker.url == "http://tei:8080/rerank"
    assert index.searcher.rerank_candidates == 12
    assert (
        DocsIndex({"DOCSBOT_DATA_DIR": str(tmp_path)}, "postgresql:///unused", HashingEmbedder()).searcher.reranker
        is None
    )
    with pytest.raises(RerankerConfigError, match="no reranker model folder"):
        DocsIndex({**settings, "DOCSBOT_RERANKER": str(tmp_path / "none")}, "postgresql:///unused", HashingEmbedder())
