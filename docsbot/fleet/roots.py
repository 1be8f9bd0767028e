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
   directory). Registry pages and retired hosts (pythonhosted.org) are never roots; "product", "REST API",
   "contributing", "installation" documentation is not the package's; a URL shortener (``aka.ms``) the README names
   as the documentation is chosen as a redirect, which only a probe can follow.
2. **One part → its tree**: a URL inside a version tree (``/en/stable/…``, ``/docs/validation/latest/get-started/``,
   ``/doc/stable/release``) stands for the tree (the path through its last version segment).
3. **The docs' root over one part**: a same-host directory above it that the metadata names as the documentation
   (a README "User guide" link above an API reference) and that is not a directory of versions is taken instead.
4. **One version, not every one**: a directory under which the metadata shows version trees (``/`` with
   ``/en/stable/…`` beneath, ``/doc/`` with ``/doc/stable/…``) becomes its tree: stable, latest, current, the
   newest numbered, then the development ones. A Read the Docs host's root (``*.readthedocs.io``, or a host whose
   ``/page/`` links show Read the Docs' default-version redirect) with no tree in sight becomes ``/en/latest/``,
   the tree every multi-version project has (a probe corrects it when the host can be reached).
5. **A directory is a directory**: a last segment that names a directory (a version, ``doc``, ``docs``, ``api``,
   a programming language, the package's name: ``…/docs/python``, ``…/en/7.17.0``, ``docs.astral.sh/uv``) gets its
   trailing slash, since docsbot's crawl scope is the root's directory (``/docs/`` would take the siblings); any
   other name may be a page (``…/transformers/index``, ``PyYAMLDocumentation``) and stays as it is.

:func:`find_root` returns a :class:`Choice`, with one note per rule that applied (what it chose, from which label or
README line); ``None`` when the metadata names nothing usable (the caller asks for ``--url``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

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

# Never a documentation root: the registries' own pages, URL shorteners (a root that redirects to another host
# leaves the crawl's scope), and PyPI's retired documentation host.
_REDIRECTORS = ("aka.ms", "bit.ly", "goo.gl", "t.co", "tinyurl.com", "git.io", "go.microsoft.com")
_NOT_ROOTS = (
    *_REDIRECTORS, "pypi.org", "pypi.python.org", "npmjs.com", "www.npmjs.com", "npmjs.org", "crates.io",
    "libraries.io", "anaconda.org", "pepy.tech", "pypistats.org", "pythonhosted.org", "img.shields.io", "shields.io",
    "raw.githubusercontent.com", "user-images.githubusercontent.com", "readthedocs.org", "codecov.io",
    "app.codecov.io", "discord.gg", "discord.com", "twitter.com", "x.com", "gitter.im", "opencollective.com",
    "tidelift.com", "youtube.com", "www.youtube.com", "youtu.be",
)  # fmt: skip
_RTD_HOSTS = (".readthedocs.io", ".readthedocs.org", ".rtfd.io")
_IMAGE = re.compile(r"\.(?:svg|png|gif|jpe?g|webp|ico)(?:[?#]|$)", re.I)
# A version tree's segment: a release (3, 3.11, 2.31.0, v4, 4.x, v5.24.0, 21) or an alias.
_RELEASE = re.compile(r"^v?\d+(?:\.\d+){0,3}(?:\.x)?$|^v?\d+\.x$", re.I)
_ALIASES = ("stable", "latest", "current", "master", "main", "dev", "next", "nightly")
_DEVELOPMENT = ("master", "main", "dev", "next", "nightly")
_LANGUAGE = re.compile(r"^[a-z]{2}(?:[-_][a-z]{2,4})?$")
_DOC_DIRS = ("doc", "docs", "documentation")
_DIRECTORY_NAMES = frozenset((
    *_DOC_DIRS, "api", "apis", "reference", "manual", "guide", "guides", "handbook", "python", "py", "js",
    "javascript", "typescript", "node", "nodejs", "java", "cpp", "c", "csharp", "dotnet", "go", "golang", "rust", "r",
    "ruby", "php", "swift", "kotlin", "scala", "julia", "matlab",
))  # fmt: skip
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
    root is a layout's usual tree that nothing in the metadata shows (Read the Docs' /en/latest/), ``guessed`` with
    the root before the guess (``unguessed``), for a probe to fall back to."""

    url: str
    kind: str
    notes: list[str] = field(default_factory=list)
    max_depth: int | None = None
    source: Candidate | None = None
    guessed: bool = False
    unguessed: str | None = None


# --------------------------------------------------------------------------------------------- URLs


def _usable(url: str) -> bool:
    """An http(s) URL that may be a documentation root (not a registry page, a shortener, an image)."""
    if not url.startswith(("http://", "https://")) or _IMAGE.search(url):
        return False
    host = _host(url)
    return bool(host) and not any(host == h or host.endswith("." + h) for h in _NOT_ROOTS)


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def _is_version(segment: str) -> bool:
    return bool(_RELEASE.match(segment)) or segment.lower() in _ALIASES


def as_directory(url: str, name: str = "") -> str:
    """``url`` as a crawl root: a host without a path gets ``/``; a last segment without an extension gets its
    trailing slash when it names a directory: a version (``…/en/7.17.0``), a documentation directory (``…/doc``,
    ``…/docs``, ``…/api``), a programming language (``…/docs/python``: its siblings are ``/docs/cpp/``...), or the
    package's ``name`` (``https://docs.astral.sh/uv``); any other name may be a page (``…/transformers/index``,
    ``…/docs/getting-started``, a wiki's ``PyYAMLDocumentation``) and stays as it is."""
    parts = urlsplit(url)
    path = parts.path or "/"
    last = path.rsplit("/", 1)[-1].lower()
    names = {name.lower(), name.lower().rsplit("/", 1)[-1].removeprefix("@")} - {""}
    if last and (_is_version(last) or last in _DIRECTORY_NAMES or last in names):
        path += "/"
    return urlunsplit(parts._replace(path=path))


def version_tree(url: str) -> str | None:
    """The version tree ``url`` is inside, through its last version segment (``…/en/stable/usage/index.html`` →
    ``…/en/stable/``; ``…/docs/validation/latest/get-started/`` → ``…/docs/validation/latest/``), or ``None``."""
    parts = urlsplit(url)
    segments = _segments(parts.path)
    for i in range(len(segments) - 1, -1, -1):
        if _is_version(segments[i]):
            return urlunsplit(parts._replace(path="/" + "/".join(segments[: i + 1]) + "/", query="", fragment=""))
    return None


def _trees_below(directory: str, evidence: list[Link]) -> list[tuple[str, str, Link]]:
    """The version trees the ``evidence`` shows directly below ``directory`` (a version segment right under it,
    after a language code or a ``doc``/``docs``/``documentation`` directory): ``(tree URL, segment, link)``."""
    base = urlsplit(directory)
    out = []
    for link in evidence:
        parts = urlsplit(link.url)
        if (parts.hostname or "").lower() != (base.hostname or "").lower() or not parts.path.startswith(base.path):
            continue
        rest = _segments(parts.path[len(base.path) :])
        prefix: list[str] = []
        while rest[:-1] and (rest[0].lower() in _DOC_DIRS or _LANGUAGE.match(rest[0])) and len(prefix) < 2:
            prefix.append(rest.pop(0))
        if not rest or not _is_version(rest[0]):
            continue
        if len(rest) == 1 and not parts.path.endswith("/") and "." in rest[0] and not _RELEASE.match(rest[0]):
            continue  # a file named like a version
        tree = urljoin(directory, "/".join([*prefix, rest[0]]) + "/")
        out.append((tree, rest[0], link))
    return out


def _tree_rank(segment: str) -> tuple[int, tuple[int, ...]]:
    """Which tree to take when several are shown: stable, latest, current, then the newest release, then the
    development aliases."""
    low = segment.lower()
    for rank, alias in enumerate(("stable", "latest", "current")):
        if low == alias:
            return (0, (-rank,))
    if _RELEASE.match(low):
        return (1, tuple(int(n) for n in re.findall(r"\d+", low)))
    return (-1, (-_DEVELOPMENT.index(low) if low in _DEVELOPMENT else 0,))


def versioned_roots(root: str, version: str, evidence: list[Link] = ()) -> list[str]:
    """Where the tree of ``version`` would be on the host of ``root``, most likely first: the version segment of
    ``root`` replaced (``/en/stable/`` → ``/en/2.31.0/``, ``/docs/v4/`` → ``/docs/v5/``), Read the Docs'
    ``/LANG/VERSION/`` on a host root, or a ``doc``/``docs`` directory's ``/doc/2.1/``. The names tried are the
    version's own shapes (``2.31.0``, ``v2.31.0``, ``2.31``, ``v2.31``, ``2.31.x``, ``2``, ``v2``, ``2.x``), those the
    ``evidence`` shows on that host first (``/1.10/`` beside the root: ``X.Y`` first). ``[]`` for a repository's
    page or a root with no versioned layout."""
    if is_repository(root):
        return []
    parts = version.split(".")
    names = [version, f"v{version}"]
    if len(parts) > 2:
        minor = ".".join(parts[:2])
        names += [minor, f"v{minor}", f"{minor}.x"]
    if len(parts) > 1:
        names += [parts[0], f"v{parts[0]}", f"{parts[0]}.x", f"v{parts[0]}.x"]
    shapes = [_shape(seg) for link in evidence if _host(link.url) == _host(root)
              for seg in _segments(urlsplit(link.url).path) if _RELEASE.match(seg)]  # fmt: skip
    names.sort(key=lambda n: _shape(n) not in shapes)  # stable sort: the host's own shapes first
    names = list(dict.fromkeys(names))
    split = urlsplit(root)
    segments = _segments(split.path)
    index = next((i for i in range(len(segments) - 1, -1, -1) if _is_version(segments[i])), None)
    if index is not None:
        tail = "/" if split.path.endswith("/") or index == len(segments) - 1 else ""
        return [urlunsplit(split._replace(path="/" + "/".join([*segments[:index], n, *segments[index + 1 :]]) + tail))
                for n in names]  # fmt: skip
    host = _host(root)
    if (host.endswith(_RTD_HOSTS) or not segments) and not segments[1:]:
        lang = segments[0] if segments and _LANGUAGE.match(segments[0]) else "en"
        origin = urlunsplit(split._replace(path="", query="", fragment=""))
        return [f"{origin}/{lang}/{n}/" for n in names]
    if segments and segments[-1].lower() in _DOC_DIRS:
        return [f"{as_directory(root)}{n}/" for n in names]
    return []


def has_versioned_layout(root: str) -> bool:
    """Whether ``root`` shows where a version's tree would be without asking its host: a version segment in its
    path (``/en/stable/``, ``/docs/v4/``), or a Read the Docs domain's root (``/en/VERSION/``)."""
    return version_tree(root) is not None or (_host(root).endswith(_RTD_HOSTS) and urlsplit(root).path in ("", "/"))


def _shape(segment: str) -> str:
    """``v2.31`` → ``vN.N``: how a host names its trees."""
    return re.sub(r"\d+", "N", segment.lower())


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
    candidates: list[Candidate], evidence: list[Link], registry: str = "the registry", name: str = ""
) -> Choice | None:
    """The documentation root of package ``name`` from its ``candidates`` (by weight; among equals the shallower,
    then the first found), refined by the ``evidence`` as the module's rules say; ``None`` when no candidate is
    usable. ``registry`` names the source in the notes (``pypi's``). A URL shortener's link (``aka.ms``) is chosen
    as it is, kind ``redirect``: where it leads is the root, which only a probe can tell."""
    usable = [c for c in candidates if _usable(c.url) or (_is_redirector(c.url) and c.weight >= 90)]
    # among equals the shallower documentation URL, the deeper repository page (a monorepo's package directory)
    usable.sort(key=lambda c: (-c.weight, len(_segments(urlsplit(c.url).path)) * (-1 if c.kind == "repository" else 1)))
    if not usable:
        return None
    best = usable[0]
    if _is_redirector(best.url):
        note = f"{best.url}: from {registry} {best.where}; a redirector: the root is where it leads"
        return Choice(best.url, "redirect", [note], source=best)
    if best.kind == "repository" or is_repository(best.url):
        note = f"{best.url}: from {registry} {best.where}; a repository's page: its README is the documentation"
        return Choice(best.url, "repository", [note + " (max_depth 0: that page alone)"], max_depth=0, source=best)
    choice = Choice(best.url, best.kind, [f"{best.url}: from {registry} {best.where}"], source=best)
    if best.url.startswith("http://") and any(
        urlsplit(u).scheme == "https" and _host(u) == _host(best.url) for u in [c.url for c in usable] + [
            link.url for link in evidence]
    ):  # fmt: skip
        choice.url = "https://" + best.url.removeprefix("http://")
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
        and choice.url.startswith(d) and choice.url != d and not _trees_below(d, evidence)
    ]  # fmt: skip
    if above:
        named, directory = min(above, key=lambda pair: len(pair[1]))
        choice.notes.append(
            f"{directory}: the documentation's root, named by {registry} {named.where}, above {choice.url} (one part)"
        )
        choice.url = directory
    if version_tree(choice.url) is not None or not choice.url.endswith("/"):
        return choice
    trees = _trees_below(choice.url, evidence)  # rule 4: one version, not every one
    if trees:
        tree, segment, link = max(trees, key=lambda t: _tree_rank(t[1]))
        if segment.lower() not in _DEVELOPMENT or _LANGUAGE.match(_segments(urlsplit(tree).path)[-2:][0]):
            choice.notes.append(
                f"{tree}: one tree, not every version under {choice.url} ({registry} {link.where} shows it: {link.url})"
            )
            choice.url = tree
            return choice
    if _is_rtd(choice.url, evidence):
        origin = urlunsplit(urlsplit(choice.url)._replace(path="", query="", fragment=""))
        choice.notes.append(
            f"{origin}/en/latest/: a Read the Docs host's root holds every version; /en/latest/ is the tree every "
            "multi-version project has (a guess: nothing in the metadata shows it)"
        )
        choice.guessed, choice.unguessed, choice.url = True, choice.url, f"{origin}/en/latest/"
    return choice


def _is_redirector(url: str) -> bool:
    return _host(url) in _REDIRECTORS


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
        if _DOCS_NAV.match(text) and ours and _usable(url) and not _same_directory(url, home):
            return url
    return None


def _same_directory(a: str, b: str) -> bool:
    """Whether two URLs are in one directory of one host (a crawl of one covers the other's)."""
    pa, pb = urlsplit(a).path or "/", urlsplit(b).path or "/"
    return urlsplit(a).netloc == urlsplit(b).netloc and pa[: pa.rfind("/") + 1] == pb[: pb.rfind("/") + 1]


def _is_rtd(url: str, evidence: list[Link]) -> bool:
    """Whether ``url`` is the root of a Read the Docs host: one of its domains, or a host whose ``/page/`` links
    (Read the Docs' redirect to a project's default version) the metadata shows."""
    parts = urlsplit(url)
    if parts.path not in ("", "/"):
        return False
    host = (parts.hostname or "").lower()
    if host.endswith(_RTD_HOSTS):
        return True
    return any(_host(link.url) == host and urlsplit(link.url).path.startswith("/page/") for link in evidence)
