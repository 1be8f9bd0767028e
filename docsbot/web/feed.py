"""``/changes.atom``: a change log as an Atom feed, written by feedgen."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from docsbot import store

if TYPE_CHECKING:
    from docsbot.service import ChangesResult

__all__ = ["atom_feed"]


def atom_feed(result: ChangesResult, url: str) -> bytes:
    """An Atom 1.0 feed (RFC 4287, written by feedgen) of a change log: one entry per page change, newest first,
    linking to the page (its first changed section), its content the changed sections and the diff."""
    from feedgen.feed import FeedGenerator

    label = store.version_label(result.library, result.version) if result.version is not None else result.library
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
        entry.title(f"{change.kind}: {change.title or change.url}")
        anchor = next((s.anchor for s in change.sections if s.anchor), None)
        entry.link(href=f"{change.url}#{anchor}" if anchor else change.url)
        entry.updated(datetime.fromisoformat(change.at))
        lines = [f"{change.kind} in {store.version_label(change.library, change.version)}: {change.url}"]
        if change.old_url:
            lines.append(f"moved from {change.old_url}")
        for section in change.sections:
            lines.append(f"{section.change}: {' > '.join(section.heading_path) or '(before the first heading)'}")
        body = escape("\n".join(lines))
        if change.diff:
            body += Markup("<pre>%s</pre>") % change.diff
        entry.content(str(Markup("<p>%s</p>") % Markup(str(body).replace("\n", "<br>"))), type="html")
    return feed.atom_str(pretty=True)
