-- Chunks are looked up by embed_hash (model + embedded text) to reuse their vector, across pages and versions.
CREATE INDEX documents_embed_hash_idx ON documents (embed_hash);
