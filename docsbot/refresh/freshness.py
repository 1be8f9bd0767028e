"""HTTP freshness (RFC 9111 §4.2): until when a stored response may be used without asking the server again.

docsbot indexes a site for many readers, so it reads a response's freshness as a shared cache does (RFC 9111 §3,
§4.2.1): ``s-maxage``, else ``max-age``, else ``Expires`` less ``Date``, else, for a response without explicit
freshness that carries ``Last-Modified``, the heuristic share of its age (§4.2.2: 10% by default, the common
choice the RFC mentions), capped. ``no-store`` and ``no-cache`` (§5.2.2.4-5: a stored response must be validated
before every use) make a response never fresh. The response's age when it arrived (§4.2.3: ``Age``, the delay of
the exchange, and the difference of ``Date`` from the arrival time) is taken off.

A refresh with ``-a freshness=http`` does not request a stored page whose stored ``fresh_until`` lies in the future
(:class:`docsbot.refresh.RefreshLedger`); a 304 updates it from the 304's own headers (§4.3.4).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["HEURISTIC_MAX", "HEURISTIC_SHARE", "fresh_until", "parse_cache_control"]

HEURISTIC_SHARE = 0.1  # §4.2.2: a tenth of the time since Last-Modified
HEURISTIC_MAX = timedelta(days=1)  # never trust a heuristic lifetime longer than this
_DIRECTIVE = re.compile(r"""\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^,\s]*))?\s*(?:,|$)""")


def parse_cache_control(value: str | None) -> dict[str, str | None]:
    """``Cache-Control`` directives (RFC 9111 §5.2), names lower-cased, quoted values unquoted; ``{}`` for none."""
    out: dict[str, str | None] = {}
    for m in _DIRECTIVE.finditer(value or ""):
        if not m.group(1):
            continue
        arg = m.group(2)
        if arg is not None and arg.startswith('"'):
            arg = re.sub(r"\\(.)", r"\1", arg[1:-1])
        out.setdefault(m.group(1).lower(), arg)
    return out


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None  # §5.3: an invalid Expires means "already expired"; the caller treats None so
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _seconds(value: str | None) -> int | None:
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip())


def fresh_until(
    headers: Mapping[str, str],
    *,
    request_time: datetime,
    response_time: datetime,
    last_modified: str | None = None,
    heuristic_share: float = HEURISTIC_SHARE,
    heuristic_max: timedelta = HEURISTIC_MAX,
) -> datetime | None:
    """When the response with ``headers`` (names lower-cased) stops being fresh, or ``None`` if it never is.
    ``request_time``/``response_time``: when the request was sent and the response received (aware datetimes);
    ``last_modified``: the stored ``Last-Modified`` when the response has none (a 304 usually carries none)."""
    directives = parse_cache_control(headers.get("cache-control"))
    if "no-store" in directives or "no-cache" in directives:
        return None
    date = _http_date(headers.get("date")) or response_time
    lifetime: timedelta | None = None
    for name in ("s-maxage", "max-age"):
        seconds = _seconds(directives.get(name)) if name in directives else None
        if seconds is not None:
            lifetime = timedelta(seconds=seconds)
            break
    if lifetime is None and "expires" in headers:
        expires = _http_date(headers.get("expires"))
        lifetime = (expires - date) if expires is not None else timedelta(0)
    if lifetime is None:
        modified = _http_date(headers.get("last-modified") or last_modified)
        if modified is None or modified > date:
            return None
        lifetime = min((date - modified) * heuristic_share, heuristic_max)
    apparent_age = max(timedelta(0), response_time - date)
    age = _seconds(headers.get("age")) or 0
    corrected_initial_age = max(apparent_age, timedelta(seconds=age) + (response_time - request_time))
    if lifetime <= corrected_initial_age:
        return None
    return response_time + lifetime - corrected_initial_age
