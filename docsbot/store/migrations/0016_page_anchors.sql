-- Each page's anchors as the extraction found them: [[offset, id], ...] (docsbot.extract.Anchor: the character offset
-- in pages.markdown where the heading's or definition's text starts, and its HTML id). get_page and the web pages
-- answer a deep link's #anchor with the text at that offset (a definition inside a section, not only a heading).
-- NULL for pages stored before this migration, until they are stored again.
ALTER TABLE pages ADD COLUMN anchors jsonb;
