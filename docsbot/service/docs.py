"""Documentation in the shape agents ask for: the best sections for a topic, or a version's overview, packed into a
budget of tokens (``get_docs``), and library names matched loosely (``resolve_library``). Pure: the service
(:class:`docsbot.service.index.DocsIndex`) reads the database and the searcher and hands the texts here.

Tokens are counted with the embedding model's own tokenizer (``tokenizers``; no special tokens, no truncation),
or as characters / 4 when the model has none (a remote endpoint without ``DOCSBOT_TOKENIZER_PATH``).
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docsbot.content.chunking import markdown_blocks

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from tokenizers import Tokenizer

    from docsbot.service.models import DocsResult, DocsSection

__all__ = [
    "CUT_MARK",
    "Piece",
    "TokenCounter",
    "cut",
    "docs_markdown",
    "fit",
    "llms_full",
    "llms_txt",
    "name_matches",
    "pack",
    "piece_text",
    "section_markdown",
    "without_title",
]

CHARS_PER_TOKEN = 4


@functools.lru_cache(maxsize=512)
def _blocks(markdown: str) -> tuple[str, ...]:
    """:func:`~docsbot.content.chunking.markdown_blocks`, remembered: get_docs tries several budgets on the same
    sections, and parsing them (CommonMark's fences) is most of what a try costs."""
    return tuple(markdown_blocks(markdown))


class TokenCounter:
    """``counter(text)``: the number of tokens of ``text``. ``tokenizer``: a ``tokenizers.Tokenizer`` (copied, so
    that its truncation, which would cap every count at the model's input length, is turned off on the copy only),
    or ``None`` for characters / 4 rounded up."""

    def __init__(self, tokenizer: Tokenizer | None) -> None:
        self._tokenizer = None
        if tokenizer is not None:
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_str(tokenizer.to_str())
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()

    def __call__(self, text: str) -> int:
        if self._tokenizer is None:
            return -(-len(text) // CHARS_PER_TOKEN)
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def fit(markdown: str, budget: int, count: Callable[[str], int]) -> str:
    """The longest head of ``markdown`` made of whole blocks (a code example is never cut) that counts at most
    ``budget`` tokens; ``""`` when not even its first block fits. Never more than ``budget``."""
    if count(markdown) <= budget:
        return markdown
    out: list[str] = []
    used = 0
    for block in _blocks(markdown):
        size = count(block)
        if used + size > budget:
            break
        out.append(block)
        used += size
    text = "".join(out).rstrip()
    while text and count(text) > budget:  # tokens at a join can differ by one or two: drop blocks until it fits
        out.pop()
        text = "".join(out).rstrip()
    return text


CUT_MARK = "…"  # ends a text cut inside a block: the rest is on the page (get_page with the deep link)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_WORD = re.compile(r"\S+\s*")


def _fence_after(lines: list[str]) -> str | None:
    """The fence (```` ``` ````, ``~~~``…) still open after ``lines``, or ``None``."""
    open_fence: str | None = None
    for line in lines:
        found = _FENCE.match(line)
        if not found:
            continue
        marker = found.group(1)
        if open_fence is None:
            open_fence = marker
        elif marker[0] == open_fence[0] and len(marker) >= len(open_fence) and not line.strip()[len(marker) :]:
            open_fence = None
    return open_fence


def _longest(
    units: list[str], build: Callable[[int], str], budget: int, count: Callable[[str], int], start: int = 1
) -> str:
    """``build(k)`` for the largest ``k`` in ``start``..len(units) whose text counts at most ``budget`` (binary
    search: a longer head never counts fewer tokens but at a join), or ``""``."""
    low, high, best = start, len(units), ""
    while low <= high:
        middle = (low + high) // 2
        text = build(middle)
        if count(text) <= budget:
            best, low = text, middle + 1
        else:
            high = middle - 1
    return best


def cut(markdown: str, budget: int, count: Callable[[str], int]) -> str:
    """The longest head of ``markdown`` within ``budget`` tokens, cut inside a block when it must (what
    ``get_docs`` does to its top match rather than drop it): whole blocks (:func:`fit`), then as many lines of the
    next block as fit (a code block cut open is closed again with its fence), then, when not one line fits, as many
    words of its first line (of code: of its first line of code, fenced). A head cut inside a block ends with
    :data:`CUT_MARK`. ``""`` when not even one word fits."""
    if count(markdown) <= budget:
        return markdown
    head = fit(markdown, budget, count)
    blocks = _blocks(markdown[len(head) :].lstrip())
    if not blocks:
        return head
    lines = blocks[0].rstrip().splitlines(keepends=True)

    def after_head(text: str) -> str:
        return f"{head}\n\n{text}" if head else text

    def by_lines(k: int) -> str:
        text = "".join(lines[:k]).rstrip()
        fence = _fence_after(lines[:k])
        if fence:
            return after_head(f"{text}\n{fence}\n{CUT_MARK}")
        return after_head(f"{text}\n{CUT_MARK}" if _FENCE.match(lines[k - 1]) else f"{text} {CUT_MARK}")

    opening = _FENCE.match(lines[0])
    found = _longest(lines, by_lines, budget, count, start=2 if opening else 1)  # a fence holds a line of code
    if found:
        return found
    if opening and len(lines) > 1:
        words = _WORD.findall(lines[1])
        fence, first = opening.group(1), lines[0].rstrip()

        def by_words(k: int) -> str:
            return after_head(f"{first}\n{''.join(words[:k]).rstrip()}\n{fence}\n{CUT_MARK}")
    else:
        words = _WORD.findall(lines[0])

        def by_words(k: int) -> str:
            return after_head(f"{''.join(words[:k]).rstrip()} {CUT_MARK}")

    return _longest(words, by_words, budget, count) or head


@dataclass(frozen=True)
class Piece:
    """A candidate section: where it is, and its Markdown whole (``content``) and shorter (``fallback``: the
    matching chunks of a long section, or ``""``)."""

    title: str
    url: str
    deep_link: str
    heading_path: tuple[str, ...]
    content: str
    fallback: str = ""


def piece_text(piece: Piece, limit: int, count: Callable[[str], int], min_tokens: int = 50, top: bool = False) -> str:
    """As much of ``piece`` as fits ``limit`` tokens: its content whole, else its fallback whole, else the head of
    the fallback (or the content) in whole blocks when at least ``min_tokens`` fit; for the ``top`` match, else
    :func:`cut` inside a block. ``""`` when nothing of it fits."""
    for candidate in (piece.content, piece.fallback):
        if candidate and count(candidate) <= limit:
            return candidate
    text = fit(piece.fallback or piece.content, limit, count)
    if count(text) < min_tokens:  # the top match is cut inside a block rather than dropped
        text = cut(piece.fallback or piece.content, limit, count) if top else ""
    return text if text.strip() else ""


def pack(
    pieces: list[Piece], max_tokens: int, count: Callable[[str], int], min_tokens: int = 50
) -> list[tuple[Piece, str, int]]:
    """``pieces`` in order, each as much of it as fits what is left of ``max_tokens``, and at most a share of it
    (the first piece a quarter, the others an eighth, unless it is the last piece: so that a long section does not
    crowd out the next pages, which hold the answer as often as the first; eval/get_docs.py at 5,000 tokens: a
    target page in the answer for 93% of make eval's questions, 88% with halves and half as many pages), as
    :func:`piece_text` takes it. The first piece is never left out: when fewer than ``min_tokens`` of it fit in
    whole blocks, it is :func:`cut` inside a block (code included). A later piece whose ``deep_link`` came
    already, or that nothing of fits, is left out. Returns ``(piece, text, tokens)``; the tokens add up to at
    most ``max_tokens``."""
    out: list[tuple[Piece, str, int]] = []
    seen: set[str] = set()
    left = max_tokens
    for n, piece in enumerate(pieces):
        if out and left < min_tokens:
            break
        if piece.deep_link in seen:
            continue
        share = max(min_tokens, max_tokens // (4 if not out else 8))
        limit = left if n == len(pieces) - 1 else min(left, share)
        text = piece_text(piece, limit, count, min_tokens, top=not out)
        if not text:
            continue
        tokens = count(text)
        seen.add(piece.deep_link)
        out.append((piece, text, tokens))
        left -= tokens
    return out


def section_markdown(section: DocsSection) -> str:
    """One section of :func:`docs_markdown`: its page title and headings, its deep link, its Markdown."""
    heading = " > ".join([section.title, *[h for h in section.heading_path if h != section.title]])
    return f"## {heading}\n\nSource: {section.deep_link}\n\n{section.content}"


def docs_markdown(result: DocsResult) -> str:
    """``get_docs``' answer as Markdown, what an agent reads (the MCP tool's text, ``docsbot docs``' output): a
    title naming the version, then each section (:func:`section_markdown`)."""
    label = f"{result.library}@{result.version}" if result.version else result.library
    return "\n\n".join([f"# {label}", *(section_markdown(s) for s in result.sections)]) + "\n"


_NAME_NOISE = re.compile(r"[\s._-]+")
_NAME_AFFIXES = re.compile(r"^(python|py|node|js|lib|rust)(?=.)|(?<=.)(js|py|lib|rs|docs?)$")


def _normal(name: str) -> str:
    """A library name as people misspell it the same: lower case, no separators (``Scikit-Learn`` → ``scikitlearn``)."""
    return _NAME_NOISE.sub("", name.lower())


def name_matches(query: str, names: list[str], limit: int = 5) -> list[tuple[str, float]]:
    """The indexed ``names`` that ``query`` may mean, best first, with a score in [0, 1]: 1 for the same name up
    to case and separators, 0.9 for the same once a common affix is dropped (``python-dateutil`` and
    ``dateutil``, ``lodash.js`` and ``lodash``), then ``difflib``'s ratio of the normalized names (at least 0.6),
    a name containing the query or contained in it scoring at least 0.7."""
    wanted = _normal(query)
    bare = _NAME_AFFIXES.sub("", wanted)
    scored: dict[str, float] = {}
    for name in names:
        normal = _normal(name)
        if not wanted:
            break
        if normal == wanted:
            score = 1.0
        elif _NAME_AFFIXES.sub("", normal) == bare and bare:
            score = 0.9
        else:
            score = difflib.SequenceMatcher(None, wanted, normal).ratio()
            if len(wanted) >= 3 and (wanted in normal or normal in wanted):
                score = max(score, 0.7)
        if score >= 0.6:
            scored[name] = round(score, 3)
    return sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


# llms.txt (https://llmstxt.org/): an H1 with the project's name, a blockquote summary, then H2 sections of
# "- [name](url)" lists; a section named "Optional" holds what a reader may skip. llms-full.txt: the pages' text.
def _link_text(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split()) or "untitled"


def llms_txt(label: str, root_url: str, pages: list[tuple[str, str, str]], full_url: str | None = None) -> str:
    """The llms.txt of an indexed version: its documentation pages under "Docs", release notes and index pages
    under "Optional"; ``pages``: ``(url, title, kind)`` by depth then URL; ``full_url``: where its llms-full.txt
    is."""
    docs = [f"- [{_link_text(title)}]({url})" for url, title, kind in pages if kind == "docs"]
    optional = [f"- [{_link_text(title)}]({url}): {kind}" for url, title, kind in pages if kind != "docs"]
    out = [f"# {label}", "", f"> Documentation of {label} from {root_url}, as indexed by docsbot: {len(pages)} pages."]
    if full_url:
        out += ["", f"Every page's text in one file: {full_url}"]
    out += ["", "## Docs", "", *docs]
    if optional:
        out += ["", "## Optional", "", *optional]
    return "\n".join(out) + "\n"


def without_title(markdown: str, title: str) -> str:
    """The page's Markdown without its first line when that line is its title (exports put the title first)."""
    first, _, rest = markdown.partition("\n")
    return rest.lstrip("\n") if first.lstrip("# ").strip() == title.strip() else markdown


def llms_full(label: str, root_url: str, pages: Iterable[tuple[str, str, str]]) -> Iterator[str]:
    """llms-full.txt of an indexed version, piece by piece: a header, then each page under its title with its
    source URL; ``pages``: ``(url, title, markdown)``, read as the pieces are consumed."""
    yield f"# {label}\n\n> Documentation of {label}, from {root_url}\n\n"
    for url, title, markdown in pages:
        yield f"# {title}\n\nSource: {url}\n\n{without_title(markdown, title)}\n\n"
