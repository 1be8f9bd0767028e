"""Build the generated query sets of ``make eval`` from a site's own files (run once; outputs committed).

Each query a JSON line ``{"corpus", "kind", "query", "targets"}`` with ``targets`` page paths relative to the site
root (no fragment). From a Sphinx site (``--generator sphinx``, the default), two kinds:

- ``symbol``: a name from ``objects.inv`` (Sphinx inventory v2: four header lines, then zlib-compressed
  ``name domain:role priority uri dispname`` lines) → the page defining it.
- ``index_term``: an entry of the general index (``genindex*.html``: ``<li>`` entries, sub-entries nested in a
  ``<ul>``; a sub-entry's query is "entry sub-entry") → every page its links point to.

From other generators, ``symbol`` queries, each from what the site itself says defines a name (read with lxml,
none of docsbot's code):

- ``--generator git`` (git-doc, AsciiDoc): a configuration variable (a labelled-list term shaped
  ``section[.subsection].name``, as ``git-config(1)`` and each command's CONFIGURATION section list them) → every
  page that lists it.
- ``--generator docbook-params`` (DocBook XSL's reference): a parameter → its reference pages (``X.html`` whose
  refentry title is ``X``; one per output format that has the parameter: html/, fo/, ...).
- ``--generator doxygen``: a name of Doxygen's own indexes (``globals*.html``, ``functions*.html``: ``<li>name :
  <a href="page#anchor">``) → the pages they link to.
- ``--generator postgresql`` (postgresql-doc-15, DocBook): a configuration parameter or a libpq environment
  variable → its page.

A DocBook book with an index (``bookindex.html``) gives ``index_term`` queries too: an entry or "entry sub-entry"
→ every page it links to.

Samples are drawn with a fixed seed, so running this again over the same Debian package gives the same files.

Usage: python eval/build_queries.py CORPUS DOC_ROOT [--generator G] [--symbols N] [--terms N]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import zlib
from pathlib import Path

import lxml.html

SEED = 12
# Roles of objects.inv that name an API (what a user types as an identifier); labels, docs and grammar tokens are
# not names a user searches for.
SYMBOL_ROLES = {
    "py:function", "py:method", "py:class", "py:exception", "py:data", "py:attribute", "py:module",
    "c:function", "c:type", "c:macro", "c:member", "c:var",
    "cmake:command", "cmake:variable", "cmake:module", "cmake:prop_tgt", "cmake:policy", "cmake:genex",
    "cmake:envvar", "cmake:prop_sf", "cmake:prop_dir", "cmake:prop_gbl", "cmake:prop_test",
}  # fmt: skip
_NAV_PAGES = re.compile(r"^(genindex|py-modindex|modindex|search|contents)")


def inventory(root: Path) -> list[tuple[str, str, str]]:
    """(name, domain:role, page path) for every object of ``root/objects.inv``."""
    raw = (root / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):
        header_end = raw.index(b"\n", header_end) + 1
    out = []
    line_re = re.compile(r"^(.+?)\s+(\S+:\S+)\s+(-?\d+)\s+(\S*)\s+(.*)$")
    for line in zlib.decompress(raw[header_end:]).decode().splitlines():
        m = line_re.match(line)
        if not m:
            continue
        name, role, _, uri, _ = m.groups()
        uri = uri.replace("$", name) if uri.endswith("$") else uri
        out.append((name, role, uri.split("#", 1)[0]))
    return out


def symbol_queries(corpus: str, root: Path, n: int) -> list[dict]:
    rows = [r for r in inventory(root) if r[1] in SYMBOL_ROLES and r[2] and not _NAV_PAGES.match(r[2])]
    by_name: dict[str, set[str]] = {}
    for name, role, page in rows:
        shown = name.split(":", 1)[1] if role.startswith("cmake:") and ":" in name else name
        by_name.setdefault(shown, set()).add(page)
    names = sorted(by_name)
    picked = sorted(random.Random(SEED).sample(names, min(n, len(names))))
    return [{"corpus": corpus, "kind": "symbol", "query": q, "targets": sorted(by_name[q])} for q in picked]


def _entry_text(li) -> str:  # noqa: ANN001
    parts = [li.text or ""]
    for child in li:
        if child.tag == "ul":
            break
        if child.tag == "a" and re.fullmatch(r"\[\d+\]", child.text_content().strip()):
            continue
        parts.append(child.text_content())
        parts.append(child.tail or "")
    return " ".join(" ".join(parts).replace(",", " ").split())


def _targets(li) -> set[str]:  # noqa: ANN001
    pages = set()
    for child in li:
        if child.tag == "a" and child.get("href"):
            page = child.get("href").split("#", 1)[0]
            if page and not _NAV_PAGES.match(page):
                pages.add(page)
    return pages


def index_terms(root: Path) -> dict[str, set[str]]:
    """Every general-index entry (and "entry sub-entry") → the pages it links to."""
    files = sorted(root.glob("genindex-*.html")) or [root / "genindex.html"]
    files = [f for f in files if f.name != "genindex-all.html"]
    terms: dict[str, set[str]] = {}
    for path in files:
        doc = lxml.html.document_fromstring(path.read_bytes())
        for table in doc.xpath("//table[contains(@class, 'indextable')]"):
            for li in table.xpath("./tr/td/ul/li"):
                head = _entry_text(li)
                if head and _targets(li):
                    terms.setdefault(head, set()).update(_targets(li))
                for sub in li.xpath("./ul/li"):
                    text = _entry_text(sub)
                    if head and text and _targets(sub):
                        # "(class in typing)" under "AsyncIterator (class in collections.abc)" qualifies the name
                        base = head.split(" (", 1)[0] if text.startswith("(") else head
                        terms.setdefault(f"{base} {text}", set()).update(_targets(sub))
    return terms


def term_queries(corpus: str, root: Path, n: int) -> list[dict]:
    terms = index_terms(root)
    names = sorted(t for t in terms if len(t) <= 120)
    picked = sorted(random.Random(SEED).sample(names, min(n, len(names))))
    return [{"corpus": corpus, "kind": "index_term", "query": q, "targets": sorted(terms[q])} for q in picked]


_GIT_VARIABLE = re.compile(r"[a-z][a-zA-Z0-9]*(?:\.[a-zA-Z0-9<>_-]+)+")


def git_variables(root: Path) -> dict[str, set[str]]:
    """git's configuration variables → the pages whose labelled lists (``<dt class="hdlist1">``) define them."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.glob("*.html")):
        doc = lxml.html.document_fromstring(path.read_bytes())
        for dt in doc.xpath("//dt[contains(@class, 'hdlist1')]"):
            name = " ".join(dt.text_content().split())
            if _GIT_VARIABLE.fullmatch(name):
                found.setdefault(name, set()).add(path.name)
    return found


def docbook_parameters(root: Path) -> dict[str, set[str]]:
    """DocBook XSL's parameters → their reference pages (``fo/X.html``, ``html/X.html``: refentry title ``X``)."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.glob("*/*.html")):
        doc = lxml.html.document_fromstring(path.read_bytes())
        titles = doc.xpath("//div[contains(@class, 'refnamediv')]//span[@class='refentrytitle']")
        if titles and " ".join(titles[0].text_content().split()) == path.stem:
            found.setdefault(path.stem, set()).add(str(path.relative_to(root)))
    return found


def doxygen_names(root: Path) -> dict[str, set[str]]:
    """Names of Doxygen's member indexes (``globals*.html``, ``functions*.html``) → the pages they link to."""
    found: dict[str, set[str]] = {}
    for path in sorted([*root.glob("globals*.html"), *root.glob("functions*.html")]):
        doc = lxml.html.document_fromstring(path.read_bytes())
        for li in doc.xpath("//div[@class='contents']//li"):
            name = (li.text or "").split(":", 1)[0].strip().removesuffix("()")
            pages = {a.get("href").split("#", 1)[0] for a in li.xpath("./a[@class='el'][@href]")}
            if re.fullmatch(r"[A-Za-z_]\w*", name) and pages:
                found.setdefault(name, set()).update(pages)
    return found


def postgresql_names(root: Path) -> dict[str, set[str]]:
    """The PostgreSQL manual's configuration parameters (``<dt id="GUC-...">`` of ``runtime-config-*.html``, the
    ``varname`` they show) and libpq's environment variables (the ``envar`` each item of ``libpq-envars.html``
    starts with) → their page."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.glob("runtime-config-*.html")):
        doc = lxml.html.document_fromstring(path.read_bytes())
        for dt in doc.xpath("//dt[starts-with(@id, 'GUC-')]"):
            names = dt.xpath(".//code[@class='varname']")
            if names:
                found.setdefault(names[0].text_content().strip(), set()).add(path.name)
    doc = lxml.html.document_fromstring((root / "libpq-envars.html").read_bytes())
    for code in doc.xpath("//li/p/code[@class='envar'][1]"):
        found.setdefault(code.text_content().strip(), set()).add("libpq-envars.html")
    return found


def docbook_index_terms(root: Path) -> dict[str, set[str]]:
    """A DocBook book index (``bookindex.html``: ``<dt>term, <a class="indexterm" href>``, sub-entries in the
    ``<dd>``'s list; "see" entries have no link) → every "term" or "term sub-term" → the pages it links to."""
    doc = lxml.html.document_fromstring((root / "bookindex.html").read_bytes())
    terms: dict[str, set[str]] = {}

    def entry(dt) -> tuple[str, set[str]]:  # noqa: ANN001
        text = " ".join((dt.text or "").split()).rstrip(", ")
        pages = {a.get("href").split("#", 1)[0] for a in dt.xpath("./a[@class='indexterm'][@href]")}
        return text, pages

    for dt in doc.xpath("//div[@class='index']//dl/dt[not(ancestor::dd)]"):
        head, pages = entry(dt)
        if head and pages:
            terms.setdefault(head, set()).update(pages)
        dd = dt.getnext()
        for sub in dd.xpath("./dl/dt") if dd is not None and dd.tag == "dd" else ():
            text, sub_pages = entry(sub)
            if head and text and sub_pages:
                terms.setdefault(f"{head} {text}", set()).update(sub_pages)
    return terms


def named_queries(corpus: str, names: dict[str, set[str]], n: int) -> list[dict]:
    picked = sorted(random.Random(SEED).sample(sorted(names), min(n, len(names))))
    return [{"corpus": corpus, "kind": "symbol", "query": q, "targets": sorted(names[q])} for q in picked]


GENERATORS = {
    "git": git_variables,
    "docbook-params": docbook_parameters,
    "doxygen": doxygen_names,
    "postgresql": postgresql_names,
}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("corpus")
    parser.add_argument("root", type=Path)
    parser.add_argument("--generator", choices=["sphinx", *GENERATORS], default="sphinx")
    parser.add_argument("--symbols", type=int, default=100)
    parser.add_argument("--terms", type=int, default=150)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "queries")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.generator != "sphinx":
        sets = [("symbols", named_queries(args.corpus, GENERATORS[args.generator](args.root), args.symbols))]
        if (args.root / "bookindex.html").is_file():  # a DocBook book's index: its terms too
            terms = docbook_index_terms(args.root)
            names = sorted(t for t in terms if len(t) <= 120)
            picked = sorted(random.Random(SEED).sample(names, min(args.terms, len(names))))
            rows = [
                {"corpus": args.corpus, "kind": "index_term", "query": q, "targets": sorted(terms[q])} for q in picked
            ]
            sets.append(("terms", rows))
        for kind, rows in sets:
            path = args.out / f"{args.corpus}-{kind}.jsonl"
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
            print(f"{path}: {len(rows)} queries")
        return
    for kind, rows in (
        ("symbols", symbol_queries(args.corpus, args.root, args.symbols)),
        ("terms", term_queries(args.corpus, args.root, args.terms)),
    ):
        path = args.out / f"{args.corpus}-{kind}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{path}: {len(rows)} queries")


if __name__ == "__main__":
    main(sys.argv[1:])
