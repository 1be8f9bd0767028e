-- A chunk's length (BM25's document length: length(content) + length(context), in characters) counted once per
-- chunk instead of once per (chunk, term) row of the aggregate. length() walks a UTF-8 text character by character,
-- and the Python docs' 29,541 chunks of ~490 characters are 892,666 (chunk, term) rows: the trigger's statement over
-- them took 6.3 s with the length in the aggregate and 4.6 s with it counted first, about a seventh of PostgreSQL's
-- CPU of a full index. OFFSET 0 keeps the planner from pulling the subquery, and the length with it, up into the
-- join. The postings written are the same.
-- And a page's first chunks, which no postings row can conflict with, go in by a plain insert (below).
CREATE OR REPLACE FUNCTION docsbot_index_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM postings WHERE page_id IN (SELECT page_id FROM new_docs WHERE kind = 0)) THEN
        -- chunks added to a page that already has some: its rows get the new chunks appended
        INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens)
        SELECT p.version_id, t.term, n.page_id, array_agg(n.id ORDER BY n.id), array_agg(t.tf_body ORDER BY n.id),
               array_agg(t.tf_head ORDER BY n.id), array_agg(n.len ORDER BY n.id)
        FROM (SELECT id, page_id, content, context, length(content) + length(context) AS len
              FROM new_docs WHERE kind = 0 OFFSET 0) AS n
        JOIN pages p ON p.id = n.page_id
        CROSS JOIN LATERAL docsbot_chunk_terms(n.content, n.context) AS t
        GROUP BY p.version_id, n.page_id, t.term
        ON CONFLICT (version_id, term, page_id) DO UPDATE SET
            doc_ids = postings.doc_ids || excluded.doc_ids, tf_bodies = postings.tf_bodies || excluded.tf_bodies,
            tf_heads = postings.tf_heads || excluded.tf_heads, doc_lens = postings.doc_lens || excluded.doc_lens;
    ELSE
        -- the pages' first chunks (every page a crawl writes: it deletes a page's chunks before it copies the new
        -- ones in): no row can conflict, and a plain insert skips ON CONFLICT's probe of the key before each row
        -- (the Python docs' 347,208 rows: 2.3 -> 1.5 s). A page's writes take its row lock first, so no other
        -- transaction adds rows for it in between.
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

CREATE OR REPLACE FUNCTION docsbot_unindex_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM postings p USING (SELECT DISTINCT page_id FROM old_docs WHERE kind = 0) o WHERE p.page_id = o.page_id;
    -- the chunks the statement left on those pages (none when a page's chunks go together, as they do): indexed again
    INSERT INTO postings (version_id, term, page_id, doc_ids, tf_bodies, tf_heads, doc_lens)
    SELECT p.version_id, t.term, d.page_id, array_agg(d.id ORDER BY d.id), array_agg(t.tf_body ORDER BY d.id),
           array_agg(t.tf_head ORDER BY d.id), array_agg(d.len ORDER BY d.id)
    FROM (SELECT id, page_id, content, context, length(content) + length(context) AS len
          FROM documents WHERE kind = 0 AND page_id IN (SELECT page_id FROM old_docs WHERE kind = 0) OFFSET 0) AS d
    JOIN pages p ON p.id = d.page_id
    CROSS JOIN LATERAL docsbot_chunk_terms(d.content, d.context) AS t
    GROUP BY p.version_id, d.page_id, t.term;
    RETURN NULL;
END $$;
