-- What each run changed (docsbot.changes): one row per page a run added, modified, deleted or moved, written in the
-- page's own transaction (a deletion in the deletion's), so that the log and the index never disagree. A page that
-- a run found unchanged (304, or a 200 with the same content) writes nothing. Rows older than DOCSBOT_CHANGES_KEEP
-- are deleted at the end of each run of their version.
CREATE TABLE page_changes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id     bigint REFERENCES crawl_runs (id) ON DELETE SET NULL,
    version_id bigint NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
    page_id    bigint,  -- no foreign key: a deleted page's row outlives it
    kind       text NOT NULL CHECK (kind IN ('added', 'modified', 'deleted', 'moved')),
    url        text NOT NULL,
    old_url    text,    -- moved: the URL it had
    title      text NOT NULL DEFAULT '',
    -- modified (or moved with new text): the sections whose text changed, in page order:
    -- [{"heading_path": [...], "anchor": "id" | null, "change": "modified" | "added" | "removed"}]
    sections   jsonb NOT NULL DEFAULT '[]',
    diff       text,    -- a unified diff of the stored Markdown, old against new, cut at DOCSBOT_CHANGE_DIFF_BYTES
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX page_changes_version_time_idx ON page_changes (version_id, created_at DESC, id DESC);
CREATE INDEX page_changes_run_idx ON page_changes (run_id);

-- When a page's text last changed (its content_hash), as opposed to updated_at (any stored field, validators
-- included): what "changed on" means on every answer.
ALTER TABLE pages ADD COLUMN content_changed_at timestamptz;
UPDATE pages SET content_changed_at = updated_at;
ALTER TABLE pages ALTER COLUMN content_changed_at SET DEFAULT now();

CREATE FUNCTION docsbot_touch_content_changed_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.content_hash IS DISTINCT FROM OLD.content_hash THEN
        NEW.content_changed_at := now();
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER pages_content_changed_at BEFORE UPDATE OF content_hash ON pages
    FOR EACH ROW EXECUTE FUNCTION docsbot_touch_content_changed_at();

-- A hash of the documentation text of each symbol (the Markdown from its anchor to the next anchor of the page):
-- what `docsbot diff` compares between two versions. NULL for symbols stored before this migration, until their
-- page is stored again.
ALTER TABLE symbols ADD COLUMN doc_hash text;
CREATE INDEX symbols_version_name_idx ON symbols (version_id, name);
