"""Candidate lists of procedure "user-questions v2" (seed 20261128): PostgreSQL 15, Fastify 5, the Rust book.

Reads the HTML trees on disk with lxml and nothing of docsbot. Prints each list, shuffled with
``random.Random(SEED).shuffle`` (items first in file-sorted, then document order), one JSON line per candidate:
``{"list", "n", "source", "target", "label", "text"}`` where ``text`` is the start of the description or section a
question is written from. The sections are described in ``eval/queries/USER_QUESTIONS.md`` (v2).

Usage: python eval/user_question_candidates.py LIST [--limit N] [--count]
LIST: postgresql-definitions, postgresql-headings, fastify-definitions, fastify-headings, rust-book-definitions,
rust-book-headings.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re

import lxml.html

SEED = 20261128
PG = "/usr/share/doc/postgresql-doc-15/html"
FASTIFY = "/work/main/.build/sites/fastify/site"
RUST = "/usr/share/doc/rust-doc/html/book"

PG_HEADING_GLOBS = [
    "tutorial-*.html",
    "*-intro*",
    "backup*.html",
    "high-availability*",
    "performance-tips*",
    "mvcc*",
    "ddl-*",
    "queries-*",
    "indexes-*",
]
# A Reference heading names an API item when it is one code-shaped token: an identifier, dotted, optionally with
# a leading ".", "<T>", a trailing "*" or an argument list; and not a capitalised plain word ("Usage", "TypeBox").
API_ITEM = re.compile(r"^\.?[A-Za-z_$][\w$]*(\.[\w$]+)*(<[^>]*>)?\*?(\(.*\))?$")
# The Rust book introduces a term as "... called *X*" (or known as / referred to as / termed), or "*X* is/are ...".
CALLED = re.compile(r"\b(called|known as|referred to as|termed)(\s+(a|an|the))?\s*$", re.I)
STARTS_IS = re.compile(r"^\s*(is|are)\b")
SENTENCE_END = re.compile(r"[.!?:]\s")


def norm(s: str) -> str:
    return " ".join(s.replace("\u200b", "").split())


def files(root: str, patterns: list[str]) -> list[str]:
    found = {f for p in patterns for f in glob.glob(os.path.join(root, p))}
    return sorted(found)


def rel(root: str, path: str) -> str:
    return os.path.relpath(path, root)


def following_text(el, limit: int = 700) -> str:
    """Text of the elements after ``el`` among its siblings (a dt's dd, a heading's section)."""
    out = []
    for sib in el.itersiblings():
        if not isinstance(sib.tag, str):
            continue  # a comment
        if sib.tag in ("dt",) or re.fullmatch(r"h[1-6]", sib.tag):
            break
        out.append(norm(sib.text_content()))
        if sum(map(len, out)) > limit:
            break
    return " ".join(out)[:limit]


def pg_definitions() -> list[dict]:
    items = []
    for f in files(PG, ["runtime-config-*.html", "libpq-envars.html", "app-*.html", "sql-*.html"]):
        name = os.path.basename(f)
        tree = lxml.html.parse(f)
        if name == "libpq-envars.html":
            for li in tree.xpath('//div[@class="itemizedlist"]/ul/li'):
                env = li.xpath('.//code[@class="envar"]')
                if env:
                    var = norm(env[0].text_content())
                    items.append(dict(source=f"{name}#{var}", target=name, label=var, text=norm(li.text_content())))
            continue
        for dt in tree.xpath('//div[@class="variablelist"]/dl/dt'):
            if name.startswith("runtime-config-"):
                if not dt.get("id"):
                    continue
            else:
                sec = dt.xpath('ancestor::div[@class="refsect1"][1]/h2')
                title = norm(sec[0].text_content()) if sec else ""
                if title not in ("Options", "Parameters"):
                    continue
            terms = [norm(t.text_content()) for t in dt.xpath('./span[@class="term"]')]
            label = ", ".join(terms) if terms else norm(dt.text_content())  # "-a, --data-only"
            dd = dt.getnext()
            text = norm(dd.text_content())[:700] if dd is not None and dd.tag == "dd" else ""
            frag = dt.get("id") or label
            items.append(dict(source=f"{name}#{frag}", target=name, label=label, text=text))
    return items


def pg_headings() -> list[dict]:
    items = []
    for f in files(PG, PG_HEADING_GLOBS):
        name = os.path.basename(f)
        tree = lxml.html.parse(f)
        for h in tree.xpath('//div[@class="titlepage"]//*[self::h2 or self::h3][@class="title"]'):
            sect = h.xpath("ancestor::div[@id][1]")[0]
            title = norm(h.text_content())
            titlepage = h.xpath('ancestor::div[@class="titlepage"][1]')[0]
            text = following_text(titlepage)
            items.append(dict(source=f"{name}#{sect.get('id')}", target=name, label=title, text=text))
    return items


def fastify_target(path: str) -> str:
    """``Reference/Hooks/index.html`` → ``Reference/Hooks``, as the site's own hrefs and sitemap write it."""
    d = os.path.dirname(rel(FASTIFY, path))
    return d + "/" if d in ("Reference", "Guides") else d


def fastify_headings(section: str, tags: tuple[str, ...], api_only: bool) -> list[dict]:
    items = []
    for f in files(FASTIFY, [f"{section}/*/index.html", f"{section}/index.html"]):
        tree = lxml.html.parse(f)
        target = fastify_target(f)
        xp = " or ".join(f"self::{t}" for t in tags)
        for h in tree.xpath(f"//article//*[{xp}]"):
            title = norm(h.text_content())
            if api_only and not (API_ITEM.match(title) and not re.fullmatch(r"[A-Z][A-Za-z0-9]*", title)):
                continue
            items.append(dict(source=f"{target}#{h.get('id')}", target=target, label=title, text=following_text(h)))
    return items


def rust_pages() -> list[str]:
    return files(RUST, ["ch[0-9]*.html", "appendix-*.html"])


def rust_headings() -> list[dict]:
    items = []
    for f in rust_pages():
        name = os.path.basename(f)
        for h in lxml.html.parse(f).xpath("//main//*[self::h2 or self::h3]"):
            items.append(
                dict(source=f"{name}#{h.get('id')}", target=name, label=norm(h.text_content()), text=following_text(h))
            )
    return items


def block_text(block, marks: list) -> str:
    """The block's text, recording each em/strong's (element, start, end) offsets into ``marks``."""
    parts: list[str] = []

    def walk(el):
        start = sum(map(len, parts))
        if el.text:
            parts.append(el.text)
        for child in el:
            walk(child)
            if child.tail:
                parts.append(child.tail)
        if el.tag in ("em", "strong") and el is not block:
            marks.append((el, start, sum(map(len, parts))))

    walk(block)
    return "".join(parts)


def rust_definitions() -> list[dict]:
    items = []
    for f in rust_pages():
        name = os.path.basename(f)
        seen = set()
        for block in lxml.html.parse(f).xpath("//main//*[self::p or self::li]"):
            if block.tag == "li" and block.xpath("./p"):
                continue  # its paragraphs are blocks of their own
            marks: list = []
            text = block_text(block, marks)
            for _el, start, end in marks:
                term = norm(text[start:end])
                if not term or len(term.split()) > 6 or term.lower() in seen:
                    continue
                before = text[:start]
                cut = [m.end() for m in SENTENCE_END.finditer(before)]
                before = before[cut[-1] :] if cut else before
                after = text[end:]
                stop = SENTENCE_END.search(after)
                after = after[: stop.start() + 1] if stop else after
                lead = norm(before)
                if not (CALLED.search(before) or (lead in ("", "A", "An", "The") and STARTS_IS.match(after))):
                    continue
                seen.add(term.lower())
                sentence = norm(before + text[start:end] + after)
                items.append(dict(source=f"{name}#{term}", target=name, label=term, text=sentence[:700]))
    return items


LISTS = {
    "postgresql-definitions": pg_definitions,
    "postgresql-headings": pg_headings,
    "fastify-definitions": lambda: fastify_headings("Reference", ("h3", "h4"), api_only=True),
    "fastify-headings": lambda: fastify_headings("Guides", ("h2", "h3"), api_only=False),
    "rust-book-definitions": rust_definitions,
    "rust-book-headings": rust_headings,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("list", choices=sorted(LISTS))
    ap.add_argument("--limit", type=int, default=0, help="print only the first N of the shuffled list")
    ap.add_argument("--count", action="store_true", help="print only the number of candidates")
    args = ap.parse_args()
    items = LISTS[args.list]()
    if args.count:
        print(len(items))
        return
    random.Random(SEED).shuffle(items)
    for n, item in enumerate(items[: args.limit or None], 1):
        print(json.dumps(dict(list=args.list, n=n, **item), ensure_ascii=False))


if __name__ == "__main__":
    main()
