"""A README's links, read as a person reads them (pure: text in, links out): what each link says of itself (its
text, an image's alt text, its line, its section's heading), and whether it names the package's documentation.

READMEs come in Markdown, reStructuredText, HTML, or a mix of them (PyPI's descriptions, npm's ``readme`` or the
README of a package's tarball). A code block's lines are not read: a URL in an example is not a pointer to the
docs. :func:`readme_strength` says how strongly a link names the package's own documentation, from its words and
never from the URL's own letters (``…/docs/…`` in a link about something else says nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "HTML_A",
    "REPOSITORY_HOSTS",
    "Link",
    "clean_url",
    "host",
    "is_repository",
    "link_text",
    "names_other_docs",
    "readme_links",
    "readme_strength",
]

# A repository's page: its README is the documentation; the crawl takes that page alone (max_depth 0), not the
# repository's thousands of code, issue and commit pages.
REPOSITORY_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")
_README_DOCS = re.compile(r"\b(?:docs?|documentation|readthedocs|manual|handbook|user\s*guide|api\s+reference)\b", re.I)
# Documentation that is not the package's own: a service's, whose client the package is
_SERVICE_DOCS = re.compile(r"\b(?:product|service|rest\s+api)\b", re.I)
# or one topic of the package's: a contributor's, installing, migrating, changes, questions
_NOT_PACKAGE_DOCS = re.compile(
    rf"{_SERVICE_DOCS.pattern}|\b(?:contribut\w*|developer\s+guide\s+for\s+contributors|style\s+guide|code\s+of"
    r"\s+conduct|security|governance|install\w*|migrat\w*|changelog|release\s+notes?|troubleshoot\w*|faq)\b",
    re.I,
)
# "Documentation: URL", "documentation is available at URL", "full documentation at URL", "Read the docs"
_STRONG_LINE = re.compile(
    r"(?:^|[\s*_|>-])(?:docs?|documentation)\s*(?:\([^)]*\))?\s*[*_]*\s*:"
    r"|\b(?:docs?|documentation|user\s*guide)\b[^.\n]{0,40}?\b(?:(?:is|are)\s+(?:available\s+|located\s+|hosted\s+)?"
    r"|can\s+be\s+(?:found|read)\s+)(?:at|on|in|here)\b"
    r"|\b(?:full|complete|online|comprehensive|project)\s+(?:documentation|docs)\b"
    r"|\bread\s+the\s+(?:docs|documentation|user\s*guide)\b"
    r"|\bdocumentation\s+(?:at|on)\b",
    re.I,
)


_MD_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?(https?://[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_MD_REF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s*<?(https?://\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
_RST_INLINE = re.compile(r"`([^`<]*?)\s*<(https?://[^>]+)>`__?")
_RST_TARGET = re.compile(r"^\s*\.\.\s+_`?([^:`]+)`?:\s*(https?://\S+)")
_RST_IMAGE_TARGET = re.compile(r"^\s*:target:\s*(https?://\S+)")
HTML_A = re.compile(r"<a\s[^>]*?href=[\"']((?:https?://|/)[^\"']*)[\"'][^>]*>(.*?)</a>", re.I | re.S)
_ALT = re.compile(r"""alt=["']([^"']*)["']""", re.I)
_BARE = re.compile(r"<?(https?://[^\s<>\"'`\]\[)(]+(?:\([^\s)]*\)[^\s<>\"'`\]\[)(]*)?)>?")
_HEAD_LINES = 60
_PROMINENT_HEADING = re.compile(r"\b(?:docs?|documentation|links|resources|learn\s+more|more\s+information)\b", re.I)
_HEADING_MD = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Link:
    """A URL the metadata names: ``url``, its ``text`` (a label, a link's text or an image's alt text), the README
    ``line`` it sits on and the ``heading`` of its section (``""`` for a label), ``where`` it came from (for the
    notes), and whether it is ``prominent``: a README's pointer to its documentation sits in its head or in a
    section about documentation, while a link deep in a long README points at one topic."""

    url: str
    text: str = ""
    line: str = ""
    heading: str = ""
    where: str = ""
    prominent: bool = True  # in the README's head (its first 60 lines) or under a heading about documentation


def host(url: str) -> str:
    """``url``'s host name, in lower case (``""`` when it has none)."""
    return (urlsplit(url).hostname or "").lower()


def is_repository(url: str) -> bool:
    """Whether ``url`` is a page of a code host's repository (GitHub, GitLab, Bitbucket, Codeberg)."""
    return host(url).removeprefix("www.") in REPOSITORY_HOSTS


def clean_url(url: str) -> str:
    """``url`` without the punctuation a sentence leaves on it (``https://six.readthedocs.io/.``) and without its
    fragment, but a repository's ``#readme``."""
    url = url.strip().rstrip(".,;:!?'\"`*")
    while url.endswith(")") and url.count(")") > url.count("("):
        url = url[:-1]
    parts = urlsplit(url)
    if parts.fragment and not (is_repository(url) and parts.fragment == "readme"):
        url = urlunsplit(parts._replace(fragment=""))
    return url


def link_text(markup: str) -> str:
    """A link's visible text: tags dropped, an image's alt text kept, Markdown emphasis and images unwrapped."""
    alts = " ".join(_ALT.findall(markup))
    markup = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", markup)
    markup = re.sub(r"<[^>]+>", " ", markup)
    return " ".join(f"{markup} {alts}".replace("*", " ").replace("_", " ").split())


def readme_links(readme: str, where: str = "README") -> list[Link]:
    """The links of a README (Markdown, reStructuredText or HTML, or a mix, as PyPI's descriptions are), in the
    order they appear: inline and reference links with their text, HTML anchors with their text or image alt,
    reStructuredText references and badge targets, and bare URLs; each with its line and section heading.
    Images themselves (``![](…)``, ``.. image::``, ``<img src>``) are not links."""
    links: list[Link] = []
    lines = readme.splitlines()
    heading = ""
    image_alt = ""
    fence = ""  # the marker of the code block the line is in: its URLs are an example's, not pointers
    sentence = ""  # the previous line, when this one may continue its sentence
    for i, raw in enumerate(lines):
        line = raw.strip()
        previous, sentence = sentence, line if line and not line.endswith((".", "!", "?", ":", ">", "|")) else ""
        if m := _FENCE.match(raw):
            if not fence:
                fence = m.group(1)
                continue
            if m.group(1).startswith(fence) and not line.strip("`~"):
                fence = ""
                continue
        if fence:
            continue
        if m := _HEADING_MD.match(raw):
            heading = m.group(1)
        elif i + 1 < len(lines) and line and _RST_UNDERLINE.match(lines[i + 1]) and not _RST_UNDERLINE.match(raw):
            heading = line
        found: list[tuple[str, str]] = []
        spans: list[tuple[int, int]] = []
        if line.startswith(".. image::") or line.startswith(".. |"):
            image_alt = line
            continue
        if image_alt and line.startswith(":alt:"):
            image_alt += " " + line
        if m := _RST_IMAGE_TARGET.match(raw):
            found.append((m.group(1), link_text(image_alt)))
            spans.append(m.span())
        elif (m := _RST_TARGET.match(raw)) or (m := _MD_REF.match(raw)):
            found.append((m.group(2), m.group(1)))
            spans.append(m.span())
        else:
            if not raw.startswith((" ", "\t")) or not line.startswith(":"):
                image_alt = ""
            for pattern, url_group, text_group in ((_MD_LINK, 2, 1), (_RST_INLINE, 2, 1), (HTML_A, 1, 2)):
                for m in pattern.finditer(raw):
                    if any(a <= m.start() < b for a, b in spans):
                        continue
                    found.append((m.group(url_group), link_text(m.group(text_group))))
                    spans.append(m.span())
            for m in _BARE.finditer(raw):
                if any(a <= m.start() < b for a, b in spans):
                    continue
                before = raw[max(0, m.start() - 12) : m.start()].lower()
                if "src=" in before or "image::" in before or raw[max(0, m.start() - 2) : m.start()] == "](":
                    continue
                found.append((m.group(1), ""))
        prominent = i < _HEAD_LINES or bool(_PROMINENT_HEADING.search(heading))
        if previous and found and _BARE.match(line) and not _HEADING_MD.match(raw):
            line = f"{previous} {line}"  # a URL that continues the sentence of the line before it
        for url, text in found:
            url = clean_url(url)
            if url.startswith(("http://", "https://")):
                links.append(Link(url, text, line, heading, where, prominent))
    return links


def _words(link: Link) -> tuple[str, str, str]:
    """``(text, before, prose)`` of a link: its text, the words before it on its line (after the link before it),
    and its line, each without URLs (``…/docs/…`` in a URL says nothing of the link)."""
    text = link.text.strip()
    before = link.line.split(link.url)[0] if link.url in link.line else ("" if text else link.line)
    if text and "](" in before:  # a Markdown line of several links: the words before this one
        before = before[before.rfind(")") + 1 :]
    return _BARE.sub(" ", text).strip(), _BARE.sub(" ", before), _BARE.sub(" ", link.line)


def names_other_docs(link: Link, service: bool = False) -> bool:
    """Whether a link is to documentation of something other than the package itself (a service's, its REST
    API's; unless ``service``, also one topic: contributing, installing, migrating), in its text, the words before
    it, or its page's name."""
    text, before, _ = _words(link)
    page = urlsplit(link.url).path.rsplit("/", 2)
    words = _SERVICE_DOCS if service else _NOT_PACKAGE_DOCS
    return bool(
        words.search(text)
        or words.search(before[-80:])
        or words.search(" ".join(page[-2:]).replace("-", " ").replace("_", " "))
    )


def readme_strength(link: Link) -> int:
    """2: the README says this is the documentation ("Documentation: URL", "[Documentation](URL)", "documentation
    is available at URL", a docs badge); 1: its text or section speaks of documentation; 0: neither, or it is
    documentation of something else (:func:`names_other_docs`)."""
    text, before, prose = _words(link)
    if names_other_docs(link):
        return 0
    words = re.findall(r"[a-z]+", text.lower())
    if text and _README_DOCS.search(text) and len(words) <= 6:
        return 2
    if _STRONG_LINE.search(text or prose) or (text and _STRONG_LINE.search(before[-80:] + " " + text)):
        return 2
    if _README_DOCS.search(text or prose) or _README_DOCS.search(link.heading):
        return 1
    return 0
