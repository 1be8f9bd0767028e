"""What counts as an identifier (pure; no lxml, no database): the one home of the rule that extraction's symbol
table and search's SQL both apply, and of the keys a defined name is found by.

Three readers decide whether a word is a name rather than a word of prose, and each reads it from here or is pinned
to it by ``tests/test_identifiers.py`` (a table of examples: ``CMAKE_<LANG>_FLAGS``, ``__slots__``,
``asyncio.gather``, ``--max-depth``, ``getenv``, ``Foo::bar()``, camelCase, ``CMP0036``, a 300-character name):

- a word of a query (:data:`IDENTIFIER_LIKE`, composed into the search statement by
  :func:`docsbot.store.ranking.search_sql`): a symbol match of it earns the identifier bonus, a query holding one
  leans on exact matches;
- a definition list's term that the symbol table takes for a name (:data:`IDENTIFIER_LIKE` again, on a term already
  shaped as one name: :data:`NAME_SHAPE`), and a table row's or list item's (:data:`NAME_LIKE`, stricter on capitals);
- the identifier terms of the lexical index (``docsbot_idents()``, SQL in ``docsbot/store/migrations/0028``, frozen
  once applied): its own copy, which differs from :data:`IDENTIFIER_LIKE` on purpose (see there).
"""

from __future__ import annotations

import re

__all__ = [
    "CAMEL_CASE",
    "IDENTIFIER_LIKE",
    "LEXEME_IDENTIFIER",
    "MAX_NAME_CHARS",
    "NAME_LIKE",
    "NAME_SHAPE",
    "is_identifier",
    "symbol_keys",
]

# A word is shaped like an identifier when it holds a dot, an underscore, `::` or `:` (GObject's properties), angle
# brackets (CMake's CMAKE_<LANG>_FLAGS), a lower-case letter followed by a capital (camelCase), a digit after a
# letter (CMP0036, sha256), or starts with a dash (an option: --max-depth, -n). Not getenv, Ellipsis or "magic".
# PostgreSQL's regular expressions read this pattern as Python's do (ASCII classes and anchors only); the search
# statement receives it as a literal. The lexical index's identifier terms (docsbot_idents(), migration 0028) keep
# a copy without ":" and without the letter-digit rule, on purpose: its matches never hold a colon (a name's parts
# are dotted there; Foo::bar is two words to it), and a word of letters and digits is already an `english` lexeme of
# its own, whole ('cmp0036'), which search reads as an identifier's posting (LEXEME_IDENTIFIER).
IDENTIFIER_LIKE = re.compile(r"[._<>:]|[a-z][A-Z]|^-|[A-Za-z][0-9]")
# A query word (lower-cased) that the `english` parser keeps whole as one lexeme because it mixes letters and digits
# (cmp0036, sha256, utf8): its postings are the identifier's, though they carry no "=".
LEXEME_IDENTIFIER = re.compile(r"^[a-z][a-z0-9]*[0-9][a-z0-9]*$")
# As IDENTIFIER_LIKE, but an inner capital only after a lower-case start (libraryPath): a capitalized name with one
# (SunPro, NumPy, AppleClang) is as often a product's as a name's; with two or more (NoBoundaryInMultipartDefect) it
# is a name (CAMEL_CASE, counted by the symbol table). Applied to a table row's or list item's leading code, where a
# setting's values (Clang, STRING) are listed as often as names are defined; a name there is already NAME_SHAPE'd,
# so it holds no angle brackets. Stricter than the search side on purpose: search asks whether a query names
# something, extraction whether a row defines it.
NAME_LIKE = re.compile(r"[._:]|^[a-z_$][\w$]*[a-z][A-Z]|^-|[A-Za-z][0-9]")
CAMEL_CASE = re.compile(r"[a-z][A-Z]")
# A name as documentation shows it: an identifier, dotted or ::-joined parts, dashes inside (git-config, add.ignore-
# errors), an option's leading dashes, C++'s ~destructor; one word.
NAME_SHAPE = re.compile(r"(?:--?|~)?[A-Za-z_$][\w$]*(?:(?:\.|::|-|/)[\w$]+)*(?:\(\))?")
# A longer "name" is text (a blob of letters, a hostile page's dotted name of thousands of parts): each name gives a
# symbol key per suffix, and the same bound keeps it out of the identifier postings (migration 0028, its own copy),
# where a key over PostgreSQL's B-tree limit (2,704 bytes) failed the page's transaction. make eval's longest: 71.
MAX_NAME_CHARS = 256

_SYMBOL_SEPARATOR = re.compile(r"(::|[.:])")


def is_identifier(word: str) -> bool:
    """Whether ``word`` (one word as written, case kept) is shaped like an identifier (:data:`IDENTIFIER_LIKE`)."""
    return IDENTIFIER_LIKE.search(word) is not None


def symbol_keys(name: str) -> list[str]:
    """The keys a symbol is found by: its lower-cased name without a trailing ``()`` and each of its last parts,
    parts being separated by ``.``, ``::`` (Rust, C++) or ``:`` (GObject properties): ``os.path.join`` →
    ``os.path.join``, ``path.join``, ``join``; ``std::vec::Vec::push`` → ..., ``vec::push``, ``push``."""
    name = name.strip().lower().removesuffix("()")
    tokens = _SYMBOL_SEPARATOR.split(name)  # part, separator, part, ...
    keys = ["".join(tokens[i:]) for i in range(0, len(tokens), 2) if tokens[i]]
    return list(dict.fromkeys(keys)) or [name]
