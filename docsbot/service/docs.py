"""Documentation in the shape agents ask for: the best sections for a topic, or a version's overview, packed into a
budget of tokens (``get_docs``), and library names matched loosely (``resolve_library``). Pure: the service
(:class:`docsbot.service.index.DocsIndex`) reads the database and the searcher and hands the texts here.

Tokens are counted with the embedding model's own tokenizer (``tokenizers``; no special tokens, no truncation),
or as characters / 4 when the model has none (a remote endpoint without ``DOCSBOT_TOKENIZER_PATH``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docsbot.content.chunking import markdown_blocks

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from tokenizers import Tokenizer

__all__ = ["Piece", "TokenCounter", "fit", "llms_full", "llms_txt", "name_matches", "pack", "without_title"]

CHARS_PER_TOKEN = 4


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
    for block in markdown_blocks(markdown):
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


def pack(
    pieces: list[Piece], max_tokens: int, count: Callable[[str], int], min_tokens: int = 50
) -> list[tuple[Piece, str, int]]:
    """``pieces`` in order, each as much of it as fits what is left of ``max_tokens``, and at most a share of it
    (the first piece a quarter, the others an eighth, unless it is the last piece: so that a long section does not
    crowd out the next pages, which hold the answer as often as the first; eval/get_docs.py at 5,000 tokens: a
    target page in the answer for 93% of make eval's questions, 88% with halves and half as many pages): its
    content whole, else its fallback whole, else the head of the fallback (or the content) in whole blocks, when
    at least ``min_tokens`` fit. A piece whose ``deep_link`` came already, or that nothing of fits, is left out.
    Returns ``(piece, text, tokens)``; the tokens add up to at most ``max_tokens``."""
    out: list[tuple[Piece, str, int]] = []
    seen: set[str] = set()
    left = max_tokens
    for n, piece in enumerate(pieces):
        if left < min_tokens:
            break
        if piece.deep_link in seen:
            continue
        share = max(min_tokens, max_tokens // (4 if not out else 8))
        limit = left if n == len(pieces) - 1 else min(left, share)
        text = ""
        for candidate in (piece.content, piece.fallback):
            if candidate and count(candidate) <= limit:
                text = candidate
                break
        if not text:
            text = fit(piece.fallback or piece.content, limit, count)
            if count(text) < min_tokens:
                text = ""
        if not text.strip():
            continue
        tokens = count(text)
        seen.add(piece.deep_link)
        out.append((piece, text, tokens))
        left -= tokens
    return out


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
