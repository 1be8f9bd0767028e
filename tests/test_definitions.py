"""One vector per definition, and page kinds, through the real pipeline: ``scrapy crawl docs`` of a
Sphinx-shaped site into a real PostgreSQL, searched with the hashing test embedder (a bag of words: texts sharing
words are near)."""

from __future__ import annotations

import pytest

from docsbot import store
from docsbot.content.chunking import definitions
from docsbot.service.search import BadQuery, Searcher
from tests.docsite import DocSite, DocSiteServer, html_page
from tests.embedders import HashingEmbedder


def _definition(name: str, signature: str, text: str) -> str:
    return (
        f'<dl class="py function"><dt class="sig sig-object py" id="{name}">'
        f'<span class="sig-prename descclassname">{name.rpartition(".")[0]}.</span>'
        f'<span class="sig-name descname">{name.rpartition(".")[2]}</span>{signature}</dt>'
        f"<dd><p>{text}</p></dd></dl>"
    )


SYS_FUNCTIONS = [
    ("sys.getsizeof", "(object)", "Return the size of an object in bytes. The object can be any type of object."),
    (
        "sys.getrecursionlimit",
        "()",
        "Return the current value of the recursion limit, the maximum depth of the interpreter stack.",
    ),  # fmt: skip
    ("sys.intern", "(string)", "Enter string in the table of interned strings and return the interned string."),
    ("sys.exit", "(arg)", "Raise a SystemExit exception, signaling an intention to exit the interpreter."),
]


def build_site() -> DocSite:
    site = DocSite()
    site.put("/robots.txt", "User-agent: *\n", "text/plain")
    site.put("/docs/index.html", html_page("Docs", "<p>The library.</p>", ["sys.html", "whatsnew/3.5.html"]))
    body = "<h2 id='functions'>Functions</h2>" + "".join(_definition(*f) for f in SYS_FUNCTIONS)
    site.put("/docs/sys.html", html_page("sys — System-specific parameters", body, ["index.html"]))
    site.put(
        "/docs/whatsnew/3.5.html",
        html_page(
            "What's New In Python 3.5",
            "<h2 id='sys'>sys</h2><p>The new getsizeof behaviour: the size of an object in bytes counts the "
            "garbage collector's header too. The recursion limit is checked earlier.</p>",
            ["../index.html"],
        ),
    )
    return site


@pytest.fixture
def site():
    with DocSiteServer(build_site()) as server:
        yield server


def rows(db, kind: int) -> list[tuple]:
    return db.execute(
        "SELECT metadata->>'name', metadata->>'anchor', content, embed_hash FROM documents WHERE kind = %s "
        "ORDER BY metadata->>'name'",
        (kind,),
    ).fetchall()


def test_each_definition_is_a_document_of_its_own_replaced_with_its_page(crawl, site, db, database_url):
    root = f"{site.url}/docs/index.html"
    assert crawl(url=root, library="py", version="3").returncode == 0
    defined = rows(db, 1)
    assert [(name, anchor) for name, anchor, _, _ in defined] == sorted((n, n) for n, _, _ in SYS_FUNCTIONS)
    size = next(r for r in defined if r[0] == "sys.getsizeof")
    assert size[2].startswith("sys.getsizeof(object)") and "size of an object in bytes" in size[2]
    assert "recursion" not in size[2]  # its own text only, not its neighbours'
    # definitions are found by vector: not in BM25's postings nor its statistics
    assert db.execute(
        "SELECT count(*) FROM chunk_postings po JOIN documents d ON d.id = po.doc_id WHERE d.kind = 1"
    ).fetchone()[0] == 0  # fmt: skip
    docs = db.execute("SELECT docs FROM lexical_stats").fetchone()[0]
    assert docs == db.execute("SELECT count(*) FROM documents WHERE kind = 0").fetchone()[0]
    assert db.execute("SELECT count(*) FROM documents WHERE embedding IS NULL").fetchone()[0] == 0

    # an unchanged refresh touches nothing; an edited definition is replaced, the others keep their vectors
    before = db.execute("SELECT id FROM documents ORDER BY id").fetchall()
    assert crawl(library="py", version="3", mode="refresh").returncode == 0
    assert db.execute("SELECT id FROM documents ORDER BY id").fetchall() == before
    edited = [(n, s, t.replace("in bytes", "in bytes, as the allocator sees it")) for n, s, t in SYS_FUNCTIONS]
    body = "<h2 id='functions'>Functions</h2>" + "".join(_definition(*f) for f in edited)
    site.site.put("/docs/sys.html", html_page("sys — System-specific parameters", body, ["index.html"]))
    refresh = crawl(library="py", version="3", mode="refresh")
    assert refresh.returncode == 0, refresh.stderr[-2000:]
    after = {name: (content, key) for name, _, content, key in rows(db, 1)}
    assert "as the allocator sees it" in after["sys.getsizeof"][0]
    assert {n: k for n, (_, k) in after.items() if n != "sys.getsizeof"} == {
        name: key for name, _, _, key in defined if name != "sys.getsizeof"
    }
    assert "'docsbot/chunks_embedded': 2" in refresh.stderr  # the new definition and its page's one chunk

    # refresh ≡ re-index: the same documents, kind by kind, as a fresh index of the site as it now stands
    refreshed = sorted(db.execute("SELECT kind, content FROM documents").fetchall())
    assert crawl(url=root, library="py", version="fresh").returncode == 0
    fresh = db.execute(
        "SELECT d.kind, d.content FROM documents d JOIN pages p ON p.id = d.page_id JOIN versions v "
        "ON v.id = p.version_id WHERE v.name = 'fresh'"
    ).fetchall()
    assert sorted(fresh) == refreshed


def test_a_question_about_one_definition_links_to_it_and_release_notes_rank_below(crawl, site, database_url):
    assert crawl(url=f"{site.url}/docs/index.html", library="py", version="3").returncode == 0
    with Searcher(database_url, HashingEmbedder()) as searcher:
        found = searcher.search("size of an object in bytes", "py", "3")
        assert found[0].url.endswith("/docs/sys.html")
        assert found[0].deep_link.endswith("#sys.getsizeof")
        assert found[0].content.startswith("sys.getsizeof(object)")  # the definition, not its neighbours
        assert [r.url.rsplit("/", 1)[1] for r in found[:2]] == ["sys.html", "3.5.html"]
        only = searcher.search("size of an object", "py", "3", kind="changelog")
        assert [r.url.rsplit("/", 1)[1] for r in only] == ["3.5.html"]
        with pytest.raises(BadQuery, match="kind must be one of docs, changelog, index"):
            searcher.search("size", "py", "3", kind="news")
    with store.connect(database_url) as conn:
        kinds = dict(conn.execute("SELECT substring(url from '[^/]+$'), kind FROM pages").fetchall())
        assert kinds == {"index.html": "docs", "sys.html": "docs", "3.5.html": "changelog"}
        (version,) = conn.execute("SELECT id FROM versions").fetchone()

        def score(query: str, **tuning: float) -> float:
            vector = HashingEmbedder().embed([query])[0]
            hits = store.search(conn, query, vector, [version], k=5, per_page=True, **tuning)
            return next(h.score for h in hits if h.url.endswith("/3.5.html"))

        # release notes count half unless the query asks about versions or changes
        plain = "the size of an object in bytes"
        assert score(plain) == pytest.approx(0.5 * score(plain, changelog_factor=1.0))
        for asking in (
            "what's new: the size of an object in bytes",
            "size of an object in bytes since 3.5",
            "size of an object in bytes changed",
            "sys.getsizeof size of an object",
        ):  # fmt: skip  (an identifier: its release notes answer)
            assert score(asking) == pytest.approx(score(asking, changelog_factor=1.0)), asking


def test_definitions_are_cut_to_their_own_text():
    markdown = "# m\n\n## F\n\nf(x)\n\n" + "Computes f of x. " * 80 + "\n\ng(y)\n\nShort.\n\n## Next\n\nText."
    anchors = [(markdown.index("## F"), "f-section"), (markdown.index("f(x)"), "m.f"), (markdown.index("g(y)"), "m.g")]
    found = definitions(markdown, anchors, [("m.f", "m.f"), ("m.g", "m.g"), ("m.h", "f-section", None)], 300)
    assert [d.name for d in found] == ["m.f"]  # g's text is too short to be worth a vector; h has no start
    assert len(found[0].content) <= 300 and found[0].content.startswith("f(x)")
    assert found[0].heading_path == ("m", "F") and found[0].anchor == "m.f"
    offset = markdown.index("g(y)")
    (g,) = definitions(markdown, [], [("m.g", "f-section", offset)], 300)[:1] or [None]
    assert g is None  # an offset of its own, but still too short


def test_a_definition_that_is_most_of_a_chunk_of_its_own_gets_no_second_vector():
    from docsbot.content.chunking import Definition, own_vectors

    alone = Definition("cmake_minimum_required", "cmake_minimum_required(VERSION <min>)\n\nRequire a minimum version.",
                       ("cmake_minimum_required",), "cmd", 0)  # fmt: skip
    first = Definition("m.f", "f(x)\n\nComputes f of x, for every x that is given.", ("m",), "m.f", 10)
    second = Definition("m.g", "g(y)\n\nComputes g of y, for every y that is given.", ("m",), "m.g", 60)
    chunks = [alone.content + "\n\nSee also.", f"# m\n\n{first.content}\n\n{second.content}"]
    assert own_vectors([alone, first, second], chunks) == [first, second]  # two in one chunk: each its own
    assert own_vectors([alone], ["# intro\n\n" + "Words. " * 40 + alone.content]) == [alone]  # a small part of it


def test_a_definition_on_a_heading_runs_past_the_headings_own_anchor():
    """A heading's anchor sits on its own line, after the ``#`` marks: the definition a heading starts (a CMake
    command page, an mkdocstrings object) runs to the next bound after that line."""
    markdown = "# cmd\n\n## add_thing\n\nAdd a thing to the build, with every option it takes.\n\n## other\n\nText."
    anchors = [(markdown.index("add_thing"), "add-thing"), (markdown.index("other"), "other")]
    (found,) = definitions(markdown, anchors, [("add_thing", "add-thing", markdown.index("## add_thing"))])
    assert found.content == "## add_thing\n\nAdd a thing to the build, with every option it takes."
