"""The target: `docsbot add` finds the documentation root of most of the most downloaded packages, from
their registries' metadata alone (PyPI's JSON API, npm's registry; no documentation host is asked: this machine
reaches only the registries). Prints a Markdown table: package, the URL docsbot chose, where it came from, and a
first automatic verdict (a repository page or a registry page is not a documentation root); BENCHMARKS.md keeps
the table with each verdict checked by hand.

    python bench/registries.py [--pypi N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docsbot.fleet.registry import RegistryError, no_probes, resolve  # noqa: E402

# PyPI: the most downloaded projects, in the order of /work/.library/env/packages/pypi.tsv's rank (November 2026).
PYPI = ["boto3", "packaging", "urllib3", "certifi", "idna", "requests", "typing-extensions", "charset-normalizer",
        "setuptools", "botocore", "cryptography", "aiobotocore", "python-dateutil", "six", "pyyaml", "pydantic",
        "pygments", "cffi", "click", "numpy", "pluggy", "pycparser", "pydantic-core", "grpcio-status",
        "anyio"]  # fmt: skip
# npm: among the most downloaded packages (npm's public download counts, as commonly listed).
NPM = ["lodash", "chalk", "react", "tslib", "debug", "commander", "express", "axios", "typescript", "semver", "uuid",
       "moment", "react-dom", "ms", "glob", "minimatch", "yargs", "fs-extra", "webpack", "prettier"]  # fmt: skip
NOT_DOCS = ("github.com", "gitlab.com", "bitbucket.org", "pypi.org", "npmjs.com", "npmjs.org")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pypi", type=int, default=25)
    args = parser.parse_args()
    print("| ecosystem | package | documentation root | from | automatic verdict |")
    print("|---|---|---|---|---|")
    with httpx.Client(timeout=20, follow_redirects=True, headers={"User-Agent": "docsbot bench"}) as client:
        for ecosystem, names in (("pypi", PYPI[: args.pypi]), ("npm", NPM)):
            for name in names:
                try:
                    found = resolve(name, None, ecosystem, client=client, probe=no_probes)
                except RegistryError as exc:
                    print(f"| {ecosystem} | {name} | — | {exc} | not found |")
                    continue
                where = found.notes[0].split(": from ", 1)[-1]
                verdict = "a repository or registry page" if any(h in found.url for h in NOT_DOCS) else "docs root"
                print(f"| {ecosystem} | {name} | {found.url} | {where} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
