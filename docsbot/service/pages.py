"""The service's reads of stored pages: one page or one of its sections, and a version's pages (an export, an
llms.txt's list).
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Literal

from docsbot import store
from docsbot.service.core import IndexCore, check_text
from docsbot.service.errors import Invalid, NotFound
from docsbot.service.models import (
    PageResult,
    PageSection,
)
from docsbot.service.runs import iso
from docsbot.service.sections import (
    anchor_section,
    find_heading,
    heading_anchors,
    page_headings,
    section_markdown,
    slugify,
)
from docsbot.store import version_label
from docsbot.urls import InvalidURL, Scope, canonical_url, without_credentials

if TYPE_CHECKING:
    from collections.abc import Iterator

    import psycopg


__all__ = ["PageReading"]


class PageReading(IndexCore):
    """:meth:`page`, :meth:`export_pages` and :meth:`page_list` of :class:`~docsbot.service.index.DocsIndex`."""

    def page(self, url: str, section: str | None = None) -> PageResult:
        """The stored Markdown of the page at ``url`` (a ``url#anchor`` selects its section), or of ``section``
        (an anchor or a heading's text): from that heading to the next heading of the same or a higher level; the
        whole page comes with its sections. Raises :class:`Invalid` for a malformed URL and :class:`NotFound` for
        a page or section that is not stored."""
        check_text(url=url, section=section)
        url = url.strip()
        if "#" in url:
            url, _, fragment = url.partition("#")
            section = section or urllib.parse.unquote(fragment) or None
        try:
            key = canonical_url(url)
        except InvalidURL as exc:
            raise Invalid(f"{exc}; pass a page URL as search returns it") from None
        with self.connection() as conn:
            pages = store.find_pages(conn, key)
            if not pages:
                raise NotFound(self._not_stored(conn, key))
            page = pages[0]
            chunks = store.page_chunks(conn, page["id"])
        markdown = page["markdown"]
        source: Literal["page", "chunks"] = "page"
        if markdown is None:  # stored before pages kept their Markdown, unchanged since
            markdown, source = "\n\n".join(content for content, _, _ in chunks), "chunks"
        result = {
            "url": page["url"],
            "title": page["title"],
            "library": page["library"],
            "version": page["version"],
            "source": source,
            "updated_at": iso(page["updated_at"]),
            "last_checked_at": iso(page["last_checked_at"]),
            "last_modified": page["last_modified"],
            "changed_at": iso(page["content_changed_at"]),
        }
        anchors: dict[str, list[str]] = {}
        for _, path, anchor in chunks:
            if anchor and anchor not in anchors:
                anchors[anchor] = path
        # Every anchor of the page with its offset (pages.anchors, from the extraction); None for pages stored
        # before docsbot kept them: then only the chunks' first anchors are known.
        offsets = {ident: offset for offset, ident in page["anchors"] or []} if source == "page" else {}
        headings = page_headings(markdown) if source == "page" else []
        if not section:
            by_path: dict[tuple[str, ...], str] = {}
            for anchor, path in anchors.items():
                by_path.setdefault(tuple(path), anchor)
            own = heading_anchors(markdown, headings, [(o, i) for i, o in offsets.items()])
            sections = [
                PageSection(
                    heading=h.text,
                    level=h.level,
                    # the heading's own id (recorded by the crawl), else the first id recorded under it, else a slug
                    anchor=own.get(n)
                    or (slugify(h.text) if slugify(h.text) in anchors else by_path.get(h.path, slugify(h.text))),
                )
                for n, h in enumerate(headings)
                if h.level > 1
            ]
            return PageResult(**result, markdown=markdown, sections=sections)
        section = section.strip()
        ident = section.lstrip("#")
        if ident in offsets:
            index, text = anchor_section(markdown, headings, offsets[ident])
            path = list(headings[index].path) if index is not None else []
            return PageResult(**result, section=section, heading_path=path, markdown=text)
        anchored = anchors.get(section) or anchors.get(ident)
        if source == "page":
            index = find_heading(headings, section, anchored)
            if index is not None:
                return PageResult(
                    **result,
                    section=section,
                    heading_path=list(headings[index].path),
                    markdown=section_markdown(markdown, headings, index),
                )
        else:
            target = anchored or next(
                (path for _, path, _ in chunks if path and slugify(path[-1]) == slugify(section.lstrip("#"))), None
            )
            if target:
                parts = [content for content, path, _ in chunks if path[: len(target)] == target]
                return PageResult(**result, section=section, heading_path=target, markdown="\n\n".join(parts))
        known = sorted(set(anchors) | set(offsets)) or [slugify(h.text) for h in headings if h.level > 1]
        raise NotFound(
            f"no section {section!r} on {page['url']}; its sections: {', '.join(known[:40]) or 'none'}"
            + (" …" if len(known) > 40 else "")
        )

    def _not_stored(self, conn: psycopg.Connection, url: str) -> str:
        versions = store.list_versions(conn)
        for v in versions:
            try:
                inside = url in Scope.of_version(v.root_url, v.settings)
            except ValueError:
                inside = False
            if inside:
                return (
                    f"{url} is not stored in {version_label(v.library, v.name)}: it was not reached by the last "
                    "crawl (out of depth, not linked, or gone); search finds the pages that are"
                )
        roots = ", ".join(f"{version_label(v.library, v.name)} ({without_credentials(v.root_url)})" for v in versions)
        return f"{url} is not in any indexed version; indexed: {roots or 'nothing yet'}"

    def export_pages(self, library: str, version: str | None = None) -> tuple[store.VersionRow, Iterator]:
        """The version (``version`` only needed when the library has several) and an iterator of its pages'
        ``(url, title, markdown)``, by depth then URL, read from the database as they are consumed."""
        target = self._one_version(library, version)

        def pages() -> Iterator[tuple[str, str, str]]:
            with self.connection() as conn:
                yield from store.version_pages(conn, target.id)

        return target, pages()

    def page_list(
        self, library: str, version: str | None = None
    ) -> tuple[store.VersionRow, list[tuple[str, str, str]]]:
        """The version (``version`` only needed when the library has several; loose names resolve) and its pages'
        ``(url, title, kind)`` by depth then URL: an llms.txt's list."""
        target = self._one_version(library, version)
        with self.connection() as conn:
            return target, store.page_list(conn, target.id)
