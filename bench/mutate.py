"""A deterministic, seeded "docs release" applied to a directory of HTML docs (for `make bench`).

Edits one paragraph in ``edit`` of the pages, deletes ``delete`` of them and adds ``add`` new pages, each linked
from an existing page (which changes that page too). The same seed gives the same release.
"""

from __future__ import annotations

import html as html_lib
import random
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

_MAIN = re.compile(r'role="main"|<main|class="body"')
_PARAGRAPH = re.compile(r"<p>(.{40,}?)</p>", re.S)
_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_NAV = re.compile(r"<nav\b.*?</nav>", re.S | re.I)
_ID_ELEMENT = re.compile(r"""<(?:dt|h[1-6]|section)\b[^>]*?\bid=["']([^"']+)["']""", re.I)
WORDS = [
    *("buffer", "stream", "socket", "coroutine", "parser", "encoder", "decimal", "thread", "queue", "context"),
    *("manager", "iterator", "generator", "descriptor", "registry", "protocol", "transport", "handler"),
    *("timeout", "archive", "locale", "checksum"),
]


@dataclass
class Release:
    edited: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)  # pages edited to link the added ones
    # The heading of the section each edit went into (edited pages and hosts): the text of the last heading before
    # the edit, as a reader sees it (tags, entities and Sphinx's pilcrow gone).
    sections: dict[str, str] = field(default_factory=dict)
    # The id of the last definition (<dt>), heading or <section> with an id before each edit: the anchor whose text
    # (up to the next anchor) the edit lands in, as docsbot.content.changes.symbol_doc_hashes reads a page.
    anchors: dict[str, str] = field(default_factory=dict)


def content_paragraph(html: str, start: int) -> re.Match[str] | None:
    """The first ``<p>`` of 40 characters or more after ``start`` that is page content: not inside a ``<nav>``
    (Sphinx's local table of contents sits in the main content, and readers never see an edit there)."""
    navs = [(m.start(), m.end()) for m in _NAV.finditer(html, start)]
    for m in _PARAGRAPH.finditer(html, start):
        if not any(a <= m.start() < b for a, b in navs) and "<nav" not in m.group(1):
            return m
    return None


def id_before(html: str, position: int, start: int = 0) -> str:
    """The id of the last ``<dt>``, ``<h1>``-``<h6>`` or ``<section>`` with one between ``start`` and ``position``."""
    found = ""
    for m in _ID_ELEMENT.finditer(html, start, position):
        found = html_lib.unescape(m.group(1))
    return found


def heading_before(html: str, position: int, start: int = 0) -> str:
    """The text of the last ``<h1>``-``<h6>`` between ``start`` and ``position`` in ``html`` (``""`` if none)."""
    found = ""
    for m in _HEADING.finditer(html, start, position):
        found = " ".join(html_lib.unescape(_TAG.sub("", m.group(2))).replace("¶", "").split())
    return found


def _sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def release(
    root: Path,
    seed: int = 42,
    edit: float = 0.05,
    delete: float = 0.02,
    add: float = 0.02,
    main: re.Pattern[str] = _MAIN,
    directory_pages: bool = False,
) -> Release:
    """``main``: where a page's content starts (pages without it are left alone); the default fits Sphinx.
    ``directory_pages``: the site's pages are directories (``Guides/Testing/index.html``, Docusaurus), so every
    ``index.html`` but the root's is a page too; otherwise index pages are entries, never edited or deleted.
    Files are read and written byte for byte (``surrogateescape``), whatever their encoding."""
    rng = random.Random(seed)

    def entry(p: Path) -> bool:
        return p.name == "genindex.html" or (p.name == "index.html" and (not directory_pages or p.parent == root))

    pages = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.html")
        if main.search(p.read_text(errors="replace")) and not entry(p)
    )
    rng.shuffle(pages)
    n_edit, n_delete, n_add = (max(1, round(len(pages) * share)) for share in (edit, delete, add))
    out = Release()
    for rel in pages[:n_edit]:
        path = root / rel
        html = path.read_text(errors="surrogateescape")
        start = main.search(html).end()
        m = content_paragraph(html, start)
        if not m:
            continue
        edited = f"<p>{m.group(1)} {_sentence(rng)}</p>"
        path.write_text(html[: m.start()] + edited + html[m.end() :], errors="surrogateescape")
        out.edited.append(rel)
        out.sections[rel] = heading_before(html, m.end() - len("</p>"), start)  # where the sentence goes
        out.anchors[rel] = id_before(html, m.end() - len("</p>"), start)
    for rel in pages[n_edit : n_edit + n_delete]:
        (root / rel).unlink()
        out.deleted.append(rel)
    hosts = pages[n_edit + n_delete : n_edit + n_delete + n_add]
    for i, host_rel in enumerate(hosts):
        host = root / host_rel
        name = f"release-note-{seed}-{i}.html"
        body = "".join(f"<h2>{_sentence(rng, 3)[:-1]}</h2><p>{_sentence(rng)} {_sentence(rng)}</p>" for _ in range(4))
        (host.parent / name).write_text(
            f"<!DOCTYPE html><html><head><title>Release note {i}</title></head><body>"
            f'<div class="body" role="main"><h1>Release note {i}</h1>{body}</div></body></html>'
        )
        html = host.read_text(errors="surrogateescape")
        start = main.search(html).end()
        m = content_paragraph(html, start)
        insert = m.end() if m else start
        link = f'<p>See <a href="{name}">release note {i}</a>.</p>'
        host.write_text(html[:insert] + link + html[insert:], errors="surrogateescape")
        out.sections[host_rel] = heading_before(html, insert, start)
        out.anchors[host_rel] = id_before(html, insert, start)
        out.added.append(str((host.parent / name).relative_to(root)))
        out.hosts.append(host_rel)
    return out
