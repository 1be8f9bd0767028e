"""The database layer against a real PostgreSQL + pgvector."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

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


def search_plan(conn, version_ids, seqscan=False):
    """EXPLAIN of the production search statement over ``version_ids``."""
    query = sql.SQL("EXPLAIN (COSTS OFF) ") + store.ranking.search_sql(384, version_ids)
    params = {
        **store.SEARCH_DEFAULTS,
        "vector": HashingEmbedder().embed(["asyncio"])[0],
        "versions": list(version_ids),
        "text": "asyncio",
        "k": 5,
        "per_page": False,
        "page_kind": None,
        "change_words": store.ranking.CHANGE_WORDS,
    }
    with conn.transaction():
        if not seqscan:
            conn.execute("SET LOCAL enable_seqscan = off")
        return "\n".join(row[0] for row in conn.execute(query, params))


def indexed_version(conn, database_url, library="lib", version="1", texts=None, vectors=True):
    """A version with one page of chunks, with their vectors or (``vectors=False``) waiting for them."""
    row = make_version(conn, library, version)
    item = page_item(row.id, texts or [f"chunk {i} of {library} {version}" for i in range(20)])
    if not vectors:
        for chunk in item.chunks:
            chunk.embedding = None
    save(database_url, item)
    return row


def test_each_version_has_its_own_hnsw_index_and_search_reads_it(conn, database_url):
    """Proves: a version's vectors are in an HNSW graph of their own (a partial index on its id), which the search
    statement uses for that version alone; a version still without one is searched by an exact scan."""
    one = indexed_version(conn, database_url, "lib", "1", [f"chunk number {i} about asyncio" for i in range(20)])
    two = indexed_version(conn, database_url, "lib", "2", [f"chunk {i} about subprocesses" for i in range(20)])
    assert {v: i.state for v, i in store.vector_indexes(conn).items()} == {one.id: "exact", two.id: "exact"}
    assert store.ensure_vector_indexes(database_url)
    indexes = store.vector_indexes(conn)
    assert {v: (i.state, i.dim) for v, i in indexes.items()} == {one.id: ("hnsw", 384), two.id: ("hnsw", 384)}
    definition = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (store.vector_index.index_name(one.id),)
    ).fetchone()[0]
    assert "hnsw" in definition and "vector_cosine_ops" in definition
    assert f"version_id = {one.id}" in definition and "vector_dims(embedding) = 384" in definition
    assert "m='24'" in definition and "ef_construction='128'" in definition
    assert one.embedding_model == HashingEmbedder.name and one.embedding_dim == 384
    conn.execute("ANALYZE documents")
    # The planner picks a sequential scan for a table this small; with it discouraged, an index is chosen only if
    # the branch's ORDER BY expression, operator and WHERE clause match the partial index.
    plan = search_plan(conn, [one.id])
    assert f"Index Scan using documents_embedding_v{one.id}_hnsw_idx" in plan, plan
    assert f"documents_embedding_v{two.id}_hnsw_idx" not in plan, plan
    both = search_plan(conn, [one.id, two.id])
    assert f"v{one.id}_hnsw_idx" in both and f"v{two.id}_hnsw_idx" in both, both


def test_a_process_waiting_for_the_graph_builder_does_not_deadlock_its_concurrent_index_build(conn, database_url):
    """Proves: a process waiting for the graph lock (a run that has just filled its vectors) lets the holder's
    CREATE INDEX CONCURRENTLY finish, then gets the lock. A blocking pg_advisory_lock kept a snapshot the build
    waits for: PostgreSQL's deadlock check cancelled one of them (two `docsbot reembed` ending together)."""
    import threading

    from docsbot.store import vector_index

    holder = psycopg.connect(database_url, autocommit=True)
    waiter = psycopg.connect(database_url, autocommit=True)
    try:
        holder.execute("SET deadlock_timeout = '200ms'")
        assert holder.execute("SELECT pg_try_advisory_lock(%s)", (store.locks.VECTOR_INDEX_LOCK,)).fetchone()[0]
        got: list[bool] = []
        thread = threading.Thread(target=lambda: got.append(vector_index._lock(waiter, 30)))
        thread.start()
        time.sleep(1.0)  # the waiter is waiting
        holder.execute("CREATE TABLE build_probe (n int)")
        holder.execute("CREATE INDEX CONCURRENTLY build_probe_idx ON build_probe (n)")  # raised DeadlockDetected
        assert thread.is_alive() and not got  # still waiting: the build did not take its lock away
        holder.execute("SELECT pg_advisory_unlock(%s)", (store.locks.VECTOR_INDEX_LOCK,))
        thread.join(10)
        assert got == [True]
        assert not vector_index._lock(holder, 0.6)  # and a waiter whose time runs out gives up
    finally:
        holder.close()
        waiter.close()


def test_vector_indexes_follow_versions_added_and_removed_and_an_interrupted_build_is_rebuilt(conn, database_url):
    """Proves: ensure_vector_indexes builds the graph of a version bound since, leaves the others' graphs as they
    were (same index, not rebuilt), rebuilds an invalid leftover and drops the graph of a removed version."""
    one = indexed_version(conn, database_url, "lib", "1")
    store.ensure_vector_indexes(database_url)
    oid = conn.execute("SELECT to_regclass(%s)::oid", (store.vector_index.index_name(one.id),)).fetchone()[0]
    two = indexed_version(conn, database_url, "other", "1")
    store.ensure_vector_indexes(database_url)
    assert conn.execute("SELECT to_regclass(%s)::oid", (store.vector_index.index_name(one.id),)).fetchone()[0] == oid
    assert store.vector_indexes(conn)[two.id].state == "hnsw"
    # an interrupted CREATE INDEX CONCURRENTLY leaves an invalid index behind
    conn.execute(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)",
        (store.vector_index.index_name(two.id),),
    )
    assert store.vector_indexes(conn)[two.id].state == "building"
    store.ensure_vector_indexes(database_url)
    assert store.vector_indexes(conn)[two.id].state == "hnsw"
    three = indexed_version(conn, database_url, "third", "1")
    store.ensure_vector_indexes(database_url)
    store.delete_version(conn, "other", None)  # `docsbot remove` drops the graph at once
    store.drop_version_indexes(database_url, [two.id])
    store.delete_version(conn, "third", None)  # a version deleted otherwise: the next ensure drops its graph
    assert index_names(conn) == {store.vector_index.index_name(one.id), store.vector_index.index_name(three.id)}
    store.ensure_vector_indexes(database_url)
    assert index_names(conn) == {store.vector_index.index_name(one.id)}


def test_a_version_gets_its_graph_once_its_vectors_are_in_not_vector_by_vector(conn, database_url):
    """Proves: a version whose chunks wait for their vectors (a first index, text first) gets no graph, so that
    writing each vector does not pay for an HNSW insert; once at most 10% of them wait, ensure builds it in one go,
    and from then on a new vector goes into it (searchable through it at once)."""
    version = indexed_version(conn, database_url, "lib", "1", vectors=False)
    store.ensure_vector_indexes(database_url)
    assert store.vector_indexes(conn)[version.id].state == "exact"
    ids = [r[0] for r in conn.execute("SELECT id FROM documents WHERE version_id = %s ORDER BY id", (version.id,))]
    vectors = HashingEmbedder().embed([f"text {i}" for i in range(len(ids))])
    for doc_id, vector in zip(ids[:17], vectors, strict=False):  # 3 of 20 still wait: more than 10%
        conn.execute("UPDATE documents SET embedding = %s WHERE id = %s", (vector, doc_id))
    store.ensure_vector_indexes(database_url)
    assert store.vector_indexes(conn)[version.id].state == "exact"
    conn.execute("UPDATE documents SET embedding = %s WHERE id = %s", (vectors[17], ids[17]))  # 2 of 20 wait
    store.ensure_vector_indexes(database_url)
    assert store.vector_indexes(conn)[version.id].state == "hnsw"
    conn.execute("UPDATE documents SET embedding = %s WHERE id = %s", (vectors[18], ids[18]))
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_bitmapscan = off")
        found = conn.execute(
            "SELECT id FROM documents WHERE version_id = %s AND vector_dims(embedding) = 384 "
            "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 1",
            (version.id, vectors[18]),
        ).fetchone()[0]
    assert found == ids[18]


def test_a_build_another_process_holds_is_waited_for_only_as_long_as_asked(conn, database_url):
    """Proves: while another session holds the graph builds' lock, ensure_vector_indexes returns False at once
    (a run that is starting) or after its ``wait`` (a run that has just filled its vectors), building nothing; once
    the lock is free it builds the graph."""
    version = indexed_version(conn, database_url)
    with psycopg.connect(database_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (store.vector_index.VECTOR_INDEX_LOCK,))
        started = time.monotonic()
        assert store.ensure_vector_indexes(database_url) is False
        assert store.ensure_vector_indexes(database_url, wait=1.0) is False
        assert time.monotonic() - started >= 1.0
        assert store.vector_indexes(conn)[version.id].state == "exact"
    assert store.ensure_vector_indexes(database_url, wait=1.0) is True
    assert store.vector_indexes(conn)[version.id].state == "hnsw"


def index_names(conn) -> set[str]:
    query = "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'documents_embedding%%'"
    return {r[0] for r in conn.execute(query)}


def test_a_database_from_before_migration_0025_gets_its_chunks_tagged_and_its_graphs_online(conn, database_url):
    """Proves: chunks stored before migration 0025 (no version on the row) are tagged with their page's version in
    batches, the column becomes NOT NULL, and each version gets its graph; then search finds them by vector."""
    one, two = make_version(conn, "lib", "1"), make_version(conn, "lib", "2")
    save(database_url, page_item(one.id, ["asyncio event loops", "coroutines and tasks"]))
    save(database_url, page_item(two.id, ["subprocess pipes"]))
    conn.execute("UPDATE documents SET version_id = NULL")  # as migration 0025 leaves an older database
    old_batch = store.vector_index.BACKFILL_BATCH
    store.vector_index.BACKFILL_BATCH = 1  # one transaction per chunk: every id range is walked
    try:
        store.ensure_vector_indexes(database_url)
    finally:
        store.vector_index.BACKFILL_BATCH = old_batch
    tagged = conn.execute(
        "SELECT count(*) FILTER (WHERE d.version_id = p.version_id), count(*) FROM documents d "
        "JOIN pages p ON p.id = d.page_id"
    ).fetchone()
    assert tagged == (3, 3)
    assert conn.execute(
        "SELECT attnotnull FROM pg_attribute WHERE attrelid = 'documents'::regclass AND attname = 'version_id'"
    ).fetchone()[0]
    assert {i.state for i in store.vector_indexes(conn).values()} == {"hnsw"}
    text = "coroutines and tasks"
    hits = store.search(conn, text, HashingEmbedder().embed([text])[0], [one.id])
    assert hits and hits[0].content == "coroutines and tasks"


def test_a_search_limited_to_a_small_version_beside_a_large_one_finds_its_exact_nearest(conn, database_url):
    """Proves: the vector leg of a search limited to one version returns that version's exact nearest chunks
    even when the database holds 40 times more vectors of another version nearer to the query (with one graph
    for all versions, the filtered scan gave up among the other version's vectors after hnsw.max_scan_tuples and
    returned none of them)."""
    small, large = make_version(conn, "small", "1"), make_version(conn, "large", "1")
    rng = np.random.default_rng(7)
    query = rng.normal(size=384).astype(np.float32)
    # the large version's vectors are all near the query; the small version's are far from it
    rows = [(large.id, query + rng.normal(scale=0.3, size=384).astype(np.float32)) for _ in range(2000)]
    rows += [(small.id, rng.normal(size=384).astype(np.float32)) for _ in range(50)]
    with conn.cursor().copy("COPY pages (version_id, url, depth) FROM STDIN") as copy:
        for version_id in (small.id, large.id):
            copy.write_row((version_id, f"http://h/{version_id}", 0))
    pages = dict(conn.execute("SELECT version_id, id FROM pages").fetchall())
    with conn.cursor().copy(
        "COPY documents (page_id, version_id, content, sort_order, embedding) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["bigint", "bigint", "text", "integer", "vector"])
        for order, (version_id, vector) in enumerate(rows):
            copy.write_row((pages[version_id], version_id, f"text {order}", order, vector))
    store.ensure_vector_indexes(database_url)
    conn.execute("ANALYZE documents")
    exact = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM documents WHERE version_id = %s ORDER BY embedding <=> %s LIMIT 10", (small.id, query)
        )
    ]
    params = {**store.SEARCH_DEFAULTS, "vector": query, "versions": [small.id], "text": "zzz", "k": 10,
              "per_page": False, "page_kind": None, "change_words": store.ranking.CHANGE_WORDS}  # fmt: skip
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        # a fleet's scale in miniature: a filtered scan of one shared graph gives up after this many tuples
        conn.execute("SET LOCAL hnsw.max_scan_tuples = 1000")
        rows = conn.execute(store.ranking.search_sql(384, [small.id]), params).fetchall()
    found = [r[6] for r in rows]  # the chunk ids of the hits, best first
    assert found[:10] == exact, (found, exact)


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
        "SELECT term, tf_body, tf_head, doc_len, p.page_id = %s FROM chunk_postings p "
        "JOIN documents d ON d.id = p.doc_id WHERE d.sort_order = 0 ORDER BY term",
        (page_id,),
    ).fetchall()
    text, context = item.chunks[0].content, item.chunks[0].context
    assert {term: (body, head) for term, body, head, _, _ in rows} == {
        "=asyncio.run": (1, 0), "=run": (1, 0), "asyncio.run": (1, 0), "run": (2, 1), "task": (2, 2),
    }  # fmt: skip
    assert {(length, mine) for *_, length, mine in rows} == {(len(text) + len(context), True)}


def test_a_chunks_terms_are_docsbot_terms_of_its_text_and_context_line_added_up(conn):
    """docsbot_chunk_terms (the trigger's, migration 0031) gives what summing docsbot_terms (the query's) of the
    text and of the context line gives, term by term: repeated lexemes and identifiers, dotted suffixes, the bound
    of 32,767 on a count, an empty or NULL line."""
    texts = [
        ("Run tasks: asyncio.run runs the tasks. os.path.join(a, b) and os.path.join again", "Tasks > Running tasks"),
        ("Use --dry-run or -fPIC; record-style classes, camelCase and snake_case names", ""),
        ("os.sep " * 40000, "os > sep"),
        ("no context line at all", None),
    ]
    for text, head in texts:
        chunk = conn.execute(
            "SELECT term, tf_body, tf_head FROM docsbot_chunk_terms(%s, %s) ORDER BY term", (text, head)
        ).fetchall()
        summed = conn.execute(
            "SELECT term, least(sum(body), 32767)::smallint, least(sum(head), 32767)::smallint FROM ("
            " SELECT term, tf AS body, 0 AS head FROM docsbot_terms(%s)"
            " UNION ALL SELECT term, 0, tf FROM docsbot_terms(%s)) u GROUP BY term ORDER BY term",
            (text, head),
        ).fetchall()
        assert chunk == summed and chunk, text[:40]
    bounded = conn.execute("SELECT * FROM docsbot_chunk_terms(%s, 'os > sep')", (texts[2][0],)).fetchall()
    assert ("=os.sep", 32767, 0) in bounded and ("=sep", 32767, 0) in bounded


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
    with pytest.raises(store.SchemaBehind, match=f"migration {last} is not applied.*docsbot db migrate"):
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
    # first in both rankings, 1/(rrf_k+1) each; the query names an identifier the text holds (create_task), so its
    # BM25 rank weighs w_lex_ident
    first = 1 / (store.SEARCH_DEFAULTS["rrf_k"] + 1)
    assert hits[0].score == pytest.approx((1 + store.SEARCH_DEFAULTS["w_lex_ident"]) * first)
    assert hits[0].heading_path == ["A"] and hits[0].url == "http://h/docs/a.html"


def test_a_run_refreshes_the_search_statistics_once_and_search_reads_the_same(conn, database_url):
    """The end of the crawl refreshes a version's BM25 statistics; the run's record then leaves them as they are
    (nothing the statistics count changes meanwhile), unless the run asks (its crawl did not complete)."""
    version = make_version(conn)
    save(database_url, page_item(version.id, ["asyncio create_task schedules a coroutine", "json encodes data"]))
    query, vector = "create_task coroutine", HashingEmbedder().embed(["create_task coroutine"])[0]

    def stats():
        return conn.execute("SELECT docs, avg_len, updated_at FROM lexical_stats WHERE version_id = %s",
                            (version.id,)).fetchone()  # fmt: skip

    def hits():
        return [(h.url, h.content, h.score) for h in store.search(conn, query, vector, [version.id], k=5)]

    async def run(*, crawl_done: bool) -> int:
        pages = store.PageStore(database_url, 1)
        await pages.open()
        try:
            run_id = await pages.start_run(version.id, "full")
            if crawl_done:
                await pages.refresh_lexical_stats(version.id, repeats=True)
            await pages.finish_run(run_id, {}, "complete", "", lexical_stats=not crawl_done)
            return run_id
        finally:
            await pages.close()

    asyncio.run(run(crawl_done=True))
    refreshed, found = stats(), hits()
    finished = conn.execute("SELECT max(finished_at) FROM crawl_runs").fetchone()[0]
    assert refreshed[:2] == (2, pytest.approx((42 + 18) / 2)) and refreshed[2] < finished  # not again at its end
    store.refresh_lexical_stats(conn, version.id)  # what a second refresh would have found: the same
    assert stats()[:2] == refreshed[:2] and hits() == found

    save(database_url, page_item(version.id, ["asyncio create_task schedules a coroutine"], etag='"v2"'))
    asyncio.run(run(crawl_done=False))  # a crawl that did not complete: the run's end refreshes them
    finished = conn.execute("SELECT max(finished_at) FROM crawl_runs").fetchone()[0]
    assert stats()[0] == 1 and stats()[2] == finished


def test_redact_dsn_hides_passwords():
    assert store.redact_dsn("postgresql://u:s3cret@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert "s3cret" not in store.redact_dsn("host=h password=s3cret dbname=d")


def test_advisory_lock_keys_never_change():
    """Processes of an older docsbot share the database and take these keys for the same jobs."""
    from docsbot.store import locks

    keys = (locks.MIGRATION_LOCK, locks.RUN_LOCK, locks.VECTOR_INDEX_LOCK, locks.CLAIM_LOCK)
    assert keys == (4242001, 4242002, 4242003, 0x646F_6373_636C)
    assert store.versions.RUN_LOCK is locks.RUN_LOCK and store.fleet.CLAIM_LOCK is locks.CLAIM_LOCK


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
