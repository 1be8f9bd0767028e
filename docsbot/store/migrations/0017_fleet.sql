-- HTTP freshness (docsbot.freshness, -a freshness=http): until when a page's last response (200 or 304) is fresh by
-- its caching headers; a refresh with freshness=http does not request a page before then. NULL: stale at once.
ALTER TABLE pages ADD COLUMN fresh_until timestamptz;

-- Fleets (docsbot.service.fleet): how often a version is refreshed and when it is next due. A scheduler claims due
-- versions atomically (claimed_until: a lease, so that a claim whose run never started is taken again after it);
-- the run records its end here (next_due_at moves on by the interval, or by a backoff after a failure).
ALTER TABLE versions
    ADD COLUMN refresh_interval interval,        -- NULL: never due (indexed once, refreshed by hand)
    ADD COLUMN next_due_at timestamptz,
    ADD COLUMN claimed_until timestamptz,
    ADD COLUMN claimed_by text,
    ADD COLUMN failures integer NOT NULL DEFAULT 0,  -- runs in a row that did not complete
    ADD COLUMN last_error text,
    ADD COLUMN source text;                      -- the libraries file that declares it (NULL: none)
CREATE INDEX versions_due_idx ON versions (next_due_at) WHERE refresh_interval IS NOT NULL;
-- The spider arguments and settings a libraries file gives the version's runs ({"args": {...}, "settings": {...}}),
-- so that a scheduler working from the database alone (docsbot sync --due, docsbot scheduler) runs it as declared.
ALTER TABLE versions ADD COLUMN run_args jsonb NOT NULL DEFAULT '{}';

-- updated_at moves when what was fetched changed, never for bookkeeping (last_seen_run, last_checked_at, and now
-- fresh_until, which every 304 updates). The trigger compared the whole row as JSON, page text included, twice
-- per row of every end-of-run bookkeeping update; it now fires only for an update that sets a fetched column, and
-- compares those columns alone.
DROP TRIGGER pages_updated_at ON pages;
CREATE OR REPLACE FUNCTION docsbot_touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.version_id, NEW.url, NEW.canonical_url, NEW.title, NEW.etag, NEW.last_modified, NEW.content_type,
        NEW.content_hash, NEW.depth, NEW.links, NEW.markdown, NEW.link_share, NEW.extractor_version, NEW.anchors)
       IS DISTINCT FROM
       (OLD.version_id, OLD.url, OLD.canonical_url, OLD.title, OLD.etag, OLD.last_modified, OLD.content_type,
        OLD.content_hash, OLD.depth, OLD.links, OLD.markdown, OLD.link_share, OLD.extractor_version, OLD.anchors) THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER pages_updated_at
    BEFORE UPDATE OF version_id, url, canonical_url, title, etag, last_modified, content_type, content_hash, depth,
                     links, markdown, link_share, extractor_version, anchors
    ON pages FOR EACH ROW EXECUTE FUNCTION docsbot_touch_updated_at();
