"""Writing measured tables into the repository's Markdown (BENCHMARKS.md and the documentation site)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def write_section(path: Path, name: str, text: str) -> bool:
    """Replace what stands between ``<!-- name -->`` and ``<!-- /name -->`` in ``path`` with ``text``.

    Returns ``False`` (and says so on stderr, writing nothing) if ``path`` has no such pair of markers.
    """
    doc = path.read_text(encoding="utf-8")
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    if start not in doc or end not in doc.split(start, 1)[1]:
        print(f"{path.name}: no {start} ... {end} markers; not written", file=sys.stderr)
        return False
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{text.rstrip()}\n{end}{tail}", encoding="utf-8")
    return True
