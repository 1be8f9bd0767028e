"""A folder's Markdown and plain-text files, and its listings, as the HTML pages extraction reads (pure).

A folder's pages go through the same extraction as a site's (:func:`docsbot.content.extract.extract_page`): title,
main content, links, anchors, symbols and Markdown. So a Markdown file is rendered to HTML first:

- **Markdown** is read as CommonMark with GFM's tables and strikethrough (markdown-it-py, which the chunker reads
  headings with too; raw HTML kept, as GitHub renders it). Each heading gets the ``id`` GitHub gives it (lower case,
  punctuation dropped, spaces as ``-``, ``-1``, ``-2``... for repeats), so that its anchors and deep links are
  those of the file as GitHub shows it. Links stay as written (``other.md``, ``../guide/x.md#install``): relative to
  the file, they name the folder's other files.
- **Plain text** (``.txt``, and ``.rst`` read as text): paragraphs at blank lines, an indented block kept as
  preformatted text, and a line underlined (or over- and underlined) with ``=``, ``-``, ``~``... a heading, as
  reStructuredText and many text files mark one (levels in the order their underlines appear).
- **A listing** of a folder without an index or start file: a link per file and folder.

The page's ``<title>`` is its first heading, else the file's name.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = ["decode_text", "listing_page", "markdown_page", "text_page"]

_SLUG_DROP = re.compile(r"[^\w\- ]", re.UNICODE)
_UNDERLINE = re.compile(r"""^([=\-~^*#"+`:.'_])\1+\s*$""")


def decode_text(body: bytes) -> str:
    """A text file's bytes as text: UTF-8 (a byte-order mark dropped), else Windows-1252, as browsers fall back."""
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")


def _document(title: str, body: str, *, base: str | None, canonical: str | None) -> bytes:
    head = [f'<meta charset="utf-8"><title>{escape(title)}</title>']
    if base:
        head.append(f'<base href="{escape(base)}">')
    if canonical:
        head.append(f'<link rel="canonical" href="{escape(canonical)}">')
    return f"<!DOCTYPE html>\n<html><head>{''.join(head)}</head><body><main>\n{body}</main></body></html>\n".encode()


def slug(text: str, seen: dict[str, int]) -> str:
    """GitHub's anchor for a heading whose text is ``text``; ``seen`` counts the slugs of the page so far."""
    base = _SLUG_DROP.sub("", unicodedata.normalize("NFC", text).strip().lower()).replace(" ", "-")
    count = seen.get(base, 0)
    seen[base] = count + 1
    return base if count == 0 else f"{base}-{count}"


@cache
def _markdown() -> MarkdownIt:
    """The CommonMark parser with tables and strikethrough, built on the first Markdown file a crawl reads (a crawl of
    a site never loads markdown-it in its own process)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _inline_text(token: Token) -> str:
    return "".join(child.content for child in token.children or () if child.type in ("text", "code_inline"))


def markdown_page(text: str, name: str, *, base: str | None = None, canonical: str | None = None) -> bytes:
    """The HTML page of the Markdown ``text`` of the file ``name`` (UTF-8 bytes): its ``<title>`` the first heading's
    text, else ``name``; ``base`` and ``canonical`` become ``<base href>`` and ``<link rel="canonical">``."""
    parser = _markdown()
    tokens = parser.parse(text)
    seen: dict[str, int] = {}
    title = ""
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and i + 1 < len(tokens):
            words = _inline_text(tokens[i + 1])
            token.attrSet("id", slug(words, seen))
            title = title or words.strip()
    body = parser.renderer.render(tokens, parser.options, {})
    return _document(title or name, body, base=base, canonical=canonical)


def text_page(text: str, name: str, *, base: str | None = None, canonical: str | None = None) -> bytes:
    """The HTML page of the plain ``text`` of the file ``name`` (see the module docstring)."""
    blocks = re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n").replace("\r", "\n").strip("\n"))
    levels: list[str] = []
    seen: dict[str, int] = {}
    title = ""
    html = []
    for block in blocks:
        lines = block.split("\n")
        heading = _underlined(lines)
        if heading is not None:
            words, marker, rest = heading
            if marker not in levels:
                levels.append(marker)
            level = min(levels.index(marker) + 1, 6)
            title = title or words
            html.append(f'<h{level} id="{escape(slug(words, seen))}">{escape(words)}</h{level}>')
            lines = rest
            if not lines:
                continue
        if all(line[:1] in (" ", "\t") for line in lines if line.strip()):
            html.append(f"<pre>{escape(_dedent(lines))}</pre>")
        else:
            html.append(f"<p>{escape(chr(10).join(lines))}</p>")
    return _document(title or name, "\n".join(html), base=base, canonical=canonical)


def _underlined(lines: list[str]) -> tuple[str, str, list[str]] | None:
    """``(heading, underline character, lines after it)`` when ``lines`` start with a heading underlined (or over-
    and underlined) as reStructuredText marks one, else ``None``."""
    over = len(lines) >= 3 and _UNDERLINE.match(lines[0]) and _UNDERLINE.match(lines[2]) and lines[1].strip()
    if over and lines[0].strip()[0] == lines[2].strip()[0] and len(lines[2].rstrip()) >= len(lines[1].strip()):
        return lines[1].strip(), "over" + lines[0].strip()[0], lines[3:]
    under = len(lines) >= 2 and _UNDERLINE.match(lines[1]) and lines[0].strip() and not lines[0][:1].isspace()
    if under and len(lines[1].rstrip()) >= len(lines[0].rstrip()):
        return lines[0].strip(), lines[1].strip()[0], lines[2:]
    return None


def _dedent(lines: list[str]) -> str:
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)


def listing_page(title: str, entries: Iterable[tuple[str, bool]], *, base: str | None = None,
                 canonical: str | None = None) -> bytes:  # fmt: skip
    """The HTML page listing a folder: a link to each of ``entries`` (``(name, is_folder)``), folders with their
    ``/``."""
    items = []
    for name, folder in entries:
        # "./": a name with a colon ("a:b.md") is not read as a URL scheme
        href = escape("./" + name.replace("%", "%25").replace("#", "%23").replace("?", "%3F") + ("/" if folder else ""))
        items.append(f'<li><a href="{href}">{escape(name)}{"/" if folder else ""}</a></li>')
    body = f"<h1>{escape(title)}</h1>\n<ul>\n" + "\n".join(items) + "\n</ul>\n"
    return _document(title, body, base=base, canonical=canonical)
