"""extract_page as a whole: the main content and its chrome, links, the title, the content hash (the steps'
own rules: test_decoding, test_markdown, test_symbols)."""

from __future__ import annotations

import lxml.etree
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docsbot.content.chrome import is_chrome
from docsbot.content.decoding import parse_html
from docsbot.content.extract import ExtractionError, content_hash, extract_page
from tests.test_symbols import SPHINX_DEFS

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


def test_link_share_tells_an_index_from_content():
    index = (
        """<html><body><div role="main"><h1>Index</h1><ul>"""
        + "".join(f'<li><a href="p{i}.html">entry_{i} (in module m)</a></li>' for i in range(50))
        + "</ul></div></body></html>"
    )
    assert extract_page(index, "http://h/genindex.html").link_share > 0.9
    assert extract_page(SPHINX_DEFS, "http://h/os.html").link_share < 0.1


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


def test_the_chrome_walk_finds_what_is_chrome_finds_with_class_verdicts_remembered():
    """main_content passes over an element without attributes, or with a class alone whose verdict is remembered
    as "not chrome", without asking is_chrome: the same elements as asking it of each, also once the verdicts of
    the page's classes are remembered (the second walk), and for the elements whose other attributes or ancestors
    decide (an id, a role, aria-hidden, a <header> outside the content, Doxygen's div.summary in its header)."""
    from docsbot.content.chrome import _chrome_walk

    markup = (
        "<div class='header'><div class='summary'>s</div></div><div class='summary'>kept</div>"
        "<header>banner</header><div class='pre'>x<span class='pre'>y</span></div>"
        "<span class='pre' id='footer'>f</span>"
        "<span class='pre' role='navigation'>n</span><span class='pre' aria-hidden='true'>h</span><em>e</em>"
        "<div id='top'><div id='titlearea'>t</div></div><div class=''>empty</div><a class='headerlink'>¶</a>"
        "<span class='pre' data-x='1'>kept</span><nav>nav</nav><div role='main'><header>kept</header></div>"
    )
    for _ in range(2):
        doc = parse_html(f"<html><body>{markup}</body></html>")
        expected = [el for el in doc.iter(lxml.etree.Element) if is_chrome(el)]
        assert _chrome_walk(doc)[0] == expected
        assert [el.text for el in expected] == ["s", "banner", "f", "n", "h", None, "¶", "nav"]


@pytest.mark.parametrize(
    "body",
    [
        "<div itemprop='articleBody'>a</div><div role='main'>r</div>",
        "<nav><div itemprop='articleBody'>in chrome</div></nav><div role='main'>r</div>",
        "<article class='md-content__inner md-typeset'>m</article><div role='main'>r</div>",
        "<article class='x\tmd-content__inner'>m</article><article class='md-content__innerx'>n</article>",
        "<article class='md-content__innerx'>n</article><main>mm<article>in main</article></main>",
        "<main>only main</main><article>a</article>",
        "<article>a</article><div class='document'><div class=' body\n'>b</div></div>",
        "<div class='bodywrapper'>w</div><div class='body x'>b</div>",
        "<div id='header'>h</div><div id='content'>c</div><div id='footer'>f</div>",
        "<div><div id='header'>h</div></div><div id='content'>c</div>",
        "<footer><div id='content'>dropped</div></footer><p>body only</p>",
        "<aside role='main'>r</aside><header role='main'>banner</header>",
        "<nav role='main'>n</nav><span itemprop='other' role='none' id='content'>c</span>",
        "<p>plain</p>",
    ],
)
def test_main_content_is_the_first_match_of_the_xpath_rules_in_their_order(body):
    """main_content reads its rules from the chrome walk and lxml's tag iterators, not from XPath: the element
    MAIN_CONTENT_XPATHS's first matching rule gives, after the chrome is dropped, on layouts that each rule decides
    (a rule's candidate inside dropped chrome, class words split on any XML space, an attribute of the wrong value,
    a <main> without an <article>)."""
    from docsbot.content.chrome import MAIN_CONTENT_XPATHS, _chrome_walk, main_content

    def by_xpath(doc):
        for el in _chrome_walk(doc)[0]:
            if el.getparent() is not None:
                el.drop_tree()
        return next((found[0] for found in (doc.xpath(x) for x in MAIN_CONTENT_XPATHS) if found), None)

    html = f"<html><body>{body}</body></html>"
    expected, got = by_xpath(parse_html(html)), main_content(parse_html(html))
    assert (got is None) == (expected is None)
    if expected is not None:
        assert lxml.etree.tostring(got) == lxml.etree.tostring(expected)
        assert got.getroottree().getpath(got) == expected.getroottree().getpath(expected)


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


_SEGMENTS = [
    "", "a", "b.html", "..", ".", "x;p", "?q=1", "?q=/a", "#f", "//other.test", "http:c", "http:", "https://h.test",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    base=st.lists(st.sampled_from(["d", "e.html", "", "..", "f;p", "?q=/x"]), max_size=4).map("/".join),
    hrefs=st.lists(st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4).map("/".join), max_size=6),
)
def test_page_links_resolves_each_href_as_urljoin_against_the_whole_base(base, hrefs):
    """page_links resolves an href with a path against the base's directory and remembers it across pages; the
    links are those of canonical_url(href, the page's URL), for hrefs of dot segments, parameters, queries holding
    a slash, network paths and absolute URLs, from pages whose URL has such parts too."""
    from xml.sax.saxutils import quoteattr

    from docsbot.content.links import page_links
    from docsbot.urls import InvalidURL, canonical_url

    url = f"http://docs.test/{base}"
    expected: dict[str, None] = {}
    for href in hrefs:
        href = href.strip()
        if href and not href.startswith("#"):
            try:
                expected[canonical_url(href.partition("#")[0], url)] = None
            except (InvalidURL, ValueError):
                pass
    anchors = "".join(f"<a href={quoteattr(h)}>x</a>" for h in hrefs)
    for _ in range(2):  # cold, then from what the first page remembered
        assert page_links(parse_html(f"<html><body>{anchors}</body></html>"), url)[0] == list(expected)
