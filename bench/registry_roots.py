"""How often `docsbot add NAME` finds the right documentation root, from the registries' metadata alone: the
resolver (docsbot.fleet.registry.resolve) over a list of packages whose right roots were written by hand before any
tuning (bench/registry_roots.toml), on the registries' answers recorded once (tests/data/registry/,
scripts/record_registry.py), with no documentation host asked (as on this machine, which reaches only the
registries). Offline and repeatable.

    python bench/registry_roots.py [--list FILE] [--data DIR] [--markdown]

Each package is **right** (the list's root or one it names as equally right), **weak** (one the list names as
weak, or on the root's host with one directory holding the other: every version at once, the marketing home
around the docs, one part of them), **wrong** (anything else: another project's docs, a marketing page without the
docs, a page that is not documentation) or a **miss** (the resolver said it cannot tell and asked for --url).
URLs are compared with http = https, no fragment, no trailing index.html, GitHub paths case-insensitive. Prints one
line per package and the totals, or with --markdown the table BENCHMARKS.md keeps. Exit code 1 when any root is
wrong.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docsbot.fleet.registry import RegistryError, no_probes, resolve  # noqa: E402
from docsbot.project_settings import ProjectSettings  # noqa: E402
from tests.recorded_registry import DATA, NPM_URL, PYPI_URL, recorded_client  # noqa: E402

VERDICTS = ("right", "weak", "wrong", "miss")


def normalized(url: str) -> str:
    """``url`` as the comparison sees it: https, lower-case host, no fragment, no trailing ``index.html``; a
    repository's path in lower case without a trailing slash."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower() + (f":{parts.port}" if parts.port else "")
    path = parts.path or "/"
    if path.endswith("/index.html"):
        path = path[: -len("index.html")]
    if host.removeprefix("www.") in ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org"):
        path = path.lower().rstrip("/").replace("/tree/head/", "/tree/main/")
    return urlunsplit(("https", host, path, parts.query, ""))


def _holds(outer: str, inner: str) -> bool:
    """Whether the crawl scope of ``outer`` (its directory) holds ``inner`` on the same host."""
    a, b = urlsplit(outer), urlsplit(inner)
    return a.netloc == b.netloc and b.path.startswith(a.path[: a.path.rfind("/") + 1])


def verdict(found: str | None, package: dict) -> str:
    """``right``, ``weak``, ``wrong`` or ``miss`` of the root ``found`` (``None``: the resolver declined)."""
    if found is None:
        return "miss"
    got = normalized(found)
    if got in {normalized(u) for u in [package["root"], *package.get("also", [])]}:
        return "right"
    if got in {normalized(u) for u in package.get("weak", [])}:
        return "weak"
    roots = [normalized(u) for u in [package["root"], *package.get("also", [])]]
    if any(_holds(got, root) or _holds(root, got) for root in roots):
        return "weak"
    return "wrong"


def measure(packages: list[dict], data: Path) -> list[tuple[dict, str | None, str, str]]:
    """``(package, root found or None, verdict, why: the resolver's first note or its error)`` per package."""
    rows = []
    # the recorded hosts are public: no address is looked up (a slow resolver took 5 s for some of them)
    settings = ProjectSettings(overrides={"DOCSBOT_ALLOWED_NETWORKS": "*"})
    with recorded_client(data) as client:
        for package in packages:
            try:
                found = resolve(package["name"], None, package["ecosystem"], client=client, pypi_url=PYPI_URL,
                                npm_url=NPM_URL, probe=no_probes, settings=settings)  # fmt: skip
            except RegistryError as exc:
                rows.append((package, None, "miss", str(exc)))
                continue
            rule = "; ".join(n for n in found.notes if not n.startswith("unverified"))
            rows.append((package, found.url, verdict(found.url, package), rule))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=Path, default=ROOT / "bench" / "registry_roots.toml")
    parser.add_argument("--data", type=Path, default=DATA, help="the recorded answers (scripts/record_registry.py)")
    parser.add_argument("--markdown", action="store_true", help="the table BENCHMARKS.md keeps")
    args = parser.parse_args()
    packages = tomllib.loads(args.list.read_text())["package"]
    rows = measure(packages, args.data)
    counts = Counter(v for _, _, v, _ in rows)
    if args.markdown:
        print("| registry | package | root found | verdict | the list's root |")
        print("|---|---|---|---|---|")
        for package, found, v, why in rows:
            expected = "" if v == "right" else package["root"]
            shown = found or f"— ({why.split(': ', 1)[-1][:80]})"
            print(f"| {package['ecosystem']} | {package['name']} | {shown} | {v} | {expected} |")
        print()
    else:
        for package, found, v, why in rows:
            print(f"{v:5}  {package['ecosystem']:4} {package['name']:22} {found or '-'}")
            if v != "right":
                print(f"       want {package['root']}\n       why  {why[:300]}")
    by_ecosystem = Counter((p["ecosystem"], v) for p, _, v, _ in rows)
    for ecosystem in sorted({p["ecosystem"] for p in packages}):
        n = sum(by_ecosystem[(ecosystem, v)] for v in VERDICTS)
        print(f"{ecosystem}: " + ", ".join(f"{by_ecosystem[(ecosystem, v)]} {v}" for v in VERDICTS) + f" of {n}")
    total = len(rows)
    print("all: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS)
          + f" of {total} ({100 * counts['right'] / total:.0f}% right)")  # fmt: skip
    return 1 if counts["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
