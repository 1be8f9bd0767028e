-- Search that finds the right page (issue 12): BM25 postings, a per-version symbol table, navigation pages.

-- Identifiers kept whole, a token stream beside the `english` one (which splits `os.set_inheritable` into
-- 'os.set' and 'inherit'): dotted names, names with underscores, camelCase names, <placeholders> and command-line
-- options, lower-cased, prefixed with '=', and each dotted name also as its last parts
-- ('=os.path.join', '=path.join', '=join').
CREATE FUNCTION docsbot_idents(t text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    SELECT '=' || array_to_string(parts[i:], '.')
    FROM (SELECT string_to_array(lower(m[1]), '.') AS parts
          FROM regexp_matches(t, '(--?[A-Za-z][\w-]*[\w]|[A-Za-z_][\w<>]*(?:\.[A-Za-z_][\w<>]*)*)', 'g') AS m
          WHERE m[1] ~ '[._<>]|[a-z][A-Z]|^-') AS found,
         generate_subscripts(parts, 1) AS i
$$;

-- The terms of a text with their counts: `english` lexemes and identifiers (what a chunk and a query are
-- matched on).
CREATE FUNCTION docsbot_terms(t text) RETURNS TABLE (term text, tf integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    SELECT lexeme, coalesce(array_length(positions, 1), 1) FROM unnest(to_tsvector('english', t))
    UNION ALL
    SELECT ident, count(*)::integer FROM docsbot_idents(t) AS ident GROUP BY ident
$$;

-- Postings: one row per (chunk, term) with its term frequency in the chunk's text (tf_body) and in its
-- context line "title > headings" (tf_head), and the chunk's length in characters (BM25's document length).
-- Filled by a trigger on documents, so every way of writing chunks keeps them; deleted with the chunk.
CREATE TABLE postings (
    version_id bigint NOT NULL,
    term       text NOT NULL,
    doc_id     bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    page_id    bigint NOT NULL,
    tf_body    smallint NOT NULL,
    tf_head    smallint NOT NULL,
    doc_len    integer NOT NULL,
    PRIMARY KEY (version_id, term, doc_id)
);
CREATE INDEX postings_doc_idx ON postings (doc_id);

CREATE FUNCTION docsbot_index_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO postings (version_id, term, doc_id, page_id, tf_body, tf_head, doc_len)
    SELECT p.version_id, t.term, n.id, n.page_id, least(sum(t.body), 32767), least(sum(t.head), 32767),
           length(n.content) + length(n.context)
    FROM new_docs n
    JOIN pages p ON p.id = n.page_id
    CROSS JOIN LATERAL (
        SELECT term, tf AS body, 0 AS head FROM docsbot_terms(n.content)
        UNION ALL
        SELECT term, 0, tf FROM docsbot_terms(n.context)
    ) t
    GROUP BY p.version_id, t.term, n.id, n.page_id, n.content, n.context;
    RETURN NULL;
END $$;

CREATE TRIGGER documents_postings AFTER INSERT ON documents
    REFERENCING NEW TABLE AS new_docs FOR EACH STATEMENT EXECUTE FUNCTION docsbot_index_postings();

-- Per-version collection statistics for BM25 (chunk count, mean chunk length), refreshed at the end of every
-- crawl run (docsbot.db.PageStore.finish_run); search computes them on the fly for a version without a row.
CREATE TABLE lexical_stats (
    version_id bigint PRIMARY KEY REFERENCES versions (id) ON DELETE CASCADE,
    docs       bigint NOT NULL,
    avg_len    double precision NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- API names the pages define (Sphinx signatures, module targets, CMake role:name targets), written with the
-- page's chunks. `keys`: the lower-cased name and its dotted last parts, matched against a query's identifiers.
CREATE TABLE symbols (
    page_id    bigint NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    version_id bigint NOT NULL,
    name       text NOT NULL,
    anchor     text NOT NULL,
    keys       text[] NOT NULL,
    PRIMARY KEY (page_id, name)
);
CREATE INDEX symbols_keys_idx ON symbols USING gin (keys);

-- Share of a page's main-content text inside links (docsbot.extract.link_share): an index or a table of
-- contents is mostly links. NULL until the page is extracted again (`-a mode=full`).
ALTER TABLE pages ADD COLUMN link_share real;

-- Chunks stored before this migration get their postings now (symbols and link_share need the HTML again).
INSERT INTO postings (version_id, term, doc_id, page_id, tf_body, tf_head, doc_len)
SELECT p.version_id, t.term, d.id, d.page_id, least(sum(t.body), 32767), least(sum(t.head), 32767),
       length(d.content) + length(d.context)
FROM documents d
JOIN pages p ON p.id = d.page_id
CROSS JOIN LATERAL (
    SELECT term, tf AS body, 0 AS head FROM docsbot_terms(d.content)
    UNION ALL
    SELECT term, 0, tf FROM docsbot_terms(d.context)
) t
GROUP BY p.version_id, t.term, d.id, d.page_id, d.content, d.context;

INSERT INTO lexical_stats (version_id, docs, avg_len)
SELECT p.version_id, count(*), avg(length(d.content) + length(d.context))
FROM documents d JOIN pages p ON p.id = d.page_id
GROUP BY p.version_id;
