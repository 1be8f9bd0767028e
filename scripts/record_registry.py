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
  ``homepage``, ``repository``, ``bugs``, ``description`` and ``readme`` where the registry sends them, every
  version cut to those fields and ``deprecated``, and the newest release's ``dist`` (``tarball``, ``integrity``,
  ``shasum``; the other releases' would be most of a long-lived package's answer).
- npm's README, when the document has none (a mirror or proxy, as on the machine these were recorded on, leaves
  it out): read from the newest release's tarball as docsbot reads it (docsbot.fleet.tarball), but with no cap, and
  kept beside the document as ``npm/NAME.readme.json.gz``: the ``member`` it came from, its ``text``, and its
  ``offset`` (bytes of the tarball downloaded before it, so that a test's tarball puts it as far in and docsbot's
  cap applies as it did); or the ``error`` that kept it from being read.

A package the registry does not know is recorded as its status (``{"status": 404}``). ``index.json`` beside the
files says when each was recorded and from where. Needs the registries (pypi.org, registry.npmjs.org), nothing else.
``--readmes`` records the npm READMEs of the documents already recorded (each newest release's ``dist`` from its
version document, ``GET https://registry.npmjs.org/NAME/VERSION``), leaving the documents as they were but that.
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
sys.path.insert(0, str(ROOT))

from docsbot.fleet.tarball import TarballError, tarball_readme  # noqa: E402

DEFAULT_LIST = ROOT / "bench" / "registry_roots.toml"
DEFAULT_OUT = ROOT / "tests" / "data" / "registry"
PYPI = "https://pypi.org/pypi"
NPM = "https://registry.npmjs.org"
_NPM_FIELDS = ("name", "version", "homepage", "repository", "bugs", "description", "deprecated", "readme")
_DIST_FIELDS = ("tarball", "integrity", "shasum")
_NO_CAP = 1 << 30  # the recorder reads a tarball whole, wherever its README is; docsbot's cap applies when served


def file_name(ecosystem: str, name: str, kind: str = "json") -> str:
    """Where a package's answer is kept under the output directory: ``pypi/requests.json.gz``,
    ``npm/@angular%2Fcore.json.gz`` (a scoped name as the registry's own URL spells it); ``kind="readme"``: its
    README from the tarball, ``npm/@angular%2Fcore.readme.json.gz``."""
    suffix = ".json.gz" if kind == "json" else f".{kind}.json.gz"
    return f"{ecosystem}/{quote(name, safe='@')}{suffix}"


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0))


def _read(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def add_dist(client: httpx.Client, name: str, document: dict) -> dict:
    """``document`` (recorded without ``dist``) with its newest release's, from the version document."""
    latest = (document.get("dist-tags") or {}).get("latest")
    release = (document.get("versions") or {}).get(latest)
    if release is None or release.get("dist"):
        return document
    answer = client.get(f"{NPM}/{quote(name, safe='@')}/{latest}", headers={"Accept": "application/json"})
    answer.raise_for_status()
    dist = answer.json().get("dist") or {}
    release["dist"] = {k: dist[k] for k in _DIST_FIELDS if dist.get(k)}
    return document


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
    latest = (answer.get("dist-tags") or {}).get("latest")
    dist = ((answer.get("versions") or {}).get(latest) or {}).get("dist")
    if latest in out["versions"] and isinstance(dist, dict):
        out["versions"][latest]["dist"] = {k: dist[k] for k in _DIST_FIELDS if dist.get(k)}
    return out


def record_readme(client: httpx.Client, document: dict) -> dict | None:
    """The README of an npm document's newest release, from its tarball (``None`` when the document has its own
    README or names no tarball): ``{"version", "tarball", "member", "offset", "verified", "text"}``, or
    ``{"version", "tarball", "error"}``."""
    latest = (document.get("dist-tags") or {}).get("latest")
    release = (document.get("versions") or {}).get(latest) or {}
    dist = release.get("dist") or {}
    if document.get("readme") or release.get("readme") or not dist.get("tarball"):
        return None
    out = {"version": latest, "tarball": dist["tarball"]}
    try:
        found = tarball_readme(client, dist["tarball"], dist.get("integrity"), dist.get("shasum"),
                               max_download=_NO_CAP, max_readme=_NO_CAP)  # fmt: skip
    except TarballError as exc:
        return {**out, "error": str(exc)}
    return {**out, "member": found.member, "offset": found.offset, "verified": found.verified, "text": found.text}


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
    parser.add_argument("--readmes", action="store_true", help="only the READMEs of the npm documents recorded")
    args = parser.parse_args()
    packages = [(p["ecosystem"], p["name"]) for p in tomllib.loads(args.list.read_text())["package"]]
    if args.only:
        packages = [(e, n) for e, n in packages if n in args.only]
    if args.readmes:
        packages = [(e, n) for e, n in packages if e == "npm" and (args.out / file_name(e, n)).exists()]
    index_path = args.out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    failed = 0
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    with httpx.Client(timeout=120, follow_redirects=True, headers={"User-Agent": "docsbot recorder"}) as client:
        for ecosystem, name in packages:
            path = args.out / file_name(ecosystem, name)
            try:
                if args.readmes:
                    data = add_dist(client, name, _read(path))
                else:
                    data = record(client, ecosystem, name)
                    index[f"{ecosystem}/{name}"] = {"recorded": today, "from": PYPI if ecosystem == "pypi" else NPM}
                readme = record_readme(client, data) if ecosystem == "npm" and "status" not in data else None
            except httpx.HTTPError as exc:
                print(f"{ecosystem} {name}: {exc}", file=sys.stderr)
                failed += 1
                continue
            _write(path, data)
            print(f"{ecosystem} {name}: {path.stat().st_size:,} bytes")
            if readme is not None:
                _write(args.out / file_name(ecosystem, name, "readme"), readme)
                index.setdefault(f"{ecosystem}/{name}", {})["readme"] = today
                said = (
                    readme.get("error")
                    or f"{readme['member']}, {len(readme['text']):,} characters at {readme['offset']:,}"
                )
                print(f"{ecosystem} {name}: README of {readme['version']}: {said}")
    index_path.write_text(json.dumps(dict(sorted(index.items())), indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
