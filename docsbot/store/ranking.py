"""The search SQL: hybrid retrieval (vectors, BM25 over ``postings``, the symbol table) fused by weighted reciprocal
rank in one statement, and the per-version BM25 statistics it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from docsbot.content.identifiers import IDENTIFIER_LIKE, LEXEME_IDENTIFIER, symbol_keys
from docsbot.store.explaining import chunk_explanation, page_explanation

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np

__all__ = [
    "CHANGE_WORDS",
    "PAGE_KINDS",
    "SEARCH_KINDS",
    "REFRESH_REPEATS",
    "REFRESH_STATS",
    "SEARCH_DEFAULTS",
    "RankedChunk",
    "lexical_stats_statements",
    "refresh_lexical_stats",
    "search",
    "symbol_keys",
]


@dataclass(frozen=True)
class RankedChunk:
    """A chunk (or a definition) the search statement ranked: its page, heading path, text and fused score (higher is
    better; not comparable across queries). The service turns it into the answer it gives
    (:class:`docsbot.service.models.SearchHit`)."""

    url: str
    title: str
    heading_path: list[str]
    score: float
    content: str
    version_id: int = 0
    deep_link: str | None = None  # url#anchor of the chunk's section, when the page gave one
    page_id: int = 0
    explanation: dict[str, Any] | None = None  # with search(explain=True): docsbot.store.explaining's shape


# Ranking knobs of :func:`search`, tuned on `make eval` (eval/run.py --param NAME=VALUE to try others).
SEARCH_DEFAULTS: dict[str, Any] = {
    "candidates": 50,  # nearest chunks by vector
    # HNSW candidate list of each version's graph (pgvector's hnsw.ef_search). Against an exact scan, make eval's
    # queries on 25 versions of a 100-version fleet (bench/fleet_scale.py, 1,000 query × version pairs): ef_search
    # 200, recall@10 0.90 at worst; 500, 1.0 (recall@50 0.96 at worst), a few ms a version. A search of more than
    # `ef_wide_versions` versions walks that many graphs: ef_search_wide each
    "ef_search": 500,
    "ef_search_wide": 200,
    "ef_wide_versions": 8,
    "lex_candidates": 50,  # best chunks by BM25
    # reciprocal rank fusion: score = w / (rrf_k + rank). 30, not the customary 60: the first places of each list
    # weigh more against the rest, and on questions in a user's words the model's first places are the better
    # signal (make eval, pages ranked by their nearest text alone: Python user questions Hit@1 0.44 against the
    # fusion's 0.38 at 60). The symbol bonuses below, added to these scores, doubled with them (BENCHMARKS.md)
    "rrf_k": 30,
    "w_vec": 1.0,
    # Definitions embedded on their own (documents.kind = 1): the nearest of them are a ranked list of their own
    "def_candidates": 50,
    "w_def": 1.0,
    # ...and a definition nearer to the query than every chunk by at least def_gap (cosine distance) weighs
    # w_def_near instead: a question about that API ("find the size of an object in bytes": sys.getsizeof's
    # definition 0.685, the nearest chunk 0.593), not about the sections around it. Tuned on make eval's Python,
    # CMake, git and LMDB sets, user questions included (BENCHMARKS.md "Search quality")
    "w_def_near": 2.0,
    "def_gap": 0.02,
    # A version's chunks are ranked by vector only once this share of them have their vector: while its queue fills
    # (text first), the embedded chunks would have two lists to be found by and the waiting ones one, so a page
    # embedded early would outrank a better one still waiting; until then, BM25 and symbols alone (`make eval
    # EVAL_ARGS=--no-vectors`: above page BM25 on every row).
    "vector_share": 0.9,
    "w_lex": 1.0,
    "w_lex_ident": 1.5,  # w_lex of a query holding an identifier the version's text contains ('=cmake_build_type')
    "k1": 1.2,  # BM25 term-frequency saturation
    "b": 0.75,  # BM25 length normalization
    "w_head": 2.0,  # a term in the context line (title > headings) counts this many times
    "w_ident": 1.0,  # weight of identifier terms ('=os.set_inheritable') beside english lexemes
    "w_sym": 0.1,  # bonus of a page defining an identifier of the query (divided by pages defining it)
    "w_sym_word": 0.04,  # same for a plain word of the query that names a symbol ("Ellipsis", "open")...
    "sym_word_max_words": 4,  # ...in a query of at most this many words (in a question, "list" is a word)
    "nav_share": 0.5,  # pages with at least this share of text in links are navigation...
    "nav_factor": 0.1,  # ...and their score is multiplied by this
    # A changelog page (pages.kind: release notes, What's New) mentions every API it announces: its score is
    # multiplied by this unless the query names a version or asks what changed (CHANGE_WORDS)
    "changelog_factor": 0.5,
    "w_page_rest": 0.3,  # a page's score adds this share of its 2nd and 3rd best chunks' scores
    "w_page_lex": 0.0,  # weight of the page-level BM25 list in a page's score (one result per page only)...
    "ident_miss": 0.6,  # a page lacking every identifier of a query naming one has its score multiplied by this...
    "ident_miss_max_words": 6,  # ...in a query of at most this many words (a question's incidental name does not)
    "page_candidates": 50,  # ...its length
    "merge": 3,  # per page: its best chunks merged in page order, at most this many
    "merge_ratio": 0.8,  # ...those scoring at least this share of the page's best chunk
}


# A query that asks about versions or changes (PostgreSQL regular expression, case-insensitive): release notes are
# then ranked as any page. "What's new", a version number, the words of release notes.
CHANGE_WORDS = (
    r"what.?s new|\m(changed?|changes|changelog|deprecated|deprecations?|removed|added|releases?|released|"
    r"versions?|upgrad\w*|migrat\w*|history|news)\M|\m\d+\.\d+"
)
PAGE_KINDS = ("docs", "changelog", "index")  # pages.kind (migration 0022)
# What a search may be limited to: a kind of page, or "example": the chunks holding a code example
SEARCH_KINDS = (*PAGE_KINDS, "example")

_SEARCH = """
WITH stats AS MATERIALIZED (
    -- computed once: inlined into the BM25 join, the fallback sub-selects of a version without lexical_stats (a
    -- first index still running or interrupted) ran once per posting row: minutes per query on the Python docs
    SELECT v.id AS version_id,
           coalesce(ls.docs, (SELECT count(*) FROM documents d JOIN pages p ON p.id = d.page_id
                              WHERE p.version_id = v.id AND d.kind = 0))::float8 AS docs,
           coalesce(ls.avg_len, (SELECT avg(length(d.content) + length(d.context)) FROM documents d
                                 JOIN pages p ON p.id = d.page_id WHERE p.version_id = v.id AND d.kind = 0),
                    1.0) AS avg_len
    FROM unnest(%(versions)s::bigint[]) AS v(id) LEFT JOIN lexical_stats ls ON ls.version_id = v.id
), vec_versions AS MATERIALIZED (
    -- versions whose chunks are ranked by vector too: those with at least `vector_share` of their chunks embedded
    -- (the waiting ones are read through documents_unembedded_idx: nothing to read once the queue is drained).
    -- Counted here, not by docsbot.store.queue's statement, which reads each chunk's version_id: a search runs this
    -- for every version it reads, and joined through pages the count starts from that partial index whatever the
    -- planner's statistics say; by version_id, on statistics from before a drain, it read every chunk of a
    -- 30,000-chunk version through documents_version_idx instead (2.9 ms against 0.4 ms)
    SELECT s.version_id FROM stats s
    WHERE (SELECT count(*) FROM documents d JOIN pages p ON p.id = d.page_id
           WHERE d.embedding IS NULL AND p.version_id = s.version_id) <= (1 - %(vector_share)s) * s.docs
), nearest AS MATERIALIZED (
    -- The nearest chunks and definitions of each version through its own HNSW graph (docsbot.store.vector_index:
    -- a partial index per version, which the planner uses because each branch names its version as a constant),
    -- then the nearest of them all. A branch runs only if its version is ranked by vector (a one-time filter).
    -- Relaxed order, re-sorted here (pgvector's advice). Chunks and definitions share the scan; each kind is
    -- ranked among its own below (a definition's short text is nearer to a question about it than any chunk is,
    -- and would crowd the chunks out of one list).
    SELECT id, kind, distance FROM ({per_version}) AS u
    ORDER BY distance LIMIT %(candidates)s + %(def_candidates)s
), vec AS (
    SELECT id, kind, rank, distance FROM (
        SELECT id, kind, distance, row_number() OVER (PARTITION BY kind ORDER BY distance, id) AS rank FROM nearest
    ) r
    WHERE rank <= CASE WHEN kind = 0 THEN %(candidates)s ELSE %(def_candidates)s END
), qterms AS (
    SELECT term, sum(tf)::float8 AS qtf FROM docsbot_terms(%(text)s) GROUP BY term
), qpost AS MATERIALIZED (
    -- every posting of a query term (scanned once; chunk BM25 and page BM25 both read it). An array, not `IN
    -- (SELECT ...)`: the planner guesses 200 rows for docsbot_terms() and, once postings holds a few libraries,
    -- preferred a sequential scan of the whole table to 200 index probes (170 ms a query instead of 2). A row of
    -- postings is a page's chunks holding the term (migration 0031): unnested, one row per (chunk, term)
    SELECT po.version_id, po.term, c.doc_id, po.page_id, c.tf_body, c.tf_head, c.doc_len
    FROM postings po
    CROSS JOIN LATERAL unnest(po.doc_ids, po.tf_bodies, po.tf_heads, po.doc_lens)
        AS c(doc_id, tf_body, tf_head, doc_len)
    WHERE po.version_id = ANY(%(versions)s) AND po.term = ANY(ARRAY(SELECT term FROM qterms))
), df AS (
    SELECT version_id, term, count(*)::float8 AS df FROM qpost GROUP BY version_id, term
), qkeys AS (
    -- the query's words as typed (trailing punctuation and "()" cut), lower-cased; `ident` if shaped like one
    -- (docsbot.content.identifiers.IDENTIFIER_LIKE, the symbol table's rule for terms too)
    SELECT DISTINCT lower(w) AS key, (w ~ {identifier_like}) AS ident
    FROM regexp_split_to_table(%(text)s, '[\\s,;()"''`?!]+') AS typed,
         LATERAL regexp_replace(typed, '[.:]+$', '') AS w  -- "bytes." ends a sentence; "e.g." is not a name
    WHERE w <> '' AND length(w) > 1
), qphrase AS (
    -- the whole query, lower-cased, as one key when it has 2 to `sym_word_max_words` words: the name of a defined
    -- term of several words ("magic method" in a glossary, "create table")
    SELECT p AS key, false AS ident
    FROM (SELECT regexp_replace(lower(trim(%(text)s)), '[\\s?!.,;:]+$', '') AS q) t,
         LATERAL (SELECT array_to_string(regexp_split_to_array(t.q, '\\s+'), ' ') AS p) j
    WHERE array_length(regexp_split_to_array(t.q, '\\s+'), 1) BETWEEN 2 AND %(sym_word_max_words)s
), ident_pages AS MATERIALIZED (
    -- pages holding an identifier of the query: an identifier term ('=cmake_build_type'), or a word of letters and
    -- digits, which the `english` parser keeps whole as a lexeme ('cmp0036', 'sha256': LEXEME_IDENTIFIER); none: the
    -- query names no identifier of the text
    SELECT DISTINCT page_id FROM qpost
    WHERE left(term, 1) = '=' OR term IN (SELECT key FROM qkeys WHERE key ~ {lexeme_identifier})
), weights AS MATERIALIZED (
    -- a query naming an identifier the text holds leans on exact matches: its own BM25 weight
    SELECT CASE WHEN ident THEN %(w_lex_ident)s ELSE %(w_lex)s END AS lex, ident
    FROM (SELECT EXISTS (SELECT 1 FROM ident_pages) AS ident) q
), lex AS (
    -- BM25 (Robertson/Sparck Jones IDF with +1, as Lucene) over chunks; a context-line occurrence counts
    -- w_head times, identifier terms weigh w_ident.
    SELECT doc_id, row_number() OVER (ORDER BY score DESC, doc_id) AS rank FROM (
        SELECT po.doc_id, sum(
            (CASE WHEN left(po.term, 1) = '=' THEN %(w_ident)s ELSE 1.0 END) * q.qtf
            * ln(1 + (s.docs - df.df + 0.5) / (df.df + 0.5))
            * (po.tf_body + %(w_head)s * po.tf_head) * (%(k1)s + 1)
            / ((po.tf_body + %(w_head)s * po.tf_head) + %(k1)s * (1 - %(b)s + %(b)s * po.doc_len / s.avg_len))
        ) AS score
        FROM qpost po
        JOIN qterms q ON q.term = po.term
        JOIN df ON df.version_id = po.version_id AND df.term = po.term
        JOIN stats s ON s.version_id = po.version_id
        GROUP BY po.doc_id
        ORDER BY score DESC, po.doc_id LIMIT %(lex_candidates)s
    ) scored
), page_tf AS (
    -- BM25 over whole pages (a page's chunks as one document), a third ranked list when w_page_lex > 0: a term
    -- spread over many sections of one page (an index term, a module's name) ranks that page, as page-level
    -- BM25 does; chunk-level ranks see one section at a time.
    SELECT version_id, page_id, term, sum(tf_body + %(w_head)s * tf_head) AS tf,
           count(DISTINCT doc_id) AS chunks
    FROM qpost WHERE %(w_page_lex)s > 0 GROUP BY version_id, page_id, term
), page_len AS (
    SELECT d.page_id, sum(length(d.content) + length(d.context))::float8 AS len FROM documents d
    WHERE d.page_id IN (SELECT DISTINCT page_id FROM page_tf) GROUP BY d.page_id
), page_stats AS (
    SELECT s.version_id, n.pages, s.docs * s.avg_len / greatest(n.pages, 1) AS avg_len
    FROM stats s CROSS JOIN LATERAL (SELECT count(*)::float8 AS pages FROM pages WHERE version_id = s.version_id) n
    WHERE %(w_page_lex)s > 0
), plex AS (
    SELECT page_id, row_number() OVER (ORDER BY score DESC, page_id) AS rank FROM (
        SELECT pt.page_id, sum(
            (CASE WHEN left(pt.term, 1) = '=' THEN %(w_ident)s ELSE 1.0 END) * q.qtf
            * ln(1 + (ps.pages - pdf.df + 0.5) / (pdf.df + 0.5))
            * pt.tf * (%(k1)s + 1) / (pt.tf + %(k1)s * (1 - %(b)s + %(b)s * pl.len / ps.avg_len))
        ) AS score
        FROM page_tf pt
        JOIN qterms q ON q.term = pt.term
        JOIN (SELECT version_id, term, count(*)::float8 AS df FROM page_tf GROUP BY version_id, term) pdf
          ON pdf.version_id = pt.version_id AND pdf.term = pt.term
        JOIN page_stats ps ON ps.version_id = pt.version_id
        JOIN page_len pl ON pl.page_id = pt.page_id
        GROUP BY pt.page_id
        ORDER BY score DESC, pt.page_id LIMIT %(page_candidates)s
    ) scored
), plex_chunks AS (
    -- a page ranked by page BM25 competes with its chunk holding most of the query's terms
    SELECT DISTINCT ON (po.page_id) po.doc_id AS id FROM qpost po JOIN plex ON plex.page_id = po.page_id
    GROUP BY po.page_id, po.doc_id
    ORDER BY po.page_id, count(*) DESC, sum(po.tf_body + po.tf_head) DESC, po.doc_id
), ident_gate AS (
    -- a short query naming an identifier the text holds is about that name: pages without it rank lower
    SELECT (SELECT ident FROM weights) AND (SELECT count(*) FROM qkeys) <= %(ident_miss_max_words)s AS active
), sym AS (
    SELECT s.page_id, s.anchor, s.indexed, k.key, k.ident,
           lower(s.name) = k.key OR lower(s.name) = k.key || '()' AS exact
    FROM symbols s JOIN (SELECT key, ident FROM qkeys UNION SELECT key, ident FROM qphrase) k ON k.key = ANY(s.keys)
    WHERE s.version_id = ANY(%(versions)s)
      AND s.keys && (SELECT array_agg(key) FROM (SELECT key FROM qkeys UNION SELECT key FROM qphrase) a)
), sym_key AS (
    -- the pages that define each key; where the site's index points to some of them, those alone
    SELECT key, bool_or(indexed) AS indexed,
           coalesce(nullif(count(DISTINCT page_id) FILTER (WHERE indexed), 0), count(DISTINCT page_id)) AS pages
    FROM sym GROUP BY key
), sym_page AS (
    SELECT DISTINCT ON (page_id) page_id, anchor, bonus, ident, exact, pages, indexed FROM (
        SELECT sym.page_id, sym.anchor, sym.ident, sym.exact, n.pages, sym.indexed,
               (CASE WHEN sym.ident THEN %(w_sym)s
                     WHEN (SELECT count(*) FROM qkeys) <= %(sym_word_max_words)s THEN %(w_sym_word)s ELSE 0 END)
               / n.pages AS bonus
        FROM sym JOIN sym_key n ON n.key = sym.key
        WHERE sym.indexed OR NOT n.indexed
    ) b
    -- a match of a name's last parts ("getsizeof" for sys.getsizeof) weighs as the whole name: a share for it
    -- moved no row of `make ablation` at 0 or at 1 (BENCHMARKS.md); the whole name's anchor is preferred
    ORDER BY page_id, bonus DESC, exact DESC, anchor
), sym_top AS (
    SELECT * FROM sym_page ORDER BY bonus DESC, page_id LIMIT 20
), sym_chunks AS (
    -- a page that defines a query identifier competes with the chunk of its definition (or its first)
    -- (its own definition row first: the definition alone, as it is embedded)
    SELECT DISTINCT ON (st.page_id) d.id FROM sym_top st JOIN documents d ON d.page_id = st.page_id
    ORDER BY st.page_id, (d.metadata ->> 'anchor' = st.anchor) DESC NULLS LAST, d.kind DESC, d.sort_order, d.id
), chunk_parts AS (
    -- what each candidate's score is made of: its rank in each list and the factors that apply to it
    SELECT d.id, d.page_id, d.sort_order, d.content, d.metadata, d.kind, vec.distance, p.url, p.title, p.version_id,
           vec.kind AS vec_kind, vec.rank AS vec_rank,
           (vec.kind = 1 AND vec.distance + %(def_gap)s <= (SELECT min(distance) FROM vec WHERE kind = 0)) AS def_near,
           lex.rank AS lex_rank, weights.lex AS w_lex_used, weights.ident AS lex_ident,
           p.link_share >= %(nav_share)s AS nav,
           (ident_gate.active AND p.id NOT IN (SELECT page_id FROM ident_pages)) AS ident_missed
    FROM (SELECT id FROM vec UNION SELECT doc_id FROM lex UNION SELECT id FROM sym_chunks
          UNION SELECT id FROM plex_chunks) hits
    JOIN documents d ON d.id = hits.id
    JOIN pages p ON p.id = d.page_id
    LEFT JOIN vec ON vec.id = hits.id
    LEFT JOIN lex ON lex.doc_id = hits.id
    CROSS JOIN weights
    CROSS JOIN ident_gate
    WHERE %(page_kind)s::text IS NULL OR p.kind = %(page_kind)s::text
       -- code examples: the chunks that hold a fenced code block (CommonMark: ``` or ~~~ after at most 3 spaces)
       OR (%(page_kind)s::text = 'example' AND d.kind = 0 AND d.content ~ '(^|\n) {{0,3}}(```|~~~)')
), chunk AS (
    SELECT c.*,
           (COALESCE(CASE WHEN c.vec_kind = 0 THEN %(w_vec)s WHEN c.def_near THEN %(w_def_near)s ELSE %(w_def)s END
                     / (%(rrf_k)s + c.vec_rank), 0)
            + COALESCE(c.w_lex_used / (%(rrf_k)s + c.lex_rank), 0))
           * (CASE WHEN c.nav THEN %(nav_factor)s ELSE 1.0 END)
           * (CASE WHEN c.ident_missed THEN %(ident_miss)s ELSE 1.0 END) AS score
    FROM chunk_parts c
), ranked AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.page_id ORDER BY c.score DESC, c.id) AS nth,
           max(c.score) OVER (PARTITION BY c.page_id) AS best
    FROM chunk c
), pages_ranked AS (
    SELECT r.page_id, r.best
           + %(w_page_rest)s * rest.score
           + (COALESCE(sp.bonus, 0) + COALESCE(%(w_page_lex)s / (%(rrf_k)s + plex.rank), 0))
             * (CASE WHEN pg.link_share >= %(nav_share)s THEN %(nav_factor)s ELSE 1.0 END)
           AS unkinded, sp.anchor AS sym_anchor, pg.kind AS page_kind,
           -- the parts of the page's score (its best chunk's, the rest's, the page lists'), for an explanation
           r.id AS best_id, r.best, r.vec_kind, r.vec_rank, r.def_near, r.lex_rank, r.lex_ident, r.nav,
           r.ident_missed, rest.score AS rest, sp.bonus AS sym_bonus, sp.ident AS sym_ident, sp.exact AS sym_exact,
           sp.pages AS sym_pages, sp.indexed AS sym_indexed, plex.rank AS plex_rank
    FROM ranked r JOIN pages pg ON pg.id = r.page_id LEFT JOIN sym_page sp ON sp.page_id = r.page_id
    LEFT JOIN plex ON plex.page_id = r.page_id
    CROSS JOIN LATERAL (SELECT COALESCE(sum(o.score), 0) AS score FROM ranked o WHERE o.page_id = r.page_id
                        AND o.nth BETWEEN 2 AND 3) rest
    WHERE r.nth = 1
      -- a whole-book copy (page_repeats) gives way to a page it repeats whose hits hold its best chunk's text
      AND NOT EXISTS (SELECT 1 FROM page_repeats pr JOIN ranked o ON o.page_id = pr.page_id
                      WHERE pr.copy_id = r.page_id AND o.content = r.content)
), pages_kinded AS (
    -- release notes rank below the reference unless the query asks about versions or changes, or names an
    -- identifier the text holds (the release that added CMP0036 is an answer to "CMP0036")
    SELECT k.*, k.unkinded * (CASE WHEN k.changelog THEN %(changelog_factor)s ELSE 1.0 END) AS page_score
    FROM (SELECT pr.*,
                 (pr.page_kind = 'changelog' AND NOT %(text)s ~* %(change_words)s
                  AND NOT (SELECT ident FROM weights)) AS changelog
          FROM pages_ranked pr) k
    ORDER BY page_score DESC, page_id
    LIMIT CASE WHEN %(per_page)s THEN %(k)s ELSE 0 END
), page_def AS (
    -- the definition a page's result shows and links to: the one the query names (its symbol match), else the
    -- nearest of the page's definitions when it is nearer to the query than every chunk of the page (a question
    -- about that definition, not about the section around it)
    SELECT DISTINCT ON (r.page_id) r.page_id, r.id
    FROM ranked r JOIN pages_kinded pk ON pk.page_id = r.page_id
    WHERE r.kind = 1
      AND (r.metadata ->> 'anchor' = pk.sym_anchor
           OR r.distance <= COALESCE((SELECT min(o.distance) FROM ranked o WHERE o.page_id = r.page_id
                                      AND o.kind = 0), 2))
    ORDER BY r.page_id, (r.metadata ->> 'anchor' = pk.sym_anchor) DESC NULLS LAST, r.distance NULLS LAST, r.id
)
SELECT pr.page_id, pr.page_score, pr.sym_anchor, r.url, r.title, r.version_id, r.id, r.sort_order, r.content,
       COALESCE(r.metadata -> 'heading_path', '[]'::jsonb), r.metadata ->> 'anchor', r.score, r.nth, r.kind,
       {explain_page}, {explain_chunk}
FROM pages_kinded pr JOIN ranked r ON r.page_id = pr.page_id
WHERE r.id IN (SELECT id FROM page_def)
   OR (pr.page_id NOT IN (SELECT page_id FROM page_def) AND r.kind = 0
       AND r.nth <= %(merge)s AND r.score >= r.best * %(merge_ratio)s)
UNION ALL
(SELECT r.page_id, r.score, NULL, r.url, r.title, r.version_id, r.id, r.sort_order, r.content,
        COALESCE(r.metadata -> 'heading_path', '[]'::jsonb), r.metadata ->> 'anchor', r.score, 1, r.kind,
        NULL::jsonb, {explain_chunk}
 FROM ranked r WHERE NOT %(per_page)s ORDER BY r.score DESC, r.id LIMIT %(k)s)
"""


# One branch of `nearest` per version searched: the version's id a constant, so that the planner can prove the
# predicate of its partial HNSW index (a parameter or a join would leave it an exact scan of the version)
_NEAREST_BRANCH = """(
    SELECT d.id, d.kind, d.embedding::vector({dim}) <=> %(vector)s::vector({dim}) AS distance
    FROM documents d
    WHERE d.version_id = {version} AND vector_dims(d.embedding) = {dim}
      AND {version} = ANY(ARRAY(SELECT version_id FROM vec_versions))
    ORDER BY distance LIMIT %(candidates)s + %(def_candidates)s
)"""
# What an explained search adds to each row (search(explain=True)): the page's parts of its score and the best rank
# any of its chunks has in each list, the chunk's ranks and factors; NULL otherwise, at no cost
_EXPLAIN_PAGE = """
    to_jsonb(pr) - 'sym_anchor' || jsonb_build_object(
        'sym_rank', (SELECT count(*) + 1 FROM sym_page o WHERE o.bonus > pr.sym_bonus),
        'lists', (SELECT jsonb_build_object(
                     'vector_chunks', min(o.vec_rank) FILTER (WHERE o.vec_kind = 0),
                     'vector_definitions', min(o.vec_rank) FILTER (WHERE o.vec_kind = 1),
                     'bm25_chunks', min(o.lex_rank))
                  FROM ranked o WHERE o.page_id = pr.page_id))"""
_EXPLAIN_CHUNK = """
    jsonb_build_object('vec_kind', r.vec_kind, 'vec_rank', r.vec_rank, 'distance', r.distance,
                       'def_near', r.def_near, 'lex_rank', r.lex_rank, 'lex_ident', r.lex_ident, 'nav', r.nav,
                       'ident_missed', r.ident_missed)"""
_NO_BRANCH = "SELECT NULL::bigint AS id, NULL::smallint AS kind, NULL::float8 AS distance WHERE false"


def search_sql(dim: int, version_ids: Iterable[int], explain: bool = False) -> sql.Composed:
    """The hybrid search statement for query vectors of ``dim`` dimensions over ``version_ids`` (one vector branch
    per version, see :mod:`docsbot.store.vector_index`); its parameters are :func:`search`'s. What counts as an
    identifier in the query is :mod:`docsbot.content.identifiers`' rule, composed in as literals. ``explain``: each
    row ends with two JSON objects (the page's parts, the chunk's ranks and factors) instead of two NULLs."""
    branches = [
        sql.SQL(_NEAREST_BRANCH).format(dim=sql.Literal(int(dim)), version=sql.Literal(int(v)))
        for v in sorted(set(version_ids))
    ]
    per_version = sql.SQL(" UNION ALL ").join(branches) if branches else sql.SQL(_NO_BRANCH)
    return sql.SQL(_SEARCH).format(
        dim=sql.Literal(int(dim)),
        per_version=per_version,
        identifier_like=sql.Literal(IDENTIFIER_LIKE.pattern),
        lexeme_identifier=sql.Literal(LEXEME_IDENTIFIER.pattern),
        explain_page=sql.SQL(_EXPLAIN_PAGE if explain else "NULL::jsonb"),
        explain_chunk=sql.SQL(_EXPLAIN_CHUNK if explain else "NULL::jsonb"),
    )


def search(
    conn: psycopg.Connection,
    query: str,
    vector: np.ndarray,
    version_ids: Iterable[int],
    k: int = 5,
    per_page: bool = False,
    page_kind: str | None = None,
    explain: bool = False,
    **tuning: Any,
) -> list[RankedChunk]:
    """Hybrid search, fused by weighted reciprocal rank fusion (score = Σ w / (rrf_k + rank)) of:

    - the ``candidates`` nearest chunks by cosine distance to ``vector`` (the query's embedding; HNSW with
      iterative scan, so version filters do not starve it), of the versions with at least ``vector_share`` of their
      chunks embedded (a version whose chunks still wait for their vectors is ranked by the other lists alone);
    - the ``def_candidates`` nearest definitions (``documents.kind = 1``: one per definition of the symbol table,
      embedded on its own) by the same scan, a list of its own weighing ``w_def``. A page's result shows and links
      to one of its definitions instead of its best chunks when the query names it (the symbol match) or when it
      is nearer to the query than every chunk of the page;
    - the ``lex_candidates`` best chunks by BM25 over ``postings`` (english lexemes and whole identifiers of each
      chunk's text and context line, kept by a trigger; per-version statistics in ``lexical_stats``);
    - pages whose symbol table (``symbols``) defines a word of the query: a bonus by how specific the match is
      (whole name or last parts; divided among the pages that define it), their definition chunk a candidate.

    A query naming an identifier the version's text holds (a ``=name`` term: dotted, underscored, camelCase names,
    options; or a word of letters and digits such as ``CMP0036``) weighs BM25 ``w_lex_ident``; if it has at most
    ``ident_miss_max_words`` words, pages lacking every such name are multiplied by ``ident_miss``.
    Navigation pages (``pages.link_share >= nav_share``) are ranked far down (``nav_factor``), changelog pages
    (``pages.kind``: release notes, What's New) lower (``changelog_factor``) unless the query matches
    :data:`CHANGE_WORDS` or names an identifier the version's text holds. ``page_kind``: only pages of that kind
    (:data:`PAGE_KINDS`). ``per_page``: one hit per page, its best chunks merged in page order and a deep link to
    its definition or best section;
    otherwise the ``k`` best chunks. ``explain``: each hit carries its explanation (:mod:`docsbot.store.explaining`:
    its rank in each list, every knob that changed its score), from the same statement. ``tuning`` overrides
    :data:`SEARCH_DEFAULTS`; unknown names raise
    ``TypeError``.
    """
    unknown = set(tuning) - set(SEARCH_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown search parameters: {', '.join(sorted(unknown))}")
    params = {**SEARCH_DEFAULTS, **tuning}
    version_ids = list(version_ids)
    dim = int(vector.shape[0])
    if conn.adapters.types.get("vector") is None:  # a pooled connection opened before anything was indexed
        register_vector(conn)
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        ef = params["ef_search"] if len(version_ids) <= params["ef_wide_versions"] else params["ef_search_wide"]
        ef_search = max(int(ef), params["candidates"] + params["def_candidates"])
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(min(ef_search, 1000))))
        rows = conn.execute(
            search_sql(dim, version_ids, explain),
            {
                **params,
                "vector": vector,
                "versions": list(version_ids),
                "text": query,
                "k": k,
                "per_page": per_page,
                "page_kind": page_kind,
                "change_words": CHANGE_WORDS,
            },  # fmt: skip
        ).fetchall()
    if not per_page:
        return [
            RankedChunk(
                url,
                title,
                list(path),
                float(score),
                content,
                version_id,
                _deep_link(url, anchor),
                page_id,
                chunk_explanation(chunk, float(score), params) if explain else None,
            )  # fmt: skip
            for page_id, _, _, url, title, version_id, _, _, content, path, anchor, score, _, _, _, chunk in rows
        ]
    pages: dict[int, list[tuple]] = {}
    for row in rows:
        pages.setdefault(row[0], []).append(row)
    hits = []
    for chunks in sorted(pages.values(), key=lambda c: (-c[0][1], c[0][0])):
        # the page's definition, when the query is about one (its own text: its chunk repeats it among its
        # neighbours'), else the page's best chunks in page order
        definition = next((c for c in chunks if c[13] == 1), None)
        best = definition or min(chunks, key=lambda c: c[12])
        page_id, page_score, sym_anchor, url, title, version_id, _, _, _, path, anchor, _, _, _, page, _ = best
        content = best[8] if definition else "\n\n".join(c[8] for c in sorted(chunks, key=lambda c: c[7]))
        link = _deep_link(url, sym_anchor or anchor)
        why = page_explanation(page, 1 if definition else len(chunks), params) if explain else None
        hits.append(RankedChunk(url, title, list(path), float(page_score), content, version_id, link, page_id, why))
    return hits


def _deep_link(url: str, anchor: str | None) -> str | None:
    return f"{url}#{anchor}" if anchor else None


def lexical_stats_statements(version_id: int, repeats: bool = True) -> list[tuple[str, dict[str, int]]]:
    """How a version's BM25 collection statistics (chunk count, mean length: ``lexical_stats``) are refreshed, and,
    with ``repeats``, which of its pages repeat others (:data:`REFRESH_REPEATS`): ``(statement, parameters)`` to run
    in order in one transaction, on a synchronous connection (:func:`refresh_lexical_stats`) or an asynchronous one
    (:class:`docsbot.store.pages.PageStore`, at a run's end of crawl or its end)."""
    params = {"version": version_id}
    return [(REFRESH_STATS, params), *((statement, params) for statement in REFRESH_REPEATS if repeats)]


def refresh_lexical_stats(conn: psycopg.Connection, version_id: int, repeats: bool = True) -> None:
    """Refresh the version's BM25 statistics and, with ``repeats``, its repeated pages, in one transaction
    (:func:`lexical_stats_statements`)."""
    with conn.transaction():
        for statement, params in lexical_stats_statements(version_id, repeats):
            conn.execute(statement, params)


REFRESH_STATS = """
    INSERT INTO lexical_stats (version_id, docs, avg_len)
    SELECT %(version)s, count(*), coalesce(avg(length(d.content) + length(d.context)), 1.0)
    FROM documents d JOIN pages p ON p.id = d.page_id WHERE p.version_id = %(version)s AND d.kind = 0
    ON CONFLICT (version_id) DO UPDATE SET docs = EXCLUDED.docs, avg_len = EXCLUDED.avg_len, updated_at = now()
"""

# A page C repeats a page P of its version when C holds at least REPEAT_SHARE of P's distinctive chunk texts (texts
# on at most REPEAT_MAX_PAGES pages: "Availability: Unix" or a license footer tells nothing) and C has more of them:
# mdBook's print.html holds every chapter (1,992 of its 1,993 chunks are a chapter's). A page that includes another's
# section (git-config(1) and each command's CONFIGURATION) holds too little of it. Two statements, one transaction.
REPEAT_SHARE = 0.9
REPEAT_MAX_PAGES = 4
REFRESH_REPEATS = (
    "DELETE FROM page_repeats WHERE version_id = %(version)s",
    f"""
    WITH text AS (
        SELECT DISTINCT d.page_id, md5(d.content) AS h
        FROM documents d JOIN pages p ON p.id = d.page_id WHERE p.version_id = %(version)s AND d.kind = 0
    ), distinctive AS MATERIALIZED (
        -- each distinctive text with the pages that hold it: the pairs of pages sharing a text come from its own
        -- array, never from a join of the texts with themselves, which a first index (no planner statistics yet on
        -- its new rows) ran as a nested loop: 14.6 s of the Python docs' 19,499 chunks, against 0.1 s
        SELECT h, array_agg(page_id) AS pages FROM text GROUP BY h HAVING count(*) <= {REPEAT_MAX_PAGES}
    ), sizes AS (
        SELECT page_id, count(*) AS n FROM distinctive, unnest(pages) AS page_id GROUP BY page_id
    ), shared AS (
        SELECT a AS page_id, b AS copy_id, count(*) AS n
        FROM distinctive, unnest(pages) AS a, unnest(pages) AS b
        WHERE cardinality(pages) > 1 AND a <> b
        GROUP BY a, b
    )
    INSERT INTO page_repeats (version_id, copy_id, page_id)
    SELECT %(version)s, s.copy_id, s.page_id
    FROM shared s JOIN sizes sp ON sp.page_id = s.page_id JOIN sizes sc ON sc.page_id = s.copy_id
    WHERE s.n >= {REPEAT_SHARE} * sp.n AND sc.n > sp.n
    """,
)
