-- Full-text search sees what the model sees: each chunk's context line ("title > heading path", weighted A
-- like a heading) and its text. A plain text column (a generated one cannot use array_to_string, which is not
-- immutable), filled by the store pipeline.
ALTER TABLE documents ADD COLUMN context text NOT NULL DEFAULT '';

UPDATE documents d
SET context = concat_ws(' > ', NULLIF(p.title, ''),
                        (SELECT string_agg(h, ' > ' ORDER BY n) FROM jsonb_array_elements_text(d.metadata -> 'heading_path')
                         WITH ORDINALITY AS path(h, n) WHERE NOT (n = 1 AND h = p.title)))
FROM pages p
WHERE p.id = d.page_id;

DROP INDEX documents_content_fts_idx;
CREATE INDEX documents_fts_idx ON documents
    USING gin ((setweight(to_tsvector('english', context), 'A') || to_tsvector('english', content)));
