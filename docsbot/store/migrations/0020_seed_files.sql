-- Files that list a version's pages without being pages: a sitemap (RFC-less, sitemaps.org), an llms.txt, Doxygen's
-- menudata.js. Each is revalidated like a page (RFC 9110 §13: If-None-Match / If-Modified-Since from the validators
-- it last answered with), so that an unchanged refresh downloads none of them; on a 304 the crawl is seeded from the
-- links stored here, the ones the file listed when it was last downloaded (a page only the file links, whose
-- download failed then, is still requested). kind: 'pages' (links are page URLs) or 'sitemaps' (a sitemap index:
-- links are sitemaps, each revalidated in turn).
CREATE TABLE seed_files (
    version_id    bigint NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
    url           text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('pages', 'sitemaps')),
    etag          text,
    last_modified text,
    links         text[] NOT NULL,
    fetched_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (version_id, url)
);
