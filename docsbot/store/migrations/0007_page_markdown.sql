-- The extracted Markdown of each page, so that a page (or one of its sections) can be served whole without a
-- network request (the MCP server's get_page). Written by the store pipeline with every 200 answer; pages stored
-- before this migration get it the next time they answer 200 (until then get_page joins their chunks).
ALTER TABLE pages ADD COLUMN markdown text;
