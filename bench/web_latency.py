"""Warm latency of the search page of ``docsbot serve``, over HTTP, against an index that already exists.

Starts ``python -m docsbot.cli serve --http 127.0.0.1:0`` with this process's environment (``DATABASE_URL`` or
``DOCSBOT_DATA_DIR``, ``DOCSBOT_EMBEDDER``…), makes ``--warmup`` requests, then times ``-n`` sequential
``GET /?q=…`` (the HTML page a person loads; queries taken in turn from bench/mcp_latency.py's list): the server's
own time from its ``Server-Timing`` header (request in, response headers out: search, rendering) and the client's
round trip. Prints one JSON object (milliseconds) on stdout, a summary line on stderr::

    python bench/web_latency.py --library python --version 3.11 -n 200
    {"requests": 200, "server_p50_ms": ..., "server_p95_ms": ..., "client_p50_ms": ..., ...}

Exit code 1 if a request failed or a page showed no result.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mcp_latency import QUERIES, percentile  # noqa: E402

TIMING = re.compile(r"\bapp;dur=([\d.]+)")


def start_server(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    out = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "docsbot.cli", "serve", "--http", "127.0.0.1:0"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = re.search(r"docsbot serve: serving (http://\S+)/ \(MCP at", log.read_text())
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            raise SystemExit("docsbot serve exited: " + log.read_text()[-2000:])
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("docsbot serve did not start: " + log.read_text()[-2000:])


def measure(args: argparse.Namespace) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    log = Path(tempfile.mkstemp(prefix="docsbot-serve-", suffix=".log")[1])
    proc, url = start_server(env, log)
    server: list[float] = []
    client: list[float] = []
    empty = 0
    try:
        params = {"limit": str(args.limit)}
        if args.library:
            params["library"] = args.library
        if args.version is not None:
            params["version"] = args.version
        with httpx2.Client(base_url=url, timeout=60) as http:
            for i in range(args.warmup + args.n):
                t0 = time.perf_counter()
                response = http.get("/", params={**params, "q": QUERIES[i % len(QUERIES)]})
                elapsed = time.perf_counter() - t0
                if response.status_code != 200:
                    raise SystemExit(f"GET / answered {response.status_code}: {response.text[:300]}")
                if i < args.warmup:
                    continue
                m = TIMING.search(response.headers.get("server-timing", ""))
                if m is None:
                    raise SystemExit("the page has no Server-Timing header")
                server.append(float(m.group(1)))
                client.append(elapsed * 1000)
                empty += 'class="results"' not in response.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.unlink(missing_ok=True)
    return {
        "requests": len(server),
        "server_p50_ms": round(percentile(server, 50), 1),
        "server_p95_ms": round(percentile(server, 95), 1),
        "client_p50_ms": round(percentile(client, 50), 1),
        "client_p95_ms": round(percentile(client, 95), 1),
        "mean_ms": round(statistics.fmean(server), 1),
        "empty_results": empty,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="timed requests (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed requests first (default 10)")
    parser.add_argument("--library")
    parser.add_argument("--version")
    parser.add_argument("--limit", type=int, default=10)
    args = parser.parse_args(argv)
    report = measure(args)
    print(json.dumps(report))
    print(
        f"search page over HTTP, {report['requests']} warm requests: server p50 {report['server_p50_ms']} ms, "
        f"p95 {report['server_p95_ms']} ms (client round trip p50 {report['client_p50_ms']} ms)",
        file=sys.stderr,
    )
    return 1 if report["empty_results"] else 0


if __name__ == "__main__":
    sys.exit(main())
