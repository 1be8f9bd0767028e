"""A page's title (pure): the ``<h1>`` of its main content, the one its ``<title>`` names when there are several,
else its ``<title>`` or first heading; and the labels before the ``<h1>`` moved after it, so that the page's
Markdown starts with its title."""

from __future__ import annotations

import re

from docsbot.content.markup import HEADING_TAGS, PERMALINK_GLYPH, text_of

__all__ = ["MAX_LABEL_CHARS", "document_title", "main_title"]

_WORD_CHARS = re.compile(r"\W+")
# Text before the <h1> in its parent is moved after it only up to this many characters: a label or a breadcrumb,
# not content.
MAX_LABEL_CHARS = 200


def document_title(doc) -> str:  # noqa: ANN001 - an lxml element
    """The text of the page's ``<title>``, "" if it has none."""
    title = next(doc.iter("title"), None)  # the first in document order, as //title[1]
    return text_of(title) if title is not None else ""


def main_title(main, page_title: str) -> str:  # noqa: ANN001 - an lxml element
    """The title of the page whose main-content node is ``main`` and whose ``<title>`` says ``page_title``: its
    ``<h1>`` (Doxygen's ``div.title``, made the ``<h1>``; of several, the one ``page_title`` names), without a
    permalink's glyph; without one, ``page_title`` or the first heading's text; ``page_title`` itself when it
    names the same words. "" if there is none of these. Changes ``main``: the labels before the ``<h1>`` follow it
    (:func:`_title_first`)."""
    h1 = list(main.iterdescendants("h1"))  # .//h1
    if not h1:  # Doxygen's page heading: <div class="headertitle"><div class="title">Json::Value Class Reference
        for heading in main.xpath(".//div[@class='headertitle']/div[@class='title']"):
            for label in heading.findall("div"):  # the groups a page belongs to ("ingroups"): after the heading
                heading.addnext(label)
            heading.tag = "h1"
            h1 = [heading]
            break
    if len(h1) > 1 and page_title:
        # A page with a banner <h1> before its own (Fastify's docs: "Fastify", then "Testing"): the one <title> names
        # ("Testing | Fastify") is the page's.
        named = _WORD_CHARS.sub(" ", re.split(r"\s[|\u2014\u2013-]\s", page_title)[0]).strip().lower()
        h1.sort(key=lambda h: _WORD_CHARS.sub(" ", text_of(h)).strip().lower() != named)
    if h1:
        _title_first(h1[0])
        title = PERMALINK_GLYPH.sub("", text_of(h1[0]))
    else:  # AsciiDoc howtos and DocBook refentries: no <h1>, sometimes an empty <title>
        heading = next(main.iter(*HEADING_TAGS), None)
        title = page_title or (PERMALINK_GLYPH.sub("", text_of(heading)) if heading is not None else "")
    if _WORD_CHARS.sub("", title) == _WORD_CHARS.sub("", page_title):
        # The same name, but <title> keeps its separators: gi-docgen's <h1> "Gtk/Button/set_label" is drawn with
        # empty <span class="sep">s, its <title> is "Gtk.Button.set_label".
        title = page_title
    return title


def _title_first(h1) -> None:  # noqa: ANN001 - an lxml element
    """Move the short labels that precede ``h1`` in its parent after it: gi-docgen's kind ("<h3>Constructor</h3>")
    and Javadoc's "Module java.base" / "Package java.util" lines. The page's Markdown then starts with its title
    and a label is chunked with the section it describes, not alone under no heading (62 of 150 sampled JDK pages
    had such a chunk). Headings among them become paragraphs; elements without text (an anchor target) stay."""
    siblings = list(h1.itersiblings(preceding=True))
    if (h1.getparent().text or "").strip() or any((el.tail or "").strip() for el in siblings):
        return  # loose text between the siblings would lose its place: leave such markup alone
    labels = [(el, text) for el in siblings if isinstance(el.tag, str) and (text := text_of(el))]
    if not labels or sum(len(text) for _, text in labels) > MAX_LABEL_CHARS:
        return
    for el, _ in labels:  # nearest first: inserting each right after the h1 restores document order
        el.getparent().remove(el)  # with its (blank) tail
        if el.tag in HEADING_TAGS:
            el.tag = "p"
        h1.addnext(el)
