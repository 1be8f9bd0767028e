-- A run is known by the token its launcher gave it (issue 33): `docsbot serve`, the MCP server and the fleet pass
-- `-a launch=TOKEN` and find the run by it, where they matched "the first run of this version since T" (two launches
-- close together could report each other's runs). The token also makes recording a run's start idempotent: a
-- COMMIT lost and retried finds the row it wrote instead of writing a second one.
ALTER TABLE crawl_runs ADD COLUMN launch text;
CREATE UNIQUE INDEX crawl_runs_launch_idx ON crawl_runs (launch) WHERE launch IS NOT NULL;

-- One change-log row per page, run and kind: a page's transaction retried after its COMMIT was lost (applied after
-- all) writes its change once. Duplicates such a retry wrote before this migration go first.
DELETE FROM page_changes a USING page_changes b
WHERE a.run_id = b.run_id AND a.page_id = b.page_id AND a.kind = b.kind AND a.id > b.id;
CREATE UNIQUE INDEX page_changes_once_idx ON page_changes (run_id, page_id, kind)
    WHERE run_id IS NOT NULL AND page_id IS NOT NULL;
