"""Text shown to a person, safe whatever it holds (pure; no Scrapy): a terminal's line or a log's line cannot be
steered by a stored or given string.

A library name, a URL, a page title or an error quoting input may hold an escape sequence (``ESC [`` rewrites a
terminal's screen, ``ESC ]`` its title or clipboard), a carriage return or backspace that overwrites what was
printed, a newline that forges the next line of a log, or a format character (U+202E RIGHT-TO-LEFT OVERRIDE) that
shows text in another order than it is. :func:`printable` writes each such character as Python writes it in a
string literal (``\\x1b``, ``\\n``, ``\\u202e``): visible, unambiguous, and never acted on. Every ``docsbot`` command's
output goes through it (:class:`EscapingStream`), and every log record of a docsbot process (:class:`EscapedLogRecord`).
"""

from __future__ import annotations

import logging
import numbers
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

__all__ = ["EscapedLogRecord", "EscapingStream", "escape_log_records", "printable"]


def printable(text: object, *, lines: bool = False) -> str:
    """``str(text)`` with every character that could act on a terminal or hide what it shows written as an escape
    (``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``): what :meth:`str.isprintable` calls not printable (Unicode's
    controls Cc, format characters Cf such as the bidirectional overrides and zero-width characters, line and paragraph
    separators, surrogates, private-use and unassigned code points) but spaces. ``lines``: newlines and tabs are
    kept (a page's text, a diff). Printable text, any script's letters included, is returned as it is."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable() or (lines and char in "\n\t") or unicodedata.category(char) == "Zs":
            out.append(char)
        else:
            out.append(_escape(char))
    return "".join(out)


def _escape(char: str) -> str:
    """``char`` as an escape that reads the same in a Python or a JSON string: ``\\n``, ``\\x1b`` for ASCII's
    controls (which JSON text never holds raw), ``\\u202e`` above, a UTF-16 pair past the BMP (JSON's only form),
    so that a JSON line printed through :class:`EscapingStream` means what it meant."""
    code = ord(char)
    if code < 0x7F:
        return repr(char)[1:-1]
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class EscapingStream:
    """A text stream (``sys.stdout``, ``sys.stderr``) that writes what it is given through :func:`printable` with
    its lines kept: what a command prints cannot act on the terminal, whatever a stored string holds. Everything but
    :meth:`write` and :meth:`writelines` is the wrapped stream's (``buffer`` included: a protocol on stdout, such as
    MCP's, writes there)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text, lines=True))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


# --- log records ---------------------------------------------------------------------------------------------------


class EscapedLogRecord(logging.LogRecord):
    """A log record whose message and traceback cannot forge another record or act on a terminal:

    - every control or format character in the values a message is formatted with (its ``args``: names, URLs,
      errors quoting input) is escaped by :func:`printable`, a newline included, so a value stays on its line;
    - what the message holds otherwise (a text built before logging, a message written on several lines such as
      Scrapy's settings dump) keeps its newlines, other control characters escaped, and every line after the first
      starts with a space when it would start at the margin: no line of a record can be taken for the first line
      of another (records start there, with their time);
    - a traceback (``exc_text``) is kept the same way.
    """

    def getMessage(self) -> str:  # noqa: N802 - logging's name
        message = str(self.msg)
        if self.args:
            message = message % _escaped_args(self.args)
        return _continued(message)

    @property
    def exc_text(self) -> str | None:  # type: ignore[override]
        return self.__dict__.get("_exc_text")

    @exc_text.setter
    def exc_text(self, value: str | None) -> None:
        self.__dict__["_exc_text"] = None if value is None else _continued(value)


def _escaped_args(args: Any) -> Any:
    if isinstance(args, Mapping):
        return {key: _escaped_value(value) for key, value in args.items()}
    if isinstance(args, tuple):
        return tuple(_escaped_value(value) for value in args)
    return _escaped_value(args)


def _escaped_value(value: Any) -> Any:
    if value is None or isinstance(value, numbers.Number):
        return value  # %d, %.1f and friends need the number itself
    return _Shown(value)


class _Shown:
    """A log argument as ``%s`` and ``%r`` show it, escaped."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return printable(self.value)

    def __repr__(self) -> str:
        return printable(repr(self.value))


_MARGIN = re.compile(r"\n(?=[^\s])")


def _continued(text: str) -> str:
    return _MARGIN.sub("\n ", printable(text, lines=True))


def escape_log_records() -> None:
    """Make every log record this process creates an :class:`EscapedLogRecord` (``logging.setLogRecordFactory``).
    Done once, when the records are the standard library's own; a process that installed a factory of its own keeps
    it."""
    if logging.getLogRecordFactory() is logging.LogRecord:
        logging.setLogRecordFactory(EscapedLogRecord)
