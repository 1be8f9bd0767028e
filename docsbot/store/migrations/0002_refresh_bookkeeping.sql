-- Refresh bookkeeping: which run last reached a page and when it was last revalidated (orphans, min_recheck),
-- and the key under which a chunk's embedding can be reused when its page changes elsewhere.
ALTER TABLE pages
    ADD COLUMN last_seen_run   bigint REFERENCES crawl_runs (id) ON DELETE SET NULL,
    ADD COLUMN last_checked_at timestamptz;

-- sha256(embedding model, NUL, embedded text) in hex: equal keys give equal vectors.
ALTER TABLE documents ADD COLUMN embed_hash text;

-- Bookkeeping alone does not make a page "updated": updated_at moves only when what was fetched changed.
CREATE OR REPLACE FUNCTION docsbot_touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (to_jsonb(NEW) - 'last_seen_run' - 'last_checked_at' - 'updated_at')
       IS DISTINCT FROM (to_jsonb(OLD) - 'last_seen_run' - 'last_checked_at' - 'updated_at') THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END $$;
