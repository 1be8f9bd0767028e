from __future__ import annotations

import pytest

from docsbot.extract import ExtractionError, content_hash, extract_page

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
