"""The text a chunk's vector is made of and the key that names that vector (pure, standard library only: the crawl's
pipelines and the embedding worker read these without loading the chunker)."""

from __future__ import annotations

import hashlib

__all__ = ["context_line", "embed_key", "embed_text"]


def context_line(title: str, heading_path: tuple[str, ...] | list[str]) -> str:
    """``"title > h2 > h3"``: where a chunk sits. A first heading equal to the title (a page's h1) is not repeated."""
    path = list(heading_path)
    if path and path[0] == title:
        path = path[1:]
    return " > ".join(p for p in (title, *path) if p)


def embed_text(context: str, content: str, max_context_chars: int | None) -> str:
    """The text the model embeds: the context line (cut to ``max_context_chars`` when longer: its first
    ``max_context_chars - 1`` characters and "…"; ``None``: whole), a blank line, the chunk.

    A chunk that only says "Returns the task" is then found by the section it belongs to.
    """
    if max_context_chars is not None and len(context) > max_context_chars:
        context = context[: max_context_chars - 1] + "…"
    return f"{context}\n\n{content}" if context else content


def embed_key(model: str, text: str) -> str:
    """The key of a text's vector (``documents.embed_hash``): sha256 hex of the model's name, NUL and the embedded
    text. Equal keys give equal vectors, so a vector is computed once per model and text, database-wide."""
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()
