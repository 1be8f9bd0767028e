-- The postings trigger groups each chunk's terms on their own (a LATERAL GROUP BY term), instead of grouping
-- every (chunk, term) row of the statement by keys that held the chunk's whole text and context line: PostgreSQL
-- hashed and compared ~500 MB of text for the Python docs' 960,000 term rows. The same rows (checked on the
-- Python docs' 920,111 postings), 15-20% less of the trigger's time.
CREATE OR REPLACE FUNCTION docsbot_index_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO postings (version_id, term, doc_id, page_id, tf_body, tf_head, doc_len)
    SELECT p.version_id, t.term, n.id, n.page_id, t.body, t.head, length(n.content) + length(n.context)
    FROM new_docs n
    JOIN pages p ON p.id = n.page_id
    CROSS JOIN LATERAL (
        SELECT term, least(sum(body), 32767) AS body, least(sum(head), 32767) AS head
        FROM (
            SELECT term, tf AS body, 0 AS head FROM docsbot_terms(n.content)
            UNION ALL
            SELECT term, 0, tf FROM docsbot_terms(n.context)
        ) AS u
        GROUP BY term
    ) AS t;
    RETURN NULL;
END $$;
