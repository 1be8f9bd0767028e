-- A name longer than 256 characters is text, not an identifier. Every match of the identifier pattern (0026) was a
-- term: a word shaped like one (camelCase) of 3,000 random letters made a posting whose key exceeds PostgreSQL's
-- B-tree limit (2,704 bytes), and the page's transaction failed, so such a page could never be stored; a dotted
-- name of 4,000 parts gave 4,000 terms (each of its suffixes) of up to 24 KB. No documented name comes near 256
-- characters (the longest in make eval's six corpora: 87 in their text, 71 in their symbol tables). Its `english`
-- lexemes are unchanged (to_tsvector already skips a word over 2,047 characters); the symbol table applies the same
-- bound (docsbot.extract.MAX_NAME_CHARS).
CREATE OR REPLACE FUNCTION docsbot_idents(t text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    SELECT '=' || array_to_string(parts[i:], '.')
    FROM (SELECT string_to_array(lower(m[1]), '.') AS parts
          FROM regexp_matches(t, '((?<![\w-])--?[A-Za-z][\w-]*[\w]|[A-Za-z_][\w<>]*(?:\.[A-Za-z_][\w<>]*)*)', 'g') AS m
          WHERE m[1] ~ '[._<>]|[a-z][A-Z]|^-' AND length(m[1]) <= 256) AS found,
         generate_subscripts(parts, 1) AS i
$$;

-- The identifier postings of a stored chunk that holds a longer run of name characters again, by the new rule (a
-- superset of the chunks whose terms change: a run of 257 or more, written as 255 + 2, PostgreSQL's largest
-- repetition count being 255), as a refresh or a new index would write them (the statement of 0026, for these).
CREATE TEMPORARY TABLE long_names ON COMMIT DROP AS
SELECT d.id FROM documents d
WHERE d.kind = 0 AND (d.content ~ '[\w<>.-]{255}[\w<>.-]{2}' OR d.context ~ '[\w<>.-]{255}[\w<>.-]{2}');
DELETE FROM postings po USING long_names l WHERE po.doc_id = l.id AND left(po.term, 1) = '=';
INSERT INTO postings (version_id, term, doc_id, page_id, tf_body, tf_head, doc_len)
SELECT p.version_id, t.term, d.id, d.page_id, t.body, t.head, length(d.content) + length(d.context)
FROM long_names l
JOIN documents d ON d.id = l.id
JOIN pages p ON p.id = d.page_id
CROSS JOIN LATERAL (
    SELECT term, least(sum(body), 32767) AS body, least(sum(head), 32767) AS head
    FROM (
        SELECT ident AS term, 1 AS body, 0 AS head FROM docsbot_idents(d.content) AS ident
        UNION ALL
        SELECT ident, 0, 1 FROM docsbot_idents(d.context) AS ident
    ) AS u
    GROUP BY term
) AS t;

-- And the symbol table's: a stored name over the bound is no longer one (with its definition's own row), as a new
-- index of its page would have it; the page's Markdown and chunks are unchanged.
DELETE FROM symbols WHERE length(name) > 256;
DELETE FROM documents WHERE kind = 1 AND length(metadata ->> 'name') > 256;
