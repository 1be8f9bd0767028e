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
