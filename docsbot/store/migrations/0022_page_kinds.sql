-- What kind of page a page is, from the page itself (its URL, its title, its share of text in links), never from a
-- list of sites (issue 32): 'changelog' (release notes, changelogs, What's New pages, news), 'index' (a general or
-- module index, a search page, or a page that is mostly links: navigation), else 'docs' (reference and guides).
-- Release notes mention every API they announce, so without this they outrank the reference on questions that ask
-- nothing about a version; search ranks them lower unless the query names a version or asks what changed, and can
-- ask for one kind (docsbot.store.ranking). A generated column: kept by PostgreSQL on every write of the page, and
-- computed for every stored page by this migration.
CREATE FUNCTION docsbot_page_kind(url text, title text, link_share real) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN lower(url) ~ '(whats-?new|what-s-new|changelog|change-log|release-?notes|relnotes|/news(/|\.html?$|$)|/changes(/|\.html?$|$)|/history(\.html?)?$|/releases?/)'
          OR lower(title) ~ '^(what.s new|changelog|change ?log|release notes|changes in |news\M|version history|history of changes)'
          OR lower(title) ~ '(release notes|changelog|change log)$'
        THEN 'changelog'
        WHEN lower(url) ~ '(genindex|modindex|/search\.html?$|/search/?$)'
          OR lower(title) ~ '^(index|general index|module index|python module index|search)$'
          OR coalesce(link_share, 0) >= 0.5
        THEN 'index'
        ELSE 'docs'
    END
$$;

ALTER TABLE pages ADD COLUMN kind text NOT NULL GENERATED ALWAYS AS (docsbot_page_kind(url, title, link_share)) STORED;
