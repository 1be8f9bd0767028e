"""A response body → text → an lxml HTML tree (pure): the encoding as Scrapy resolves it, characters XML forbids
removed, a binary body refused."""

from __future__ import annotations

import re

import lxml.etree
import lxml.html
from w3lib.encoding import html_to_unicode, resolve_encoding

from docsbot.content import ExtractionError

__all__ = ["BINARY_SAMPLE", "BINARY_SHARE", "ExtractionError", "decode_html", "parse_html"]

# A share of control characters (or U+FFFD from undecodable bytes) above this, in the first BINARY_SAMPLE
# characters, means the body is not text: a binary file served as text/html.
BINARY_SAMPLE = 8192
BINARY_SHARE = 0.10
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")
# Characters XML 1.0 forbids (C0 controls but tab, newline and carriage return; U+FFFE, U+FFFF; lone surrogates):
# lxml refuses them in any text or attribute value it is handed ("All strings must be XML compatible"), so one
# such character in a heading (``&#1;``) failed the whole page. They carry nothing readable: removed on decoding.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_XML_BYTES = bytes(b for b in range(256) if b in (9, 10, 13) or b > 31)  # all but the C0 controls _NOT_XML names
# ... and the character references to them (``&#1;``, ``&#x1F;``), which libxml2 would decode into the tree.
_NOT_XML_REFERENCE = re.compile(r"&#(?:0*(?:[1-8]|1[124-9]|2\d|3[01])|[xX]0*(?:[1-8bBcCeEfF]|1[\da-fA-F]));")


def decode_html(body: str | bytes, encoding: str | None = None) -> str:
    """The text of ``body``: ``str`` as is; ``bytes`` decoded with ``encoding`` (the response's, as Scrapy's
    ``TextResponse.encoding`` resolves it: HTTP header, then BOM and ``<meta>``/XML declaration, then inference),
    or, without one, detected as Scrapy does (``w3lib.encoding.html_to_unicode``: BOM, declarations, UTF-8).

    Bytes that are invalid in that encoding become U+FFFD (a wrong charset declaration costs characters, never
    the rest of the page); an encoding name Python does not know falls back to detection. Characters XML forbids
    and references to them (``&#1;``) are removed (libxml2 stops at NUL; lxml refuses C0 controls in any text it
    is handed). Raises :class:`ExtractionError` if the body looks binary: more than ``BINARY_SHARE`` control
    characters or U+FFFD among its first ``BINARY_SAMPLE`` characters.
    """
    return _xml_text(_decoded(body, encoding))[0]


def _decoded(body: str | bytes, encoding: str | None) -> str:
    """``body`` as text (:func:`decode_html`'s decoding, nothing removed)."""
    if isinstance(body, str):
        return body
    codec = resolve_encoding(encoding) if encoding else None
    if codec is None:
        return html_to_unicode(None, body)[1]
    text = body.decode(codec, errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def _xml_text(text: str) -> tuple[str, bytes]:
    """``text`` without the characters XML forbids and the references to them, and its UTF-8. Raises
    :class:`ExtractionError` for a binary body (:func:`decode_html`). Whether there is anything to remove is read
    on the UTF-8, which the parser needs anyway (C0 controls are single bytes there, U+FFFE and U+FFFF three known
    ones, a lone surrogate cannot be encoded): a scan by the character-class expression of every page's text cost
    0.26 s of the Python docs' extraction, for pages that hold none."""
    sample = text[:BINARY_SAMPLE]
    if sample and len(_CONTROL.findall(sample)) > BINARY_SHARE * len(sample):
        raise ExtractionError("binary content, not HTML")
    try:
        data: bytes | None = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (only a str body can hold one)
        data = None
    if data is None or data.translate(None, _XML_BYTES) or b"\xef\xbf\xbe" in data or b"\xef\xbf\xbf" in data:
        text = _NOT_XML.sub("", text)
        data = text.encode("utf-8")
    if b"&#" in data:
        text, removed = _NOT_XML_REFERENCE.subn("", text)
        if removed:
            data = text.encode("utf-8")
    return text, data


# Every element an lxml.html tree (text_content, drop_tag, drop_tree), chosen in C: lxml.html's own lookup calls a
# Python function for each element object made (to give forms and inputs classes of their own, which nothing here
# uses): 4.1 million calls over the Python docs' 530 pages, whose extraction takes 8.3 s of CPU without them, 9.4 s
# with. The same pages, Markdown, links and symbols on all 13,044 pages of seven local corpora.
_HTML_CLASSES = lxml.etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement,
    comment=lxml.html.HtmlComment,
    pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity,
)


def parse_html(body: str | bytes, encoding: str | None = None) -> lxml.html.HtmlElement:
    """Parse ``body`` (see :func:`decode_html` for ``encoding``) into an lxml HTML tree, as parsel does: the
    decoded text is handed to libxml2 as UTF-8 with the parser's encoding fixed, so that an XML declaration
    (``<?xml version="1.0" encoding="UTF-8"?>``, which XHTML from AsciiDoc and DocBook starts with, and which lxml
    refuses in a ``str``) or a ``<meta charset>`` inside the body cannot override it; libxml2 truncates a document
    at bytes invalid in its declared encoding, Python's codecs replace them. Malformed markup is repaired by
    libxml2's recovering HTML parser. Raises :class:`ExtractionError` for an empty, binary or element-less body.
    """
    text, data = _xml_text(_decoded(body, encoding))
    if not text.strip():
        raise ExtractionError("empty document")
    parser = lxml.html.HTMLParser(encoding="utf-8", recover=True)
    parser.set_element_class_lookup(_HTML_CLASSES)
    try:
        return lxml.html.document_fromstring(data, parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise ExtractionError(f"unparseable HTML: {exc}") from exc
