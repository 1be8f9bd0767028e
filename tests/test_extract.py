from __future__ import annotations

import lxml.etree
import pytest

from docsbot.content.chunking import Chunker
from docsbot.content.extract import ExtractionError, Symbol, content_hash, extract_page, is_chrome, parse_html

SPHINX = """<!DOCTYPE html><html><head><title>asyncio — Python 3.11 documentation</title>
<link rel="canonical" href="https://docs.python.org/3/library/asyncio-task.html"></head><body>
<div class="related" role="navigation"><a href="../genindex.html">index</a></div>
<div class="sphinxsidebar"><a href="../contents.html">Contents</a></div>
<div class="document"><div class="body" role="main">
<section><h1>Coroutines and Tasks<a class="headerlink" href="#x">¶</a></h1>
<p>This section outlines <a href="asyncio.html">asyncio</a> APIs.</p>
<dl class="py function"><dt class="sig sig-object py" id="asyncio.create_task">
<span class="sig-prename">asyncio.</span><span class="sig-name">create_task</span>(<em>coro</em>)</dt>
<dd><p>Wrap the <em>coro</em> coroutine into a Task. Return the Task object.</p></dd></dl>
<div class="highlight-python3 notranslate"><div class="highlight"><pre><span class="k">async</span> def main():
    task = asyncio.create_task(nested())</pre></div></div>
<table><thead><tr><th>Name</th><th>Meaning</th></tr></thead>
<tbody><tr><td>FIRST</td><td>first done</td></tr></tbody></table>
</section></div></div>
<div class="footer">© Copyright. <a href="https://github.com/x/edit">Edit this page</a></div>
<footer>Last updated on Nov 22, 2026</footer></body></html>"""


def test_sphinx_page_keeps_content_headings_code_and_tables():
    page = extract_page(SPHINX, "http://h/3/library/asyncio-task.html")
    assert page.title == "Coroutines and Tasks"
    md = page.markdown
    assert md.startswith("# Coroutines and Tasks\n")
    assert "¶" not in md
    assert "```python3\nasync def main():\n    task = asyncio.create_task(nested())\n```" in md
    assert "| Name | Meaning |" in md and "| FIRST | first done |" in md
    assert "Wrap the *coro* coroutine into a Task." in md
    for chrome in ("Contents", "index", "Last updated"):
        assert chrome not in md
    assert page.canonical_url == "https://docs.python.org/3/library/asyncio-task.html"


def test_links_come_from_the_whole_page_canonicalized():
    page = extract_page(SPHINX, "http://h/3/library/asyncio-task.html")
    assert page.links == [
        "http://h/3/genindex.html",
        "http://h/3/contents.html",
        "http://h/3/library/asyncio.html",
        "https://github.com/x/edit",
    ]


def test_links_are_each_url_once_in_the_order_first_linked_whatever_the_fragment():
    html = (
        "<html><body><main><h1>Index</h1><p>"
        + "".join(
            f'<a href="{h}">x</a>'
            for h in (
                "b.html#one",
                "a.html",
                "b.html#two",
                "./b.html",
                "a.html#z",
                "../up.html#s",
                "c.html?q=1#f",
                "#top",
                "b.html",
            )
        )
        + "</p></main></body></html>"
    )
    page = extract_page(html, "http://h/docs/index.html")
    assert page.links == [
        "http://h/docs/b.html",
        "http://h/docs/a.html",
        "http://h/up.html",
        "http://h/docs/c.html?q=1",
    ]


def test_hash_ignores_chrome_but_not_content():
    a = extract_page(SPHINX, "http://h/a.html")
    b = extract_page(SPHINX.replace("Nov 22, 2026", "Dec 1, 2026"), "http://h/a.html")
    c = extract_page(SPHINX.replace("Return the Task object", "Return a Task"), "http://h/a.html")
    assert content_hash(a.title, a.markdown) == content_hash(b.title, b.markdown)
    assert content_hash(a.title, a.markdown) != content_hash(c.title, c.markdown)


def test_mkdocs_material_article_is_the_main_content():
    html = """<html><body><header class="md-header">Site</header><nav class="md-nav">Nav</nav>
    <main><div class="md-content"><article class="md-content__inner md-typeset">
    <a class="md-content__button" href="edit">Edit this page</a><h1>Usage</h1><p>Call it.</p>
    <pre><code class="language-bash">pip install x</code></pre></article></div></main></body></html>"""
    page = extract_page(html, "http://h/usage/")
    assert page.markdown == "# Usage\n\nCall it.\n\n```bash\npip install x\n```"


@pytest.mark.parametrize("body", ["", "   ", b""])
def test_empty_documents_raise(body):
    with pytest.raises(ExtractionError):
        extract_page(body, "http://h/")


# --- Parsing entry: bytes + encoding, XHTML, wrong charsets, binary and malformed bodies -------------------------

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


SPHINX_DEFS = """<html><head><title>os</title></head><body><div class="body" role="main">
<section id="module-os"><h1>os — Miscellaneous interfaces</h1>
<p>Intro with a <a href="x.html">link</a>.</p>
<section id="inheritance"><h2>Inheritance of File Descriptors</h2>
<dl class="py function"><dt class="sig sig-object py" id="os.set_inheritable">
<span class="sig-prename descclassname">os.</span><span class="sig-name descname">set_inheritable</span>
(<em>fd</em>)</dt>
<dd><p>Set the inheritable flag.</p></dd></dl>
<dl class="c function"><dt class="sig sig-object c" id="c.PyCell_Get">
<span class="sig-name descname">PyCell_Get</span>()</dt><dd><p>Get a cell.</p></dd></dl>
</section></section>
<span id="command:add_executable"></span><section id="add-executable"><h2>add_executable</h2><p>Adds.</p></section>
<span class="target" id="index-0-command:add_library"></span>
</div></body></html>"""


def _without_ids(html: str) -> str:
    import re

    return re.sub(r'\s(id)="[^"]*"', "", html)


def test_definitions_and_headings_become_anchors_and_symbols_without_changing_the_markdown():
    page = extract_page(SPHINX_DEFS, "http://h/library/os.html")
    plain = extract_page(_without_ids(SPHINX_DEFS), "http://h/library/os.html")
    assert page.markdown == plain.markdown and page.title == plain.title
    assert "\uf8ff" not in page.markdown
    assert [s.name for s in page.symbols] == ["os", "os.set_inheritable", "PyCell_Get", "add_executable"]
    assert page.symbols[1].anchor == "os.set_inheritable" and page.symbols[3].anchor == "command:add_executable"
    ids = [a.id for a in page.anchors]
    assert ids == ["module-os", "inheritance", "os.set_inheritable", "c.PyCell_Get", "add-executable"]
    starts_with = ["os — Misc", "Inheritance of", "os.set_inh", "PyCell_Get", "add_exec"]
    for anchor, starts in zip(page.anchors, starts_with, strict=True):
        assert page.markdown[anchor.offset :].startswith(starts), (anchor, page.markdown[anchor.offset :][:20])
    # Each symbol's offset is where its definition's text starts: the module's heading, the signature, and for the
    # CMake target (an empty <span id> before the section) the heading after it. None is an anchor of its own.
    offsets = {s.name: s.offset for s in page.symbols}
    assert offsets == {"os": 2, "os.set_inheritable": page.anchors[2].offset, "PyCell_Get": page.anchors[3].offset,
                       "add_executable": page.anchors[4].offset}  # fmt: skip
    assert page.markdown[offsets["os.set_inheritable"] :].startswith("os.set_inheritable (*fd*)")
    assert extract_page(SPHINX_DEFS, "http://h/library/os.html").anchors == page.anchors  # marks change no anchor


def test_link_share_tells_an_index_from_content():
    index = (
        """<html><body><div role="main"><h1>Index</h1><ul>"""
        + "".join(f'<li><a href="p{i}.html">entry_{i} (in module m)</a></li>' for i in range(50))
        + "</ul></div></body></html>"
    )
    assert extract_page(index, "http://h/genindex.html").link_share > 0.9
    assert extract_page(SPHINX_DEFS, "http://h/os.html").link_share < 0.1


def test_a_method_is_named_by_its_whole_dotted_id():
    html = """<html><body><div role="main"><h1>collections</h1><dl class="py class">
    <dt class="sig sig-object py" id="collections.deque"><em>class </em><span class="sig-prename">collections.</span>
    <span class="sig-name">deque</span></dt><dd><dl class="py method">
    <dt class="sig sig-object py" id="collections.deque.count"><span class="sig-name">count</span>(<em>x</em>)</dt>
    <dd><p>Count.</p></dd></dl></dd></dl></div></body></html>"""
    names = [s.name for s in extract_page(html, "http://h/collections.html").symbols]
    assert names == ["collections.deque", "collections.deque.count"]


GIDOCGEN = """<!DOCTYPE html><html><head><title>Gtk.Button.set_label</title></head><body>
<header class="site"><a href="index.html">Gtk 4 reference</a></header>
<div id="body-wrapper"><nav class="sidebar"><a href="class.Button.html">Button</a></nav>
<section id="main" class="content">
  <header><h3>Method</h3>
    <h1><a href="index.html">Gtk</a><span class="sep"></span><a href="class.Button.html">Button</a>
<span class="sep"></span>set_label</h1>
  </header>
  <section><div class="declaration toggle-wrapper">
    <h4 id="declaration">Declaration <a class="srclink" href="https://gitlab.gnome.org/x.h#L94">[src]</a></h4>
    <div class="docblock c-decl"><pre><code><div class="highlight"><pre><span class="kt">void</span>
<span class="n">gtk_button_set_label</span> (GtkButton* button, const char* label)
</pre></div></code></pre></div>
  </div>
  <div class="docblock"><p>Sets the text of the label of the button to <code>label</code>.</p></div></section>
</section></div></body></html>"""


def test_gidocgen_heading_inside_the_main_section_is_the_title_and_its_declaration_a_symbol():
    """gi-docgen puts the page's <h1> in a <header> inside <section id="main">: a section header, not the site's
    banner (HTML-AAM), so it stays; its parts, drawn apart by empty <span class="sep">, keep their dots."""
    page = extract_page(GIDOCGEN, "http://h/gtk4/method.Button.set_label.html")
    assert page.title == "Gtk.Button.set_label"
    assert page.markdown.startswith("# Gtk.Button.set_label\n\nMethod\n\n")  # the kind label follows the title
    assert "Gtk 4 reference" not in page.markdown  # the banner <header> outside the section is still chrome
    assert "[src]" not in page.markdown
    assert page.markdown.count("```") == 2  # one code block, not a fence inside a fence
    assert "```\nvoid\ngtk_button_set_label (GtkButton* button, const char* label)\n```" in page.markdown
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("Gtk.Button.set_label", "main"),
        ("gtk_button_set_label", "main"),
    ]
    # the page's symbol starts at its heading, the C function at its declaration
    assert page.markdown[page.symbols[0].offset :].startswith("Gtk.Button.set_label\n\nMethod")
    assert page.markdown[page.symbols[1].offset :].startswith("void\ngtk_button_set_label (")


ASCIIDOC_MANPAGE = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>git-add(1)</title>
<meta name="generator" content="AsciiDoc 10.2.0" /></head>
<body class="manpage">
<div id="header"><h1>git-add(1) Manual Page</h1>
<h2>NAME</h2><div class="sectionbody"><p>git-add - Add file contents to the index</p></div></div>
<div id="content"><div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2>
<div class="sectionbody"><pre class="content"><em>git add</em> [--verbose | -v]</pre></div></div></div>
<div id="footnotes"><hr /></div>
<div id="footer"><div id="footer-text">Last updated 2024-05-31 00:35:55 UTC</div></div>
</body></html>"""


def test_asciidoc_header_with_the_name_section_is_content_and_the_footer_is_not():
    page = extract_page(ASCIIDOC_MANPAGE.encode(), "http://h/git-add.html", None)
    assert page.title == "git-add(1) Manual Page"
    assert page.markdown.startswith("# git-add(1) Manual Page\n\n## NAME\n\ngit-add - Add file contents to the index")
    assert "## SYNOPSIS" in page.markdown
    assert "Last updated" not in page.markdown
    touched = extract_page(ASCIIDOC_MANPAGE.replace("2024-05-31", "2026-11-23").encode(), "http://h/git-add.html")
    assert content_hash(touched.title, touched.markdown) == content_hash(page.title, page.markdown)


DOCBOOK = """<html><head><title>Chapter 2. Basics</title>
<meta name="generator" content="DocBook XSL Stylesheets V1.79.1"></head><body>
<div class="navheader"><table summary="Navigation header"><tr><th colspan="3">Chapter 2. Basics</th></tr>
<tr><td><a accesskey="p" href="ch01.html">Prev</a></td><th>Part I</th>
<td><a accesskey="n" href="ch03.html">Next</a></td>
</tr></table><hr></div>
<div class="chapter"><div class="titlepage"><h1 class="title"><a name="basics"></a>Chapter 2. Basics</h1></div>
<p>Stylesheets transform DocBook documents.</p></div>
<div class="navfooter"><hr><table summary="Navigation footer"><tr><td><a href="ch01.html">Prev</a></td>
<td><a accesskey="u" href="index.html">Up</a></td><td><a href="ch03.html">Next</a></td></tr></table></div>
</body></html>"""


def test_docbook_navigation_tables_are_chrome_but_their_links_are_followed():
    page = extract_page(DOCBOOK, "http://h/ch02.html")
    assert page.markdown == "# Chapter 2. Basics\n\nStylesheets transform DocBook documents."
    assert page.links == ["http://h/ch01.html", "http://h/ch03.html", "http://h/index.html"]


RUSTDOC = """<html><head><title>Vec in std::vec - Rust</title></head><body>
<nav class="sidebar"><a href="#method.push">push</a></nav>
<main><div class="width-limiter"><section id="main-content" class="content">
<div class="main-heading"><h1 class="fqn"><span class="in-band">Struct <a href="../index.html">std</a>::<wbr>
<a href="index.html">vec</a>::<wbr><a class="struct" href="#">Vec</a><button id="copy-path">copy</button></span></h1>
<span class="out-of-band"><span class="since">1.0.0</span> · <a class="srclink" href="../src/vec.rs">source</a> ·
<a id="toggle-all-docs" href="#">[<span class="inner">−</span>]</a></span></div>
<details class="toggle top-doc" open><summary class="hideme"><span>Expand description</span></summary>
<div class="docblock"><p>A contiguous growable array type.</p></div></details>
<section id="method.push" class="method"><span class="rightside"><span class="since">1.0.0</span> ·
<a class="srclink" href="../src/vec.rs#1">source</a></span>
<h4 class="code-header">pub fn push(&amp;mut self, value: T)</h4></section>
<div class="docblock"><p>Appends an element to the back of a collection.</p>
<div class="example-wrap"><pre class="rust rust-example-rendered">vec.push(3);</pre><a class="test-arrow" href="https://play">Run</a></div></div>
<section id="impl-Clone-for-Vec" class="impl"><h3 class="code-header">impl Clone for Vec</h3></section>
</section></div></main></body></html>"""


def test_rustdoc_item_and_members_are_symbols_and_its_toggles_are_chrome():
    page = extract_page(RUSTDOC, "http://h/std/vec/struct.Vec.html")
    assert page.symbols == [
        Symbol("std::vec::Vec", "main-content"),  # the whole page: no offset
        Symbol("std::vec::Vec::push", "method.push", page.markdown.index("pub fn push")),
    ]
    for chrome in ("1.0.0", "source", "Expand description", "[−]", "Run", "copy"):
        assert chrome not in page.markdown, chrome
    assert "#### pub fn push(&mut self, value: T)" in page.markdown
    assert "Appends an element to the back of a collection." in page.markdown


JAVADOC = """<html><head><title>ArrayList (Java SE 17 &amp; JDK 17)</title></head><body>
<header role="banner" class="flex-header"><nav><a href="../../../index.html">Overview</a></nav></header>
<div class="flex-content"><main role="main"><div class="header">
<div class="sub-title"><span class="module-label-in-type">Module</span>&nbsp;
<a href="../../module-summary.html">java.base</a></div>
<div class="sub-title"><span class="package-label-in-type">Package</span>&nbsp;
<a href="package-summary.html">java.util</a></div>
<h1 title="Class ArrayList" class="title">Class ArrayList&lt;E&gt;</h1></div>
<section class="class-description" id="class-description">
<div class="block">Resizable-array implementation.</div></section>
<section class="constructor-details" id="constructor-detail"><h2>Constructor Details</h2>
<section class="detail" id="&lt;init&gt;(int)"><h3>ArrayList</h3>
<div class="block">Constructs an empty list.</div></section></section>
<section class="method-details" id="method-detail"><h2>Method Details</h2>
<section class="detail" id="add(E)"><h3>add</h3><div class="block">Appends the specified element.</div></section>
</section></main></div></body></html>"""


def test_javadoc_type_and_member_details_are_symbols():
    page = extract_page(JAVADOC, "http://h/api/java.base/java/util/ArrayList.html")
    assert page.title == "Class ArrayList<E>"
    # The Module/Package lines follow the title: before it they were a chunk of their own, under no heading.
    head = page.markdown.partition("Resizable-array")[0]
    assert head.startswith("# Class ArrayList<E>\n\n")
    assert head.split()[3:] == ["Module", "java.base", "Package", "java.util"]
    assert page.symbols == [
        Symbol("java.util.ArrayList", "class-description"),  # no type signature: the whole page
        Symbol("java.util.ArrayList.add", "add(E)", page.markdown.index("add\n\nAppends")),
    ]


def test_javadoc_sections_laid_out_as_lists_keep_their_headings():
    """Javadoc 17 nests its sections in lists (<ul class="details-list"><li><section><h2>); as list items their
    headings were "- ## Method Details", which the chunker cannot see: every chunk fell under the title alone."""
    html = """<html><body><main role="main"><div class="header"><h1 class="title">Class ArrayList</h1></div>
    <section class="details"><ul class="details-list"><li><section class="method-details" id="method-detail">
    <h2>Method Details</h2><ul class="member-list"><li><section class="detail" id="add(E)"><h3>add</h3>
    <div class="block">Appends the specified element.</div></section></li><li><section class="detail" id="size()">
    <h3>size</h3><div class="block">Returns the number of elements.</div></section></li></ul></section></li></ul>
    </section><ul><li><h3>A real list</h3></li><li>whose items are not all headed</li></ul></main></body></html>"""
    page = extract_page(html, "http://h/ArrayList.html")
    assert "\n## Method Details\n\n### add\n\nAppends the specified element.\n\n### size\n" in page.markdown
    assert "- ### A real list" in page.markdown
    chunks = Chunker(16).chunks(page.markdown, page.anchors)
    assert {("add", "add(E)"), ("size", "size()")} <= {(c.heading_path[-1], c.anchor) for c in chunks}


@pytest.mark.parametrize(
    ("path", "title", "expected"),
    [
        (
            "/usr/share/doc/libgtk-4-doc/gtk4/ctor.Button.new.html",
            "Gtk.Button.new",
            {"Gtk.Button.new", "gtk_button_new"},
        ),
        ("/usr/share/doc/libgtk-4-doc/gtk4/class.Button.html", "Gtk.Button", {"Gtk.Button", "GtkButton"}),
        ("/usr/share/doc/rust-doc/html/std/vec/struct.Vec.html", None, {"std::vec::Vec", "std::vec::Vec::push"}),
        ("/usr/share/doc/rust-doc/html/std/thread/fn.spawn.html", None, {"std::thread::spawn"}),
        (
            "/usr/share/doc/openjdk-17-doc/api/java.base/java/util/ArrayList.html",
            None,
            {"java.util.ArrayList", "java.util.ArrayList.add", "java.util.ArrayList.removeIf"},
        ),
        ("/usr/share/doc/git/html/git-config.html", None, {"core.fileMode", "--replace-all", "add.ignoreErrors"}),
        ("/usr/share/doc/git/html/git-add.html", None, {"add.ignoreErrors", "--dry-run", "-n"}),
        ("/usr/share/doc/docbook-xsl-doc-html/doc/html/admon.graphics.html", None, {"admon.graphics"}),
        ("/usr/share/doc/lmdb-doc/html/group__mdb__env.html", "Environment Flags", {"MDB_NOSUBDIR", "MDB_RDONLY"}),
        (
            "/usr/share/doc/libjsoncpp-doc/class_json_1_1_value.html",
            "Json::Value Class Reference",
            {"Json::Value", "Json::Value::isNull", "Json::Value::ArrayIndex"},
        ),
        # table rows and list items: system properties, constants, enum members, environment variables of CMake
        ("/usr/share/doc/openjdk-17-doc/api/java.base/java/lang/System.html", None, {"java.home", "user.dir"}),
        ("/usr/share/doc/python3.11/html/library/select.html", None, {"EPOLLIN", "KQ_FILTER_READ"}),
        ("/usr/share/doc/python3.11/html/library/curses.html", None, {"A_BOLD", "KEY_DOWN", "COLOR_RED"}),
        ("/usr/share/doc/libgtk-4-doc/gtk4/enum.PrintQuality.html", None, {"GTK_PRINT_QUALITY_LOW"}),
        ("/usr/share/doc/cmake-data/html/module/FindPython.html", None, {"Development.Embed"}),
    ],
    ids=lambda v: v if isinstance(v, str) and v.startswith("/") else "",
)
def test_installed_reference_pages_yield_their_symbols(path, title, expected):
    """The same rules on real pages of the corpus matrix's packages (make corpora installs them)."""
    from pathlib import Path

    if not Path(path).exists():
        pytest.skip(f"{path} not installed (make corpora)")
    page = extract_page(Path(path).read_bytes(), f"http://h/{Path(path).name}", None)
    assert expected <= {s.name for s in page.symbols}
    if title:
        assert page.title == title
    # Each offset is where the definition's text starts: its name is there (a Doxygen class's is its "Detailed
    # Description", at its anchor; rustdoc's item is the whole page).
    for symbol in page.symbols:
        if symbol.anchor == "main-content":
            assert symbol.offset is None
        elif symbol.anchor != "details":
            last = symbol.name.replace("::", ".").rpartition(".")[2].lower()
            assert last in page.markdown[symbol.offset : symbol.offset + 300].replace(".", "").lower(), symbol


DOCBOOK_XSL = "/usr/share/xml/docbook/stylesheet/docbook-xsl/xhtml/docbook.xsl"
DOCBOOK_SOURCE = """<?xml version="1.0"?>
<article id="runtime-config"><title>Server Configuration</title>
<sect1 id="runtime-config-resource"><title>Resource Consumption</title>
<variablelist>
<varlistentry id="guc-work-mem"><term><varname>work_mem</varname> (<type>integer</type>)<indexterm><primary>
<varname>work_mem</varname> configuration parameter</primary></indexterm></term>
<listitem><para>Sets the base maximum amount of memory.</para></listitem></varlistentry>
<varlistentry><term><envar>PGHOST</envar></term><listitem><para>The host to connect to.</para></listitem>
</varlistentry>
<varlistentry id="libpq-connect-sslmode"><term><literal>sslmode</literal></term><listitem><para>SSL.</para>
<variablelist><varlistentry><term><literal>disable</literal></term><listitem><para>Only non-SSL.</para></listitem>
</varlistentry></variablelist></listitem></varlistentry>
<varlistentry><term>true</term><listitem><para>A plain term.</para></listitem></varlistentry>
</variablelist>
<funcsynopsis><funcprototype><funcdef>PGconn *<function>PQconnectdb</function></funcdef>
<paramdef>const char *<parameter>conninfo</parameter></paramdef></funcprototype></funcsynopsis>
</sect1>
<sect1 id="ref"><title>Reference</title>
<refentry id="app-pgdump"><refnamediv><refname>pg_dump</refname><refname>pg_dumpall</refname>
<refpurpose>extract a database</refpurpose></refnamediv>
<refsect1><title>Description</title><para>Dumps.</para></refsect1></refentry>
<refentry id="sql-createtable"><refnamediv><refname>CREATE TABLE</refname><refpurpose>define a new table</refpurpose>
</refnamediv><refsect1><title>Description</title><para>Creates.</para></refsect1></refentry>
</sect1></article>"""


def test_docbook_definitions_become_symbols_at_their_anchors():
    """DocBook XSL's own output (xsltproc with the Debian docbook-xsl stylesheets, as DocBook sites build):
    variablelist terms marked as names or shown as code under an id of their own, function synopses and refentry
    names are symbols; the entry's anchor is DocBook's empty <a id> at the start of its <dt>, and a term without one
    takes its section's (which DocBook also anchors inside the heading)."""
    import shutil
    import subprocess
    from pathlib import Path

    if not shutil.which("xsltproc") or not Path(DOCBOOK_XSL).exists():
        pytest.skip("xsltproc and docbook-xsl not installed (make corpora installs them)")
    html = subprocess.run(
        ["xsltproc", DOCBOOK_XSL, "-"], input=DOCBOOK_SOURCE.encode(), capture_output=True, check=True
    ).stdout
    page = extract_page(html, "http://h/runtime-config.html", "utf-8")
    assert {(s.name, s.anchor) for s in page.symbols} == {
        ("work_mem", "guc-work-mem"),
        ("PGHOST", "runtime-config-resource"),
        ("sslmode", "libpq-connect-sslmode"),
        ("PQconnectdb", "runtime-config-resource"),
        ("pg_dump", "app-pgdump"),
        ("pg_dumpall", "app-pgdump"),
        ("CREATE TABLE", "sql-createtable"),  # the second refentry: a separator <div> before its <a id>
    }  # not "integer" (a type beside the name), "disable" (a value), "true" (a plain word without an anchor)
    ids = [a.id for a in page.anchors]
    assert {"runtime-config-resource", "guc-work-mem", "libpq-connect-sslmode"} <= set(ids)
    work_mem = next(a for a in page.anchors if a.id == "guc-work-mem")
    assert page.markdown[work_mem.offset :].startswith("`work_mem`")
    # Offsets: at the term, with an id of its own or not (PGHOST), the function synopsis and the refentry's names.
    starts = {s.name: page.markdown[s.offset :] for s in page.symbols}
    assert starts["work_mem"].startswith("`work_mem` (integer)\n\nSets the base maximum amount of memory.")
    assert starts["PGHOST"].startswith("`PGHOST`\n\nThe host to connect to.")
    assert starts["sslmode"].startswith("`sslmode`\n\nSSL.")
    assert starts["PQconnectdb"].startswith("`PGconn *PQconnectdb(`")
    assert starts["pg_dump"].startswith("pg_dump, pg_dumpall — extract a database")
    assert starts["CREATE TABLE"].startswith("CREATE TABLE — define a new table")
    assert "runtime-config-resource" not in ids[ids.index("guc-work-mem") :]  # PGHOST's term is no anchor


def test_terms_that_name_identifiers_are_symbols_links_and_words_are_not():
    """AsciiDoc's labelled lists (git's options and configuration variables) and a term that only links to a
    definition elsewhere (Sphinx lists of constants), mkdocstrings' and Doxygen's headings."""
    asciidoc = """<html><body><div id="header"><h1>git-config(1) Manual Page</h1></div><div id="content">
    <div class="sect1"><h2 id="_variables">Variables</h2><div class="sectionbody"><div class="dlist"><dl>
    <dt class="hdlist1">core.fileMode</dt><dd><p>Tells Git if the executable bit is to be honored.</p></dd>
    <dt class="hdlist1"><code>--dry-run</code></dt><dd><p>Do not act.</p></dd>
    <dt class="hdlist1">color</dt><dd><p>A colour.</p></dd>
    <dt class="hdlist1">advice.*</dt><dd><p>Advice.</p></dd>
    <dt><a class="reference internal" href="os.html#os.O_RDONLY"><code>os.O_RDONLY</code></a></dt><dd>x</dd>
    </dl></div></div></div></div></body></html>"""
    page = extract_page(asciidoc, "http://h/git-config.html")
    assert [(s.name, s.anchor) for s in page.symbols] == [("core.fileMode", "_variables"), ("--dry-run", "_variables")]
    mkdocstrings = """<html><body><main><h1>API</h1><div class="doc doc-object doc-function">
    <h2 id="mkdocs_autorefs.plugin.AutorefsPlugin.on_config" class="doc doc-heading"><code>on_config</code></h2>
    <div class="doc doc-contents"><p>Called on config.</p></div></div></main></body></html>"""
    page = extract_page(mkdocstrings, "http://h/reference/plugin.html")
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("mkdocs_autorefs.plugin.AutorefsPlugin.on_config", "mkdocs_autorefs.plugin.AutorefsPlugin.on_config")
    ]
    markdown_built = """<html><body><main><h1 id="runtime-api">Runtime API</h1>
    <h2 id="usedata" tabindex="-1"><code>useData</code> <a class="header-anchor" href="#usedata">\u200b</a></h2>
    <p>Returns page-specific data.</p>
    <h2 id="the-usedata-hook"><code>useData</code> in a component</h2><p>Not a definition: more than the name.</p>
    <h3 id="withbase"><a class="header" href="#withbase"><code>withBase()</code></a></h3><p>Prefixes a path.</p>
    </main></body></html>"""
    page = extract_page(markdown_built, "http://h/reference/runtime-api.html")
    assert [(s.name, s.anchor) for s in page.symbols] == [("useData", "usedata"), ("withBase", "withbase")]
    # Docusaurus (Fastify's reference): members and calls as plain-text headings, code headings with parameters
    docusaurus = """<html><body><main><article><h1 id="reply">Reply</h1><h4 id="properties">Properties</h4>
    <h5 class="anchor" id="statuscode">.statusCode<a href="#statuscode" class="hash-link">\u200b</a></h5>
    <p>The HTTP status code.</p>
    <h5 class="anchor" id="codestatuscode">.code(statusCode)<a href="#codestatuscode" class="hash-link">\u200b</a></h5>
    <h6 id="objects">Objects</h6><p>Not a name: a word.</p><h6 id="node">Node.js</h6><p>Nor a product.</p>
    <h3 id="decorate"><code>decorate(name, value, [dependencies])</code><a class="hash-link" href="#d">\u200b</a></h3>
    <h3 id="runmain">Py_RunMain()</h3><p>A section a signature below defines; not at the section.</p>
    </article></main></body></html>"""
    page = extract_page(docusaurus, "http://h/Reference/Reply/")
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("statusCode", "statuscode"),
        ("code", "codestatuscode"),
        ("decorate", "decorate"),
    ]


# git-config.html as Debian's git-doc has it (AsciiDoc 10.2): labelled-list terms without an id of their own.
GIT_CONFIG_TERMS = """<html><head><title>git-config(1)</title></head><body class="manpage"><div id="header">
<h1>git-config(1) Manual Page</h1></div><div id="content"><div class="sect1"><h2 id="_variables">Variables</h2>
<div class="sectionbody"><div class="dlist"><dl>
<dt class="hdlist1">
core.fileMode
</dt>
<dd>
<p>
        Tells Git if the executable bit of files in the working tree
        is to be honored.
</p>
</dd>
<dt class="hdlist1">
core.hideDotFiles
</dt>
<dd>
<p>
        (Windows-only) If true, mark newly-created directories and files whose
        name starts with a dot as hidden.
</p>
</dd>
</dl></div></div></div></div></body></html>"""


def test_a_term_without_an_id_has_its_definitions_offset_and_no_anchor_of_its_own():
    """git's configuration variables are terms without ids: the symbol keeps the heading's anchor (the deep link)
    and gets the offset of its own text (where an answer quotes the definition from)."""
    page = extract_page(GIT_CONFIG_TERMS, "http://h/git-config.html")
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("core.fileMode", "_variables"),
        ("core.hideDotFiles", "_variables"),
    ]
    assert page.markdown[page.symbols[0].offset :].startswith("core.fileMode\n\nTells Git if the executable bit")
    assert page.markdown[page.symbols[1].offset :].startswith("core.hideDotFiles\n\n(Windows-only) If true")
    assert [a.id for a in page.anchors] == ["header", "_variables"]  # the terms' marks are no anchors
    assert "\uf8ff" not in page.markdown


# PostgreSQL's function tables as its DocBook stylesheets write them (PostgreSQL 13 and later, functions-math.html;
# the section anchored as DocBook XSL's defaults anchor it): one column, the signature, the description and the
# example as paragraphs of one cell; an operator's row starts with a type; the header row is <th>s in <thead>.
POSTGRES_FUNCTIONS = """<html><head><title>9.3. Mathematical Functions and Operators</title></head><body>
<div class="sect1"><div class="titlepage"><div><div><h2 class="title" style="clear: both"><a id="functions-math">
</a>9.3. Mathematical Functions and Operators</h2></div></div></div>
<div class="table" id="FUNCTIONS-MATH-OP-TABLE"><p class="title"><strong>Table 9.4. Mathematical Operators</strong></p>
<div class="table-contents"><table class="table" summary="Mathematical Operators" border="1"><colgroup><col />
</colgroup><thead><tr><th class="func_table_entry"><p class="func_signature">
        Operator
       </p>
       <p>
        Description
       </p>
       <p>
        Example(s)
       </p></th></tr></thead><tbody><tr><td class="func_table_entry"><p class="func_signature">
        <code class="type">numeric_type</code> <code class="literal">+</code> <code class="type">numeric_type</code>
        → <code class="returnvalue"><em class="replaceable"><code>numeric_type</code></em></code>
       </p>
       <p>
        Addition
       </p>
       <p>
        <code class="literal">2 + 3</code>
        → <code class="returnvalue">5</code>
       </p></td></tr></tbody></table></div></div>
<div class="table" id="FUNCTIONS-MATH-FUNC-TABLE"><p class="title"><strong>Table 9.5. Mathematical Functions</strong>
</p><div class="table-contents"><table class="table" summary="Mathematical Functions" border="1"><colgroup><col />
</colgroup><thead><tr><th class="func_table_entry"><p class="func_signature">
        Function
       </p>
       <p>
        Description
       </p>
       <p>
        Example(s)
       </p></th></tr></thead><tbody><tr><td class="func_table_entry"><p class="func_signature">
        <a id="id-1.5.8.9.6.2.2.9.1.1.1" class="indexterm"></a>
        <code class="function">ceiling</code> ( <code class="type">numeric</code> )
        → <code class="returnvalue">numeric</code>
       </p>
       <p class="func_signature">
        <code class="function">ceiling</code> ( <code class="type">double precision</code> )
        → <code class="returnvalue">double precision</code>
       </p>
       <p>
        Nearest integer greater than or equal to argument (same
        as <code class="function">ceil</code>)
       </p>
       <p>
        <code class="literal">ceiling(95.3)</code>
        → <code class="returnvalue">96</code>
       </p></td></tr>
<tr><td class="func_table_entry" id="FUNCTION-DEGREES"><p class="func_signature">
        <a id="id-1.5.8.9.6.2.2.10.1.1.1" class="indexterm"></a>
        <code class="function">degrees</code> ( <code class="type">double precision</code> )
        → <code class="returnvalue">double precision</code>
       </p>
       <p>
        Converts radians to degrees
       </p>
       <p>
        <code class="literal">degrees(0.5)</code>
        → <code class="returnvalue">28.64788975654116</code>
       </p></td></tr></tbody></table></div></div></div></body></html>"""


def test_postgresql_function_table_rows_define_their_functions():
    page = extract_page(POSTGRES_FUNCTIONS, "http://h/functions-math.html")
    # not "numeric_type" (an operator's row starts with its operand's type), nor "Operator" or "Function" (headers)
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("ceiling", "functions-math"),
        ("degrees", "FUNCTION-DEGREES"),
    ]
    ceiling, degrees = page.symbols
    assert page.markdown[ceiling.offset :].startswith("`ceiling` ( `numeric` ) → `numeric`")
    assert page.markdown[degrees.offset :].startswith("`degrees` ( `double precision` )")
    # a row's own id is an anchor of the page, at the row's text; a row without one adds none
    assert [a.id for a in page.anchors] == ["functions-math", "FUNCTION-DEGREES"]
    assert page.anchors[1].offset == degrees.offset
    assert "\uf8ff" not in page.markdown


def test_two_column_function_rows_define_the_function_a_call_names():
    """A description in a cell of its own (PostgreSQL before version 13, Markdown tables of functions); the name of a
    call shown whole, ``ceil(x)``, is the function's."""
    html = """<html><body><main><h2 id="math">Mathematical Functions</h2><table>
    <thead><tr><th>Function</th><th>Description</th></tr></thead><tbody>
    <tr><td><code class="function">ceiling</code> ( <code class="type">numeric</code> ) → numeric</td>
    <td>Nearest integer greater than or equal to argument</td></tr>
    <tr><td><code>ceil(x)</code></td><td>Nearest integer greater than or equal to <em>x</em></td></tr>
    <tr><td><code>floor(x)</code></td><td><code>x</code></td></tr>
    <tr><td><code>round(x)</code>, <code>round(x, n)</code></td><td>Nearest integer, or rounded to n places</td></tr>
    </tbody></table></main></body></html>"""
    page = extract_page(html, "http://h/math.html")
    # not floor: its other cell is code, no description in words; not round: a cell of two names
    assert [(s.name, s.anchor) for s in page.symbols] == [("ceiling", "math"), ("ceil", "math")]
    assert page.markdown[page.symbols[1].offset :].startswith("`ceil(x)` | Nearest integer")


# libpq-envars.html as PostgreSQL's DocBook stylesheets write it: an environment variable starts each item.
POSTGRES_ENVARS = """<html><head><title>34.15. Environment Variables</title></head><body><div class="sect1">
<h2 class="title" style="clear: both"><a id="libpq-envars"></a>34.15. Environment Variables</h2>
<p>The following environment variables can be used to specify default behavior for each
   <span class="productname">PostgreSQL</span> session.</p>
<div class="itemizedlist"><ul class="itemizedlist" style="list-style-type: disc; "><li class="listitem"><p>
      <a id="id-1.7.3.22.5.1.1" class="indexterm"></a>
      <code class="envar">PGSYSCONFDIR</code> sets the directory containing the
      <code class="filename">pg_service.conf</code> file and in a future version
      possibly other system-wide configuration files.
     </p></li><li class="listitem"><p>
      <a id="id-1.7.3.22.5.2.1" class="indexterm"></a>
      <code class="envar">PGLOCALEDIR</code> sets the directory containing the <code class="literal">locale</code>
      files for message localization.
     </p></li></ul></div>
<p>Set <code class="envar">PGHOST</code> to connect elsewhere; <code class="envar">PGPORT</code> and
   <code class="envar">PGUSER</code> are read too.</p>
<ul><li><p>If <code class="envar">PGPASSWORD</code> is set, it is used (not recommended).</p></li>
<li><p><code class="envar">PGHOSTADDR</code>, <code class="envar">PGPORT</code> and <code class="envar">PGUSER</code>
 are read too.</p></li>
<li><p><code class="envar">PGAPPNAME</code></p></li></ul>
<ul><li><p><code class="envar">PGGSSLIB</code>:</p><p>The GSS library to use for GSSAPI authentication.</p></li></ul>
</div></body></html>"""


def test_list_items_that_start_with_an_environment_variable_define_it():
    page = extract_page(POSTGRES_ENVARS, "http://h/libpq-envars.html")
    # not PGPASSWORD (code inside the sentence), PGHOSTADDR (a list of names), PGAPPNAME (nothing said of it);
    # PGGSSLIB described in a paragraph of its own
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("PGSYSCONFDIR", "libpq-envars"),
        ("PGLOCALEDIR", "libpq-envars"),
        ("PGGSSLIB", "libpq-envars"),
    ]
    assert page.markdown[page.symbols[0].offset :].startswith("`PGSYSCONFDIR` sets the directory containing")
    assert [a.id for a in page.anchors] == ["libpq-envars"]


def test_tables_of_values_of_prose_and_lists_of_values_define_nothing():
    values = """<html><body><main><h2 id="opts">Options</h2><table><thead><tr><th>Value</th><th>Meaning</th></tr>
    </thead><tbody><tr><td><code>true</code></td><td>Always color the output</td></tr>
    <tr><td><code>false</code></td><td>Never color the output</td></tr>
    <tr><td><code>auto_detect</code></td><td>Color the output when it goes to a terminal</td></tr></tbody></table>
    <table><tr><td><code>0</code></td><td>No compression at all</td></tr>
    <tr><td><code>9</code></td><td>Best compression, slowest</td></tr></table>
    <table><tr><td>Fast mode</td><td>Uses <code>fast_path</code> for small inputs</td></tr>
    <tr><td>Safe mode</td><td>Checks every <code>input_item</code> first</td></tr>
    <tr><td><code>slow_path</code></td><td>The fallback of both</td></tr></table>
    <ul><li><p><code>None</code>: no limit</p></li><li><p><code>max_depth</code>: the deepest level</p></li></ul>
    <ul><li><p>Call <code>reset_all()</code> to start again from the first item.</p></li></ul>
    </main></body></html>"""
    page = extract_page(values, "http://h/options.html")
    # a column or list holding a value (true, 0, None) is one of values; a first column of prose is no column of
    # names (slow_path is one row of three); reset_all sits in prose
    assert page.symbols == []


# gi-docgen's enumeration members (libgtk-4-doc's enum.PrintQuality.html): each row a link to itself.
GIDOCGEN_ENUM = """<html><head><title>Gtk.PrintQuality</title></head><body><div id="body-wrapper">
<section id="main" class="content"><header><h3>Enumeration</h3><h1><a href="index.html">Gtk</a><span class="sep">
</span>PrintQuality</h1></header><section><div class="docblock"><p>See also gtk_print_settings_set_quality().</p>
</div><div class="members"><h4 id="members">Members</h4><table class="enum-members"><tr><th>Name</th>
<th>Description</th></tr><tr><td><a id="low" href="#low"><code title="Value: 0">GTK_PRINT_QUALITY_LOW</code></a></td>
<td><p>Low&nbsp;quality.</p></td></tr><tr><td><a id="normal"
href="#normal"><code title="Value: 1">GTK_PRINT_QUALITY_NORMAL</code></a></td><td><p>Normal&nbsp;quality.</p></td>
</tr></table></div></section></section></div></body></html>"""


def test_javadoc_lists_of_the_constants_a_method_takes_define_none():
    """LocalTime.with lists the ChronoFields it takes ("HOUR_OF_DAY - Returns a LocalTime with the specified
    hour-of-day"): on a Javadoc type's page a constant is defined by its field's detail, on its own type's page."""
    from pathlib import Path

    path = Path("/usr/share/doc/openjdk-17-doc/api/java.base/java/time/LocalTime.html")
    if not path.exists():
        pytest.skip(f"{path} not installed (make corpora)")
    names = {s.name for s in extract_page(path.read_bytes(), "http://h/LocalTime.html", None).symbols}
    assert "java.time.LocalTime.with" in names
    assert not {"HOUR_OF_DAY", "NANO_OF_SECOND", "AMPM_OF_DAY"} & names


def test_gidocgen_enumeration_members_are_symbols_at_their_own_anchors():
    page = extract_page(GIDOCGEN_ENUM, "http://h/gtk4/enum.PrintQuality.html")
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("Gtk.PrintQuality", "main"),
        ("GtkPrintQuality", "main"),
        ("GTK_PRINT_QUALITY_LOW", "low"),
        ("GTK_PRINT_QUALITY_NORMAL", "normal"),
    ]
    low = page.symbols[2]
    assert page.markdown[low.offset :].startswith("`GTK_PRINT_QUALITY_LOW` | Low quality.")
    assert [(a.id, a.offset) for a in page.anchors][-2:] == [("low", low.offset), ("normal", page.symbols[3].offset)]


def test_doxygen_pages_lose_their_banner_and_separator_rows():
    """Doxygen's banner (div#top), section summary, ◆ permalinks, separator rows and footer are not content; the
    page's heading is its <div class="title">."""
    html = """<html><head><title>LMDB: Environment Flags</title></head><body>
    <div id="top"><div id="titlearea"><table><tr><td><div id="projectname">LMDB</div></td></tr></table></div>
    <div id="main-nav"></div></div>
    <div class="header"><div class="summary"><a href="#define-members">Macros</a></div>
    <div class="headertitle"><div class="title">Environment Flags<div class="ingroups"><a class="el"
    href="group__mdb.html">LMDB API</a></div></div></div></div>
    <div class="contents"><table class="memberdecls"><tr class="heading"><td colspan="2"><h2 class="groupheader">
    <a name="define-members"></a>Macros</h2></td></tr>
    <tr class="memitem:x"><td class="memItemLeft">#define</td><td class="memItemRight">MDB_RDONLY 0x20000</td></tr>
    <tr class="separator:x"><td class="memSeparator" colspan="2">&#160;</td></tr>
    <tr class="memitem:y"><td class="memItemLeft">#define</td><td class="memItemRight">MDB_NOTLS 0x200000</td></tr>
    <tr class="separator:y"><td class="memSeparator" colspan="2">&#160;</td></tr></table>
    <a id="ga1"></a><h2 class="memtitle"><span class="permalink"><a href="#ga1">&#9670;&#160;</a></span>MDB_RDONLY
    </h2><div class="memitem"><div class="memdoc"><p>read only</p></div></div></div>
    <hr class="footer"/><address class="footer"><small>Generated by 1.8.16</small></address></body></html>"""
    page = extract_page(html, "http://h/group__mdb__env.html")
    assert page.title == "Environment Flags"
    assert page.markdown.startswith("# Environment Flags\n\nLMDB API\n\n")
    assert "|  |" not in page.markdown and "| #define | MDB_NOTLS 0x200000 |" in page.markdown
    assert "\n## MDB_RDONLY\n\nread only" in page.markdown
    for chrome in ("projectname", "Generated by", "\u25c6", "\n\nLMDB\n"):
        assert chrome not in page.markdown
    assert [(s.name, s.anchor) for s in page.symbols] == [("MDB_RDONLY", "ga1")]
    assert page.markdown[page.symbols[0].offset :].startswith("MDB_RDONLY\n\nread only")


def test_docutils_footnotes_and_topics_inside_the_content_are_kept_a_theme_aside_is_not():
    """docutils (Sphinx) renders footnotes, topics and sidebars as <aside> inside the main content (78 pages of the
    Python docs have footnotes); a theme's <aside> beside the content (Furo's table of contents) is chrome."""
    html = """<html><head><title>doctest</title></head><body>
    <div class="page"><aside class="sidebar-drawer"><a href="index.html">Site navigation</a></aside>
    <div class="main"><article role="main"><section><h1>doctest</h1>
    <p>Examples are run as tests<a class="footnote-reference brackets" href="#id2">1</a>.</p>
    <aside class="topic"><p class="topic-title">See also</p><p>The unittest module.</p></aside>
    <aside class="footnote-list brackets"><aside class="footnote brackets" id="id2" role="note">
    <span class="label">1</span><p>Examples cannot contain tabs.</p></aside></aside>
    </section></article><aside class="toc-drawer"><a href="#x">On this page</a></aside></div></div></body></html>"""
    md = extract_page(html, "http://h/library/doctest.html").markdown
    assert "Examples cannot contain tabs." in md and "The unittest module." in md
    assert "Site navigation" not in md and "On this page" not in md


def test_text_before_the_title_moves_after_it_only_when_it_is_a_short_label():
    label = "<html><body><main><div><p>Deprecated</p><!-- a comment --><h1>old_api</h1><p>Body.</p></div></main>"
    assert extract_page(label, "http://h/a.html").markdown == "# old_api\n\nDeprecated\n\nBody."
    prose = "Long introduction. " * 20  # over MAX_LABEL_CHARS: content, left where it is
    page = extract_page(f"<html><body><main><p>{prose}</p><h1>T</h1></main></body></html>", "http://h/b.html")
    assert page.markdown.startswith("Long introduction.")
    loose = "<html><body><main>Loose <b>text</b> around<h1>T</h1></main></body></html>"
    assert extract_page(loose, "http://h/c.html").markdown.startswith("Loose **text** around")


def test_a_page_without_h1_or_title_is_titled_by_its_first_heading():
    """AsciiDoc howtos (git-doc's technical/reftable.html) have an empty <title> and start at <h2>."""
    html = """<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title></title>
    </head><body><div id="header"></div><div id="content"><div class="sect1"><h2 id="_reftable">reftable</h2>
    <p>Some repositories contain a lot of references.</p></div></div></body></html>"""
    page = extract_page(html.encode(), "http://h/technical/reftable.html")
    assert page.title == "reftable"
    titled = html.replace("<title></title>", "<title>The reftable format</title>")
    assert extract_page(titled.encode(), "http://h/technical/reftable.html").title == "The reftable format"


def test_thematic_breaks_are_dropped():
    """Sphinx puts an <hr> under a module's "Source code" line; the Markdown splitter cuts there first."""
    html = """<html><body><div role="main"><section><h1>atexit</h1>
    <p><strong>Source code:</strong> <a href="x">Lib/atexit.py</a></p><hr class="docutils"/>
    <p>The atexit module defines functions.</p></section></div></body></html>"""
    page = extract_page(html, "http://h/atexit.html")
    assert page.markdown == "# atexit\n\n**Source code:** Lib/atexit.py\n\nThe atexit module defines functions."


SLIM_SAMPLES = {
    "python3.11-doc": "/usr/share/doc/python3.11/html/library",
    "rust-doc": "/usr/share/doc/rust-doc/html/std/collections",
    "openjdk-17-doc": "/usr/share/doc/openjdk-17-doc/api/java.base/java/util",
    "libgtk-4-doc": "/usr/share/doc/libgtk-4-doc/gtk4",
    "git-doc": "/usr/share/doc/git-doc",
}


@pytest.mark.parametrize("package", sorted(SLIM_SAMPLES))
def test_slimmed_markup_loses_no_word_heading_or_code_block(package, monkeypatch):
    """Extraction removes what the converter never reads before it serializes the main node (highlighter spans
    inside <pre>/<code>, unread attributes): on 40 real pages per generator, the title, anchors, words, headings
    and code blocks (with their languages) are those of the untouched node. The Markdown is not the same character
    for character: html-to-markdown turns a line break (or a <br>) between two spans inside a <code> into a hard
    line break that splits the code span (Sphinx's ``<span class="pre">`` words, rustdoc's where clauses), which
    unwrapping the spans avoids."""
    import re
    from collections import Counter
    from pathlib import Path

    from docsbot.content import extract

    def shape(markdown: str) -> tuple[Counter, list[tuple[str, ...]]]:
        # headings (level and words: a <br> inside highlighted code splits a code span), fences with their info
        blocks = re.findall(r"(?m)^(#{1,6} .*|```+\S*)$", markdown)
        return Counter(re.findall(r"\w+", markdown)), [(b.split()[0], *re.findall(r"\w+", b)) for b in blocks]

    root = Path(SLIM_SAMPLES[package])
    if not root.is_dir():
        pytest.skip(f"apt-get install {package} (make corpora)")
    bodies = [(p.read_bytes(), f"http://h/{p.name}") for p in sorted(root.glob("*.html"))[:40]]
    slim = [extract_page(body, url) for body, url in bodies]
    monkeypatch.setattr(extract, "_slim_markup", lambda main: None)
    untouched = [extract_page(body, url) for body, url in bodies]
    for a, b in zip(slim, untouched, strict=True):
        assert (a.title, [x.id for x in a.anchors]) == (b.title, [x.id for x in b.anchors])
        assert shape(a.markdown) == shape(b.markdown), a.title
    assert sum(page.markdown.count("\n```") for page in slim) > 0 or package == "git-doc"


def test_highlighted_code_keeps_its_text_and_language():
    html = (
        '<html><body><div role="main"><h1>T</h1><div class="highlight-python3 notranslate"><div class="highlight">'
        '<pre><span></span><span class="kn">import</span> <span class="nn">asyncio</span>\n'
        '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>  <span class="c1"># *one*</span>'
        '\n</pre></div></div><p>Call <code><span class="pre">asyncio.run()</span></code> '
        '<span class="pre">a_b</span>.</p></div></body></html>'
    )
    page = extract_page(html, "http://h/p.html")
    assert "```python3\nimport asyncio\nx = 1  # *one*\n```" in page.markdown
    assert "Call `asyncio.run()` a_b." in page.markdown


@pytest.mark.parametrize(
    ("markup", "chrome"),
    [
        ("<nav><p>x</p></nav>", ["nav"]),
        ("<header>site</header><main><header><h1>T</h1></header></main>", ["header"]),
        ("<section><header><h1>T</h1></header></section>", []),
        ("<aside>sidebar</aside><div role='main'><aside>footnote</aside></div>", ["aside"]),
        ("<main><section><aside>topic</aside></section></main>", []),
        ("<div role='search'>s</div><div aria-hidden='true'>h</div><div id='footer'>f</div>", ["div", "div", "div"]),
        ("<h2>T<a class='headerlink' href='#t'>¶</a></h2><p class='headerlink'>kept</p>", ["a"]),
        ("<div class='a  sphinxsidebar\tb'>s</div><div class='sphinxsidebarwrapper'>kept</div>", ["div"]),
        ("<div class='x-edit-this-page'>e</div><div class='rst-footer-buttons'>b</div>", ["div", "div"]),
        ("<summary class='hideme'>Expand</summary><summary>kept</summary>", ["summary"]),
        ("<div class='navheader'>n</div><div class='navheader x'>kept</div>", ["div"]),
        ("<span class='rightside'>1.0</span><a class='srclink'>src</a>", ["span", "a"]),
    ],
)
def test_is_chrome_picks_the_page_chrome_in_document_order(markup, chrome):
    doc = parse_html(f"<html><body>{markup}</body></html>")
    assert [el.tag for el in doc.iter(lxml.etree.Element) if is_chrome(el)] == chrome


# --- What html-to-markdown is given and how its Markdown reads (docs: How it works) ---------------------------


def _markdown(body: str) -> str:
    return extract_page(
        f"<html><body><div role='main'><h1>T</h1>{body}</div></body></html>", "http://h/p.html"
    ).markdown


@pytest.mark.parametrize(
    ("markup", "fence"),
    [
        (
            '<div class="highlight-python3 notranslate"><div class="highlight"><pre>x = 1</pre></div></div>',
            "```python3",
        ),
        ('<pre><code class="language-rust">x = 1</code></pre>', "```rust"),
        ('<pre class="lang-c++">x = 1</pre>', "```c++"),
        ('<div class="highlight-default notranslate"><div class="highlight"><pre>x = 1</pre></div></div>', "```"),
        ('<pre class="rust rust-example-rendered"><code>x = 1</code></pre>', "```"),
    ],
)
def test_a_code_blocks_language_is_read_from_the_pre_its_code_and_two_ancestors(markup, fence):
    """html-to-markdown reads a language only from the <pre>'s or <code>'s own class: the language Sphinx names on
    the <pre>'s grandparent is moved onto the <pre> ("default", "none" and "text" name none)."""
    assert _markdown(markup) == f"# T\n\n{fence}\nx = 1\n```"


def test_definition_lists_are_plain_blocks_that_commonmark_reads_as_written():
    """A term, then its definition's blocks at the left margin, nested lists flattened: no ":   " marker and no
    indentation, which a CommonMark reader (and the chunker's) took for indented code blocks and broken fences."""
    markup = (
        '<dl class="py class"><dt class="sig sig-object py" id="m.C"><em class="property">class </em>'
        '<span class="sig-prename">m.</span><span class="sig-name">C</span></dt><dd><p>A class.</p>'
        '<dl class="py method"><dt class="sig sig-object py" id="m.C.run"><span class="sig-name">run</span>()</dt>'
        '<dd><p>Run it:</p><div class="highlight-python3"><div class="highlight"><pre>C().run()</pre></div></div>'
        "</dd></dl></dd></dl>"
    )
    page = extract_page(f"<html><body><div role='main'><h1>T</h1>{markup}</div></body></html>", "http://h/m.html")
    assert page.markdown == "# T\n\n*class* m.C\n\nA class.\n\nrun()\n\nRun it:\n\n```python3\nC().run()\n```"
    starts = {anchor.id: page.markdown[anchor.offset :] for anchor in page.anchors}
    assert starts["m.C"].startswith("*class* m.C") and starts["m.C.run"].startswith("run()")


def test_tables_are_compact_and_honour_rowspan_and_a_headerless_table_keeps_its_first_row_on_top():
    rows = (
        "<table><tr><th>Platform</th><th>Shell</th><th>Command</th></tr>"
        '<tr><td rowspan="2">POSIX</td><td>bash</td><td><code>source a</code></td></tr>'
        "<tr><td>fish</td><td><code>source a.fish</code></td></tr>"
        "<tr><td>Windows</td><td>cmd.exe</td><td>a|b<br>c</td></tr></table>"
    )
    assert _markdown(rows) == (
        "# T\n\n| Platform | Shell | Command |\n| --- | --- | --- |\n| POSIX | bash | `source a` |\n"
        "|  | fish | `source a.fish` |\n| Windows | cmd.exe | a\\|b c |"
    )
    headerless = (
        "<table><tr><td>Type:</td><td><code>gchar</code></td></tr><tr><td>Getter</td><td>get()</td></tr></table>"
    )
    assert _markdown(headerless) == "# T\n\n| Type: | `gchar` |\n| --- | --- |\n| Getter | get() |"


def test_a_one_row_table_of_lists_is_converted_as_its_lists():
    """Sphinx's genindex lays the index out in a one-row table of lists: as lists, with their nesting and the
    escape that keeps "# (hash)" from being a heading inside a list item (which the converter's own unwrapping
    of layout tables lost)."""
    cell = (
        "<td><ul><li><a>! (exclamation)</a><ul><li><a>in curses</a></li></ul></li>"
        "<li># (hash)<ul><li>comment</li></ul></li></ul></td>"
    )
    markup = (
        f'<table class="indextable genindextable"><tr>{cell}<td><ul><li><a>$ (dollar)</a></li></ul></td></tr></table>'
    )
    assert _markdown(markup) == ("# T\n\n- ! (exclamation)\n  - in curses\n- \\# (hash)\n  - comment\n\n- $ (dollar)")


def test_a_heading_inside_a_summary_stays_a_heading_with_its_anchor():
    """rustdoc and gi-docgen put a member's heading inside <summary>, which html-to-markdown writes in bold:
    "**#### pub fn push**" is no heading. A <summary> is converted as a plain block."""
    markup = (
        '<details class="toggle method-toggle" open><summary><section id="method.push" class="method">'
        '<h4 class="code-header">pub fn push(&amp;mut self)</h4></section></summary>'
        "<div><p>Appends.</p></div></details>"
    )
    page = extract_page(f"<html><body><div role='main'><h1>T</h1>{markup}</div></body></html>", "http://h/v.html")
    assert page.markdown == "# T\n\n#### pub fn push(&mut self)\n\nAppends."
    assert [page.markdown[a.offset :][:6] for a in page.anchors if a.id == "method.push"] == ["pub fn"]


def test_inline_code_keeps_its_whitespace_outside_and_highlighted_words_in_one_span():
    assert _markdown("<p>Modifier <code>interface&nbsp;</code><code>&nbsp;</code><code>Foo</code>.</p>") == (
        "# T\n\nModifier `interface` `Foo`."
    )
    # Sphinx's words inside <code>, the line broken between two of them: one code span, not "`chmod`  \n`+x`"
    assert _markdown('<p>Call <code><span class="pre">chmod</span>\n<span class="pre">+x</span></code> now.</p>') == (
        "# T\n\nCall `chmod +x` now."
    )


def test_lists_breaks_escaping_links_and_media():
    assert _markdown("<ul><li>a<ul><li>b<ul><li>c</li></ul></li></ul></li><li>d</li></ul>") == (
        "# T\n\n- a\n  - b\n    - c\n- d"
    )
    # A line that would start a heading or a list is escaped; inline * and _ are left as the page wrote them.
    assert _markdown("<p># not a heading</p><p>- not a bullet</p><p>a_b *c* 2 * 3</p>") == (
        "# T\n\n\\# not a heading\n\n\\- not a bullet\n\na_b *c* 2 * 3"
    )
    assert _markdown("<p>one<br>two</p><pre>fn f()<br>where T: Clone</pre>") == (
        "# T\n\none  \ntwo\n\n```\nfn f()\nwhere T: Clone\n```"
    )
    media = (
        '<p>See <a href="x.html">the <b>guide</b></a> <img src="i.png" alt="pic"> here.</p>'
        '<video src="v.mp4">Your browser</video><iframe src="f.html"></iframe><p>icon <svg><text>Copy</text></svg></p>'
    )
    assert _markdown(media) == "# T\n\nSee the **guide** here.\n\nYour browser\n\nicon Copy"


def test_a_converter_failure_is_the_pages_extraction_error(monkeypatch):
    """An error of html-to-markdown (its ConversionError family, PanicError included, or a Rust panic escaping as
    pyo3's PanicException) and a conversion that skipped part of its input fail the page with ConverterFailed, an
    ExtractionError: the spider counts the page failed and keeps it as stored; nothing else is affected."""
    import html_to_markdown

    from docsbot.content import extract
    from docsbot.content.extract import ConverterFailed, html_to_markdown_text

    with pytest.raises(ConverterFailed, match="skipped content: DOM traversal reached"):
        html_to_markdown_text("<div>" * 1100 + "<p>deep</p>" + "</div>" * 1100)

    class PanicException(BaseException):  # pyo3_runtime.PanicException's shape
        pass

    def failing(error: BaseException):  # noqa: ANN202
        def convert(html, options):  # noqa: ANN001, ANN202
            raise error

        return convert

    for error in (html_to_markdown.PanicError("boom"), html_to_markdown.ParseError("bad"), PanicException("oops")):
        monkeypatch.setattr(extract.html_to_markdown, "convert", failing(error))
        with pytest.raises(ExtractionError) as raised:
            extract_page(SPHINX, "http://h/a.html")
        assert isinstance(raised.value, ConverterFailed) and str(error) in str(raised.value)
    monkeypatch.setattr(extract.html_to_markdown, "convert", failing(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):  # other BaseExceptions are not the page's
        extract_page(SPHINX, "http://h/a.html")
    monkeypatch.undo()
    assert extract_page(SPHINX, "http://h/a.html").title == "Coroutines and Tasks"


def test_an_asterisk_inside_emphasis_is_escaped_so_markdown_reads_it_as_text():
    """Sphinx signatures put the keyword-only marker and **kwargs in <em>: unescaped, "***" and "***kwargs*" are
    delimiters to a Markdown reader (markdown-it drew "asyncio.Task(coro, ***, loop=None"); prose keeps *args."""
    import markdown_it

    html = """<html><body><div role="main"><h1>asyncio</h1><dl class="py class">
    <dt class="sig sig-object py" id="asyncio.Task"><em class="property"><span class="pre">class</span> </em>
    <span class="sig-prename">asyncio.</span><span class="sig-name">Task</span>(<em class="sig-param">coro</em>,
    <em class="sig-param"><span class="o">*</span></em>, <em class="sig-param"><span class="o">**</span>kwargs</em>)
    </dt><dd><p>Call with *args or <code>f(*a)</code>.</p></dd></dl></div></body></html>"""
    markdown = extract_page(html, "http://h/asyncio-task.html").markdown
    assert "asyncio.Task(*coro*, *\\**, *\\*\\*kwargs*)" in markdown
    assert "Call with *args or `f(*a)`." in markdown
    rendered = markdown_it.MarkdownIt().render(markdown)
    assert "<em>*</em>" in rendered and "<em>**kwargs</em>" in rendered


def test_docusaurus_permalinks_are_chrome_and_the_title_is_the_h1_the_title_element_names():
    """Docusaurus ends every heading with <a class="hash-link">&#8203;</a> (a zero-width space: it ended 700 headings
    of Fastify's docs); a page with a banner <h1> before its own is titled by the <h1> its <title> names."""
    html = """<html><head><title>Testing | Fastify</title></head><body><main><article>
    <div class="theme-doc-markdown markdown"><h1 align="center">Fastify</h1><p>Fast and low overhead.</p>
    <h1 id="testing">Testing<a href="#testing" class="hash-link" aria-label="Direct link">\u200b</a></h1>
    <h3 class="anchor" id="connectiontimeout"><code>connectionTimeout</code><a href="#connectiontimeout"
    class="hash-link" title="Direct link">\u200b</a></h3><p>Defines the server timeout.</p></div></article></main>
    </body></html>"""
    page = extract_page(html, "http://h/Guides/Testing/")
    assert page.title == "Testing"
    assert "\u200b" not in page.markdown and "\n### `connectionTimeout`\n" in page.markdown
    assert [(s.name, s.anchor) for s in page.symbols] == [("connectionTimeout", "connectiontimeout")]
