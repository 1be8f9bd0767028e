-- Which version of docsbot's extraction (docsbot.extract.EXTRACTOR_VERSION) produced each page's Markdown,
-- anchors and symbols. Pages stored before this migration were extracted by version 1. A refresh re-fetches a page
-- whose version is older than the running code's without validators (once), so an upgrade that changes extraction
-- reaches every stored page; vectors of chunks whose text did not change are reused.
ALTER TABLE pages ADD COLUMN extractor_version integer NOT NULL DEFAULT 1;
