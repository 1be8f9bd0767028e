"""The README's screenshots of the web pages, taken from an existing index (``make index``: the Python docs).

Starts ``docsbot serve`` on this process's database (``DATABASE_URL`` or the embedded default), loads the search,
page, libraries, run and changes pages in headless Chromium (Playwright, Debian's /usr/bin/chromium) and writes
``docs/screenshots/NAME.png``::

    .venv/bin/python scripts/screenshots.py [--query "create a task with asyncio"] [--library python]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx2

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", default="create a task with asyncio")
    parser.add_argument("--library", default="python")
    parser.add_argument("--out", default=str(ROOT / "docs/screenshots"))
    parser.add_argument("--chromium", default=os.environ.get("DOCSBOT_CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = Path(tempfile.mkstemp(prefix="docsbot-serve-", suffix=".log")[1])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "docsbot.cli", "serve", "--http", "127.0.0.1:0"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        url = ""
        for _ in range(600):
            m = re.search(r"docsbot serve: serving (http://\S+)/ \(MCP at", log.read_text())
            if m:
                url = m.group(1)
                break
            if proc.poll() is not None:
                raise SystemExit(log.read_text()[-2000:])
            time.sleep(0.1)
        libraries = httpx2.get(f"{url}/libraries.json", timeout=30).json()["libraries"]
        version = next(v for v in libraries if v["library"] == args.library)
        found = httpx2.get(f"{url}/search.json", params={"q": args.query, "library": args.library}, timeout=60).json()
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=args.chromium,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            shots = [
                ("search", f"{url}/?{urlencode({'q': args.query, 'library': args.library})}"),
                ("page", f"{url}/page?{urlencode({'url': found['results'][0]['deep_link']})}"),
                ("libraries", f"{url}/libraries"),
            ]
            if version.get("last_run"):
                shots.append(("run", f"{url}/runs/{version['last_run']['crawl_run_id']}"))
            shots.append(("changes", f"{url}/changes?{urlencode({'library': args.library})}"))
            for name, target in shots:
                page.goto(target)
                page.screenshot(path=str(out / f"{name}.png"))
                print(f"{out / f'{name}.png'}: {target}")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
