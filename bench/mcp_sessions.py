"""Memory and admission of ``docsbot mcp --http`` under a flood of MCP ``initialize`` requests (the security review's
session exhaustion: 10,000 of them used to hold every new client off with 503 for 30 minutes and grow the server by
270 MB).

Starts ``python -m docsbot.cli mcp --http 127.0.0.1:0`` with this process's environment (``DATABASE_URL`` or
``DOCSBOT_DATA_DIR``, ``DOCSBOT_MCP_*``), opens ``--warmup`` sessions, reads the server's resident memory
(``VmRSS`` of ``/proc/PID/status``), then sends ``-n`` more ``initialize`` requests, none of them ever closing its
session, from ``--clients`` loopback addresses in turn (127.0.0.2, 127.0.0.3, …), ``--concurrency`` at a time, and
reads it again; then a client from an address not used so far opens a session and lists the tools. Prints one JSON
object on stdout, a summary line on stderr::

    python bench/mcp_sessions.py -n 10000
    {"initialize": 10000, "statuses": {"200": 10000}, "rss_before_mb": ..., "rss_after_mb": ..., "growth_mb": ...,
     "seconds": ..., "newcomer": 200}

Exit code 1 if the newcomer could not open a session.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio
import httpx2

ROOT = Path(__file__).resolve().parent.parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


async def flood(url: str, count: int, clients: int, concurrency: int, first: int, statuses: Counter) -> None:
    """``count`` initialize requests from ``clients`` addresses (127.0.0.``first``…), ``concurrency`` at a time."""
    pools = [
        httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=f"127.0.0.{first + i}"), timeout=60)
        for i in range(clients)
    ]
    sent = iter(range(count))

    async def worker() -> None:
        for i in sent:
            response = await pools[i % clients].post(url, json=INITIALIZE, headers=HEADERS)
            statuses[str(response.status_code)] += 1

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
    finally:
        for pool in pools:
            await pool.aclose()


async def newcomer(url: str, address: str) -> int:
    """A client never seen before opens a session and lists the tools: the status of the list (200: served)."""
    async with httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=address), timeout=60) as client:
        opened = await client.post(url, json=INITIALIZE, headers=HEADERS)
        if opened.status_code != 200:
            return opened.status_code
        session = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
        await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        listed = await client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session)
        return listed.status_code if "search_docs" in listed.text else 500


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=10_000, help="initialize requests after the warm-up (10000)")
    parser.add_argument("--warmup", type=int, default=500, help="sessions opened before the first reading (500)")
    parser.add_argument("--clients", type=int, default=50, help="client addresses the requests come from (50)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight at a time (8)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "docsbot.cli", "mcp", "--http", "127.0.0.1:0"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            url = None
            while url is None and time.monotonic() < deadline and server.poll() is None:
                log.seek(0)
                found = re.search(r"docsbot mcp: serving (\S+)", log.read())
                url = found.group(1) if found else time.sleep(0.1)
            if url is None:
                log.seek(0)
                print(f"the server did not start: {log.read()[-2000:]}", file=sys.stderr)
                return 1
            statuses: Counter[str] = Counter()
            anyio.run(flood, url, args.warmup, args.clients, args.concurrency, 2, Counter())
            before = rss_mb(server.pid)
            started = time.perf_counter()
            anyio.run(flood, url, args.n, args.clients, args.concurrency, 2, statuses)
            took = time.perf_counter() - started
            after = rss_mb(server.pid)
            last = anyio.run(newcomer, url, f"127.0.0.{2 + args.clients}")
        finally:
            server.terminate()
            server.wait(timeout=30)
    report = {
        "initialize": args.n,
        "statuses": dict(statuses),
        "rss_before_mb": round(before, 1),
        "rss_after_mb": round(after, 1),
        "growth_mb": round(after - before, 1),
        "seconds": round(took, 1),
        "newcomer": last,
    }
    print(json.dumps(report))
    print(
        f"{args.n} initialize requests in {took:.1f} s ({dict(statuses)}); server {before:.0f} → {after:.0f} MB; "
        f"a new client then got {last}",
        file=sys.stderr,
    )
    return 0 if last == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
