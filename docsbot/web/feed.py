"""``/changes.atom``: a change log as an Atom feed, written by feedgen.

XML 1.0 forbids most control characters (§2.2: only tab, newline and carriage return below U+0020), lone
surrogates and U+FFFE/U+FFFF, in text and in escapes alike, and lxml (under feedgen) refuses a string holding one;
a library name stored before names were checked, a page title or a diff may hold any. Each is written as U+FFFD
REPLACEMENT CHARACTER (:func:`xml_text`), so the feed is well-formed whatever the index holds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from docsbot import store

if TYPE_CHECKING:
    from docsbot.service import ChangesResult

__all__ = ["atom_feed", "xml_text"]

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold (§2.2 ``Char``) replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def atom_feed(result: ChangesResult, url: str) -> bytes:
    """An Atom 1.0 feed (RFC 4287, written by feedgen) of a change log: one entry per page change, newest first,
    linking to the page (its first changed section), its content the changed sections and the diff."""
    from feedgen.feed import FeedGenerator

    label = store.version_label(result.library, result.version) if result.version is not None else result.library
    label = xml_text(label)
    url = xml_text(url)
    feed = FeedGenerator()
    feed.id(url)
    feed.title(f"Changes in the {label} docs")
    feed.subtitle(f"Pages docsbot's refreshes of {label} found added, modified, deleted or moved")
    feed.link(href=url, rel="self")
    feed.author(name="docsbot")
    feed.generator("docsbot")
    updated = max((datetime.fromisoformat(c.at) for c in result.changes), default=None)
    feed.updated(updated or datetime.now(UTC))
    for change in reversed(result.changes):  # feedgen prepends: oldest first in, newest first out
        entry = feed.add_entry()
        entry.id(f"{url.split('?')[0]}#change-{change.id}")
        entry.title(xml_text(f"{change.kind}: {change.title or change.url}"))
        anchor = next((s.anchor for s in change.sections if s.anchor), None)
        entry.link(href=xml_text(f"{change.url}#{anchor}" if anchor else change.url))
        entry.updated(datetime.fromisoformat(change.at))
        lines = [f"{change.kind} in {store.version_label(change.library, change.version)}: {change.url}"]
        if change.old_url:
            lines.append(f"moved from {change.old_url}")
        for section in change.sections:
            lines.append(f"{section.change}: {' > '.join(section.heading_path) or '(before the first heading)'}")
        body = escape("\n".join(lines))
        if change.diff:
            body += Markup("<pre>%s</pre>") % change.diff
        content = str(Markup("<p>%s</p>") % Markup(str(body).replace("\n", "<br>")))
        entry.content(xml_text(content), type="html")
    return feed.atom_str(pretty=True)
