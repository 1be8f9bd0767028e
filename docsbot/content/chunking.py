"""Markdown → heading-aware chunks bounded by the embedding model's token limit (pure; semantic-text-splitter).

Splitting is done by semantic-text-splitter's ``MarkdownSplitter`` (largest Markdown units that fit: sections,
then blocks, then lines, then words). It reports no headings, so each chunk's heading path is derived from its
character offset. Fenced code blocks longer than the limit are cut between lines beforehand and re-fenced with
their language, so the splitter never has to cut one mid-line.

Sizing is where the time goes: the splitter measures every candidate chunk, and with a tokenizer it tokenizes
each candidate anew (the first section of each Markdown level too, which for a long section is the rest of it),
about 30 s of CPU for the Python docs' 11.5 MB of Markdown. With a tokenizer whose words do not depend on their
neighbours (:func:`_words_are_local`: BERT's and other whitespace/punctuation pre-tokenizers, per-character
normalizers), a text's count is the sum of its pieces' between spaces and newlines, and a candidate's size comes
from the counts of the page's pieces (:class:`_TokenCounts`), each distinct piece tokenized once per worker
(:class:`_WordTokens`): the same sizes, so the same chunks (on 3,851 pages of six sites), in 4.8 s of CPU for the
Python docs where encoding each page whole took 7.3 s (2026-11-27). With BERT's pre-tokenizer a new piece of ASCII
is counted from its words (letters and digits, each other character alone), themselves cached: the tokenizer then
encodes a quarter as many strings (BENCHMARKS.md, "Less CPU per page in the workers").
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate, chain, repeat
from operator import add
from typing import TYPE_CHECKING

from semantic_text_splitter import MarkdownSplitter

from docsbot.content.commonmark import Blocks, Fence, Heading, fences, line_starts, parse

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tokenizers import Tokenizer

__all__ = [
    "DEFINITION_CHARS",
    "Chunker",
    "Definition",
    "TextChunk",
    "definitions",
    "own_vectors",
    "markdown_blocks",
    "markdown_headings",
]

CHARS_PER_TOKEN = 4  # sizing by characters when no tokenizer is given
_PARAGRAPH_END = re.compile(r"\n\s*\n")
_WORD = re.compile(r"[^\W_]")


def _has_text(text: str, start: int, end: int, headings: Sequence[Heading], offsets: Sequence[int]) -> bool:
    """Whether ``text[start:end]`` has a letter or digit outside the lines of ``headings`` (``---`` and
    ``| --- |`` have none); ``offsets``: the headings' offsets, in order."""
    pos = start
    for heading in headings[bisect_left(offsets, start) :]:
        if heading.offset >= end:
            break
        if _WORD.search(text, pos, heading.offset):
            return True
        pos = max(pos, heading.end)
    return _WORD.search(text, pos, end) is not None


@dataclass(frozen=True)
class TextChunk:
    content: str
    heading_path: tuple[str, ...]
    offset: int  # character offset of the chunk in the (code-pre-split) Markdown
    anchor: str | None = None  # HTML id of the nearest heading or definition the chunk sits under


@dataclass(frozen=True)
class Definition:
    """One definition of a page as it is embedded on its own (its own vector, beside the section's chunk): ``name``
    (the symbol), ``content`` (the Markdown from the definition's start to the next definition, anchor or heading,
    cut to a length), the ``heading_path`` of the section that holds it, and the ``anchor`` its deep link names."""

    name: str
    content: str
    heading_path: tuple[str, ...]
    anchor: str
    offset: int


DEFINITION_CHARS = 700  # at most: a definition's signature and first paragraph (the cut for a long one)
DEFINITION_PARAGRAPHS = 2  # its name or signature, and the first paragraph of its description
DEFINITION_MIN_CHARS = 40  # shorter: a name with no description, nothing a vector of its own would add


def definitions(
    markdown: str,
    anchors: Sequence[tuple[int, str]],
    symbols: Sequence[tuple[str, ...]],
    max_chars: int = DEFINITION_CHARS,
) -> list[Definition]:
    """The page's definitions, each to be embedded on its own: a chunk fills the model's token limit, so a
    reference page's chunk holds three to six definitions and its vector matches none of them well.

    ``symbols``: ``(name, anchor)`` or ``(name, anchor, offset)`` (:class:`docsbot.content.extract.Symbol`; ``offset``:
    the character offset in ``markdown`` where the definition's text starts, ``None`` when unknown). Without an
    offset, a symbol starts at its anchor's offset (``anchors``: ``(offset, id)``), if it is the only symbol of
    that anchor: one a heading's anchor gives to every option of its section (git's terms) starts nowhere in
    particular, and a page's own item (rustdoc's ``main-content``) is the whole page. A definition is its name or
    signature and the first paragraph of its description (:data:`DEFINITION_PARAGRAPHS`: what a question about it
    matches; its notes, examples and caveats dilute the vector as neighbours do: "get the value of an environment
    variable" against ``os.getenv``'s signature and first paragraph, cosine 0.64, against its first 700
    characters 0.54), ending before the next definition, anchor or heading, at most ``max_chars`` characters (cut
    at a paragraph, line or word end); one shorter than :data:`DEFINITION_MIN_CHARS`, or whose text another
    definition of the page already has, is left out. Pure, linear in the page; document order."""
    offsets_of = {}
    for offset, ident in anchors:
        offsets_of.setdefault(ident, offset)
    per_anchor: dict[str, int] = {}
    for symbol in symbols:
        per_anchor[symbol[1]] = per_anchor.get(symbol[1], 0) + 1
    starts: dict[int, tuple[str, str]] = {}
    for symbol in symbols:
        name, anchor = symbol[0], symbol[1]
        offset = symbol[2] if len(symbol) > 2 else None
        if offset is None and per_anchor[anchor] == 1:
            offset = offsets_of.get(anchor)
        if offset is not None and 0 <= offset < len(markdown) and offset not in starts:
            starts[offset] = (name, anchor)
    if not starts:
        return []
    headings = markdown_headings(markdown)
    bounds = sorted({o for o in starts} | {o for o, _ in anchors} | {o for o, _, _ in headings} | {len(markdown)})
    out: list[Definition] = []
    seen: set[str] = set()
    stack: list[tuple[int, str]] = []
    h = 0
    for start in sorted(starts):
        name, anchor = starts[start]
        while h < len(headings) and headings[h][0] <= start:
            _, level, title = headings[h]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            h += 1
        line_end = markdown.find("\n", start)  # the next bound after its first line: a heading's own anchor is on it
        line_end = len(markdown) if line_end < 0 else line_end
        after = bisect_right(bounds, line_end)
        end = bounds[after] if after < len(bounds) else len(markdown)
        text = _cut(_first_paragraphs(markdown[start:end].strip(), DEFINITION_PARAGRAPHS), max_chars)
        if len(text) < DEFINITION_MIN_CHARS or text in seen:
            continue
        seen.add(text)
        out.append(Definition(name, text, tuple(t for _, t in stack), anchor, start))
    return out


def markdown_blocks(text: str) -> list[str]:
    """``text`` as its blocks: lines up to a blank line, a fenced code block whole whatever blank lines it holds
    (CommonMark's fences), each with its line ends and the blank lines after it, so that
    ``"".join(markdown_blocks(text)) == text``."""
    in_fence = {line for fence in fences(text) for line in range(fence.start, fence.end)}
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    blocks: list[str] = []
    block_start = 0
    has_text = False
    for number, line in enumerate(lines):
        if number in in_fence or line.strip():
            has_text = True
        elif has_text:
            block_end = min(starts[number + 1], len(text))
            blocks.append(text[block_start:block_end])
            block_start, has_text = block_end, False
    if block_start < len(text):
        blocks.append(text[block_start:])
    return blocks


def _first_paragraphs(text: str, count: int) -> str:
    """The first ``count`` paragraphs of ``text`` (:func:`markdown_blocks`: a code fence is one paragraph)."""
    return "\n\n".join([b.strip() for b in markdown_blocks(text) if b.strip()][:count])


def own_vectors(found: Sequence[Definition], chunks: Sequence[str], share: float = 0.5) -> list[Definition]:
    """The definitions of ``found`` worth a vector of their own beside the page's ``chunks`` (their contents): not
    one that is at least ``share`` of the only chunk holding it while that chunk holds no other definition, whose
    vector would be nearly that chunk's (on the Python docs, 1,619 of 9,990: a CMake command page, a lone
    function under its heading)."""
    holder: list[int | None] = []
    for d in found:
        probe = d.content[:80]
        holder.append(next((i for i, c in enumerate(chunks) if probe in c), None))
    held: dict[int, int] = {}
    for i in holder:
        if i is not None:
            held[i] = held.get(i, 0) + 1
    return [
        d
        for d, i in zip(found, holder, strict=True)
        if i is None or held[i] > 1 or len(d.content) < share * len(chunks[i])
    ]


def _cut(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters at the last paragraph end before, else line end, else word
    end (a code fence cut open is closed again)."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    for pattern in (_PARAGRAPH_END, re.compile(r"\n"), re.compile(r"\s")):
        ends = [m.start() for m in pattern.finditer(head)]
        if ends and ends[-1] > max_chars // 3:
            head = head[: ends[-1]]
            break
    head = head.rstrip()
    found = fences(head)
    if found and not found[-1].closed:
        head += "\n" + found[-1].marker
    return head


class Chunker:
    """Split Markdown into chunks of at most ``max_tokens`` tokens.

    With a ``tokenizers.Tokenizer`` (the embedding model's) sizes are model tokens, counted without special
    tokens; truncation and padding are switched off on a copy first (a truncating tokenizer would under-count).
    Without one, sizes are characters / 4.
    """

    def __init__(self, max_tokens: int, tokenizer: Tokenizer | None = None) -> None:
        if max_tokens < 16:
            raise ValueError(f"max_tokens must be at least 16, got {max_tokens}")
        self.max_tokens = max_tokens
        self._words: _WordTokens | None = None
        if tokenizer is not None:
            tokenizer = type(tokenizer).from_str(tokenizer.to_str())
            tokenizer.no_truncation()
            tokenizer.no_padding()
            self._splitter = MarkdownSplitter.from_huggingface_tokenizer(tokenizer, max_tokens)
            if _words_are_local(tokenizer):
                self._words = words = _WordTokens(tokenizer)

                def count(lines: list[str]) -> list[int]:
                    return words.line_counts(lines)

            else:

                def count(lines: list[str]) -> list[int]:
                    return [len(e.ids) for e in tokenizer.encode_batch(lines, add_special_tokens=False)]

        else:
            self._splitter = MarkdownSplitter(max_tokens * CHARS_PER_TOKEN)

            def count(lines: list[str]) -> list[int]:
                return [-(-len(line) // CHARS_PER_TOKEN) for line in lines]

        self._count: Callable[[list[str]], list[int]] = count

    def chunks(self, markdown: str, anchors: Sequence[tuple[int, str]] = ()) -> list[TextChunk]:
        """Chunks of ``markdown`` in document order, each with the path of headings it sits under.

        No chunk spans a heading that is not a descendant of the heading it starts under, so its heading path
        is true of all of its text: a section and its subsections share a chunk when they fit together,
        sibling sections never do. ``anchors``: (character offset in ``markdown``, HTML id) of headings and
        definitions, in order (:attr:`docsbot.content.extract.ExtractedPage.anchors`); each chunk gets the id of the
        last one that starts before the end of the chunk's first line.
        """
        text, blocks = self._split_long_code_blocks(markdown)
        located = _locate_anchors(markdown, text, anchors)
        headings = [(h.offset, h.level, h.text) for h in blocks.headings]
        counts = _TokenCounts(self._words, text) if self._words is not None else None
        pieces: list[tuple[int, str]] = []
        for start, end in self._groups(text, headings, counts):
            group = text[start:end]
            if group.strip():
                splitter = self._splitter if counts is None else counts.splitter(start, end, self.max_tokens)
                pieces.extend((start + offset, chunk) for offset, chunk in splitter.chunk_indices(group))
        out: list[TextChunk] = []
        stack: list[tuple[int, str]] = []
        h = a = 0
        anchor: str | None = None
        for offset, content in pieces:
            while h < len(headings) and headings[h][0] <= offset:
                _, level, title = headings[h]
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, title))
                h += 1
            first_line_end = offset + (content.find("\n") if "\n" in content else len(content))
            while a < len(located) and located[a][0] <= first_line_end:
                anchor = located[a][1]
                a += 1
            out.append(TextChunk(content, tuple(t for _, t in stack), offset, anchor))
        # A section too big for one chunk leaves its heading alone in a chunk (with a thematic break, an empty
        # table header: nothing but markup); the heading lives on in the next chunk's heading path, so a chunk
        # without text outside headings is dropped. A page that is nothing but a title keeps its last chunk.
        lines, offsets = blocks.headings, [h[0] for h in headings]
        kept = [c for c in out if _has_text(text, c.offset, c.offset + len(c.content), lines, offsets)]
        return kept or out[-1:]

    def _groups(
        self, text: str, headings: list[tuple[int, int, str]], counts: _TokenCounts | None = None
    ) -> list[tuple[int, int]]:
        """(start, end) character spans: a section plus as many following subsections as fit the limit."""
        # Text before the first heading is under no heading: nothing joins it (level 7 is below every heading).
        bounds = [(0, 7)] + [(offset, level) for offset, level, _ in headings if offset > 0]
        if headings and headings[0][0] == 0:
            bounds[0] = (0, headings[0][1])
        bounds.append((len(text), 0))
        spans = list(zip(bounds, bounds[1:], strict=False))
        if counts is not None:
            sizes = [counts.count(a, b) for (a, _), (b, _) in spans]
        else:
            sizes = self._count([text[a:b] for (a, _), (b, _) in spans])
        groups: list[tuple[int, int]] = []
        i = 0
        while i < len(bounds) - 1:
            start, level = bounds[i]
            size = sizes[i]
            j = i + 1
            while j < len(bounds) - 1 and bounds[j][1] > level and size + sizes[j] <= self.max_tokens:
                size += sizes[j]
                j += 1
            groups.append((start, bounds[j][0]))
            i = j
        return groups

    def _split_long_code_blocks(self, markdown: str) -> tuple[str, Blocks]:
        """``markdown`` with each fenced code block longer than the limit cut between lines into blocks that fit,
        each opened with the block's opening line and closed with its marker (a block left open is closed), and
        the new text's :class:`~docsbot.content.commonmark.Blocks`. Those are the old ones moved, not parsed again:
        the lines outside code blocks are the same lines, and each new block is closed by its opening's marker
        (a fifth of the Python docs' chunking CPU went to parsing such texts a second time)."""
        parsed = parse(markdown)
        if not parsed.fences:
            return markdown, parsed
        out: list[str] = []
        moved: list[tuple[int, Heading]] = []  # (new line, heading)
        blocks: list[tuple[int, int, str]] = []  # (new start line, new end line, marker)
        headings = iter(parsed.headings)
        heading = next(headings, None)
        line = 0
        for fence in (*parsed.fences, None):
            until = fence.start if fence is not None else len(parsed.line_starts)
            shift = len(out) - line
            while heading is not None and heading.line < until:
                moved.append((heading.line + shift, heading))
                heading = next(headings, None)
            out.extend(parsed.line(n) for n in range(line, until))
            if fence is None:
                break
            line = fence.end
            opening, closing = parsed.line(fence.start), fence.marker
            body = [parsed.line(n) for n in fence.body]
            # A block left open holds the text's last line, which keeps the text's final line ends ("x\n" of
            # "x\n\n"; its opening line when it has no body): more lines than one in the new text.
            last = 0
            if not fence.closed and fence.end >= len(parsed.line_starts):
                last = parsed.line(len(parsed.line_starts) - 1).count("\n")
            budget = self.max_tokens - 8  # fences and newlines
            sizes = self._count(body) if body else []
            if sum(sizes) + len(body) <= budget:
                blocks.append((len(out), len(out) + len(body) + 2 + last, closing))
                out.extend([opening, *body, closing])
                continue
            piece: list[str] = []
            used = 0
            for text, size in zip(body, sizes, strict=True):
                if piece and used + size + 1 > budget:
                    blocks.append((len(out), len(out) + len(piece) + 2, closing))
                    out.extend([opening, *piece, closing, ""])
                    piece, used = [], 0
                piece.append(text)
                used += size + 1
            blocks.append((len(out), len(out) + len(piece) + 2 + last, closing))
            out.extend([opening, *piece, closing])
        text = "\n".join(out)
        if markdown.endswith("\n"):
            text += "\n"
        starts = line_starts(text)

        def line_end(n: int) -> int:
            return starts[n + 1] - 1 if n + 1 < len(starts) else len(text)

        return text, Blocks(
            text,
            tuple(starts),
            tuple(Heading(n, starts[n], line_end(n), h.level, h.text) for n, h in moved),
            tuple(Fence(start, end, marker, closed=True) for start, end, marker in blocks),
        )


# Parts of a `tokenizers` pipeline under which a text's tokens are its words' tokens, each word tokenized on its
# own: normalizers that map each character (or a character and its combining marks) on its own, pre-tokenizers
# that cut at whitespace and punctuation, one of which cuts at whitespace. Byte-level BPE and SentencePiece
# (Metaspace) fold the preceding space into the next word, a Replace or Prepend normalizer can reach across words,
# and Punctuation alone leaves a whole line one word: with those the splitter tokenizes each candidate itself.
_LOCAL_NORMALIZERS = frozenset({"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"})
_LOCAL_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation"})
_SPACE_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})


def _pieces(text: str) -> list[str]:
    """``text`` cut at every space and newline (``re.split("[ \\n]", text)``, at a third of its CPU)."""
    return text.replace("\n", " ").split(" ")


def _words_are_local(tokenizer: Tokenizer) -> bool:
    """Whether a text's token count is the sum of the counts of its space- and newline-separated pieces, each
    tokenized alone: true when the normalizer and pre-tokenizer (a ``Sequence`` of them too) are in the lists above
    and a pre-tokenizer cuts at whitespace; the model (WordPiece, BPE, Unigram) always works one word at a time."""
    config = json.loads(tokenizer.to_str())

    def parts(part: dict | None, key: str) -> list[str]:
        if part is None:
            return []
        if part.get("type") == "Sequence":
            return [t for p in part.get(key, []) for t in parts(p, key)]
        return [part.get("type", "")]

    normalizers = parts(config.get("normalizer"), "normalizers")
    pre_tokenizers = parts(config.get("pre_tokenizer"), "pretokenizers")
    return (
        all(n in _LOCAL_NORMALIZERS for n in normalizers)
        and all(p in _LOCAL_PRE_TOKENIZERS for p in pre_tokenizers)
        and any(p in _SPACE_PRE_TOKENIZERS for p in pre_tokenizers)
    )


# BERT's pre-tokenizer cuts a text at whitespace and around each punctuation character, and every printable ASCII
# character that is not a letter or digit is punctuation to it: the words of a piece of printable ASCII.
_BERT_WORDS = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")


def _splits_ascii_like_bert(tokenizer: Tokenizer) -> bool:
    """Whether a printable ASCII piece's count is the sum of its :data:`_BERT_WORDS`' counts: BERT's pre-tokenizer
    (alone), BERT's normalizer or none (on printable ASCII it only lowercases), and WordPiece, which tokenizes
    each word alone."""
    config = json.loads(tokenizer.to_str())
    normalizer = (config.get("normalizer") or {}).get("type")
    pre_tokenizer = (config.get("pre_tokenizer") or {}).get("type")
    model = (config.get("model") or {}).get("type")
    return normalizer in (None, "BertNormalizer") and pre_tokenizer == "BertPreTokenizer" and model == "WordPiece"


class _WordTokens:
    """Token counts of pieces of text without spaces or newlines, from a tokenizer that passes
    :func:`_words_are_local`, cached for the chunker's life (a worker's): documentation repeats its words, so most
    of a page's pieces were counted on an earlier page. At most ``limit`` pieces are kept (then the cache starts
    over; about 90 bytes each: the Python docs hold 139,777 distinct pieces, 12.6 MB).

    With BERT's pre-tokenizer (:func:`_splits_ascii_like_bert`) a new piece of printable ASCII is counted as the sum
    of its words: its runs of letters and digits and each other character on its own, which is where that
    pre-tokenizer cuts it, each word then tokenized alone by the model. Words repeat far more than pieces
    (``os.path.join(a,`` is six words counted on earlier pages): the tokenizer encodes 32,716 distinct words instead
    of 139,740 distinct pieces for the Python docs, the same counts. A piece holding an added token's text
    (``[SEP]``, which the tokenizer matches before pre-tokenizing) or any other character is tokenized whole."""

    def __init__(self, tokenizer: Tokenizer, limit: int = 1 << 18) -> None:
        self._tokenizer = tokenizer
        self._limit = limit
        self._cache: dict[str, int] = {"": 0}
        self._added: tuple[str, ...] | None = None
        if _splits_ascii_like_bert(tokenizer):
            self._added = tuple(t.content for t in tokenizer.get_added_tokens_decoder().values())

    def counts(self, pieces: list[str]) -> list[int]:
        """The token count of each of ``pieces`` (strings without " " or "\\n"), without special tokens."""
        cache = self._cache
        found = list(map(cache.get, pieces))
        if None not in found:  # most pages' pieces were all counted before: no set of them to build
            return found
        counted = self._count({p for p, n in zip(pieces, found, strict=True) if n is None}, cache)
        if len(cache) + len(counted) > self._limit:
            # Start over in a new dict: a call in another thread (DOCSBOT_EXTRACT_POOL=thread) keeps reading
            # the one it holds, which is never cleared under it.
            self._cache = {"": 0, **counted}
        cache.update(counted)
        return [counted[p] if n is None else n for p, n in zip(pieces, found, strict=True)]

    def _count(self, missing: set[str], cache: dict[str, int]) -> dict[str, int]:
        """The counts of ``missing`` pieces (and of the words they were counted from), ``cache`` read for words
        counted before."""
        added = self._added
        if added is None:
            whole = list(missing)
            return dict(zip(whole, self._encoded(whole), strict=True))
        split: dict[str, list[str]] = {}
        whole = []
        for piece in missing:
            if piece.isascii() and piece.isprintable() and not any(token in piece for token in added):
                split[piece] = _BERT_WORDS.findall(piece)
            else:
                whole.append(piece)
        new = list({word for words in split.values() for word in words}.difference(cache).union(whole))
        counted = dict(zip(new, self._encoded(new), strict=True))
        for piece, words in split.items():
            counted[piece] = sum([counted[w] if w in counted else cache[w] for w in words])
        return counted

    def _encoded(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def count(self, text: str) -> int:
        """The token count of ``text``, without special tokens."""
        return sum(self.counts(_pieces(text)))

    def line_counts(self, lines: list[str]) -> list[int]:
        """:meth:`count` of each of ``lines``, in one pass over their pieces."""
        split = [line.split(" ") for line in lines]
        counts = self.counts(list(chain.from_iterable(split)))
        out: list[int] = []
        at = 0
        for parts in split:
            out.append(sum(counts[at : at + len(parts)]))
            at += len(parts)
        return out


class _TokenCounts:
    """Token counts of substrings of one text from the counts of its pieces (cut at spaces and newlines, which
    every tokenizer that passes :func:`_words_are_local` cuts at): the count of ``text[a:b]`` is the sum of the
    whole pieces inside plus the counts of the parts of the two pieces ``a`` and ``b`` cut, each tokenized alone.
    Exactly what the tokenizer says of ``text[a:b]``."""

    def __init__(self, words: _WordTokens, text: str) -> None:
        pieces = _pieces(text)
        self._words = words
        self._text = text
        # piece i is text[starts[i] : starts[i + 1] - 1]; the character after it is a space or a newline
        self._starts = list(accumulate(map(add, map(len, pieces), repeat(1)), initial=0))
        self._before = list(accumulate(words.counts(pieces), initial=0))  # tokens of the pieces before piece i

    def count(self, a: int, b: int) -> int:
        """Tokens of ``text[a:b]`` (character offsets), without special tokens."""
        if b <= a:
            return 0
        starts, text = self._starts, self._text
        i = bisect_right(starts, a) - 1  # the piece a is in (or the separator after it)
        k = bisect_right(starts, b - 1) - 1  # the piece the last character is in
        if i == k:
            return self._words.count(text[a:b])
        before, words = self._before, self._words
        head = before[i + 1] - before[i] if a == starts[i] else words.count(text[a : starts[i + 1] - 1])
        tail = before[k + 1] - before[k] if b >= starts[k + 1] - 1 else words.count(text[starts[k] : b])
        return head + before[k] - before[i + 1] + tail

    def splitter(self, start: int, end: int, capacity: int) -> MarkdownSplitter:
        """A splitter for ``text[start:end]`` sized by :meth:`count`. Its size callback is given each candidate
        chunk as a string, trimmed; every candidate of one chunk starts where that chunk starts, and chunks come
        in order, so the candidate is found at or after the last one's start (or on that start's line, as a
        candidate whose indentation is kept starts before it). An equal string found elsewhere has the same count:
        it is the string's own."""
        text = self._text
        last = start

        def size(candidate: str) -> int:
            nonlocal last
            if text.startswith(candidate, last):
                return self.count(last, last + len(candidate))
            at = text.find(candidate, last, end)
            if at < 0:
                at = text.find(candidate, max(start, text.rfind("\n", start, last) + 1), end)
            if at < 0:  # not a slice of the group (never seen): size it on its own
                return self._words.count(candidate)
            last = at
            return self.count(at, at + len(candidate))

        return MarkdownSplitter.from_callback(size, capacity)


def _locate_anchors(original: str, text: str, anchors: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """Offsets of ``anchors`` (given in ``original``) in ``text``, which is ``original`` with fence lines added
    (code pre-splitting): each is found again by the text that follows it, searching forward."""
    if original == text:
        return [(int(o), i) for o, i in anchors]
    out: list[tuple[int, str]] = []
    pos = 0
    for offset, ident in anchors:
        probe = original[offset : offset + 60].split("\n", 1)[0]
        found = text.find(probe, max(pos, offset)) if probe else -1
        if found >= 0:
            out.append((found, ident))
            pos = found
    return out


def markdown_headings(text: str) -> list[tuple[int, int, str]]:
    """(character offset, level, text) of each ATX heading outside fenced code (:mod:`docsbot.content.commonmark`)."""
    return [(h.offset, h.level, h.text) for h in parse(text).headings]
