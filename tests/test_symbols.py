"""The symbol table (docsbot.content.symbols) and the anchors of a page (docsbot.content.anchors), through
extract_page: each generator's markup, definition lists, tables and lists of names, offsets."""

from __future__ import annotations

import pytest

from docsbot.content.extract import Symbol, extract_page

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
    # the book index points to the first two (an indexterm before the name), not to PGGSSLIB
    assert [s.indexed for s in page.symbols] == [True, True, False]


# createdb's Environment section: the same variable defined again, where the book index does not point
POSTGRES_CREATEDB_ENVIRONMENT = """<html><head><title>createdb</title></head><body>
<div class="refsect1" id="id-1.9.4.4.7"><h2>Environment</h2><div class="variablelist"><dl class="variablelist">
<dt><span class="term"><code class="envar">PGDATABASE</code></span></dt><dd><p>If set, the name of the database to
create, unless overridden on the command line.</p></dd>
<dt id="GUC-WORK-MEM"><span class="term"><code class="varname">work_mem</code> (<code class="type">integer</code>)
<a id="id-1.6.7.5.2.2.1.3" class="indexterm"></a></span></dt><dd><p>Sets the base maximum amount of memory.</p></dd>
</dl></div><p>See <a class="indexterm" href="bookindex.html#x">PGHOST</a>; <code class="envar">PGUSER</code>:
the user name.</p></div></body></html>"""


def test_only_a_definition_the_sites_index_points_to_is_marked_indexed():
    page = extract_page(POSTGRES_CREATEDB_ENVIRONMENT, "http://h/app-createdb.html")
    assert [(s.name, s.indexed) for s in page.symbols] == [("PGDATABASE", False), ("work_mem", True)]


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


# PostgreSQL 15's DocBook XSL output: the section's id on its <div>, the heading inside three wrapper <div>s, no id
# of its own; a variable list's terms carry the book index's target (an indexterm), not an anchor
POSTGRES_15_SECTION = """<html><head><title>13.2. Transaction Isolation</title></head><body>
<div class="sect1" id="TRANSACTION-ISO"><div class="titlepage"><div><div><h2 class="title" style="clear: both">
13.2. Transaction Isolation</h2></div></div></div>
<p>The phenomena which are prohibited at various levels are:</p>
<div class="variablelist"><dl class="variablelist"><dt><span class="term">
       phantom read
       <a id="id-1.5.12.5.4.1.3.1.1" class="indexterm"></a>
      </span></dt><dd><p>A transaction re-executes a query returning a set of rows that satisfy a search condition and
      finds that the set has changed.</p></dd>
<dt><span class="term">read only</span></dt><dd><p>Neither indexed nor anchored: no term.</p></dd></dl></div>
<div class="itemizedlist"><ul class="itemizedlist"><li class="listitem"><p>
      <a id="id-1.7.3.22.3.4.21.1.1" class="indexterm"></a>
      <code class="envar">PGSSLSNI</code>  behaves the same as the <a class="xref" href="libpq-connect.html">sslsni</a>
      connection parameter.</p></li></ul></div>
</div></body></html>"""


def test_a_docbook_section_whose_heading_sits_in_wrappers_anchors_its_list_items_and_indexed_terms():
    page = extract_page(POSTGRES_15_SECTION, "http://h/transaction-iso.html")
    assert [(s.name, s.anchor) for s in page.symbols] == [
        ("phantom read", "TRANSACTION-ISO"),
        ("PGSSLSNI", "TRANSACTION-ISO"),
    ]
    assert [a.id for a in page.anchors] == ["TRANSACTION-ISO"]  # the heading's deep link too
    assert [s.indexed for s in page.symbols] == [True, True]
