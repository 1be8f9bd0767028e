"""From a package's registry metadata to the root of its documentation (pure: metadata in, a root and its reasons
out; :mod:`docsbot.fleet.registry` fetches the metadata and :mod:`docsbot.fleet.probe` asks the documentation
host, when it can be reached).

Every URL the metadata names is read: PyPI's ``project_urls`` under any label, ``home_page``, ``docs_url``; npm's
``homepage``, ``repository`` (with its monorepo ``directory``) and ``bugs``; and the links of the README served
with it (PyPI's ``info.description``, npm's ``readme``: Markdown, reStructuredText or HTML), with their text,
line and section heading (:mod:`docsbot.fleet.readme` reads them). Each is a **candidate** (``docs``: a
documentation label or a README line that names the documentation; ``home``: a home page; ``repository``) or
**evidence** (any other URL: a changelog or an install page shows how its host lays out its trees). The rules, in
order:

1. The best candidate: a documentation label, then what the README's head (its first 60 lines, or a section about
   documentation) names as the documentation ("Documentation: …", "[Docs](…)", "documentation is available at
   …"), then a home page, then the repository's page (its README: that page alone; a monorepo's package
   directory); among equals, the one whose path names the package (``graphql.org/graphql-js/``, not the
   foundation's ``graphql.org/``). Registry pages and retired hosts (pythonhosted.org) are never roots;
   "product", "REST API", "contributing", "installation" documentation is not the package's; a URL shortener
   (``aka.ms``) the README names as the documentation is chosen as a redirect, which only a probe can follow.
   A home page that does not name the package while its repository does is another project's site (tslib's is
   TypeScript's): it and the README's links there rank below the repository. A repository's page gives way to the
   project's own site when the README links one (a host named as the package is: ``webpack.js.org``).
2. **One part → its tree**: a URL inside a version tree (``/en/stable/…``, ``/docs/validation/latest/get-started/``,
   ``/doc/stable/release``) stands for the tree (the path through its last version segment).
3. **The docs' root over one part**: a same-host directory above it that the metadata names as the documentation
   (a README "User guide" link above an API reference) and that is not a directory of versions is taken instead;
   else the documentation directory a page or part is in (``/docs/handbook/intro.html`` → ``/docs/``), or the
   project's own site a part at its top belongs to (``rollupjs.org/introduction/`` → ``rollupjs.org/``).
4. **One version, not every one**: a directory under which the metadata shows version trees (``/`` with
   ``/en/stable/…`` beneath, ``/doc/`` with ``/doc/stable/…``) becomes its tree: stable, latest, current, the
   newest numbered, then the development ones; a numbered tree of another major than the release resolved names
   the release's own the same way (``/docs/v3/`` shown for 4.8.4: ``/docs/v4/``). A home (a host's root) whose
   documentation the metadata shows under ``/docs/`` (``/docs/en/`` when every link has that language) or one
   language's tree (``/en/``) becomes that directory. A Read the Docs host's root (``*.readthedocs.io``, or a host
   whose ``/page/`` links show Read the Docs' default-version redirect) with no tree in sight becomes
   ``/en/latest/``, the tree every multi-version project has. A probe that finds an inferred root not there falls
   back to the one it was inferred from.
5. **A directory is a directory**: a last segment that names a directory (a version, ``doc``, ``docs``, ``api``,
   a programming language, the package's name: ``…/docs/python``, ``…/en/7.17.0``, ``docs.astral.sh/uv``) gets its
   trailing slash, since docsbot's crawl scope is the root's directory (``/docs/`` would take the siblings); any
   other name may be a page (``…/transformers/index``, ``PyYAMLDocumentation``) and stays as it is.

:mod:`docsbot.fleet.layout` holds how hosts lay out their URLs (trees, directories, the project's own site).
:func:`find_root` returns a :class:`Choice`, with one note per rule that applied (what it chose, from which label or
README line); ``None`` when the metadata names nothing usable (the caller asks for ``--url``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from docsbot.fleet.layout import (
    DEVELOPMENT,
    LANGUAGE,
    RELEASE,
    as_directory,
    can_be_root,
    docs_directory_of,
    docs_directory_shown,
    has_versioned_layout,
    is_read_the_docs,
    is_redirector,
    names_package,
    own_site,
    path_names_package,
    path_segments,
    same_directory,
    site_of_part,
    tree_rank,
    trees_below,
    version_tree,
    versioned_roots,
)
from docsbot.fleet.readme import (
    HTML_A,
    REPOSITORY_HOSTS,
    Link,
    clean_url,
    is_repository,
    link_text,
    readme_links,
    readme_strength,
)
from docsbot.fleet.readme import host as _host

__all__ = [
    "REPOSITORY_HOSTS",
    "Candidate",
    "Choice",
    "Link",
    "as_directory",
    "docs_link",
    "find_root",
    "has_versioned_layout",
    "is_repository",
    "npm_candidates",
    "pypi_candidates",
    "readme_links",
    "version_tree",
    "versioned_roots",
]

# Words of a documentation label or link; labels are compared as PyPI normalizes them (lower case, no punctuation).
_DOCS_WORDS = re.compile(
    r"\b(?:docs?|documentation|readthedocs|rtd|manual|handbook|user\s*guide|guide|reference|api\s+reference|tutorial)\b",
    re.I,
)
_CHANGELOG = re.compile(r"\b(?:change\s*log|changes|release\s*notes?|history|news|what'?s\s*new|releases)\b", re.I)
_HOME = re.compile(r"\b(?:home\s*page|homepage|home|website|web\s*site|site)\b", re.I)
_SOURCE = re.compile(r"\b(?:source(?:\s*code)?|code|repository|repo|github|gitlab|git)\b", re.I)


@dataclass(frozen=True)
class Candidate:
    """A possible root: ``url`` as the metadata names it, its ``kind`` (``docs``, ``home``, ``repository``),
    ``weight`` (higher first: documentation labels 100, a README line naming the documentation 90, or 60 when
    only its text or section does, home pages 40, ``docs_url`` 30, repositories 10) and ``where`` it came from."""

    url: str
    kind: str
    weight: int
    where: str


@dataclass
class Choice:
    """The documentation root found: ``url``, ``kind`` of the candidate it came from (``source``), ``notes`` (why,
    one line per rule that applied), ``max_depth`` (0 for a repository's page: its README alone), and, when the
    root is one the metadata does not name but a rule infers (Read the Docs' /en/latest/, the docs directory a home
    holds), ``guessed`` with the root before the guess (``unguessed``), for a probe to fall back to, saying why the
    guess may miss (``guess_why``)."""

    url: str
    kind: str
    notes: list[str] = field(default_factory=list)
    max_depth: int | None = None
    source: Candidate | None = None
    guessed: bool = False
    unguessed: str | None = None
    guess_why: str = ""

    def guess(self, url: str, note: str, why: str) -> None:
        """Move to ``url``, which a rule infers (``note`` says how); a probe that finds it not there falls back to
        the root before, saying ``why`` it may not be."""
        self.notes.append(note)
        self.guessed, self.unguessed, self.guess_why, self.url = True, self.url, why, url


# --------------------------------------------------------------------------------------------- candidates


def _label_kind(label: str) -> str | None:
    """``docs``, ``home``, ``repository``, or ``None`` (evidence only: a changelog, a tracker, funding)."""
    if _CHANGELOG.search(label):
        return None
    if _DOCS_WORDS.search(label):
        return "docs"
    if _HOME.search(label):
        return "home"
    if _SOURCE.search(label):
        return "repository"
    return None


def pypi_candidates(meta: dict[str, Any]) -> tuple[list[Candidate], list[Link]]:
    """The candidates of a PyPI JSON answer (https://docs.pypi.org/api/json/) and the evidence links: every
    ``project_urls`` label, ``home_page``, ``docs_url`` and the README (``info.description``)."""
    info = meta.get("info") or {}
    candidates: list[Candidate] = []
    evidence: list[Link] = []
    for label, url in (info.get("project_urls") or {}).items():
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        url = clean_url(url)
        where = f"project_urls {label.strip()!r}"
        evidence.append(Link(url, label, where=where))
        kind = _label_kind(label)
        if kind == "home" and is_repository(url):
            kind = "repository"
        if kind is not None:
            candidates.append(Candidate(url, kind, {"docs": 100, "home": 40, "repository": 10}[kind], where))
    if isinstance(info.get("home_page"), str) and info["home_page"].startswith(("http://", "https://")):
        url = clean_url(info["home_page"])
        kind = "repository" if is_repository(url) else "home"
        candidates.append(Candidate(url, kind, 40 if kind == "home" else 10, "home_page"))
        evidence.append(Link(url, "home_page", where="home_page"))
    if isinstance(info.get("docs_url"), str) and info["docs_url"].startswith(("http://", "https://")):
        candidates.append(Candidate(clean_url(info["docs_url"]), "docs", 30, "docs_url"))
    readme = info.get("description")
    if isinstance(readme, str) and readme.strip():
        _add_readme(readme, candidates, evidence)
    return candidates, evidence


def _repository_url(value: Any) -> str | None:
    """A repository's web page from npm's ``repository`` (``github:o/r``, ``o/r``, ``git+https://…/r.git``,
    ``git@host:o/r.git``, ``{"url": …, "directory": …}``: a monorepo's package directory, as GitHub shows it)."""
    url = value.get("url") if isinstance(value, dict) else value if isinstance(value, str) else None
    if not url:
        return None
    if re.fullmatch(r"(github:)?[\w.-]+/[\w.-]+", url):  # npm's shorthand for a GitHub repository
        url = "https://github.com/" + url.removeprefix("github:")
    url = re.sub(r"^git\+", "", url)
    url = re.sub(r"^git://", "https://", url)
    url = re.sub(r"^ssh://(?:[^@/]+@)?", "https://", url)
    url = re.sub(r"^git@([^:]+):", r"https://\1/", url)
    url = re.sub(r"\.git$", "", url)
    if not url.startswith(("http://", "https://")):
        return None
    directory = value.get("directory") if isinstance(value, dict) else None
    if isinstance(directory, str) and directory.strip("/") and _host(url) == "github.com":
        return f"{url.rstrip('/')}/tree/HEAD/{directory.strip('/')}"
    return url + "#readme"


def npm_candidates(meta: dict[str, Any]) -> tuple[list[Candidate], list[Link]]:
    """The candidates of an npm registry document's release (``homepage``, ``repository``, ``bugs``: merge the
    release's fields over the document's) and the evidence links, with the README's (``readme``)."""
    candidates: list[Candidate] = []
    evidence: list[Link] = []
    repository = _repository_url(meta.get("repository"))
    bugs = meta.get("bugs")
    bugs = bugs.get("url") if isinstance(bugs, dict) else bugs
    tracker = re.match(r"https://(?:www\.)?github\.com/([^/]+/[^/#?]+)", bugs) if isinstance(bugs, str) else None
    if repository is None and tracker:  # the issue tracker's repository (https://github.com/o/r/issues)
        repository = f"https://github.com/{tracker.group(1)}#readme"
    homepage = meta.get("homepage")
    if isinstance(homepage, str) and homepage.startswith(("http://", "https://")):
        url = clean_url(homepage)
        kind = "repository" if is_repository(url) else "home"
        candidates.append(Candidate(url, kind, 40 if kind == "home" else 10, "homepage"))
        evidence.append(Link(url, "homepage", where="homepage"))
    if repository:
        candidates.append(Candidate(repository, "repository", 10, "repository"))
    readme = meta.get("readme")
    if isinstance(readme, str) and readme.strip() and not readme.startswith("ERROR: No README"):
        _add_readme(readme, candidates, evidence)
    return candidates, evidence


def _add_readme(readme: str, candidates: list[Candidate], evidence: list[Link]) -> None:
    """The README's links as evidence, and as candidates those it names as the documentation in its head or a
    section about documentation (90 when it says so, 60 when only its text or section speaks of docs)."""
    for link in readme_links(readme):
        evidence.append(link)
        strength = readme_strength(link) if link.prominent else 0
        if strength and not is_repository(link.url):
            said = (link.text or link.line)[:100]
            candidates.append(Candidate(link.url, "docs", 90 if strength == 2 else 60, f"README: {said!r}"))


# --------------------------------------------------------------------------------------------- choosing


def find_root(
    candidates: list[Candidate],
    evidence: list[Link],
    registry: str = "the registry",
    name: str = "",
    version: str | None = None,
) -> Choice | None:
    """The documentation root of package ``name`` (at release ``version``, when known) from its ``candidates`` (by
    weight; among equals the one whose path names the package, the shallower, then the first found), refined by the
    ``evidence`` as the module's rules say; ``None`` when no candidate is usable. ``registry`` names the source in
    the notes (``pypi's``). A URL shortener's link (``aka.ms``) is chosen as it is, kind ``redirect``: where it
    leads is the root, which only a probe can tell."""
    usable = [c for c in candidates if can_be_root(c.url) or (is_redirector(c.url) and c.weight >= 90)]
    weights, elsewhere = _another_projects_site(usable, name)
    # among equals the one whose path names the package (graphql.org/graphql-js/, not the foundation's
    # graphql.org/), the shallower documentation URL, the deeper repository page (a monorepo's package directory)
    usable.sort(key=lambda c: (
        -weights[id(c)], c.kind != "repository" and not path_names_package(c.url, name),
        len(path_segments(urlsplit(c.url).path)) * (-1 if c.kind == "repository" else 1),
    ))  # fmt: skip
    if not usable:
        return None
    best = usable[0]
    if is_redirector(best.url):
        note = f"{best.url}: from {registry} {best.where}; a redirector: the root is where it leads"
        return Choice(best.url, "redirect", [note], source=best)
    if best.kind == "repository" or is_repository(best.url):
        site = own_site(evidence, name)
        note = f"{best.url}: from {registry} {best.where}; a repository's page: its README is the documentation"
        if site is None:
            notes = [note + " (max_depth 0: that page alone)", *elsewhere]
            return Choice(best.url, "repository", notes, max_depth=0, source=best)
        root, link = site
        notes = [f"{root}: the project's own site (its host names {name}), which its README links ({link.url}); "
                 f"{registry} {best.where} names only the repository, {best.url}"]  # fmt: skip
        choice = Choice(root, "home", notes, source=best)
    else:
        choice = Choice(best.url, best.kind, [f"{best.url}: from {registry} {best.where}", *elsewhere], source=best)
    if choice.url.startswith("http://") and any(
        urlsplit(u).scheme == "https" and _host(u) == _host(choice.url) for u in [c.url for c in usable] + [
            link.url for link in evidence]
    ):  # fmt: skip
        choice.url = "https://" + choice.url.removeprefix("http://")
        choice.notes.append(f"{choice.url}: the metadata names its host over https too")
    named = choice.url
    tree = version_tree(named)
    if tree is not None:  # rule 2: one part of a version tree stands for the tree
        if tree != named:
            choice.notes.append(f"{tree}: the version tree {named} is in")
        choice.url = tree
    elif (directory := as_directory(named, name)) != named:  # rule 5
        if urlsplit(named).path not in ("", "/"):
            choice.notes.append(f"{directory}: {named} names a directory (the crawl's scope is its directory)")
        choice.url = directory
    above = [  # rule 3: a directory above it that the metadata names as the documentation, not one of versions
        (c, d) for c in usable
        if c is not best and c.kind == "docs" and c.weight >= 90 and _host(c.url) == _host(choice.url)
        and version_tree(c.url) is None and (d := as_directory(c.url, name)).endswith("/")
        and choice.url.startswith(d) and choice.url != d and not trees_below(d, evidence)
        and (path_names_package(d, name) or not path_names_package(choice.url, name))
    ]  # fmt: skip
    if above:
        named, directory = min(above, key=lambda pair: len(pair[1]))
        choice.notes.append(
            f"{directory}: the documentation's root, named by {registry} {named.where}, above {choice.url} (one part)"
        )
        choice.url = directory
    elif version_tree(choice.url) is None and (docs := docs_directory_of(choice.url, name)) is not None:
        note = f"{docs}: the documentation's directory, of which {choice.url} is one part"
        choice.guess(docs, note, "the directory has no page of its own")
    elif version_tree(choice.url) is None and (site := site_of_part(choice.url, name)) is not None:
        choice.guess(site, f"{site}: the project's own site, of which {choice.url} is one part", "no home page")
    if version_tree(choice.url) is not None or not choice.url.endswith("/"):
        return choice
    if _tree_below(choice, evidence, registry, version):
        return choice
    if urlsplit(choice.url).path in ("", "/") and (shown := docs_directory_shown(choice.url, evidence)) is not None:
        docs, link = shown  # rule 4: a home whose documentation lives under a directory the metadata shows
        note = f"{docs}: the documentation under the home {choice.url} ({registry} {link.where} shows it: {link.url})"
        choice.guess(docs, note, "the directory has no page of its own")
        _tree_below(choice, evidence, registry, version)
        return choice
    if is_read_the_docs(choice.url, evidence):
        origin = urlunsplit(urlsplit(choice.url)._replace(path="", query="", fragment=""))
        note = (
            f"{origin}/en/latest/: a Read the Docs host's root holds every version; /en/latest/ is the tree every "
            "multi-version project has (a guess: nothing in the metadata shows it)"
        )
        choice.guess(f"{origin}/en/latest/", note, "a one-version project")
    return choice


def _tree_below(choice: Choice, evidence: list[Link], registry: str, version: str | None) -> bool:
    """Rule 4, one version and not every one: the tree the evidence shows below ``choice.url`` (stable, latest,
    current, the newest release, then a development alias after a language code) replaces it; a release's tree
    of another major than ``version`` is the host's way of naming trees, and the release's own is named the same
    way (``/docs/v3/`` shown, 4.8.4 resolved: ``/docs/v4/``, a guess a probe checks). Whether it did."""
    trees = trees_below(choice.url, evidence)
    if not trees:
        return False
    tree, segment, link = max(trees, key=lambda t: tree_rank(t[1]))
    if segment.lower() in DEVELOPMENT and not LANGUAGE.match(path_segments(urlsplit(tree).path)[-2:][0]):
        return False
    shown = f"{registry} {link.where} shows it: {link.url}"
    if version and RELEASE.match(segment) and _major(segment) != _major(version):
        own = next(iter(versioned_roots(tree, version, [Link(tree)])), None)
        if own is not None:
            note = f"{own}: the tree of {version}, named as the host names {tree} ({shown}; a guess)"
            choice.url = urljoin(tree, "..")  # what a probe falls back to: the directory of the trees
            choice.guess(own, note, f"no tree of {version} named so")
            return True
    choice.notes.append(f"{tree}: one tree, not every version under {choice.url} ({shown})")
    choice.url = tree
    return True


def _major(version: str) -> int | None:
    m = re.search(r"\d+", version)
    return int(m.group()) if m else None


def _another_projects_site(usable: list[Candidate], name: str) -> tuple[dict[int, int], list[str]]:
    """The candidates' weights, and a note when they changed: a home page whose host and path do not name the
    package, while its repository does (a helper package's home page is its parent project's: tslib's is
    TypeScript's), is another project's site; it and the README's links on that host rank below the repository."""
    weights = {id(c): c.weight for c in usable}
    home = next((c for c in usable if c.kind == "home"), None)
    repository = next((c for c in usable if c.kind == "repository" and names_package(c.url, name)), None)
    if not name or home is None or repository is None or names_package(home.url, name):
        return weights, []
    for c in usable:
        if c.kind != "repository" and _host(c.url) == _host(home.url):
            weights[id(c)] = min(c.weight, repository.weight - 1)
    return weights, [f"{home.url} ({home.where}) does not name {name} and its repository does: another project's "
                     "site, ranked below the repository"]  # fmt: skip


_DOCS_NAV = re.compile(r"^(?:api\s+)?(?:docs|documentation)$", re.I)


def docs_link(home: str, html: bytes | str) -> str | None:
    """The documentation a home page links as such: an anchor whose text is "Docs", "Documentation" or "API
    Documentation", on the home's host or another host of its domain (``docs.cypress.io`` for ``cypress.io``,
    ``api.jquery.com`` for ``jquery.com``), outside the home's directory; ``None`` when there is none. A marketing
    home names its docs this way in its navigation."""
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    domain = ".".join(_host(home).split(".")[-2:])
    for m in HTML_A.finditer(html):
        url, text = clean_url(urljoin(home, m.group(1).strip())), link_text(m.group(2))
        host = _host(url)
        ours = host == domain or host.endswith("." + domain)
        if _DOCS_NAV.match(text) and ours and can_be_root(url) and not same_directory(url, home):
            return url
    return None
