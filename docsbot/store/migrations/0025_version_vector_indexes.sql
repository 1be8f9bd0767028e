-- One HNSW graph per version (issue 36). Until now one graph per dimension held every library's vectors, so a
-- search limited to one version entered a graph where most neighbours belonged to others: pgvector's filtered
-- scan read hnsw.max_scan_tuples and returned fewer than asked (recall@50 down to 0 for some queries in a
-- seven-version fleet; a hundred versions would be worse). pgvector's own advice for many filter values is a
-- partial index or a partition per value: each version now gets a partial index
--     documents_embedding_v<ID>_hnsw_idx ON documents USING hnsw ((embedding::vector(DIM)) vector_cosine_ops)
--     WHERE version_id = <ID> AND vector_dims(embedding) = DIM
-- built CONCURRENTLY outside any migration (docsbot.store.vector_index), which a search names by its version id.
-- A partial index's predicate may only read the row itself, hence the version's id on each chunk.
--
-- This migration is brief on purpose (it holds the table's lock for its whole transaction): the column is added
-- empty and the shared graphs are dropped (the per-version graphs replace them; every update of the backfill would
-- otherwise have been inserted into them). The backfill, the NOT NULL constraint and the per-version graphs are
-- built afterwards in short transactions and CONCURRENTLY, while readers and writers go on.
ALTER TABLE documents ADD COLUMN version_id bigint;

DO $$
DECLARE
    name text;
BEGIN
    FOR name IN SELECT indexname FROM pg_indexes
                WHERE tablename = 'documents' AND schemaname = current_schema()
                  AND indexname ~ '^documents_embedding_[0-9]+_hnsw_idx$'
    LOOP
        EXECUTE format('DROP INDEX %I', name);
    END LOOP;
END $$;
