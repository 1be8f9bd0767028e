-- Each page's HTML as it was fetched (or rendered), zlib-compressed (RFC 1950), and the encoding Scrapy read it with.
-- A new version of docsbot's extraction (docsbot.extract.EXTRACTOR_VERSION) re-extracts a page from it when the
-- server answers the refresh's conditional request with 304: an upgrade costs no download. NULL for pages stored
-- before this migration (a refresh fetches those once without validators, as before) and for pages whose HTML
-- was not kept (DOCSBOT_KEEP_HTML=0). About 15% of the HTML's size: 7 MiB for the 48 MiB of the Python docs.
ALTER TABLE pages ADD COLUMN html bytea;
ALTER TABLE pages ADD COLUMN html_encoding text;
-- Already compressed: PostgreSQL's own TOAST compression (pglz) would spend CPU on every write for nothing.
ALTER TABLE pages ALTER COLUMN html SET STORAGE EXTERNAL;
