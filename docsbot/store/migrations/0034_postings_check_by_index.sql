-- Whether the pages of a statement's new chunks already have postings, asked so that the planner cannot answer it
-- with a sequential scan. `IF EXISTS (SELECT 1 FROM postings WHERE page_id IN (...))` (0032) is a LIMIT 1 query:
-- PostgreSQL costs a sequential scan of postings as stopping at its first match, and a crawl's new page has none, so
-- each page's COPY read every postings row of every library. A database holding one version of the Python docs
-- (694,416 rows) spent 1.1 s per page there, and a second library's full index took 33 s instead of 18. A count
-- needs every matching row, which only postings_page_idx gives cheaply: an index probe per page, whatever the
-- table's statistics say. The postings written are the same.
CREATE OR REPLACE FUNCTION docsbot_index_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM postings WHERE page_id IN (SELECT page_id FROM new_docs WHERE kind = 0)) > 0 THEN
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
