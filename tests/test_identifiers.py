"""What counts as an identifier (docsbot.content.identifiers), and the SQL that keeps its own copy of the rule pinned
to it over one table of examples: the search statement's query words (composed from the Python rule), and the
lexical index's identifier terms (docsbot_idents(), a frozen migration)."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from docsbot.content.identifiers import (
    CAMEL_CASE,
    IDENTIFIER_LIKE,
    LEXEME_IDENTIFIER,
    MAX_NAME_CHARS,
    NAME_LIKE,
    NAME_SHAPE,
    is_identifier,
    symbol_keys,
)

LONG = "a" * 150 + "B" + "c" * 149  # camelCase, 300 characters: text, not a name (MAX_NAME_CHARS)

# word as written: (a query word's `ident` in the search SQL, a definition list's term taken for a name by its shape,
# a table row's or list item's leading code shaped as a name, the lexical index's identifier terms, symbol keys)
EXAMPLES = {
    "CMAKE_<LANG>_FLAGS": (True, False, False, ["=cmake_<lang>_flags"], ["cmake_<lang>_flags"]),
    "__slots__": (True, True, True, ["=__slots__"], ["__slots__"]),
    "asyncio.gather": (True, True, True, ["=asyncio.gather", "=gather"], ["asyncio.gather", "gather"]),
    "--max-depth": (True, True, True, ["=--max-depth"], ["--max-depth"]),
    # a one-letter option is a query identifier and a name, but makes no identifier term (the pattern wants two
    # characters after the dash): its `english` lexeme finds it
    "-n": (True, True, True, [], ["-n"]),
    "getenv": (False, False, False, [], ["getenv"]),
    "Ellipsis": (False, False, False, [], ["ellipsis"]),
    # a query and a symbol table read "::" (C++, Rust); the index's terms are dotted names only: Foo and bar
    "Foo::bar()": (True, True, True, [], ["foo::bar", "bar"]),
    "setInheritable": (True, True, True, ["=setinheritable"], ["setinheritable"]),
    # one inner capital after a capital: a product's name as often as an API's, in a table of a setting's values
    "NumPy": (True, True, False, ["=numpy"], ["numpy"]),
    "NoBoundaryInMultipartDefect": (
        True,
        True,
        True,
        ["=noboundaryinmultipartdefect"],
        ["noboundaryinmultipartdefect"],
    ),
    # letters and digits: an `english` lexeme of its own ('cmp0036'), no "=" term (LEXEME_IDENTIFIER)
    "CMP0036": (True, True, True, [], ["cmp0036"]),
    "command-line": (False, False, False, [], ["command-line"]),
    "pack-*.idx": (True, False, False, [], ["pack-*.idx", "idx"]),
    LONG: (True, True, True, [], [LONG.lower()]),
}


def _term_is_name(word: str) -> bool:
    """The shape rule of docsbot.content.symbols.terms.term_name for a term without an anchor of its own."""
    return bool(NAME_SHAPE.fullmatch(word) and IDENTIFIER_LIKE.search(word))


def _row_is_name(word: str) -> bool:
    """The shape part of docsbot.content.symbols.names.names_defined, for a name code_name accepted."""
    return bool(NAME_SHAPE.fullmatch(word) and (NAME_LIKE.search(word) or len(CAMEL_CASE.findall(word)) > 1))


def _docsbot_idents() -> tuple[str, str, int]:
    """The match pattern, the filter and the length bound of docsbot_idents() as its latest migration defines it."""
    sources = sorted(
        (f for f in resources.files("docsbot.store.migrations").iterdir() if f.name.endswith(".sql")),
        key=lambda f: f.name,
    )
    created = r"CREATE (?:OR REPLACE )?FUNCTION docsbot_idents\b"  # 0031 only alters it
    defined = [f.read_text() for f in sources if re.search(created, f.read_text())]
    body = re.split(created, defined[-1], maxsplit=1)[1].split("$$;", 1)[0]
    match = re.search(r"regexp_matches\((?:t|tok), '((?:[^']|'')*)', 'g'\)", body).group(1).replace("''", "'")
    keep = re.search(r"m\[1\] ~ '((?:[^']|'')*)'", body).group(1).replace("''", "'")
    bound = int(re.search(r"length\(m\[1\]\) <= (\d+)", body).group(1))
    return match, keep, bound


def _identifier_terms(text: str) -> list[str]:
    """docsbot_idents(text) read with Python's regular expressions: each match kept by the filter, lower-cased, as
    '=' + itself and each of its dotted suffixes."""
    match, keep, bound = _docsbot_idents()
    terms = []
    for m in re.finditer(match, text):
        word = m.group(1)
        if re.search(keep, word) and len(word) <= bound:
            parts = word.lower().split(".")
            terms += ["=" + ".".join(parts[i:]) for i in range(len(parts))]
    return terms


@pytest.mark.parametrize("word", list(EXAMPLES), ids=lambda w: w[:24])
def test_each_reader_of_a_word_decides_as_the_table_says(word):
    query, term, row, postings, keys = EXAMPLES[word]
    assert is_identifier(word) is query
    assert _term_is_name(word) is term
    assert _row_is_name(word) is row
    assert _identifier_terms(word) == postings
    assert symbol_keys(word) == keys


def test_the_index_keeps_its_own_copy_of_the_rule_without_what_it_never_needs():
    """docsbot_idents()'s filter is IDENTIFIER_LIKE without ":" (its matches hold none: dotted parts only) and
    without a digit after a letter (such a word is an `english` lexeme, whole); its bound is MAX_NAME_CHARS."""
    _, keep, bound = _docsbot_idents()
    assert bound == MAX_NAME_CHARS
    assert keep == "[._<>]|[a-z][A-Z]|^-"
    assert IDENTIFIER_LIKE.pattern == "[._<>:]|[a-z][A-Z]|^-|[A-Za-z][0-9]"
    for word in EXAMPLES:
        if ":" not in word and not re.search("[A-Za-z][0-9]", word):
            assert (re.search(keep, word) is not None) == is_identifier(word), word


def test_the_search_statement_reads_query_words_by_the_python_rule():
    """The search SQL holds no copy: the patterns are composed into it from docsbot.content.identifiers."""
    from docsbot.store.ranking import search_sql

    statement = search_sql(384, [1]).as_string(None)
    assert f"(w ~ '{IDENTIFIER_LIKE.pattern}') AS ident" in statement
    assert f"key ~ '{LEXEME_IDENTIFIER.pattern}'" in statement
    assert "[a-z][A-Z]" not in statement.replace(IDENTIFIER_LIKE.pattern, "")


def test_postgresql_reads_each_copy_as_python_does(database_url):
    """The same table in PostgreSQL: the query words of the search statement itself (its qkeys step, words split
    and cut as typed), the lexeme rule, and docsbot_idents() of the migrated schema."""
    from docsbot import store
    from docsbot.store.ranking import search_sql

    statement = search_sql(384, [1]).as_string(None)
    qkeys = re.search(r"qkeys AS \((.*?)\n\), qphrase", statement, re.DOTALL).group(1)
    with store.connect(database_url, autocommit=True) as conn:
        store.migrate(conn)
        for word, (query, _, _, postings, _) in EXAMPLES.items():
            keys = conn.execute(f"WITH qkeys AS ({qkeys}) SELECT key, ident FROM qkeys", {"text": word}).fetchall()
            assert keys == [(word.lower().removesuffix("()"), query)], word
            (terms,) = conn.execute("SELECT array(SELECT docsbot_idents(%s))", [word]).fetchone()
            assert terms == postings, word
            (lexeme,) = conn.execute("SELECT lower(%s) ~ %s", [word, LEXEME_IDENTIFIER.pattern]).fetchone()
            assert lexeme is (LEXEME_IDENTIFIER.search(word.lower()) is not None), word


def test_identifier_terms_found_token_by_token_equal_those_of_the_whole_text(database_url):
    """Migration 0033 matches docsbot_idents()'s pattern token by token, and only in tokens that hold a character
    a name needs: over random texts of names, words, spaces, newlines, dashes and brackets (a look-behind at a
    token's start, a name at the text's ends, long runs), the same terms as 0028's function on the whole text."""
    import random

    from docsbot import store

    sources = {f.name: f for f in resources.files("docsbot.store.migrations").iterdir()}
    whole = sources["0028_names_of_bounded_length.sql"].read_text()
    whole = whole.split("CREATE OR REPLACE FUNCTION docsbot_idents(t text)", 1)[1].split("$$;", 1)[0] + "$$;"
    rng = random.Random(33)
    pieces = ["os.path", "join", "--verbose", "-x", "a_b", "getSize", "List<T>", "x.y.z", "Foo", "bar", "--", "-",
              ".", "_", "<", ">", "a-b", "9", "é", "\n", "\t", " ", " ", " ", "  "]  # fmt: skip
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    texts += ["", " ", "a" * 300 + ".b", "-" * 5 + "x", "x.y " * 50]
    with store.connect(database_url, autocommit=True) as conn:
        store.migrate(conn)
        conn.execute("CREATE FUNCTION pg_temp.idents_whole(t text)" + whole)
        conn.execute("CREATE TEMPORARY TABLE texts (id int, t text)")
        with conn.cursor().copy("COPY texts (id, t) FROM STDIN") as copy:
            for i, text in enumerate(texts):
                copy.write_row((i, text))
        (differ,) = conn.execute(
            """WITH a AS (SELECT id, x FROM texts, docsbot_idents(t) x),
                    b AS (SELECT id, x FROM texts, pg_temp.idents_whole(t) x)
               SELECT count(*) FROM ((TABLE a EXCEPT ALL TABLE b) UNION ALL (TABLE b EXCEPT ALL TABLE a)) d"""
        ).fetchone()
        (terms,) = conn.execute("SELECT count(*) FROM texts, docsbot_idents(t)").fetchone()
    assert differ == 0 and terms > 3000
