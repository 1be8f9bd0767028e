-- Postings follow their chunks through a trigger instead of a foreign key (issue 34: where a full index's time goes).
-- The key on postings.doc_id (0006) checked each new posting against documents, one index probe and one row lock
-- per row: 2 of the 9.5 s PostgreSQL spends writing the Python docs' 892,666 postings (measured on this database,
-- the same rows inserted with and without it). What it also did, deleting a chunk's postings with the chunk, a
-- statement trigger does now: once per statement that deletes chunks (a page's replaced chunks, a deleted page's,
-- a deleted version's), through postings_doc_idx, whatever path deletes them.
DO $$
DECLARE
    name text;
BEGIN
    FOR name IN
        SELECT conname FROM pg_constraint
        WHERE conrelid = 'postings'::regclass AND contype = 'f' AND confrelid = 'documents'::regclass
    LOOP
        EXECUTE format('ALTER TABLE postings DROP CONSTRAINT %I', name);
    END LOOP;
END $$;

CREATE FUNCTION docsbot_unindex_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM postings p USING old_docs o WHERE p.doc_id = o.id AND o.kind = 0;
    RETURN NULL;
END $$;

CREATE TRIGGER documents_unindex_postings AFTER DELETE ON documents
    REFERENCING OLD TABLE AS old_docs FOR EACH STATEMENT EXECUTE FUNCTION docsbot_unindex_postings();

