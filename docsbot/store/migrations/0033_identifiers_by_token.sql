-- The identifier terms of a text (docsbot_idents, 0028) found token by token: the text is cut at its spaces, and a
-- token is matched only when it holds a character a name needs ('.', '_', '<', '>', '-') or a lower-case letter
-- followed by a capital. No match crosses a space (none of the pattern's characters is one, nor is any that its
-- look-behind rejects: a token's start is read as a space's next character was), so the matches are the same; a token
-- that holds none of those characters
-- has no match the filter keeps, so dropping it loses none. PostgreSQL's regular expressions built a match array for
-- every word of every chunk (the Python docs: 1.7 million, 194,000 of them names) only for the filter to drop most:
-- over the Python docs' chunks 0.93 -> 0.60 s, the same 382,199 terms of the texts and 25,333 of the context lines of
-- the nine `make eval` corpora (EXCEPT ALL both ways). Still a single SELECT that is not STRICT, so that the
-- planner inlines it into the postings trigger's statement (0031).
CREATE OR REPLACE FUNCTION docsbot_idents(t text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '=' || array_to_string(parts[i:], '.')
    FROM (SELECT string_to_array(lower(m[1]), '.') AS parts
          FROM unnest(string_to_array(t, ' ')) AS tok,
               LATERAL regexp_matches(tok, '((?<![\w-])--?[A-Za-z][\w-]*[\w]|[A-Za-z_][\w<>]*(?:\.[A-Za-z_][\w<>]*)*)', 'g') AS m
          WHERE tok ~ '[-._<>]|[a-z][A-Z]' AND m[1] ~ '[._<>]|[a-z][A-Z]|^-' AND length(m[1]) <= 256) AS found,
         generate_subscripts(parts, 1) AS i
$$;
