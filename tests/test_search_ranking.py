"""Ranking of docsbot.store.ranking against a real PostgreSQL: BM25 postings, the symbol table, navigation pages,
one result per page with its best chunks merged (tests/embedders.HashingEmbedder stands in for the model)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from docsbot import store
from docsbot.items import Chunk, PageItem
from tests.embedders import HashingEmbedder


@pytest.fixture
def conn(database_url):
    with store.connect(database_url, autocommit=True) as conn:
        store.migrate(conn)
        yield conn


def save(database_url, items):
    async def go():
        page_store = store.PageStore(database_url, 1)
        await page_store.open()
        try:
            return [(await page_store.save_page(item)).id for item in items]
        finally:
            await page_store.close()

    return asyncio.run(go())


def page(version_id, name, chunks, *, symbols=(), link_share=0.0):
    """chunks: (heading, text, anchor) in page order."""
    texts = [f"{name} > {h}\n\n{t}" for h, t, _ in chunks]
    vectors = HashingEmbedder().embed(texts)
    return PageItem(
        version_id=version_id,
        url=f"http://h/{name}.html",
        title=name,
        markdown="\n\n".join(t for _, t, _ in chunks),
        content_hash=f"h-{name}",
        depth=1,
        links=[],
        chunks=[
            Chunk(t, [name, h], f"{name} > {h}", e, embed_hash=f"k-{e}", embedding=v, anchor=a)
            for (h, t, a), e, v in zip(chunks, texts, vectors, strict=True)
        ],
        symbols=list(symbols),
        link_share=link_share,
    )


@pytest.fixture
def version(conn):
    row = store.upsert_version(conn, "lib", "1", "http://h/", {})
    store.bind_model(conn, row, HashingEmbedder.name, lambda: HashingEmbedder.dim)
    return store.find_version(conn, "lib", "1")


def search(conn, version, query, **kwargs):
    vector = HashingEmbedder().embed([query])[0]
    return store.search(conn, query, vector, [version.id], **kwargs)


FILLER = "Some prose about files, descriptors and processes that every page has. " * 3


def corpus(version):
    return [
        page(version.id, "os", [
            ("Intro", "The os module. " + FILLER, "module-os"),
            ("Inheritance", "set_inheritable(fd, inheritable) Set the inheritable flag of the descriptor.",
             "os.set_inheritable"),
            ("Other", "get_inheritable(fd) Get the flag. " + FILLER, "os.get_inheritable"),
        ], symbols=[("os", "module-os"), ("os.set_inheritable", "os.set_inheritable"),
                    ("os.get_inheritable", "os.get_inheritable")]),
        page(version.id, "notes", [
            ("Set", "Set set set inheritable inheritable os os os flags. " + FILLER, "set"),
            ("More", "os.set and inheritable again, set it. " + FILLER, "more"),
        ]),
        page(version.id, "genindex", [
            ("Index", "os.set_inheritable (in module os) set_inheritable os inheritable set " * 5, None),
        ], link_share=0.95),
        page(version.id, "tasks", [
            ("Tasks", "Wrap the coroutine into a Task and schedule its execution. " + FILLER, "tasks"),
            ("Timeouts", "Wait for the coroutine to complete with a timeout; cancel it when it expires.", "timeouts"),
            ("Groups", "A task group runs many coroutines. " + FILLER, "groups"),
        ]),
    ]  # fmt: skip


def test_postings_follow_the_chunks_they_index(conn, database_url, version):
    ids = save(database_url, corpus(version))
    terms = {t for (t,) in conn.execute("SELECT term FROM postings WHERE page_id = %s", (ids[0],))}
    assert {"=set_inheritable", "=get_inheritable", "inherit", "flag"} <= terms
    assert "=set_inheritable" in terms and "set_inheritable" not in terms  # the english parser splits it
    # A page stored again replaces its chunks, and their postings with them (a trigger, not a foreign key: 0027)
    other = conn.execute("SELECT count(*) FROM postings WHERE page_id <> %s", (ids[0],)).fetchone()[0]
    again = corpus(version)[0]
    again.chunks = again.chunks[:1]
    save(database_url, [again])
    docs = {d for (d,) in conn.execute("SELECT id FROM documents WHERE page_id = %s AND kind = 0", (ids[0],))}
    indexed = {d for (d,) in conn.execute("SELECT DISTINCT doc_id FROM chunk_postings WHERE page_id = %s", (ids[0],))}
    assert indexed == docs and len(docs) == 1
    assert conn.execute("SELECT count(*) FROM postings WHERE page_id <> %s", (ids[0],)).fetchone()[0] == other
    conn.execute("DELETE FROM pages WHERE id = %s", (ids[0],))
    assert conn.execute("SELECT count(*) FROM postings WHERE page_id = %s", (ids[0],)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM symbols WHERE page_id = %s", (ids[0],)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chunk_postings p WHERE NOT EXISTS "
                        "(SELECT 1 FROM documents d WHERE d.id = p.doc_id)").fetchone()[0] == 0  # fmt: skip


def test_postings_stay_exact_when_a_page_gains_or_loses_some_of_its_chunks(conn, database_url, version):
    """Pages are written whole, but a statement adding a chunk to a page that has some, or deleting some of a page's
    chunks, leaves every remaining chunk's postings as its own terms give them (the per-page rows are merged or
    rebuilt), so BM25 never misses a chunk nor reads a deleted one."""
    ids = save(database_url, corpus(version))

    def exact() -> None:
        stored = conn.execute(
            "SELECT doc_id, term, tf_body, tf_head, doc_len FROM chunk_postings WHERE page_id = %s "
            "ORDER BY doc_id, term", (ids[0],)
        ).fetchall()  # fmt: skip
        expected = conn.execute(
            "SELECT d.id, t.term, t.tf_body, t.tf_head, length(d.content) + length(d.context) FROM documents d "
            "CROSS JOIN LATERAL docsbot_chunk_terms(d.content, d.context) t WHERE d.page_id = %s AND d.kind = 0 "
            "ORDER BY d.id, t.term", (ids[0],)
        ).fetchall()  # fmt: skip
        assert stored == expected and stored

    conn.execute(
        "INSERT INTO documents (page_id, version_id, sort_order, content, context, kind) SELECT page_id, version_id, "
        "99, 'A late chunk names os.get_inheritable again.', context, 0 FROM documents WHERE page_id = %s LIMIT 1",
        (ids[0],),
    )
    exact()
    late = conn.execute("SELECT max(id) FROM documents WHERE page_id = %s", (ids[0],)).fetchone()[0]
    assert late in {d for (d,) in conn.execute("SELECT doc_id FROM chunk_postings WHERE term = '=get_inheritable'")}
    first = conn.execute("SELECT min(id) FROM documents WHERE page_id = %s AND kind = 0", (ids[0],)).fetchone()[0]
    conn.execute("DELETE FROM documents WHERE id = %s", (first,))
    exact()
    assert first not in {d for (d,) in conn.execute("SELECT doc_id FROM chunk_postings")}


def test_a_page_written_again_replaces_its_chunks_symbols_and_navigation_share(conn, database_url, version):
    """A new page is written with its navigation share and no delete (it has nothing to delete); the same URL
    written again with new content replaces its chunks, symbols and share; written again unchanged, it keeps
    them all, the share included."""
    first = page(version.id, "os", [("Intro", "The os module.", "a"), ("Files", "Open files.", "b")],
                 symbols=[("os.open", "b")], link_share=0.95)  # fmt: skip
    (page_id,) = save(database_url, [first])

    def stored():
        share = conn.execute("SELECT link_share FROM pages WHERE id = %s", (page_id,)).fetchone()[0]
        texts = [t for (t,) in conn.execute("SELECT content FROM documents WHERE page_id = %s AND kind = 0 "
                                            "ORDER BY sort_order", (page_id,))]  # fmt: skip
        names = [n for (n,) in conn.execute("SELECT name FROM symbols WHERE page_id = %s", (page_id,))]
        return round(share, 2), texts, names

    assert stored() == (0.95, ["The os module.", "Open files."], ["os.open"])
    second = page(version.id, "os", [("Intro", "The os module, new.", "a")], symbols=[("os.close", "a")],
                  link_share=0.2)  # fmt: skip
    assert save(database_url, [second]) == [page_id]
    assert stored() == (0.2, ["The os module, new."], ["os.close"])
    unchanged = page(version.id, "os", [("Intro", "Other text the item holds.", "a")], link_share=0.5)
    unchanged.changed = False
    assert save(database_url, [unchanged]) == [page_id]
    assert stored() == (0.2, ["The os module, new."], ["os.close"])


def test_a_pages_postings_are_found_by_the_index_not_by_reading_every_library(conn, database_url, version):
    """Writing or deleting a page's chunks reads that page's postings (whether it has any; which to delete). Asked as
    `EXISTS`, or by `= ANY` of an array, PostgreSQL could read the whole postings table instead (a sequential scan
    costed as stopping at a first match, which a new page never has): each page a crawl wrote cost a read of every
    library's postings. It must be index probes, whatever the table holds and whether or not it has statistics."""
    ids = save(database_url, corpus(version))
    # Other libraries' postings: 40,000 rows over 2,000 pages
    conn.execute(
        "INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens) "
        "SELECT %s, 'other' || i, 1000000 + i %% 2000, '{1}', '{1}', '{0}', '{10}' FROM generate_series(1, 40000) i",
        (version.id,),
    )

    def scans(statement: str, *params) -> tuple[int, int]:
        """Sequential and index scans of postings by one statement (its triggers included)."""
        conn.execute("SELECT pg_stat_force_next_flush()")  # counters of earlier statements leave pg_stat_xact_*
        with conn.transaction():
            conn.execute(statement, params)
            return conn.execute(
                "SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'postings'"
            ).fetchone()

    for analyzed in (False, True):
        if analyzed:
            conn.execute("ANALYZE postings")
        deleted = scans("DELETE FROM documents WHERE page_id = %s", ids[3])
        assert deleted[0] == 0 and deleted[1] >= 1, (analyzed, deleted)
        assert conn.execute("SELECT count(*) FROM postings WHERE page_id = %s", (ids[3],)).fetchone()[0] == 0
        inserted = scans(
            "INSERT INTO documents (page_id, version_id, sort_order, content, context, kind) "
            "VALUES (%s, %s, 0, 'Wrap the coroutine into a Task.', 'tasks > Tasks', 0)", ids[3], version.id
        )  # fmt: skip
        assert inserted[0] == 0 and inserted[1] >= 1, (analyzed, inserted)
        terms = {t for (t,) in conn.execute("SELECT term FROM postings WHERE page_id = %s", (ids[3],))}
        assert {"coroutin", "task", "wrap"} <= terms


@pytest.mark.parametrize(
    "query", ["os.set_inheritable", "os.set_inheritable()", "set_inheritable", "how does set_inheritable work"]
)
def test_an_api_name_finds_its_defining_page_first_with_a_deep_link(conn, database_url, version, query):
    save(database_url, corpus(version))
    hits = search(conn, version, query, k=3, per_page=True)
    assert hits[0].url == "http://h/os.html"
    assert hits[0].deep_link == "http://h/os.html#os.set_inheritable"
    assert "genindex" not in [h.url.rsplit("/", 1)[1].split(".")[0] for h in hits[:2]]


def test_navigation_pages_rank_below_content_but_still_match(conn, database_url, version):
    save(database_url, corpus(version))
    urls = [h.url for h in search(conn, version, "inheritable set os", k=5, per_page=True)]
    assert "http://h/genindex.html" in urls and urls[-1] == "http://h/genindex.html"
    save(database_url, [page(version.id, "genindex", [("Index", "os.set_inheritable set " * 5, None)])])
    urls = [h.url for h in search(conn, version, "inheritable set os", k=5, per_page=True)]
    assert urls.index("http://h/genindex.html") < len(urls) - 1  # the same text as content competes


def test_one_result_per_page_with_its_best_chunks_merged_in_page_order(conn, database_url, version):
    save(database_url, corpus(version))
    hits = search(conn, version, "coroutine task timeout", k=5, per_page=True, merge=3, merge_ratio=0.0)
    assert len({h.url for h in hits}) == len(hits)
    tasks = next(h for h in hits if h.url == "http://h/tasks.html")
    assert tasks.content.index("Wrap the coroutine") < tasks.content.index("Wait for the coroutine")
    chunks = search(conn, version, "coroutine task timeout", k=5, per_page=False)
    assert len(chunks) == 5 and len({h.url for h in chunks}) < 5


def test_bm25_statistics_are_refreshed_at_the_end_of_a_run(conn, database_url, version):
    save(database_url, corpus(version))

    async def run():
        page_store = store.PageStore(database_url, 1)
        await page_store.open()
        try:
            await page_store.finish_run(await page_store.start_run(version.id, "full"), {}, "complete", "")
        finally:
            await page_store.close()

    asyncio.run(run())
    stats = "SELECT docs, avg_len FROM lexical_stats WHERE version_id = %s"
    docs, avg_len = conn.execute(stats, (version.id,)).fetchone()
    assert docs == 9 and avg_len > 50


def test_unknown_tuning_names_are_refused(conn, version):
    with pytest.raises(TypeError, match="unknown search parameters: nope"):
        search(conn, version, "x", nope=1)


def test_symbol_keys_are_the_name_and_its_last_parts():
    assert store.symbol_keys("os.path.join()") == ["os.path.join", "path.join", "join"]
    assert store.symbol_keys("PyCell_Get") == ["pycell_get"]


def test_symbol_keys_split_rust_and_gobject_paths_too():
    assert store.symbol_keys("std::vec::Vec::push") == ["std::vec::vec::push", "vec::vec::push", "vec::push", "push"]
    assert store.symbol_keys("Gtk.Button:label") == ["gtk.button:label", "button:label", "label"]


def test_page_level_bm25_ranks_a_page_whose_sections_all_cover_the_query(conn, database_url, version):
    """With w_page_lex, a page that covers the query's terms across its sections (one term per section) outranks
    a page whose single best section matches a little better: chunk-level ranks see one section at a time."""
    spread = page(version.id, "spread", [
        ("Alpha", "The frobnicator configures widgets. " + FILLER, "alpha"),
        ("Beta", "Widgets are rendered by the quux engine. " + FILLER, "beta"),
        ("Gamma", "The quux engine uses a frobnicator. " + FILLER, "gamma"),
    ])  # fmt: skip
    dense = page(version.id, "dense", [
        ("One", "frobnicator widgets quux, all in one line.", "one"),
        ("Two", "Unrelated text about something else. " + FILLER, "two"),
    ])  # fmt: skip
    save(database_url, [*corpus(version), spread, dense])
    query = "frobnicator widgets quux"
    best_only = {"w_page_rest": 0.0}  # a page ranked by its best chunk alone
    plain = [h.url for h in search(conn, version, query, k=3, per_page=True, **best_only)]
    paged = [h.url for h in search(conn, version, query, k=3, per_page=True, w_page_lex=3.0, rrf_k=10, **best_only)]
    assert plain[0] == "http://h/dense.html"
    assert paged[0] == "http://h/spread.html" and "http://h/dense.html" in paged
    # The default (w_page_rest, tuned on make eval) adds a share of a page's 2nd and 3rd best chunks: the same win.
    assert [h.url for h in search(conn, version, query, k=3, per_page=True)][0] == "http://h/spread.html"


def test_a_version_without_bm25_statistics_yet_ranks_as_with_them(conn, database_url, version):
    """A first index still running (or interrupted) has no lexical_stats row: search computes the statistics once
    (a materialized CTE) and ranks exactly as it will once the run has stored them."""
    save(database_url, corpus(version))
    conn.execute("DELETE FROM lexical_stats WHERE version_id = %s", (version.id,))
    before = [(h.url, round(h.score, 9)) for h in search(conn, version, "inheritable flag", k=5, per_page=True)]
    store.refresh_lexical_stats(conn, version.id)
    after = [(h.url, round(h.score, 9)) for h in search(conn, version, "inheritable flag", k=5, per_page=True)]
    assert before == after and before[0][0] == "http://h/os.html"


def test_a_short_query_naming_an_identifier_ranks_the_pages_that_contain_it_above_look_alikes(
    conn, database_url, version
):
    """A release note mentioning CMAKE_XCODE_SCHEME_WORKING_DIRECTORY once is a target of that query; pages about
    its siblings share the query's words (variable, Xcode, scheme, working directory) but not the name."""
    release = page(version.id, "release", [
        ("Changes", "Many changes. " + FILLER * 3 + "CMAKE_XCODE_SCHEME_WORKING_DIRECTORY was added. " + FILLER * 3,
         "changes"),
        ("Other", "Many other changes of the release. " + FILLER, "other"),
    ])  # fmt: skip
    siblings = [
        page(version.id, name, [
            ("Variable", f"Variable {name}: the Xcode scheme variable for the working directory variable, "
                         "scheme working directory variable variable. " + FILLER, name.lower()),
            ("Example", "Set the variable for the Xcode scheme. " + FILLER, "example"),
        ])
        for name in ("CMAKE_XCODE_SCHEME_ENVIRONMENT", "CMAKE_XCODE_SCHEME_DEBUGGER", "CMAKE_XCODE_SCHEME_LAUNCH_MODE",
                     "CMAKE_XCODE_SCHEME_ARGUMENTS", "CMAKE_XCODE_SCHEME_ZOMBIE", "CMAKE_XCODE_SCHEME_MALLOC")
    ]  # fmt: skip
    save(database_url, [*corpus(version), release, *siblings])
    query = "variable CMAKE_XCODE_SCHEME_WORKING_DIRECTORY"
    top = [h.url for h in search(conn, version, query, k=3, per_page=True)]
    assert "http://h/release.html" in top
    ungated = [h.url for h in search(conn, version, query, k=3, per_page=True, ident_miss=1.0, w_lex_ident=1.0)]
    assert "http://h/release.html" not in ungated  # the look-alikes win without the rule
    # A question that merely mentions a name is not gated: its words decide
    question = "which variable sets the working directory of the Xcode scheme CMAKE_XCODE_SCHEME_WORKING_DIRECTORY"
    asked = [h.url for h in search(conn, version, question, k=3, per_page=True)]
    assert asked == [h.url for h in search(conn, version, question, k=3, per_page=True, ident_miss=1.0)]


def test_a_word_of_letters_and_digits_counts_as_an_identifier(conn, database_url, version):
    """A policy number (``CMP0036``) is one `english` lexeme, not an identifier term: the identifier rule reads it
    from the query's words, so the command page that names the policy once ranks above its sibling policies."""
    command = page(version.id, "build_name", [
        ("Command", "Disallowed since version 3.0. See CMP0036. " + FILLER * 3, "command"),
        ("Usage", "Use the project name instead. " + FILLER, "usage"),
    ])  # fmt: skip
    policies = [
        page(version.id, name, [
            ("Policy", f"{name}: the policy setting of this policy. Set the policy to OLD or NEW policy behavior, "
                       "policy policy. " + FILLER, name.lower()),
            ("Example", "Set the policy with cmake_policy. " + FILLER, "example"),
        ])
        for name in ("CMP0036", "CMP0037", "CMP0038", "CMP0039", "CMP0040", "CMP0041", "CMP0042")
    ]  # fmt: skip
    save(database_url, [*corpus(version), command, *policies])
    top = [h.url for h in search(conn, version, "policy CMP0036", k=3, per_page=True)]
    assert top[0] == "http://h/CMP0036.html" and "http://h/build_name.html" in top
    ungated = [h.url for h in search(conn, version, "policy CMP0036", k=3, per_page=True, ident_miss=1.0)]
    assert "http://h/build_name.html" not in ungated  # the sibling policies win without the rule


def test_a_version_still_waiting_for_most_vectors_is_ranked_by_its_text_alone(conn, database_url, version):
    """Text first: while a version's queue fills, the chunks embedded early would be found by two lists and the
    waiting ones by one, so an early page outranked the page a query names (seen in tests/test_faults.py: page 0
    above page 37). Below ``vector_share`` of its chunks embedded, a version is ranked by BM25 and symbols alone;
    once (nearly) every chunk has its vector, hybrid ranking again."""
    pages = [
        page(version.id, f"p{i}", [(f"Part {k}", f"Paragraph {k} of page {i} in the first edition. " + FILLER, None)
                                   for k in range(3)])
        for i in range(20)
    ]  # fmt: skip
    save(database_url, pages)
    conn.execute("UPDATE documents SET embedding = NULL WHERE page_id IN (SELECT id FROM pages WHERE url ~ 'p1[0-9]')")
    query = "Paragraph 2 of page 17"
    mixed = search(conn, version, query, per_page=True, vector_share=0.0)  # as before: every embedded chunk
    assert mixed[0].url != "http://h/p17.html"  # the bias this guards against (an embedded page above it)
    hits = search(conn, version, query, per_page=True)
    assert hits[0].url == "http://h/p17.html"
    assert [h.url for h in hits] == [h.url for h in search(conn, version, query, per_page=True, candidates=0)]

    conn.execute("UPDATE documents SET embedding = (SELECT embedding FROM documents WHERE embedding IS NOT NULL "
                 "LIMIT 1) WHERE embedding IS NULL")  # fmt: skip
    nearest = search(conn, version, "Paragraph 0 of page 3", per_page=True, lex_candidates=0, w_sym=0, w_sym_word=0)
    assert nearest  # every chunk embedded: the vector list ranks again (the only list left here)


def test_a_whole_book_page_gives_way_to_the_chapter_it_repeats(conn, database_url, version):
    """mdBook's print.html holds every chapter: once a run has computed which pages repeat others (page_repeats), a
    query finds the chapter once, not the chapter and the copy; a page quoting a section of another (git-config(1)
    and git-add(1)'s CONFIGURATION) repeats nothing, and a copy whose chapters are not hits is still found."""
    ownership = [
        ("Ownership", "Ownership is a set of rules that govern how a Rust program manages memory. " + FILLER, "own"),
        ("Moves", "A move transfers ownership of a heap value from one variable to another binding.", "moves"),
    ]
    overflow = [
        ("Integer overflow", "An integer overflow wraps around in release builds and panics in debug builds.", "ovf"),
        ("Casting", "Casting between integer types with as truncates or extends the bit pattern.", "cast"),
    ]
    printed = [*ownership, *overflow, ("Colophon", "Printed with the wandering albatross typeface.", "colophon")]
    config = [
        ("Variables", "add.ignoreErrors tells git add to continue adding files when some cannot be added.", "vars"),
        ("Files", "The configuration files are read from the system, global and local scopes.", "files"),
        ("Syntax", "The syntax is a sequence of sections and variables in them.", "syn"),
    ]
    add = [("Options", "The dry run option shows what would be added without adding anything.", "opts"),
           ("Interactive", "Interactive mode asks for every hunk whether it should be staged.", "inter"),
           ("Configuration", config[0][1], "conf")]  # fmt: skip
    save(database_url, [page(version.id, "ownership", ownership), page(version.id, "overflow", overflow),
                        page(version.id, "print", printed), page(version.id, "git-config", config),
                        page(version.id, "git-add", add)])  # fmt: skip
    query = "integer overflow wraps in release builds"
    before = {h.url for h in search(conn, version, query, k=3, per_page=True)}
    assert {"http://h/overflow.html", "http://h/print.html"} <= before  # the same section twice

    store.refresh_lexical_stats(conn, version.id)
    repeats = conn.execute(
        "SELECT c.url, p.url FROM page_repeats r JOIN pages c ON c.id = r.copy_id JOIN pages p ON p.id = r.page_id "
        "ORDER BY 2"
    ).fetchall()
    assert repeats == [
        ("http://h/print.html", "http://h/overflow.html"),
        ("http://h/print.html", "http://h/ownership.html"),
    ]
    urls = [h.url for h in search(conn, version, query, k=3, per_page=True)]
    assert urls[0] == "http://h/overflow.html" and "http://h/print.html" not in urls
    assert "http://h/print.html" in [
        h.url for h in search(conn, version, "wandering albatross typeface", k=3, per_page=True)
    ]
    assert "http://h/git-config.html" in [h.url for h in search(conn, version, "add.ignoreErrors", k=3, per_page=True)]


def test_a_query_that_is_a_defined_term_of_several_words_finds_its_definition(conn, database_url, version):
    """Sphinx's glossary defines "magic method" (<dt id="term-magic-method">): a symbol of two words, found when
    the whole query is that term, above a page that uses the words more often; a longer query is not the term."""
    mock = page(version.id, "mock", [
        ("Magic methods", "Mock supports mocking magic methods: the magic method is configured. " * 4 + FILLER,
         "magic"),
        ("Configuring", "A magic method of a mock returns a magic method mock by default. " + FILLER, "conf"),
    ])  # fmt: skip
    glossary = page(version.id, "glossary", [
        ("Glossary", "abstract base class Abstract base classes complement duck-typing. " + FILLER, "term-abc"),
        ("Glossary", "magic method An informal synonym for special method. " + FILLER, "term-magic-method"),
    ], symbols=[("abstract base class", "term-abc"), ("magic method", "term-magic-method")])  # fmt: skip
    save(database_url, [mock, glossary])
    store.refresh_lexical_stats(conn, version.id)
    without = search(conn, version, "magic method", k=2, per_page=True, sym_word_max_words=1)  # no phrase key
    assert without[0].url == "http://h/mock.html"
    hits = search(conn, version, "magic method", k=2, per_page=True)
    assert [h.url for h in hits] == ["http://h/glossary.html", "http://h/mock.html"]
    assert hits[0].deep_link == "http://h/glossary.html#term-magic-method"
    longer = search(conn, version, "how to configure a magic method of a mock", k=2, per_page=True)
    assert longer[0].url == "http://h/mock.html"


def test_a_name_several_pages_define_ranks_first_where_the_sites_index_points(conn, database_url, version):
    """PostgreSQL's PGDATABASE: libpq's list of environment variables defines it (the book index points there), and
    each tool that reads it defines it again under "Environment", in a short section BM25 prefers. The symbol bonus
    is the indexed page's alone; the same pages stored without the index's mark share it and the tool wins."""

    def pages(indexed: bool):
        envars = page(version.id, "libpq-envars", [
            ("Environment Variables", "PGHOST behaves the same as the host connection parameter. "
             "PGPORT behaves the same as the port connection parameter. PGDATABASE behaves the same as the dbname "
             "connection parameter. PGUSER behaves the same as the user connection parameter. " + FILLER * 3, "e"),
        ], symbols=[("PGHOST", "e", None, indexed), ("PGDATABASE", "e", None, indexed)])  # fmt: skip
        tools = [
            page(version.id, tool, [("Environment", "PGDATABASE If set, the name of the database. " + FILLER, "env")],
                 symbols=[("PGDATABASE", "env", None, False)])
            for tool in ("createdb", "vacuumdb", "clusterdb")
        ]  # fmt: skip
        return [envars, *tools]

    save(database_url, pages(indexed=False))
    store.refresh_lexical_stats(conn, version.id)
    assert search(conn, version, "PGDATABASE", k=1, per_page=True)[0].url != "http://h/libpq-envars.html"
    save(database_url, pages(indexed=True))
    store.refresh_lexical_stats(conn, version.id)
    hits = search(conn, version, "PGDATABASE", k=4, per_page=True)
    assert hits[0].url == "http://h/libpq-envars.html"
    assert {h.url for h in hits[1:]} == {f"http://h/{t}.html" for t in ("createdb", "vacuumdb", "clusterdb")}
    kept = conn.execute("SELECT name, indexed FROM symbols ORDER BY page_id, name").fetchall()
    assert ("PGDATABASE", True) in kept and kept.count(("PGDATABASE", False)) == 3


def test_a_pages_symbols_are_stored_once_per_name_first_row_kept_and_replaced_with_the_page(
    conn, database_url, version
):
    """The symbol table's rows of a page: one per name (a name defined twice keeps its first anchor), each with its
    keys, documentation hash and whether the site's index points to it; storing the page again replaces them."""
    item = page(version.id, "os", [("Files", "os.open opens a file. " + FILLER, "files")], symbols=[
        ("os.open", "os.open", None, True), ("os.path.join", "os.path.join", None, False),
        ("os.open", "later-anchor", None, False), ("O_RDONLY", "os.O_RDONLY", None, False),
    ])  # fmt: skip
    item.symbol_hashes = {"os.open": "hash-open"}
    (page_id,) = save(database_url, [item])
    rows = conn.execute(
        "SELECT name, anchor, keys, doc_hash, indexed FROM symbols WHERE page_id = %s ORDER BY name", (page_id,)
    ).fetchall()
    assert rows == [
        ("O_RDONLY", "os.O_RDONLY", ["o_rdonly"], None, False),
        ("os.open", "os.open", ["os.open", "open"], "hash-open", True),
        ("os.path.join", "os.path.join", ["os.path.join", "path.join", "join"], None, False),
    ]
    again = page(version.id, "os", [("Files", "os.open opens a file. " + FILLER, "files")],
                 symbols=[("os.close", "os.close", None, False)])  # fmt: skip
    save(database_url, [again])
    names = conn.execute("SELECT name FROM symbols WHERE page_id = %s", (page_id,)).fetchall()
    assert names == [("os.close",)]


def test_a_hyphen_inside_a_word_is_not_a_command_line_option(conn, database_url, version):
    """Identifier terms (migration 0026): `--dry-run` and `-fPIC` are options, "command-line" and "record-style" are
    words. When a hyphen inside a word started an option ('=-style'), a plain question holding such a word named an
    "identifier" the docs contain: the page that answers it, which lacks '-style', was marked down as a look-alike."""
    answer = page(version.id, "dataclasses", [
        ("Records", "Record style classes: make a record style class from a list of field names. " + FILLER,
         "records"),
    ])  # fmt: skip
    mentions = [
        page(version.id, f"whatsnew{n}", [
            ("Changes", f"Old-style classes and new-style classes, release {n}. " + FILLER * 2, "changes"),
        ])
        for n in range(4)
    ]  # fmt: skip
    tools = page(version.id, "tools", [("Options", "Run with --dry-run or -fPIC (--verbose) to see it. " + FILLER,
                                         "options")])  # fmt: skip
    save(database_url, [*corpus(version), answer, *mentions, tools])
    terms = {t for (t,) in conn.execute("SELECT term FROM postings WHERE left(term, 1) = '='")}
    assert {"=--dry-run", "=-fpic", "=--verbose"} <= terms
    assert not {"=-style", "=-run"} & terms
    query = "record-style class"
    assert search(conn, version, query, k=1, per_page=True)[0].url == "http://h/dataclasses.html"


def test_postings_of_a_page_convert_in_place_to_the_rows_the_trigger_writes(conn, database_url, version):
    """Migration 0031 turns postings of one row per (chunk, term) into one per (page, term) holding the page's
    chunks as arrays: on a database of two versions, every (chunk, term) row is kept with its numbers, and the
    converted rows are those the trigger writes for the same chunks."""
    row = store.upsert_version(conn, "other", "1", "http://h/", {})
    store.bind_model(conn, row, HashingEmbedder.name, lambda: HashingEmbedder.dim)
    other = store.find_version(conn, "other", "1")
    save(database_url, [*corpus(version), *corpus(other)])
    written = conn.execute("SELECT * FROM postings ORDER BY version_id, term, page_id").fetchall()
    chunks = conn.execute("SELECT * FROM chunk_postings ORDER BY doc_id, term").fetchall()
    assert len(chunks) > len(written) > 0 and {r[0] for r in written} == {version.id, other.id}
    # the layout before 0031, holding the same (chunk, term) rows
    conn.execute("""
        CREATE TABLE postings_before AS SELECT * FROM chunk_postings;
        DROP VIEW chunk_postings;
        DROP TABLE postings;
        ALTER TABLE postings_before RENAME TO postings;
        ALTER TABLE postings ADD PRIMARY KEY (version_id, term, doc_id);
        CREATE INDEX postings_doc_idx ON postings (doc_id);
    """)  # fmt: skip
    assert conn.execute("SELECT count(*) FROM postings").fetchone()[0] == len(chunks)
    conn.execute(next((Path(store.__file__).parent / "migrations").glob("0031_*.sql")).read_text())
    assert conn.execute("SELECT * FROM chunk_postings ORDER BY doc_id, term").fetchall() == chunks
    assert conn.execute("SELECT * FROM postings ORDER BY version_id, term, page_id").fetchall() == written
    # and the triggers keep the new layout: a page stored again is replaced, a deleted one goes
    again = corpus(version)[0]
    save(database_url, [again])
    pid = conn.execute("SELECT id FROM pages WHERE url = %s AND version_id = %s", (again.url, version.id)).fetchone()[0]
    assert conn.execute("SELECT count(*) FROM postings WHERE page_id = %s", (pid,)).fetchone()[0] > 0
    conn.execute("DELETE FROM pages WHERE version_id = %s", (other.id,))
    assert conn.execute("SELECT count(*) FROM postings WHERE version_id = %s", (other.id,)).fetchone()[0] == 0
