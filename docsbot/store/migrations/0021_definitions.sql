-- One vector per definition (issue 32): besides the chunks of a page's sections (kind 0), documents holds one row
-- per definition the page's symbol table records (kind 1: its name or signature and description up to the next
-- definition, cut to a few paragraphs), written, replaced and deleted with the page's chunks in the same
-- transaction, embedded from the same queue, and taking over the vector of an equal text as chunks do. A chunk of a
-- reference page holds three to six definitions, and its vector matches a question about one of them less well
-- than that definition's own text. Definitions are found by vector only: BM25 reads the chunks (postings,
-- lexical_stats), which hold the same text.
ALTER TABLE documents ADD COLUMN kind smallint NOT NULL DEFAULT 0;

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
    ) AS t
    WHERE n.kind = 0;
    RETURN NULL;
END $$;
