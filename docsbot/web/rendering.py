"""What the web pages show of the index: a stored page's Markdown rendered as HTML (raw HTML in it escaped, images
as links unless allowed), a result's excerpt with the query's words marked, links that can only be http(s), and the
Jinja environment of the templates (``docsbot/web/templates``) with these as its filters."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

from docsbot import store
from docsbot.embedding.migration import describe_switch
from docsbot.embedding.worker import describe_progress
from docsbot.service import MAX_QUERY_CHARS

__all__ = [
    "EXCERPT_CHARS",
    "MAX_RENDERED_CHARS",
    "SNIPPET_CHARS",
    "excerpt",
    "highlight",
    "render_markdown",
    "render_snippet",
    "safe_href",
    "templates",
    "vectors_progress",
]

EXCERPT_CHARS = 400
# A result's snippet: whole blocks of its Markdown up to about this many characters (the first block always).
SNIPPET_CHARS = 700
# ... and at most this many lines of the first block when that one alone is longer (a long code example).
SNIPPET_FIRST_BLOCK_LINES = 16
# A page view renders at most this much Markdown (about 0.2 s of markdown-it here; /page.json has all of it).
MAX_RENDERED_CHARS = 256 * 1024
_WORD = re.compile(r"[\w][\w.:-]*[\w]|[\w]")
# Words not worth marking in an excerpt (marking every "the" hides the words that matched).
_UNMARKED = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "why",
        "with",
    ]
)
_MARKDOWN_SYNTAX = re.compile(r"```[^\n]*\n?|`|\*\*|__|^#{1,6} |^\s*[-*] |^>\s?", re.M)


def excerpt(markdown: str, width: int = EXCERPT_CHARS) -> str:
    """A result's text as one plain line of at most ``width`` characters: Markdown's code fences, backticks,
    emphasis and heading marks dropped, whitespace collapsed, cut at a word with an ellipsis."""
    text = " ".join(_MARKDOWN_SYNTAX.sub(" ", markdown).split())
    if len(text) <= width:
        return text
    return text[:width].rsplit(" ", 1)[0] + " …"


def highlight(text: str, query: str) -> Markup:
    """``text`` escaped for HTML, with each word of ``query`` (letters, digits, ``_ . : -`` inside a word) marked
    by ``<mark>`` wherever it stands as a whole word, case-insensitively; a few English function words ("the",
    "how", "to") are not marked."""
    words = sorted({w for w in _WORD.findall(query) if w.lower() not in _UNMARKED}, key=len, reverse=True)
    if not words:
        return escape(text)
    pattern = re.compile(r"(?<![\w])(" + "|".join(map(re.escape, words)) + r")(?![\w])", re.I)
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[pos : m.start()]))
        out.append(Markup("<mark>%s</mark>") % m.group(0))
        pos = m.end()
    out.append(escape(text[pos:]))
    return Markup("").join(out)


def _highlight_code(code: str, lang: str, attrs: str) -> str:
    """markdown-it's ``highlight`` option: a fenced block's code as Pygments' HTML (CSS classes, no inline style:
    the pages' CSP forbids it) when its language is one Pygments knows, else ``""`` (markdown-it escapes it)."""
    from pygments import highlight as pygmentize
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang.strip().lower()) if lang.strip() else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""
    # nowrap: markdown-it wraps the spans in <pre><code class="language-…">; Pygments escapes the code's text
    return pygmentize(code, lexer, HtmlFormatter(nowrap=True, classprefix="hl-"))


# A page view's and a snippet's Markdown: raw HTML escaped, GFM tables, fenced code highlighted.
_OPTIONS = {"html": False, "linkify": False, "highlight": _highlight_code}
_MARKDOWN = MarkdownIt("commonmark", _OPTIONS).enable("table")


def _image_as_link(self: Any, tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
    """markdown-it's ``image`` rule, replaced: a link to the image (its alt text, else its address), which the
    reader's browser does not load. The address was already checked by markdown-it's ``validateLink``."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    text = self.renderInlineAsText(token.children or [], options, env) or src
    return f'<a class="image" href="{escape(src)}" rel="noreferrer nofollow">[image: {escape(text)}]</a>'


_MARKDOWN_NO_IMAGES = MarkdownIt("commonmark", _OPTIONS).enable("table")
_MARKDOWN_NO_IMAGES.add_render_rule("image", _image_as_link)


def render_markdown(markdown: str, anchors: list[str], *, images: bool = False) -> Markup:
    """A stored page's Markdown as HTML (CommonMark and GFM tables, markdown-it-py). Raw HTML in it is escaped,
    never rendered; link and image addresses markdown-it deems unsafe (``javascript:``, ``data:`` but images...) are
    dropped by it. Images are shown as links to them unless ``images`` (an ``<img>`` would make every reader's
    browser ask the documentation's host for it). A fenced code block whose language Pygments knows (```` ```python
    ````) is highlighted with CSS classes ``hl-*``, as a search result's snippet is; another stays plain, escaped.
    Headings below the title get, in order, the ids in ``anchors`` (the page's sections, so that ``#anchor`` links
    land on them). Linear in the size of the page."""
    md = _MARKDOWN if images else _MARKDOWN_NO_IMAGES
    tokens = md.parse(markdown)
    pending = iter(anchors)
    for token in tokens:
        if token.type == "heading_open" and token.tag != "h1":
            ident = next(pending, None)
            if ident is None:
                break
            token.attrSet("id", ident)
    return Markup(md.renderer.render(tokens, md.options, {}))


# A result's snippet is rendered as its page is, images as links.
_MARKDOWN_SNIPPET = _MARKDOWN_NO_IMAGES


def _snippet_source(markdown: str, width: int) -> str:
    """The leading whole top-level blocks of ``markdown`` (markdown-it's source line maps) that fit in ``width``
    characters, at least the first (itself cut to :data:`SNIPPET_FIRST_BLOCK_LINES` lines if it is longer): the cut
    falls between blocks, so no list, table or code fence is left open."""
    lines = markdown.splitlines()
    ends = [t.map[1] for t in _MARKDOWN_SNIPPET.parse(markdown) if t.level == 0 and t.map and t.nesting in (0, 1)]
    if not ends:
        return markdown[:width]
    chosen = ends[0]
    for end in ends[1:]:
        if len("\n".join(lines[:end])) > width:
            break
        chosen = end
    text = "\n".join(lines[:chosen])
    if len(text) > width and chosen > SNIPPET_FIRST_BLOCK_LINES:
        first = lines[:SNIPPET_FIRST_BLOCK_LINES]
        fence = first[0].lstrip()[:3] if first and first[0].lstrip()[:3] in ("```", "~~~") else ""
        text = "\n".join(first) + (f"\n{fence}\n" if fence else "")  # a cut fence is closed again
    return text


def render_snippet(markdown: str, query: str, width: int = SNIPPET_CHARS) -> Markup:
    """A result's Markdown as safe HTML, as a page view renders it (raw HTML escaped, unsafe link addresses dropped,
    images as links; its headings as ``<p class="heading">``, outside the results page's outline), cut at a block
    boundary after about ``width`` characters; code blocks whose language Pygments knows highlighted (classes
    ``hl-*``); the query's words marked with ``<mark>`` (as :func:`highlight`) in text and inline code only,
    never inside a tag, an attribute or a code block's markup."""
    env: dict[str, Any] = {}
    tokens = _MARKDOWN_SNIPPET.parse(_snippet_source(markdown, width), env)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):  # a result's headings are not the results page's own
            if token.type == "heading_open":
                token.attrSet("class", "heading")
            token.tag = "p"
        for child in token.children or []:
            if child.type == "text":
                child.type, child.content = "html_inline", str(highlight(child.content, query))
            elif child.type == "code_inline":
                child.type, child.content = "html_inline", f"<code>{highlight(child.content, query)}</code>"
    return Markup(_MARKDOWN_SNIPPET.renderer.render(tokens, _MARKDOWN_SNIPPET.options, env))


def vectors_progress(version: Any) -> dict[str, Any]:
    """A version's vectors as ``docsbot status`` shows them, from a :class:`~docsbot.service.models.LibraryVersion`:
    ``{"done", "waiting", "rate" (chunks per second, or None), "workers" (embedding it now), "seconds_left" (or
    None), "text"}``, ``text`` as the CLI prints it ("5,120 done, 16,099 waiting, 24.8 chunks/s, about 11 min
    left (1 worker embedding)")."""
    work = version.embedding or {}
    rate = work.get("rate") or None
    workers = int(work.get("workers") or 0)
    text = describe_progress(version.vectors, version.vectors_waiting, rate)
    if workers:
        text += f" ({workers} worker{'s' if workers != 1 else ''} embedding)"
    elif version.vectors_waiting:
        text += " (no worker is embedding: `docsbot embed` gives them their vectors)"
    return {
        "done": version.vectors,
        "waiting": version.vectors_waiting,
        "rate": rate,
        "workers": workers,
        "seconds_left": work.get("seconds_left"),
        "text": text,
    }


def safe_href(url: Any) -> str:
    """``url`` if it is an absolute http(s) URL (what docsbot stores), else ``#``: no ``javascript:`` in a link."""
    text = str(url or "")
    return text if urllib.parse.urlsplit(text).scheme.lower() in ("http", "https") else "#"


def templates() -> Environment:
    """The templates' environment: HTML autoescaped, with the filters ``highlight``, ``snippet``, ``excerpt``,
    ``quote`` (a URL component) and ``href`` (:func:`safe_href`), and the globals ``label``, ``vectors_progress``
    and ``describe_switch``."""
    env = Environment(
        loader=PackageLoader("docsbot.web", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["highlight"] = highlight
    env.filters["snippet"] = render_snippet
    env.filters["excerpt"] = excerpt
    env.filters["quote"] = lambda value: urllib.parse.quote(str(value), safe="")
    env.filters["href"] = safe_href
    env.globals["label"] = store.version_label
    env.globals["vectors_progress"] = vectors_progress
    env.globals["describe_switch"] = describe_switch
    env.globals["max_query"] = MAX_QUERY_CHARS
    env.globals["max_rendered"] = MAX_RENDERED_CHARS
    return env
