-- The outcome of each run (docsbot.refresh.run_outcome): complete, incomplete, vectors_pending or failed, with its
-- one-line reason; 'interrupted' for a run whose process ended before it recorded its end (set by the next run of
-- the version, which holds the version's run lock; readers also tell a dead run from a running one by that lock).
ALTER TABLE crawl_runs
    ADD COLUMN outcome        text,
    ADD COLUMN outcome_reason text;

-- Runs recorded before outcomes existed: what their stats say.
UPDATE crawl_runs
SET outcome = CASE
        WHEN stats ->> 'finish_reason' IS NULL THEN NULL
        WHEN stats ->> 'finish_reason' = 'finished' OR stats ->> 'finish_reason' LIKE 'closespider_%'
            THEN CASE WHEN coalesce((stats ->> 'failed')::int, 0) > 0 THEN 'incomplete' ELSE 'complete' END
        ELSE 'failed'
    END
WHERE finished_at IS NOT NULL;
