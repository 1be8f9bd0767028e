-- Switching a version's embedding model is a migration beside the index, not a new index: `docsbot reembed` gives
-- each chunk of the version a second vector of the next model (embedding_next, with its text key embed_hash_next)
-- while searches go on reading the first, then swaps them in one transaction (docsbot.store.reembed). A version
-- being switched names its next model and dimension; NULL otherwise. Both columns are NULL on every row outside a
-- migration, so they cost nothing then.
ALTER TABLE documents ADD COLUMN embedding_next vector, ADD COLUMN embed_hash_next text;
ALTER TABLE versions ADD COLUMN next_model text, ADD COLUMN next_dim integer;
