-- A command-line option starts a word (issue 32). The identifier stream (0006) read a hyphen inside a word as the
-- start of an option: "command-line" gave '=-line', "record-style" '=-style', "built-in" '=-in' (41,685 postings
-- of 4,834 such terms over make eval's corpora). A question written in plain English ("make two command-line
-- flags impossible to use together") then named an "identifier" the docs contain, and search treated it as a
-- query about a name: BM25 weighed 1.5, release notes were not lowered, and pages without '-line' were marked
-- down. An option is now a run of one or two hyphens that no letter, digit, underscore or hyphen precedes
-- (`--dry-run`, `-fPIC`, "(--verbose)"); `<PROJECT-NAME>_VERSION` is now one identifier, as a query writes it.
-- Every word is still matched and the names kept by the filter after it: a lookahead that matched names alone was
-- a quarter faster on the Python docs but rescanned a long word from each of its letters (0.45 s for one word of
-- 20,000 letters against 0.001 s), which a hostile page's title would repeat in every chunk's context line.
CREATE OR REPLACE FUNCTION docsbot_idents(t text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    SELECT '=' || array_to_string(parts[i:], '.')
    FROM (SELECT string_to_array(lower(m[1]), '.') AS parts
          FROM regexp_matches(t, '((?<![\w-])--?[A-Za-z][\w-]*[\w]|[A-Za-z_][\w<>]*(?:\.[A-Za-z_][\w<>]*)*)', 'g') AS m
          WHERE m[1] ~ '[._<>]|[a-z][A-Z]|^-') AS found,
         generate_subscripts(parts, 1) AS i
$$;

-- Every chunk's identifier postings again, by the new rule (its `english` lexemes are unchanged): what a refresh
-- or a new index writes, so that a stored version answers as a re-indexed one does. About 2 s of work per 20,000
-- chunks.
DELETE FROM postings WHERE left(term, 1) = '=';
INSERT INTO postings (version_id, term, doc_id, page_id, tf_body, tf_head, doc_len)
SELECT p.version_id, t.term, d.id, d.page_id, t.body, t.head, length(d.content) + length(d.context)
FROM documents d
JOIN pages p ON p.id = d.page_id
CROSS JOIN LATERAL (
    SELECT term, least(sum(body), 32767) AS body, least(sum(head), 32767) AS head
    FROM (
        SELECT ident AS term, 1 AS body, 0 AS head FROM docsbot_idents(d.content) AS ident
        UNION ALL
        SELECT ident, 0, 1 FROM docsbot_idents(d.context) AS ident
    ) AS u
    GROUP BY term
) AS t
WHERE d.kind = 0;
