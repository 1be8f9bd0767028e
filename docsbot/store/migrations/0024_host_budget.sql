-- One host shared politely by a fleet (issue 33): documentation hosts serve many libraries, and versions on one
-- host ran as separate processes or Scrapyd jobs, each with its own per-domain concurrency, so two at once doubled
-- what the host saw. A version's host (its root URL's host and port) is a column; claims (docsbot.store.fleet) give
-- a host at most its budget of concurrent requests across every run of the fleet: host_concurrency (from the
-- libraries file; else DOCSBOT_HOST_CONCURRENCY) divided by each run's own per-domain concurrency.
ALTER TABLE versions ADD COLUMN host text
    GENERATED ALWAYS AS (lower(substring(root_url from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#]+)'))) STORED;
ALTER TABLE versions ADD COLUMN host_concurrency integer CHECK (host_concurrency > 0);
CREATE INDEX versions_host_idx ON versions (host);
