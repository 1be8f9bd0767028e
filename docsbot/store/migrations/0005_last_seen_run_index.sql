-- pages.last_seen_run references crawl_runs ON DELETE SET NULL: without an index, deleting a run (or a version's
-- runs) scans every page.
CREATE INDEX pages_last_seen_run_idx ON pages (last_seen_run);
