"""Library and version names (pure): what a name may be, checked by one function at every entry point that writes
one (the spider's arguments, the libraries file, ``docsbot add`` and ``sync --from``, the service's write tools).

A name is shown in terminals, logs, feeds, web pages and paths (``/docs/NAME/VERSION/llms.txt``, an export's file
name), and typed by people: it is made of ASCII letters, digits, ``.``, ``_``, ``-`` and ``+`` (a version may also
hold ``@``: ``library@version`` is read at its first ``@``, so only a library name must not), starts with a letter
or a digit (not a command-line option, not a hidden file), holds no ``..`` (not a path out of a folder) and is at
most :data:`MAX_LENGTH` characters. No control, format (U+202E RIGHT-TO-LEFT OVERRIDE), path (``/``, ``\\``) or
markup character (``<``, ``&``, quotes) gets in. Registries' names fit: PyPI's normalized names (PEP 503), crates'
names, npm's once a scope is written as DefinitelyTyped writes it (``@babel/core`` is ``babel__core``).

**Names stored before this rule** stay readable and removable: reads look a name up as it is given, whatever it
holds, and ``docsbot delete``, ``remove_library`` and the web's Remove button delete it; what would write under it
again (a refresh, an index, an entry of the libraries file) is refused with :class:`InvalidName`, which says to
remove it and index the docs under a name that is one.
"""

from __future__ import annotations

import re
import string

from docsbot.display import printable
from docsbot.errors import DocsbotError

__all__ = ["MAX_LENGTH", "InvalidName", "check_library", "check_version", "library_name_of", "name_from"]

# npm's own bound on a package name, the longest of the registries' (crates.io's is 64, PyPI's is the index's)
MAX_LENGTH = 214
_LIBRARY = frozenset(string.ascii_letters + string.digits + "._+-")
_VERSION = _LIBRARY | {"@"}
_RULE = (
    "a {kind} name is ASCII letters, digits, '.', '_', '-' and '+'{more}, starts with a letter or a digit, holds no "
    "'..' and is at most {max} characters"
)


class InvalidName(DocsbotError, ValueError):
    """A library or version name that is not one; the message names it (escaped) and says what a name is."""


def _check(value: str, kind: str, allowed: frozenset[str]) -> str:
    rule = _RULE.format(kind=kind, more=", '@'" if kind == "version" else "", max=MAX_LENGTH)
    shown = printable(value[:60]) + ("…" if len(value) > 60 else "")
    bad = next((c for c in value if c not in allowed), None)
    if bad is not None:
        what = repr(bad) if bad.isprintable() else "a control or format character"
        problem = f"holds {what}"
    elif len(value) > MAX_LENGTH:
        problem = f"is {len(value)} characters long"
    elif not value[0].isalnum():
        problem = f"starts with {value[0]!r}"
    elif ".." in value:
        problem = "holds '..'"
    else:
        return value
    raise InvalidName(f"{kind} name '{shown}' {problem}: {rule}")


def check_library(name: str) -> str:
    """``name`` if it is a library name (module doc), else raise :class:`InvalidName` (an empty one too)."""
    if not name:
        raise InvalidName("a library name is needed")
    return _check(name, "library", _LIBRARY)


def check_version(name: str) -> str:
    """``name`` if it is a version name (module doc; ``''``: the library's one unnamed version), else raise
    :class:`InvalidName`."""
    return _check(name, "version", _VERSION) if name else name


def name_from(text: str, fallback: str = "docs") -> str:
    """A library name made from ``text`` (a host, a folder's or an archive's name): each run of characters a name
    may not hold becomes ``-``, ``..`` becomes ``.``, what does not start or end with a letter or digit is trimmed, and
    it is cut to :data:`MAX_LENGTH`; ``fallback`` when nothing is left. ``docs.example.org`` stays as it is; ``my
    docs`` is ``my-docs``; ``::1`` is ``1``."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "-", text, flags=re.ASCII)
    name = re.sub(r"\.{2,}", ".", name)
    name = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", name[:MAX_LENGTH])
    return name or fallback


def library_name_of(package: str, ecosystem: str) -> str:
    """The library name of a registry's package (``ecosystem``: ``pypi``, ``npm``, ``cargo``), as its ecosystem
    writes it in a flat namespace: PyPI's normalized name (PEP 503: ``Foo_Bar`` is ``foo-bar``), an npm scope as
    DefinitelyTyped writes it (``@babel/core`` is ``babel__core``), a crate's as it is; anything else a name may not
    hold made one by :func:`name_from`. Raises :class:`InvalidName` when nothing of it is left."""
    name = package.strip()
    if ecosystem == "pypi":
        name = re.sub(r"[-_.]+", "-", name).lower()
    elif ecosystem == "npm":
        scoped = re.fullmatch(r"@([^/]+)/(.+)", name)
        if scoped:
            name = f"{scoped.group(1)}__{scoped.group(2)}"
    made = name_from(name, "")
    if not made:
        raise InvalidName(f"package '{printable(package[:60])}' gives no library name")
    return check_library(made)
