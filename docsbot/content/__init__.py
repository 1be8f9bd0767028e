"""Content processing (pure: no Scrapy, no database): a page's HTML → Markdown, title, links, anchors and symbol table
(:mod:`~docsbot.content.extract`), its Markdown's structure as CommonMark reads it
(:mod:`~docsbot.content.commonmark`), Markdown → heading-aware chunks and definitions
(:mod:`~docsbot.content.chunking`), what changed on a page (:mod:`~docsbot.content.changes`); and the worker pool a
crawl runs them in, off the reactor thread (:mod:`~docsbot.content.pool`, the one module here that knows Scrapy).

What the rest of docsbot needs of extraction without loading it (a crawl's parent process imports only this; the
extraction modules load in the workers, or in the parent on the first page a crawl extracts): the extractor's version,
the content hash and the two errors extraction raises. :mod:`~docsbot.content.extract` re-exports them.
"""

from __future__ import annotations

import hashlib

__all__ = ["EXTRACTOR_VERSION", "ConverterFailed", "ExtractionError", "content_hash"]

# The version of what extract_page returns and the chunker makes of it. Bump it with any change that alters the
# Markdown, title, anchors, symbols, link share or chunks of some pages: a refresh re-fetches (without validators,
# once) every stored page extracted by an older version and stores it as a full index would, reusing the vectors
# of chunks whose text is the same (pages.extractor_version, migration 0011); the chunker runs only on what a
# refresh fetched. 1: everything before it; 2: gi-docgen headers, AsciiDoc #header, DocBook and rustdoc chrome,
# nested <pre>, rustdoc/Javadoc/gi-docgen symbols, docutils asides (footnotes) kept; 3: labels before the <h1>
# follow it, <hr> dropped, a page without <h1> or <title> titled by its first heading, lists of headed sections
# (Javadoc's member lists) unwrapped, chunks without text (a heading and a thematic break) dropped; 4: converted by
# html-to-markdown instead of markdownify (definition lists as plain blocks, no ":   " and indentation; tables
# compact, a first row without <th> as their header, rowspan honoured; paragraphs reflowed around inline elements;
# line-start Markdown characters escaped; fences longer than the backticks inside; <summary> a plain block; inline
# code's edge whitespace outside it; an inline <svg> as its text; a one-row table of lists as its lists); 5:
# definitions of DocBook (terms, refentries, function synopses), AsciiDoc (labelled lists), mkdocstrings, Doxygen
# and all-code headings are symbols; DocBook's anchors inside headings and terms are anchors; Doxygen's banner,
# permalinks and footer are chrome, its title the <h1>; table rows without text dropped; an asterisk inside
# emphasis escaped; 6: headings of plain text shaped as a member or a call (Docusaurus: ".code(statusCode)") and
# all-code headings with parameters ("decorate(name, value)") are symbols; 7: symbols carry the offset of their
# definition's text (Symbol.offset; terms without an id of their own too), and table rows and list items that start
# with a name shown as code and describe it are symbols (PostgreSQL's function tables and environment variables,
# gi-docgen's enum members with their ids as anchors, Python's tables of constants); Markdown unchanged; 8: the chunker
# reads code fences by CommonMark's rules (a ```` block, which html-to-markdown writes around code holding ```, is
# not closed by a ``` line, nor a block by a line with an info string): a heading inside such a block is code, not a
# section; Markdown unchanged; 9: headings read by markdown-it-py (docsbot.content.commonmark): a heading path keeps the
# names its headings show (__slots__, _thread, CMAKE_<LANG>_FLAGS, pack-*.idx, "N * 4 bytes"), which the regular
# expressions had cut ("_slots_", "thread", "CMAKE<LANG>FLAGS"); chunk boundaries and Markdown unchanged (checked on
# the 3,847 pages of make eval's six corpora: 222 headings read otherwise, every chunk's text and offset the same);
# 10: a symbol whose definition the site's own index points to (DocBook's indexterm) is marked so (Symbol.indexed);
# Markdown and chunks unchanged.
EXTRACTOR_VERSION = 10


class ExtractionError(ValueError):
    """Raised when a document cannot be parsed as HTML at all (empty, binary, or no element to parse)."""


class ConverterFailed(ExtractionError):
    """html-to-markdown failed on a page that parsed (an error or a panic in the library), or skipped part of it.
    Not the page's fault: the spider keeps the stored page as it was and counts it failed (``failed/extract``), as
    for a worker that died, where an :class:`ExtractionError` of the document itself is a skipped page."""


def content_hash(title: str, markdown: str) -> str:
    """SHA-256 (hex, 64 chars) of the extracted title and Markdown: what "the page changed" means to docsbot."""
    return hashlib.sha256(f"{title}\n{markdown}".encode()).hexdigest()
