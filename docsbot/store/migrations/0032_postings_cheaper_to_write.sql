-- A chunk's length (BM25's document length: length(content) + length(context), in characters) counted once per
-- chunk instead of once per (chunk, term) row of the aggregate. length() walks a UTF-8 text character by character,
-- and the Python docs' 29,541 chunks of ~490 characters are 892,666 (chunk, term) rows: the trigger's statement over
-- them took 6.3 s with the length in the aggregate and 4.6 s with it counted first, about a seventh of PostgreSQL's
-- CPU of a full index. OFFSET 0 keeps the planner from pulling the subquery, and the length with it, up into the
-- join. The postings written are the same.
-- And a page's first chunks, which no postings row can conflict with, go in by a plain insert: ON CONFLICT probed the
-- key before each row (the Python docs' 347,208 rows: 2.3 -> 1.5 s). Every page a crawl writes is such a page (it
-- deletes a page's chunks before it copies the new ones in), and a page's writes take its row lock first, so no other
-- transaction adds rows for it in between. Any other write (chunks added to a page that has some, some of a page's
-- chunks deleted) indexes the page's chunks again, whole: one way for both instead of appending to arrays.

-- The postings of pages `page_ids`, from their stored chunks: replaced.
CREATE OR REPLACE FUNCTION docsbot_reindex_pages(page_ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM postings WHERE page_id = ANY(page_ids);
    INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens)
    SELECT p.version_id, t.term, d.page_id, array_agg(d.id ORDER BY d.id), array_agg(t.tf_body ORDER BY d.id),
           array_agg(t.tf_head ORDER BY d.id), array_agg(d.len ORDER BY d.id)
    FROM (SELECT id, page_id, content, context, length(content) + length(context) AS len
          FROM documents WHERE kind = 0 AND page_id = ANY(page_ids) OFFSET 0) AS d
    JOIN pages p ON p.id = d.page_id
    CROSS JOIN LATERAL docsbot_chunk_terms(d.content, d.context) AS t
    GROUP BY p.version_id, d.page_id, t.term;
END $$;

CREATE OR REPLACE FUNCTION docsbot_index_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM postings WHERE page_id IN (SELECT page_id FROM new_docs WHERE kind = 0)) THEN
        PERFORM docsbot_reindex_pages(ARRAY(SELECT DISTINCT page_id FROM new_docs WHERE kind = 0));
    ELSE
        INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens)
        SELECT p.version_id, t.term, n.page_id, array_agg(n.id ORDER BY n.id), array_agg(t.tf_body ORDER BY n.id),
               array_agg(t.tf_head ORDER BY n.id), array_agg(n.len ORDER BY n.id)
        FROM (SELECT id, page_id, content, context, length(content) + length(context) AS len
              FROM new_docs WHERE kind = 0 OFFSET 0) AS n
        JOIN pages p ON p.id = n.page_id
        CROSS JOIN LATERAL docsbot_chunk_terms(n.content, n.context) AS t
        GROUP BY p.version_id, n.page_id, t.term;
    END IF;
    RETURN NULL;
END $$;

-- The chunks a statement left on the pages it deleted some of (none when a page's chunks go together, as they do):
-- indexed again.
CREATE OR REPLACE FUNCTION docsbot_unindex_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM docsbot_reindex_pages(ARRAY(SELECT DISTINCT page_id FROM old_docs WHERE kind = 0));
    RETURN NULL;
END $$;
