"""Bad arguments of a tool call, said in one line an agent can act on: each argument that failed, what it takes (from
the tool's input schema: its type, range, length or choices) and what it got, instead of pydantic's multi-line
report with its documentation links."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["bad_arguments", "takes"]

_SHOWN = 40  # characters of a rejected value quoted back


def _one(schema: dict[str, Any]) -> str:
    """What one branch of a JSON schema (RFC draft 2020-12, as pydantic writes it) accepts, in words."""
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type")
    if kind in ("integer", "number"):
        noun = "a whole number" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{noun} from {low} to {high}"
        if low is not None:
            return f"{noun} of at least {low}"
        if high is not None:
            return f"{noun} of at most {high}"
        return noun
    if kind == "string":
        low, high = schema.get("minLength"), schema.get("maxLength")
        if low and high:
            return f"a text of {low} to {high} characters"
        if high:
            return f"a text of at most {high} characters"
        if low:
            return f"a text of at least {low} character{'s' if low != 1 else ''}"
        return "a text"
    if kind == "boolean":
        return "true or false"
    if kind == "null":
        return "null"
    return kind or "a value"


def takes(schema: dict[str, Any]) -> str:
    """What an argument whose JSON schema is ``schema`` accepts, in words: ``a whole number from 1 to 50``, ``one of
    'docs', 'changelog', or null``."""
    branches = schema.get("anyOf") or [schema]
    words = [_one(branch) for branch in branches if branch.get("type") != "null"]
    nullable = len(words) < len(branches)
    text = " or ".join(words) or "null"
    return f"{text}, or null" if nullable else text


def _got(value: Any) -> str:
    if isinstance(value, str):
        return f"{len(value)} characters" if len(value) > _SHOWN else repr(value)
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def bad_arguments(error: ValidationError, schema: dict[str, Any]) -> str:
    """One line for the arguments ``error`` (pydantic's, validating a call against the tool's input ``schema``)
    rejected: ``limit: a whole number from 1 to 50, got 0``; ``query: required, a text of 1 to 2000
    characters``; several joined by ``; ``. An argument the schema does not name is said as pydantic says it."""
    properties = schema.get("properties", {})
    said: list[str] = []
    seen: set[str] = set()
    for item in error.errors(include_url=False):
        location = [str(part) for part in item.get("loc", ())]
        name = location[0] if location else "arguments"
        if name in seen:  # a union reports each branch's failure: one line per argument
            continue
        seen.add(name)
        prop = properties.get(name)
        what = takes(prop) if prop is not None else " ".join(str(item.get("msg", "invalid")).split())
        if item.get("type") == "missing":
            said.append(f"{name}: required, {what}")
        else:
            said.append(f"{name}: {what}, got {_got(item.get('input'))}")
    return "; ".join(said) or "the arguments do not match the tool's input schema"
