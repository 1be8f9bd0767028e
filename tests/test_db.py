"""The database layer against a real PostgreSQL + pgvector."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import numpy as np
import psycopg
import pytest
from psycopg import sql

from docsbot import store
from docsbot.items import Chunk, PageItem
from tests.conftest import ROOT
from tests.embedders import HashingEmbedder


@pytest.fixture
def conn(database_url):
    with store.connect(database_url, autocommit=True) as conn:
        store.migrate(conn)
        yield conn


def make_version(conn, library="lib", version="1"):
    row = store.upsert_version(conn, library, version, "http://h/docs/", {"max_depth": None})
    store.bind_model(conn, row, HashingEmbedder.name, lambda: HashingEmbedder.dim)
    return store.find_version(conn, library, version)


def page_item(version_id, texts, etag='"v1"', page_id=None):
    vectors = HashingEmbedder().embed(texts)
    return PageItem(
        version_id=version_id,
        url="http://h/docs/a.html",
        title="A",
        markdown="\n\n".join(texts),
        content_hash="h-" + etag,
        depth=1,
        links=["http://h/docs/b.html"],
        etag=etag,
        page_id=page_id,
        chunks=[Chunk(t, ["A"], "A", t, embed_hash=f"k-{t}", embedding=v) for t, v in zip(texts, vectors, strict=True)],
    )


def save(database_url, item):
    async def go():
        page_store = store.PageStore(database_url, 1)
        await page_store.open()
        try:
            return (await page_store.save_page(item)).id
        finally:
            await page_store.close()

    return asyncio.run(go())


def test_migrations_are_recorded_and_idempotent(conn):
    assert store.migrate(conn) == []
    applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert applied == [version for version, _ in store.schema._migrations()] and applied[:3] == ["0001", "0002", "0003"]
    indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'documents'")}
    assert {"documents_unembedded_idx", "documents_page_id_idx"} <= indexes
    assert "documents_fts_idx" not in indexes  # unread since BM25 postings; every chunk write paid for it


def test_vector_index_is_hnsw_per_dimension_and_used_by_search(conn, database_url):
    version = make_version(conn)
    definition = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'documents_embedding_384_hnsw_idx'"
    ).fetchone()[0]
    assert "hnsw" in definition and "vector_cosine_ops" in definition
    assert version.embedding_model == HashingEmbedder.name and version.embedding_dim == 384
    save(database_url, page_item(version.id, [f"chunk number {i} about asyncio" for i in range(20)]))
    conn.execute("ANALYZE documents")
    # The planner picks a sequential scan for a table this small; with it discouraged, the index is chosen only
    # if the search query's ORDER BY expression, operator and WHERE clause match the (partial) index.
    query = sql.SQL("EXPLAIN (COSTS OFF) " + store.ranking._SEARCH).format(dim=sql.Literal(384))
    params = {
        **store.SEARCH_DEFAULTS,
        "vector": HashingEmbedder().embed(["asyncio"])[0],
        "versions": [version.id],
        "text": "asyncio",
        "k": 5,
        "per_page": False,
        "page_kind": None,
        "change_words": store.ranking.CHANGE_WORDS,
    }
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(row[0] for row in conn.execute(query, params))
    assert "Index Scan using documents_embedding_384_hnsw_idx" in plan, plan


def test_a_page_is_written_in_one_transaction(conn, database_url):
    version = make_version(conn)
    page_id = save(database_url, page_item(version.id, ["first chunk", "second chunk"]))
    before = conn.execute("SELECT id, content FROM documents ORDER BY id").fetchall()

    broken = page_item(version.id, ["replacement"], etag='"v2"', page_id=page_id)
    broken.chunks[0].content = "a NUL byte \x00 no text column takes"  # COPY fails after the row was updated
    with pytest.raises(psycopg.Error):
        save(database_url, broken)

    assert conn.execute("SELECT id, content FROM documents ORDER BY id").fetchall() == before
    assert conn.execute("SELECT etag FROM pages WHERE id = %s", (page_id,)).fetchone()[0] == '"v1"'


def test_postings_count_each_term_of_a_chunk_in_its_text_and_its_context_line(conn, database_url):
    """The postings trigger: one row per (chunk, term), the term's frequency in the chunk's text (tf_body) and in
    its context line "title > headings" (tf_head), identifiers kept whole beside the `english` lexemes."""
    version = make_version(conn)
    item = page_item(version.id, ["Run tasks: asyncio.run runs the tasks.", "other words"])
    item.chunks[0].context = "Tasks > Running tasks"
    page_id = save(database_url, item)
    rows = conn.execute(
        "SELECT term, tf_body, tf_head, doc_len, p.page_id = %s FROM postings p JOIN documents d ON d.id = p.doc_id "
        "WHERE d.sort_order = 0 ORDER BY term",
        (page_id,),
    ).fetchall()
    text, context = item.chunks[0].content, item.chunks[0].context
    assert {term: (body, head) for term, body, head, _, _ in rows} == {
        "=asyncio.run": (1, 0), "=run": (1, 0), "asyncio.run": (1, 0), "run": (2, 1), "task": (2, 2),
    }  # fmt: skip
    assert {(length, mine) for *_, length, mine in rows} == {(len(text) + len(context), True)}


def test_unchanged_content_writes_validators_only(conn, database_url):
    version = make_version(conn)
    page_id = save(database_url, page_item(version.id, ["first chunk"]))
    before = conn.execute("SELECT id FROM documents").fetchall()
    same = page_item(version.id, ["first chunk"], etag='"v2"', page_id=page_id)
    same.changed = False
    save(database_url, same)
    assert conn.execute("SELECT id FROM documents").fetchall() == before
    assert conn.execute("SELECT etag FROM pages").fetchone()[0] == '"v2"'


def test_a_page_is_stored_text_first_with_the_vectors_stored_for_its_texts(conn, database_url):
    """Text first: a chunk whose text (embed_hash) has a vector anywhere in the database (here, another version)
    takes it over in the page's transaction; the others are written without one and wait in the queue."""
    old, new = make_version(conn, "lib", "1"), make_version(conn, "lib", "2")
    save(database_url, page_item(old.id, ["unchanged text", "old text"]))
    item = page_item(new.id, ["unchanged text", "brand new text"])
    for chunk in item.chunks:
        chunk.embedding = None  # what the chunk pipeline hands over

    async def go():
        page_store = store.PageStore(database_url, 1)
        await page_store.open()
        try:
            return await page_store.save_page(item)
        finally:
            await page_store.close()

    saved = asyncio.run(go())
    assert (saved.reused, saved.waiting) == (1, 1)
    rows = dict(conn.execute("SELECT content, embedding IS NOT NULL FROM documents WHERE page_id = %s", (saved.id,)))
    assert rows == {"unchanged text": True, "brand new text": False}
    old_vector, new_vector = conn.execute(
        "SELECT embedding FROM documents WHERE content = 'unchanged text' ORDER BY id"
    ).fetchall()
    assert np.array_equal(old_vector[0].to_numpy(), new_vector[0].to_numpy())


def test_read_only_commands_check_the_schema_and_never_migrate(conn, database_url):
    assert store.has_schema(conn)
    store.check_schema(conn)  # current: nothing to say
    last = store.schema._migrations()[-1][0]
    conn.execute("DELETE FROM schema_migrations WHERE version = %s", (last,))
    with pytest.raises(store.SchemaBehind, match=f"migrations {last} are not applied.*docsbot db migrate"):
        store.check_schema(conn)
    conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (last,))
    with psycopg.connect(database_url, autocommit=True) as other:
        other.execute("DROP TABLE schema_migrations")
        with pytest.raises(store.NoSchema, match="nothing is indexed"):
            store.check_schema(other)


def test_vectors_of_two_models_are_never_mixed(conn):
    version = make_version(conn)
    with pytest.raises(store.DatabaseError, match="indexed with the embedding model"):
        store.bind_model(conn, version, "another/model", lambda: 768)


def test_hybrid_search_fuses_vector_and_full_text_ranks(conn, database_url):
    version = make_version(conn)
    other = make_version(conn, "other", "")
    save(database_url, page_item(version.id, ["asyncio create_task schedules a coroutine", "json encodes data"]))
    item = page_item(other.id, ["asyncio create_task in another library"])
    save(database_url, item)
    query = "create_task coroutine"
    vector = HashingEmbedder().embed([query])[0]
    hits = store.search(conn, query, vector, [version.id], k=5)
    assert hits[0].content == "asyncio create_task schedules a coroutine"
    assert all("another library" not in h.content for h in hits)  # version filter
    # first in both rankings, 1/(60+1) each; the query names an identifier the text holds (create_task), so its
    # BM25 rank weighs w_lex_ident
    assert hits[0].score == pytest.approx((1 + store.SEARCH_DEFAULTS["w_lex_ident"]) / 61)
    assert hits[0].heading_path == ["A"] and hits[0].url == "http://h/docs/a.html"


def test_redact_dsn_hides_passwords():
    assert store.redact_dsn("postgresql://u:s3cret@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert "s3cret" not in store.redact_dsn("host=h password=s3cret dbname=d")


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(store.DatabaseError, match=r"cannot connect to postgresql://u:\*\*\*@127.0.0.1:1/d"):
        store.connect("postgresql://u:pw@127.0.0.1:1/d", connect_timeout=2)


def test_search_vector_dimension_comes_from_the_query(conn, database_url):
    version = make_version(conn)
    save(database_url, page_item(version.id, ["asyncio create_task schedules a coroutine"]))
    vector = HashingEmbedder().embed(["create_task"])[0]
    hits = store.search(conn, "zzz", vector, [version.id], k=3)  # no full-text match: the vector side found it
    assert [h.content for h in hits] == ["asyncio create_task schedules a coroutine"]
    # A query of another dimension meets no stored vector (and no error): only the full-text side can answer.
    assert store.search(conn, "zzz", np.ones(768, dtype=np.float32) / np.sqrt(768), [version.id], k=3) == []
    assert [h.content for h in store.search(conn, "coroutine", np.ones(768, dtype=np.float32), [version.id])] == [
        "asyncio create_task schedules a coroutine"
    ]


LOAD_STORED_PAGES = """
import asyncio, sys
from docsbot import store
import docsbot.refresh  # stored_pages imports it on first use: not what is measured here

def kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

async def main(dsn, version_id):
    page_store = store.PageStore(dsn, 1)
    await page_store.open()
    before = kib("VmRSS")
    stored = await page_store.stored_pages(version_id)
    print(len(stored), (kib("VmHWM") - before) // 1024)
    await page_store.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def test_stored_pages_are_read_in_batches_not_as_one_result(conn, database_url):
    """A refresh loads every stored page with its links before its first request: the rows are streamed from a
    server-side cursor, so the process never holds the whole result (all links as text) besides the pages built
    from it. 3,000 pages x 200 links of 100 characters are 60 MB as text; loaded at once, the peak grew by
    about that much (measured in a process of its own)."""
    version = make_version(conn)
    conn.execute(
        "INSERT INTO pages (version_id, url, depth, links) SELECT %s, 'http://h/docs/p' || i || '.html', 1, "
        "ARRAY(SELECT 'http://h/docs/' || repeat('x', 80) || k || '.html' FROM generate_series(1, 200) AS k) "
        "FROM generate_series(1, 3000) AS i",
        (version.id,),
    )
    out = subprocess.run(
        [sys.executable, "-c", LOAD_STORED_PAGES, database_url, str(version.id)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    pages, peak_mib = int(out[0]), int(out[1])
    assert pages == 3000
    # What stays: 3,000 tuples of 200 references to 200 shared strings, about 5 MB.
    assert peak_mib < 25, f"loading the stored pages raised the peak RSS by {peak_mib} MiB"


def test_stored_pages_share_one_copy_of_each_linked_url(conn, database_url):
    # A refresh holds every stored page's links for the whole run: a URL linked from many pages is kept once.
    version = make_version(conn)
    shared = "http://h/docs/" + "common-target-" * 3 + ".html"  # built at run time: not interned by the compiler
    for name in ("a", "b"):
        conn.execute(
            "INSERT INTO pages (version_id, url, depth, links) VALUES (%s, %s, 1, %s)",
            (version.id, f"http://h/docs/{name}.html", [shared, f"http://h/docs/{name}-own.html"]),
        )

    async def load():
        page_store = store.PageStore(database_url, 1)
        await page_store.open()
        try:
            return await page_store.stored_pages(version.id)
        finally:
            await page_store.close()

    stored = asyncio.run(load())
    a, b = stored["http://h/docs/a.html"], stored["http://h/docs/b.html"]
    assert a.links[0] == b.links[0] == shared
    assert a.links[0] is b.links[0]
