"""The conversion to Markdown (docsbot.content.markdown), through extract_page: what html-to-markdown is given
and how its Markdown reads (docs: How it works)."""

from __future__ import annotations

import pytest

from docsbot.content.chunking import Chunker
from docsbot.content.extract import ExtractionError, extract_page
from tests.test_extract import SPHINX


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
    "body",
    [
        "<ul><li><h3>a</h3></li><li><section><h4>b</h4></section></li></ul><ol><li><h2>c</h2></li></ol>",
        "<ul><li><h3>a</h3></li><li>b</li></ul><ul></ul><ul><p><h3>no item</h3></p></ul>",
        "<ul><li><ul><li><h3>inner</h3></li></ul></li><li><h3>b</h3></li></ul>",  # nested: both are headed lists
        "<ul><li><ol><li>x</li></ol><h5>a</h5></li></ul><div><h1>t</h1></div>",
    ],
)
def test_headed_lists_are_those_the_xpath_names(body):
    """_headed_lists reads from each heading up what the XPath it replaced tests under every list item: the lists
    below the node (not the node itself) that have items, each holding a heading at any depth."""
    import lxml.html

    from docsbot.content.markdown import _headed_lists

    for html in (f"<div>{body}</div>", f"<ul><li>{body}</li></ul>"):
        main = lxml.html.fragment_fromstring(html)
        headed = " or ".join(f".//h{n}" for n in range(1, 7))
        expected = main.xpath(f".//*[self::ul or self::ol][li][not(li[not({headed})])]")
        assert _headed_lists(main) == expected
        assert main.tag != "ul" or main not in expected


@pytest.mark.parametrize(
    "body",
    [
        "<table><tr><td><ul><li>a</li></ul></td><td>b</td></tr></table>",
        "<table><tbody><tr><th><dl><dt>t</dt></dl></th></tr></tbody></table><table><tr><td>x</td></tr></table>",
        "<table><tr><td><ol><li>a</li></ol></td></tr><tr><td>2</td></tr></table>",
        "<table><tr><td><div><ul><li>deep</li></ul></div></td></tr></table>",
        "<table><tr><td><table><tr><td><ul><li>inner</li></ul></td></tr></table></td></tr></table>",
        "<pre>a<pre>b</pre></pre><pre>c<pre>d<pre>e</pre></pre></pre><pre>plain</pre>",
        "<h1>Gtk<span class='sep'> </span>Button<span class='sep'>x</span></h1><h1><h1><span class='sep'/></h1></h1>",
        "<h2><span class='sep'></span></h2><span class='sep'></span>",
    ],
)
def test_normalize_markups_tag_walks_find_what_its_xpath_expressions_name(body):
    """normalize_markup finds nested <pre>s, one-row tables of lists and gi-docgen's empty separators by lxml's tag
    iterators: the elements of the XPath expressions they replaced, in document order, each once."""
    from itertools import islice

    import lxml.html

    from docsbot.content.markdown import _one_row_of_lists, normalize_markup

    main = lxml.html.fragment_fromstring(f"<div>{body}</div>")
    tables = main.xpath(".//table[count(.//tr) = 1][.//tr/*[self::td or self::th][ul or ol or dl]]")
    assert [t for t in main.iterdescendants("table") if _one_row_of_lists(t)] == tables
    nested = [pre for pre in main.iterdescendants("pre") if len(list(islice(pre.iterdescendants("pre"), 2))) == 1]
    assert nested == main.xpath(".//pre[count(.//pre) = 1]")
    before = [lxml.html.tostring(s) for s in main.xpath(".//h1//span[@class='sep'][not(normalize-space())]")]
    normalize_markup(main)
    assert [lxml.html.tostring(s) for s in main.iterdescendants("span") if s.text == "."] == [
        b.replace(b"/>", b">.</span>").replace(b"></span>", b">.</span>").replace(b"> </span>", b">.</span>")
        for b in before
    ]


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

    from docsbot.content import markdown as conversion

    def shape(markdown: str) -> tuple[Counter, list[tuple[str, ...]]]:
        # headings (level and words: a <br> inside highlighted code splits a code span), fences with their info
        blocks = re.findall(r"(?m)^(#{1,6} .*|```+\S*)$", markdown)
        return Counter(re.findall(r"\w+", markdown)), [(b.split()[0], *re.findall(r"\w+", b)) for b in blocks]

    root = Path(SLIM_SAMPLES[package])
    if not root.is_dir():
        pytest.skip(f"apt-get install {package} (make corpora)")
    bodies = [(p.read_bytes(), f"http://h/{p.name}") for p in sorted(root.glob("*.html"))[:40]]
    slim = [extract_page(body, url) for body, url in bodies]
    monkeypatch.setattr(conversion, "slim_markup", lambda main: None)
    untouched = [extract_page(body, url) for body, url in bodies]
    for a, b in zip(slim, untouched, strict=True):
        assert (a.title, [x.id for x in a.anchors]) == (b.title, [x.id for x in b.anchors])
        assert shape(a.markdown) == shape(b.markdown), a.title
    assert sum(page.markdown.count("\n```") for page in slim) > 0 or package == "git-doc"


def test_slimmed_markup_keeps_only_the_attributes_the_converter_reads():
    """Every attribute goes, the frequent ones in one walk in C and any other one by one (a data-*, a namespaced
    xml:lang, an uncommon onclick), but a cell's colspan and rowspan, a list's start and a <pre>'s language class."""
    import lxml.html

    from docsbot.content.markdown import slim_markup

    main = lxml.html.fromstring(
        '<div class="body" id="m" data-x="1"><ol start="3" class="arabic" onclick="x()"><li id="a">one</li></ol>'
        '<table border="1"><tr><td colspan="2" rowspan="1" align="left" xml:lang="en">c</td></tr></table>'
        '<pre class="language-python" id="p">x = 1</pre><pre class="highlight">y</pre>'
        '<p><a href="/x" title="t" data-y="2">link</a></p></div>'
    )
    slim_markup(main)
    assert {el.tag: dict(el.attrib) for el in main.iter() if el.attrib} == {
        "ol": {"start": "3"},
        "td": {"colspan": "2", "rowspan": "1"},
        "pre": {"class": "highlight"},  # the last <pre>: both keep their class
    }
    assert [pre.get("class") for pre in main.iter("pre")] == ["language-python", "highlight"]


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

    from docsbot.content import markdown as conversion
    from docsbot.content.markdown import ConverterFailed, html_to_markdown_text

    with pytest.raises(ConverterFailed, match="skipped content: DOM traversal reached"):
        html_to_markdown_text("<div>" * 1100 + "<p>deep</p>" + "</div>" * 1100)

    class PanicException(BaseException):  # pyo3_runtime.PanicException's shape
        pass

    def failing(error: BaseException):  # noqa: ANN202
        def convert(html, options):  # noqa: ANN001, ANN202
            raise error

        return convert

    for error in (html_to_markdown.PanicError("boom"), html_to_markdown.ParseError("bad"), PanicException("oops")):
        monkeypatch.setattr(conversion.html_to_markdown, "convert", failing(error))
        with pytest.raises(ExtractionError) as raised:
            extract_page(SPHINX, "http://h/a.html")
        assert isinstance(raised.value, ConverterFailed) and str(error) in str(raised.value)
    monkeypatch.setattr(conversion.html_to_markdown, "convert", failing(KeyboardInterrupt()))
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
