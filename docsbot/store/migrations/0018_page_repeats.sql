-- Pages that repeat other pages of their version: a whole-book page (mdBook's print.html, a Sphinx singlehtml build,
-- a one-page manual) holds the text of every chapter, so without this a query finds the same section twice. A row
-- says copy_id holds (nearly) all of page_id's distinctive chunk texts and is bigger; search leaves the copy out of
-- a query's results when a page it repeats is also among them (docsbot.store.ranking). Computed once per run that
-- stored or deleted pages (REFRESH_REPEATS), as lexical_stats is.
CREATE TABLE page_repeats (
    version_id bigint NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
    copy_id    bigint NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    page_id    bigint NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    PRIMARY KEY (copy_id, page_id)
);
CREATE INDEX page_repeats_version_idx ON page_repeats (version_id);
CREATE INDEX page_repeats_page_idx ON page_repeats (page_id);
