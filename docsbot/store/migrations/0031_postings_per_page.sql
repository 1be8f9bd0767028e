-- Postings per page instead of per chunk: less of PostgreSQL's CPU per page indexed, the same BM25 numbers.
-- One row per (version, term, page) holds the page's chunks that contain the term, as parallel arrays in chunk id
-- order: their ids, the term's frequency in each one's text and in its context line, and each one's length in
-- characters (BM25's document length). Search unnests them (docsbot.store.ranking, `qpost`), so every step of the
-- ranking reads the rows it read before, one per (chunk, term). The Python docs' 892,666 rows of two indexes
-- become 347,208 rows: the trigger's writes, their index entries and their WAL shrink with them.
-- A page's chunks are written and deleted together (docsbot.store.pages deletes the page's chunks, then copies the
-- new ones in), so the page is the unit the triggers keep: the rows of a deleted chunk's page go with it, through
-- an index on page_id (its keys repeat, and B-tree deduplication keeps it small) instead of one on every chunk id.
-- Any other write stays correct, at a cost only it pays: chunks added to a page that has some append to its rows,
-- and the chunks a statement leaves on a page it deleted some of are indexed again.
ALTER TABLE postings RENAME TO postings_by_chunk;
ALTER TABLE postings_by_chunk RENAME CONSTRAINT postings_pkey TO postings_by_chunk_pkey;

CREATE TABLE postings (
    version_id bigint NOT NULL,
    term       text NOT NULL,
    page_id    bigint NOT NULL,
    doc_ids    bigint[] NOT NULL,   -- the page's chunks holding the term, ascending (as they were written)
    tf_bodies  smallint[] NOT NULL, -- the term's count in each one's text (at most 32,767)
    tf_heads   smallint[] NOT NULL, -- ...and in its context line "title > headings"
    doc_lens   integer[] NOT NULL,  -- each one's length: length(content) + length(context)
    PRIMARY KEY (version_id, term, page_id)
);

INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens)
SELECT version_id, term, page_id, array_agg(doc_id ORDER BY doc_id), array_agg(tf_body ORDER BY doc_id),
       array_agg(tf_head ORDER BY doc_id), array_agg(doc_len ORDER BY doc_id)
FROM postings_by_chunk
GROUP BY version_id, term, page_id;

DROP TABLE postings_by_chunk;
CREATE INDEX postings_page_idx ON postings (page_id);

-- A chunk's postings, one row per (chunk, term) as before: what search reads, for inspection and tests.
CREATE VIEW chunk_postings AS
SELECT po.version_id, po.term, c.doc_id, po.page_id, c.tf_body, c.tf_head, c.doc_len
FROM postings po
CROSS JOIN LATERAL unnest(po.doc_ids, po.tf_bodies, po.tf_heads, po.doc_lens) AS c(doc_id, tf_body, tf_head, doc_len);

-- A chunk's terms with their counts in its text and in its context line: the terms docsbot_terms gives for each
-- (english lexemes with their counts, each identifier once per occurrence), added up by term once instead of once
-- per text and again per chunk. Neither function is STRICT, so that the planner inlines both into the trigger's
-- statement instead of running them as opaque functions twice per chunk (about a sixth of the terms' CPU on the
-- Python docs; the same 892,666 (chunk, term, counts) there). docsbot_terms, which search reads the query's
-- terms with, stays as it is: its plan is part of what search returns.
ALTER FUNCTION docsbot_idents(text) CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION docsbot_chunk_terms(body text, head text) RETURNS TABLE (term text, tf_body smallint, tf_head smallint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT term, least(sum(b), 32767)::smallint, least(sum(h), 32767)::smallint
    FROM (
        SELECT lexeme AS term, coalesce(array_length(positions, 1), 1) AS b, 0 AS h
        FROM unnest(to_tsvector('english', body))
        UNION ALL
        SELECT ident, 1, 0 FROM docsbot_idents(body) AS ident
        UNION ALL
        SELECT lexeme, 0, coalesce(array_length(positions, 1), 1) FROM unnest(to_tsvector('english', head))
        UNION ALL
        SELECT ident, 0, 1 FROM docsbot_idents(head) AS ident
    ) AS u
    GROUP BY term
$$;

-- Each new chunk's terms, gathered per page and term.
CREATE OR REPLACE FUNCTION docsbot_index_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens)
    SELECT p.version_id, t.term, n.page_id, array_agg(n.id ORDER BY n.id), array_agg(t.tf_body ORDER BY n.id),
           array_agg(t.tf_head ORDER BY n.id), array_agg(length(n.content) + length(n.context) ORDER BY n.id)
    FROM new_docs n
    JOIN pages p ON p.id = n.page_id
    CROSS JOIN LATERAL docsbot_chunk_terms(n.content, n.context) AS t
    WHERE n.kind = 0
    GROUP BY p.version_id, n.page_id, t.term
    ON CONFLICT (version_id, term, page_id) DO UPDATE SET  -- chunks added to a page that already has some
        doc_ids = postings.doc_ids || excluded.doc_ids, tf_bodies = postings.tf_bodies || excluded.tf_bodies,
        tf_heads = postings.tf_heads || excluded.tf_heads, doc_lens = postings.doc_lens || excluded.doc_lens;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION docsbot_unindex_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM postings p USING (SELECT DISTINCT page_id FROM old_docs WHERE kind = 0) o WHERE p.page_id = o.page_id;
    -- the chunks the statement left on those pages (none when a page's chunks go together, as they do): indexed again
    INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens)
    SELECT p.version_id, t.term, d.page_id, array_agg(d.id ORDER BY d.id), array_agg(t.tf_body ORDER BY d.id),
           array_agg(t.tf_head ORDER BY d.id), array_agg(length(d.content) + length(d.context) ORDER BY d.id)
    FROM documents d
    JOIN pages p ON p.id = d.page_id
    CROSS JOIN LATERAL docsbot_chunk_terms(d.content, d.context) AS t
    WHERE d.kind = 0 AND d.page_id IN (SELECT page_id FROM old_docs WHERE kind = 0)
    GROUP BY p.version_id, d.page_id, t.term;
    RETURN NULL;
END $$;
