"""What every step of extraction reads of an lxml tree (pure): a node's text, the heading tags, a heading's
permalink glyph."""

from __future__ import annotations

import re

__all__ = ["HEADING_TAGS", "PERMALINK_GLYPH", "text_of"]

HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# A heading's permalink left as text at its end (Sphinx's ¶, a "#"): no part of the heading's name.
PERMALINK_GLYPH = re.compile(r"\s*[¶#]\s*$")


def text_of(node) -> str:  # noqa: ANN001 - an lxml element
    """The text of ``node`` and its descendants, its runs of whitespace collapsed to one space, stripped."""
    return " ".join(node.text_content().split())
