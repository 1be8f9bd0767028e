"""Decoding and parsing a response body (docsbot.content.decoding), through extract_page: bytes and an encoding,
XHTML, wrong charsets, binary and malformed bodies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docsbot.content.extract import ExtractionError, extract_page

# The head and first sections of Debian git-doc's git-add.html (AsciiDoc 10.2 xhtml11 backend), as served.
ASCIIDOC_XHTML = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN"
    "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en">
<head>
<meta http-equiv="Content-Type" content="application/xhtml+xml; charset=UTF-8" />
<meta name="generator" content="AsciiDoc 10.2.0" />
<title>git-add(1)</title>
<style type="text/css">body { font-family: Georgia,serif; }</style>
</head>
<body class="manpage">
<div id="header">
<h1>
git-add(1) Manual Page
</h1>
<h2>NAME</h2>
<div class="sectionbody">
<p>git-add -
   Add file contents to the index
</p>
</div>
</div>
<div id="content">
<div class="sect1">
<h2 id="_synopsis">SYNOPSIS</h2>
<div class="sectionbody">
<div class="verseblock">
<pre class="content"><em>git add</em> [--verbose | -v] [--dry-run | -n] [--] [&lt;pathspec&gt;…]</pre>
</div>
</div>
</div>
<div class="sect1">
<h2 id="_description">DESCRIPTION</h2>
<div class="sectionbody">
<div class="paragraph"><p>This command updates the index using the current content found in
the working tree, to prepare the content staged for the next commit. See
<a href="git-commit.html">git-commit(1)</a>.</p></div>
</div>
</div>
</div>
<div id="footer">
<div id="footer-text">
Last updated
 2024-05-31 00:35:55 UTC
</div>
</div>
</body>
</html>
"""

# The start of docbook-xsl-doc-html's doc/index.html (DocBook XSL 1.79.1): ISO-8859-1 declared only in a
# <meta>, with no-break spaces as the single byte 0xA0 (nginx sends plain `text/html`, no charset).
DOCBOOK_LATIN1 = (
    '<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
    "<title>DocBook XSL Stylesheets: Reference\xa0Documentation</title>"
    '<link rel="next" href="param.html" title="Parameters"></head><body bgcolor="white">'
    '<div class="navheader"><table width="100%" summary="Navigation header"><tr><th colspan="3" align="center">'
    "DocBook XSL Stylesheets: Reference\xa0Documentation</th></tr></table><hr></div>"
    '<div class="book"><div class="titlepage"><h1 class="title"><a name="id-1"></a>DocBook XSL Stylesheets: '
    "Reference\xa0Documentation</h1></div>"
    "<p>This is generated reference documentation for the DocBook XSL stylesheets. \xa9 1999-2007 Norman Walsh</p>"
    '<dl class="toc"><dt><a href="param.html">User Reference: Parameters</a></dt></dl></div></body></html>'
).encode("latin-1")


@pytest.mark.parametrize("encoding", ["utf-8", None])
def test_xhtml_with_an_xml_encoding_declaration_is_parsed_from_bytes(encoding):
    # lxml refuses a str carrying `<?xml ... encoding=...?>`: this is why git-doc's 242 pages were not indexed.
    page = extract_page(ASCIIDOC_XHTML.encode("utf-8"), "http://h/git/git-add.html", encoding)
    assert page.title == "git-add(1) Manual Page"  # the <h1> of AsciiDoc's #header
    assert "## SYNOPSIS" in page.markdown and "## DESCRIPTION" in page.markdown
    assert "[--] [<pathspec>…]" in page.markdown  # entities and a non-ASCII character decoded
    assert "staged for the next commit" in page.markdown
    assert "Last updated" not in page.markdown
    assert page.links == ["http://h/git/git-commit.html"]


def test_xhtml_with_an_xml_encoding_declaration_is_parsed_from_text_too():
    # Callers that hold decoded text (the render path, tests) keep working.
    page = extract_page(ASCIIDOC_XHTML, "http://h/git/git-add.html")
    assert "## DESCRIPTION" in page.markdown


def test_a_charset_declared_only_in_a_meta_tag_is_honoured_without_a_header():
    page = extract_page(DOCBOOK_LATIN1, "http://h/docbook/index.html")
    assert page.title == "DocBook XSL Stylesheets: Reference Documentation"  # the no-break space, decoded
    assert "\ufffd" not in page.markdown and "© 1999-2007 Norman Walsh" in page.markdown
    assert page.links == ["http://h/docbook/param.html"]


def test_the_response_encoding_wins_over_the_body_declaration():
    # Scrapy resolves the HTTP header's charset first (response.encoding): latin-1 there, UTF-8 in the <meta>.
    body = '<html><head><meta charset="utf-8"><title>t</title></head><body><main><p>caf\xe9</p></main></body></html>'
    page = extract_page(body.encode("latin-1"), "http://h/", "iso-8859-1")
    assert page.markdown == "café"


def test_a_wrong_charset_declaration_costs_characters_never_the_rest_of_the_page():
    # Declared UTF-8, written in Latin-1: libxml2 given these bytes stops or garbles at the first invalid byte;
    # decoding with replacement keeps every later paragraph.
    body = (
        '<html><head><meta charset="utf-8"><title>Crème</title></head><body><main>'
        "<h1>Cr\xe8me br\xfbl\xe9e</h1><p>First paragraph.</p><p>Last paragraph survives.</p></main></body></html>"
    ).encode("latin-1")
    for encoding in ("utf-8", None):
        page = extract_page(body, "http://h/", encoding)
        assert page.title == "Cr\ufffdme br\ufffdl\ufffde"
        assert page.markdown.endswith("First paragraph.\n\nLast paragraph survives.")


def test_an_unknown_encoding_name_falls_back_to_detection():
    body = '<html><head><meta charset="utf-8"></head><body><main><p>naïve</p></main></body></html>'.encode()
    assert extract_page(body, "http://h/", "x-no-such-charset").markdown == "naïve"


def test_utf16_with_a_byte_order_mark_is_decoded():
    body = "<html><body><main><p>Grüße</p></main></body></html>".encode("utf-16")
    assert extract_page(body, "http://h/", None).markdown == "Grüße"


@pytest.mark.parametrize(
    "body",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8,  # an image
        b"\x1f\x8b\x08\x00" + bytes(range(255, -1, -1)) * 16,  # a gzip stream
        bytes((i * 7919) % 256 for i in range(4096)),  # any binary data
    ],
    ids=["png", "gzip", "random"],
)
@pytest.mark.parametrize("encoding", ["utf-8", "cp1252", None])
def test_binary_data_served_as_html_is_refused(body, encoding):
    with pytest.raises(ExtractionError, match="binary"):
        extract_page(body, "http://h/file.html", encoding)


def test_malformed_html_is_repaired_not_refused():
    body = (
        b"<title>Broken</title><div class=body role=main><h1>Broken <b>page</h1><p>Unclosed <i>italic"
        b"<table><tr><td>cell<p>stray</div></div></span><p>Tail text.<a href=next.html>next</a>"
    )
    page = extract_page(body, "http://h/broken.html", "utf-8")
    assert page.title == "Broken page"
    assert "cell" in page.markdown and "Tail text." in page.markdown
    assert page.links == ["http://h/next.html"]


@pytest.mark.parametrize("body", [b"   \n", b"\xef\xbb\xbf", b"<!-- only a comment -->"])
def test_bodies_without_content_raise(body):
    with pytest.raises(ExtractionError):
        extract_page(body, "http://h/", "utf-8")


def _installed_pages(root: str, limit: int) -> list:
    from pathlib import Path

    pages = sorted(Path(root).rglob("*.html"))[:limit]
    return pages or [pytest.param(None, marks=pytest.mark.skip(reason=f"no HTML under {root} (apt-get install)"))]


@pytest.mark.parametrize(
    "path",
    _installed_pages("/usr/share/doc/git-doc", 400) + _installed_pages("/usr/share/doc/docbook-xsl-doc-html", 60),
    ids=str,
)
def test_every_installed_asciidoc_and_docbook_page_yields_content(path):
    """Debian's git-doc (AsciiDoc XHTML, DocBook XSL) and docbook-xsl-doc-html pages parse as served by nginx
    (bytes, no charset header): Markdown without replacement characters (some howtos have an empty <title>)."""
    page = extract_page(path.read_bytes(), f"http://h/{path.name}", None)
    assert page.markdown.strip()
    assert "\ufffd" not in page.markdown


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["<p>", "x", " ", "\t", "\n", "é", "\ufffd", "&#1;", "&#x1F;", "&#9;", "&#65;", "&#"]),
            st.characters(max_codepoint=0x20),
            st.sampled_from(["\ufffe", "\uffff", "\ud800", "\udfff", "\U0001f600"]),
        ),
        max_size=30,
    ).map("".join)
)
def test_what_xml_forbids_is_removed_as_by_the_expressions_alone(text):
    """decode_html reads on the text's UTF-8 whether anything is to be removed, and removes it by the expressions:
    the text they leave on texts of C0 controls, U+FFFE/U+FFFF, lone surrogates and references to controls among
    characters that stay (a tab, a newline, U+FFFD, an astral character, a reference to a letter)."""
    from docsbot.content.decoding import _CONTROL, _NOT_XML, _NOT_XML_REFERENCE, BINARY_SHARE, decode_html

    if text and len(_CONTROL.findall(text)) > BINARY_SHARE * len(text):
        with pytest.raises(ExtractionError, match="binary"):
            decode_html(text)
    else:
        assert decode_html(text) == _NOT_XML_REFERENCE.sub("", _NOT_XML.sub("", text))
