-- Text first, vectors from a queue (docsbot.vectors). A chunk is stored with its page's transaction, with the vector
-- already stored for its text (same model and embedded text: documents.embed_hash) or without one: the chunks whose
-- embedding is NULL are the embedding queue. Workers claim them (FOR UPDATE SKIP LOCKED) in id order.
ALTER TABLE documents ALTER COLUMN embedding DROP NOT NULL;
CREATE INDEX documents_unembedded_idx ON documents (id) WHERE embedding IS NULL;

-- The full-text index of migration 0003 has no reader since search ranks with the BM25 postings (0006); every write
-- of a chunk paid for it, and a vector written later would pay for it again.
DROP INDEX IF EXISTS documents_fts_idx;

-- Embedding workers (a crawl's own, `docsbot embed` anywhere): what each is doing, for `docsbot status` and the MCP
-- server's list_libraries (progress, rate, time left). A row whose updated_at is old belongs to a dead worker.
CREATE TABLE embed_workers (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    model       text NOT NULL,
    version_ids bigint[],  -- NULL: every version of the model
    host        text NOT NULL,
    pid         integer NOT NULL,
    run_id      bigint REFERENCES crawl_runs (id) ON DELETE SET NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    embedded    bigint NOT NULL DEFAULT 0,  -- texts embedded by this worker
    written     bigint NOT NULL DEFAULT 0,  -- chunks given a vector (embedded or an equal text's)
    rate        real,                       -- chunks per second, recent
    error       text
);
