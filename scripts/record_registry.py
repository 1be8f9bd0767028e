"""Record the registries' real answers for the packages of a list (by default bench/registry_roots.toml), once, into
tests/data/registry/, so that root finding is tested and measured offline and repeatably
(tests/recorded_registry.py serves them; bench/registry_roots.py measures on them).

    python scripts/record_registry.py [--list FILE] [--only NAME ...] [--out DIR]

What is kept of each answer is what docsbot.fleet.registry and the version rules read, and no more, gzipped:

- PyPI's JSON API (``GET https://pypi.org/pypi/NAME/json``): ``info`` whole (``project_urls``, ``home_page``,
  ``docs_url``, the README as ``description``), ``last_serial``, and ``releases`` with, per release, its files'
  ``yanked``, ``requires_python`` and first upload time (the file lists are most of a big project's answer);
  ``urls`` and ``vulnerabilities`` are dropped.
- npm's registry document (``GET https://registry.npmjs.org/NAME``): ``name``, ``dist-tags``, ``time``, the top-level
  ``homepage``, ``repository``, ``bugs``, ``description`` and ``readme`` where the registry sends them, and every
  version cut to those fields and ``deprecated``.

A package the registry does not know is recorded as its status (``{"status": 404}``). ``index.json`` beside the
files says when each was recorded and from where. Needs the registries (pypi.org, registry.npmjs.org), nothing else.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LIST = ROOT / "bench" / "registry_roots.toml"
DEFAULT_OUT = ROOT / "tests" / "data" / "registry"
PYPI = "https://pypi.org/pypi"
NPM = "https://registry.npmjs.org"
_NPM_FIELDS = ("name", "version", "homepage", "repository", "bugs", "description", "deprecated", "readme")


def file_name(ecosystem: str, name: str) -> str:
    """Where a package's answer is kept under the output directory: ``pypi/requests.json.gz``,
    ``npm/@angular%2Fcore.json.gz`` (a scoped name as the registry's own URL spells it)."""
    return f"{ecosystem}/{quote(name, safe='@')}.json.gz"


def trim_pypi(answer: dict) -> dict:
    releases = {}
    for version, files in (answer.get("releases") or {}).items():
        if not files:
            releases[version] = []
            continue
        first = min(files, key=lambda f: f.get("upload_time_iso_8601") or "")
        releases[version] = [{
            "yanked": all(f.get("yanked") for f in files),
            "requires_python": first.get("requires_python"),
            "upload_time_iso_8601": first.get("upload_time_iso_8601"),
        }]  # fmt: skip
    return {"info": answer.get("info") or {}, "last_serial": answer.get("last_serial"), "releases": releases}


def trim_npm(answer: dict) -> dict:
    out = {k: answer[k] for k in ("_id", "name", "dist-tags", "time") if k in answer}
    out.update({k: answer[k] for k in _NPM_FIELDS[2:] if answer.get(k)})
    out["versions"] = {
        version: {k: meta[k] for k in _NPM_FIELDS if k in meta and meta[k] not in (None, "")}
        for version, meta in (answer.get("versions") or {}).items()
    }
    return out


def record(client: httpx.Client, ecosystem: str, name: str) -> dict:
    """The trimmed answer of ``name``'s registry (raises :class:`httpx.HTTPError` for anything but 200 and 404)."""
    url = f"{PYPI}/{name}/json" if ecosystem == "pypi" else f"{NPM}/{quote(name, safe='@')}"
    answer = client.get(url, headers={"Accept": "application/json"})
    if answer.status_code == 404:
        return {"status": 404}
    answer.raise_for_status()
    return trim_pypi(answer.json()) if ecosystem == "pypi" else trim_npm(answer.json())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=Path, default=DEFAULT_LIST, help="a TOML list of [[package]] name, ecosystem")
    parser.add_argument("--only", nargs="*", help="record only these names")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    packages = [(p["ecosystem"], p["name"]) for p in tomllib.loads(args.list.read_text())["package"]]
    if args.only:
        packages = [(e, n) for e, n in packages if n in args.only]
    index_path = args.out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    failed = 0
    with httpx.Client(timeout=120, follow_redirects=True, headers={"User-Agent": "docsbot recorder"}) as client:
        for ecosystem, name in packages:
            try:
                data = record(client, ecosystem, name)
            except httpx.HTTPError as exc:
                print(f"{ecosystem} {name}: {exc}", file=sys.stderr)
                failed += 1
                continue
            path = args.out / file_name(ecosystem, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
            path.write_bytes(gzip.compress(body, mtime=0))
            index[f"{ecosystem}/{name}"] = {
                "recorded": datetime.now(UTC).strftime("%Y-%m-%d"),
                "from": PYPI if ecosystem == "pypi" else NPM,
            }
            print(f"{ecosystem} {name}: {path.stat().st_size:,} bytes")
    index_path.write_text(json.dumps(dict(sorted(index.items())), indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
