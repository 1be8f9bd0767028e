"""How documentation hosts lay out their URLs, and what a URL says of the project it documents (pure: URLs in,
URLs and answers out), for the root rules of :mod:`docsbot.fleet.roots`.

- **Trees**: a version segment (``3.11``, ``v4``, ``4.x``, ``stable``, ``latest``) names a tree of one release
  (:func:`version_tree`); a directory with trees below it holds every version (:func:`trees_below`); the tree of
  another release is named as the host names those it shows (:func:`versioned_roots`).
- **Directories**: a last segment that names a directory gets its slash (:func:`as_directory`); a page inside a
  ``doc``/``docs``/``documentation`` directory, or one part of it (``handbook/``, ``api/``), stands for the
  directory (:func:`docs_directory_of`); a home page whose documentation the metadata shows under such a directory,
  or under one language's tree (``/en/``), has it there (:func:`docs_directory_shown`).
- **The project's own site**: a host named as the package is (a label, affixes aside: ``webpack.js.org``,
  ``threejs.org``, ``typescriptlang.org``) is its project's (:func:`names_package`); one part at its top
  (``rollupjs.org/introduction/``) stands for the site (:func:`site_of_part`); a README's links to it make it the
  site when the metadata names only a repository (:func:`own_site`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from docsbot.fleet.readme import host as _host
from docsbot.fleet.readme import is_repository, names_other_docs

if TYPE_CHECKING:
    from docsbot.fleet.readme import Link

__all__ = [
    "DEVELOPMENT",
    "LANGUAGE",
    "RELEASE",
    "as_directory",
    "can_be_root",
    "docs_directory_of",
    "docs_directory_shown",
    "has_versioned_layout",
    "is_read_the_docs",
    "is_redirector",
    "names_package",
    "own_site",
    "path_names_package",
    "path_segments",
    "same_directory",
    "site_of_part",
    "tree_rank",
    "trees_below",
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
RELEASE = re.compile(r"^v?\d+(?:\.\d+){0,3}(?:\.x)?$|^v?\d+\.x$", re.I)
_ALIASES = ("stable", "latest", "current", "master", "main", "dev", "next", "nightly")
DEVELOPMENT = ("master", "main", "dev", "next", "nightly")
LANGUAGE = re.compile(r"^[a-z]{2}(?:[-_][a-z]{2,4})?$")
_DOC_DIRS = ("doc", "docs", "documentation")
_DIRECTORY_NAMES = frozenset((
    *_DOC_DIRS, "api", "apis", "reference", "manual", "guide", "guides", "handbook", "python", "py", "js",
    "javascript", "typescript", "node", "nodejs", "java", "cpp", "c", "csharp", "dotnet", "go", "golang", "rust", "r",
    "ruby", "php", "swift", "kotlin", "scala", "julia", "matlab",
))  # fmt: skip


def can_be_root(url: str) -> bool:
    """An http(s) URL that may be a documentation root (not a registry page, a shortener, an image)."""
    if not url.startswith(("http://", "https://")) or _IMAGE.search(url):
        return False
    host = _host(url)
    return bool(host) and not any(host == h or host.endswith("." + h) for h in _NOT_ROOTS)


def path_segments(path: str) -> list[str]:
    """A URL path's non-empty segments: ``/docs/en/`` → ``["docs", "en"]``."""
    return [s for s in path.split("/") if s]


def _is_version(segment: str) -> bool:
    return bool(RELEASE.match(segment)) or segment.lower() in _ALIASES


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
    segments = path_segments(parts.path)
    for i in range(len(segments) - 1, -1, -1):
        if _is_version(segments[i]):
            return urlunsplit(parts._replace(path="/" + "/".join(segments[: i + 1]) + "/", query="", fragment=""))
    return None


def trees_below(directory: str, evidence: list[Link]) -> list[tuple[str, str, Link]]:
    """The version trees the ``evidence`` shows directly below ``directory`` (a version segment right under it,
    after a language code or a ``doc``/``docs``/``documentation`` directory): ``(tree URL, segment, link)``."""
    base = urlsplit(directory)
    out = []
    for link in evidence:
        parts = urlsplit(link.url)
        if (parts.hostname or "").lower() != (base.hostname or "").lower() or not parts.path.startswith(base.path):
            continue
        rest = path_segments(parts.path[len(base.path) :])
        prefix: list[str] = []
        while rest[:-1] and (rest[0].lower() in _DOC_DIRS or LANGUAGE.match(rest[0])) and len(prefix) < 2:
            prefix.append(rest.pop(0))
        if not rest or not _is_version(rest[0]):
            continue
        if len(rest) == 1 and not parts.path.endswith("/") and "." in rest[0] and not RELEASE.match(rest[0]):
            continue  # a file named like a version
        tree = urljoin(directory, "/".join([*prefix, rest[0]]) + "/")
        out.append((tree, rest[0], link))
    return out


def tree_rank(segment: str) -> tuple[int, tuple[int, ...]]:
    """Which tree to take when several are shown, the highest first: stable, latest, current, then the newest
    release (a README that shows ``/docs/latest/`` and an old ``/docs/2.9.4/`` has its current docs at the former),
    then the development aliases."""
    low = segment.lower()
    for rank, alias in enumerate(("stable", "latest", "current")):
        if low == alias:
            return (2, (-rank,))
    if RELEASE.match(low):
        return (1, tuple(int(n) for n in re.findall(r"\d+", low)))
    return (-1, (-DEVELOPMENT.index(low) if low in DEVELOPMENT else 0,))


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
              for seg in path_segments(urlsplit(link.url).path) if RELEASE.match(seg)]  # fmt: skip
    names.sort(key=lambda n: _shape(n) not in shapes)  # stable sort: the host's own shapes first
    names = list(dict.fromkeys(names))
    split = urlsplit(root)
    segments = path_segments(split.path)
    index = next((i for i in range(len(segments) - 1, -1, -1) if _is_version(segments[i])), None)
    if index is not None:
        tail = "/" if split.path.endswith("/") or index == len(segments) - 1 else ""
        return [urlunsplit(split._replace(path="/" + "/".join([*segments[:index], n, *segments[index + 1 :]]) + tail))
                for n in names]  # fmt: skip
    host = _host(root)
    if (host.endswith(_RTD_HOSTS) or not segments) and not segments[1:]:
        lang = segments[0] if segments and LANGUAGE.match(segments[0]) else "en"
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


def is_redirector(url: str) -> bool:
    return _host(url) in _REDIRECTORS


def is_read_the_docs(url: str, evidence: list[Link]) -> bool:
    """Whether ``url`` is the root of a Read the Docs host: one of its domains, or a host whose ``/page/`` links
    (Read the Docs' redirect to a project's default version) the metadata shows."""
    parts = urlsplit(url)
    if parts.path not in ("", "/"):
        return False
    host = (parts.hostname or "").lower()
    if host.endswith(_RTD_HOSTS):
        return True
    return any(_host(link.url) == host and urlsplit(link.url).path.startswith("/page/") for link in evidence)


def same_directory(a: str, b: str) -> bool:
    """Whether two URLs are in one directory of one host (a crawl of one covers the other's)."""
    pa, pb = urlsplit(a).path or "/", urlsplit(b).path or "/"
    return urlsplit(a).netloc == urlsplit(b).netloc and pa[: pa.rfind("/") + 1] == pb[: pb.rfind("/") + 1]


# --------------------------------------------------------------------------------------------- the project's site

# Words that name no project on their own: a scoped package's generic part (@babel/core, @playwright/test).
_GENERIC_NAMES = frozenset(("core", "test", "tests", "client", "sdk", "lib", "cli", "api", "utils", "types", "js"))
# What a project's host adds to its name: threejs.org, typescriptlang.org, axios-http.com, python-pillow.org
_HOST_AFFIXES = re.compile(r"^(?:python|py|node)|(?:js|lang|http|hq|dev|docs|org)$")
# One part of a site's documentation, which a README may link instead of the whole
_PARTS = frozenset((
    "api", "apis", "reference", "manual", "guide", "guides", "handbook", "tutorial", "tutorials", "introduction",
    "intro", "overview", "learn", "getting-started", "get-started", "quickstart",
))  # fmt: skip


def _name_variants(name: str, strict: bool = False) -> set[str]:
    """How a project's hosts and paths name package ``name``: its name and its scope without punctuation
    (``@babel/core``: ``babel``; ``date-fns``: ``datefns``); unless ``strict``, also without an ecosystem's affixes
    (``python-dateutil``: ``dateutil``, ``solid-js``: ``solid``) or a trailing number (``boto3``: ``boto``)."""
    scope, _, base = name.lower().rpartition("/")
    out: set[str] = set()
    for word in (base, scope.lstrip("@")):
        word = re.sub(r"[^a-z0-9]", "", word)
        variants = (word,) if strict else (word, _HOST_AFFIXES.sub("", word), word.rstrip("0123456789"))
        out.update(v for v in variants if len(v) >= 2)
    return out - _GENERIC_NAMES


def names_package(url: str, name: str, *, path: bool = True, strict: bool = False) -> bool:
    """Whether ``url``'s host (a label, or its labels together: ``day.js.org``) or, with ``path``, one of its path
    segments names package ``name`` (:func:`_name_variants`), a host's affixes aside (``threejs.org``,
    ``typescriptlang.org``). ``strict``: the host's first label or its labels together only (``esbuild.github.io``,
    not ``platform.openai.com``: a company's); else any label, and a label that starts with the name
    (``tornadoweb.org``, ``sphinx-doc.org``, ``docs.celeryq.dev``)."""
    variants = _name_variants(name, strict)
    labels = [re.sub(r"[^a-z0-9]", "", label) for label in _host(url).removeprefix("www.").split(".")]
    tokens = [*(labels[:1] if strict else labels), "".join(labels[:-1]), "".join(labels)]
    if path:
        tokens += [re.sub(r"[^a-z0-9]", "", s.lower()) for s in path_segments(urlsplit(url).path)]
    for token in filter(None, tokens):
        if token in variants or _HOST_AFFIXES.sub("", token) in variants:
            return True
        if not strict and any(len(v) >= 4 and token.startswith(v) for v in variants):
            return True
    return False


def path_names_package(url: str, name: str) -> bool:
    """Whether a segment of ``url``'s path names package ``name`` (``/graphql-js/``, ``/docs/transformers/``)."""
    variants = _name_variants(name)
    for segment in path_segments(urlsplit(url).path):
        token = re.sub(r"[^a-z0-9]", "", segment.lower())
        if token in variants or _HOST_AFFIXES.sub("", token) in variants:
            return True
    return False


def own_site(evidence: list[Link], name: str) -> tuple[str, Link] | None:
    """The root of the project's own site (a host named as package ``name`` is: webpack.js.org) that its README
    links, and the first such link; ``None`` when it links none, or when the README calls what is there a
    service's documentation (its REST API's, a product's)."""
    sites: dict[str, list[Link]] = {}
    for link in evidence:
        readme = link.where.startswith("README") and can_be_root(link.url) and not is_repository(link.url)
        if readme and names_package(link.url, name, path=False, strict=True):
            sites.setdefault(_host(link.url), []).append(link)
    for links in sites.values():
        if not any(names_other_docs(link, service=True) for link in links):
            return urlunsplit(urlsplit(links[0].url)._replace(path="/", query="", fragment="")), links[0]
    return None


def docs_directory_of(url: str, name: str) -> str | None:
    """The documentation directory (``doc``, ``docs``, ``documentation``, with a language code or the package's
    name after it: ``/docs/en/``, ``/docs/transformers/``) that ``url`` is a page of (``/docs/plugins.html``) or
    one part of (``/docs/handbook/intro.html``); ``None`` when it is not in one, or is a directory of its own
    in it (``/docs/python/``: a language's docs)."""
    parts = urlsplit(url)
    segments = path_segments(parts.path)
    found = [i for i, s in enumerate(segments) if s.lower() in _DOC_DIRS]
    if not found:
        return None
    k = found[-1] + 1
    if k < len(segments) - 1 and (_is_language(segments[k]) or names_package(f"https://x/{segments[k]}", name)):
        k += 1
    rest = segments[k:]
    if not rest or not (len(rest) == 1 and not parts.path.endswith("/") or rest[0].lower() in _PARTS):
        return None
    return urlunsplit(parts._replace(path="/" + "/".join(segments[:k]) + "/", query="", fragment=""))


def site_of_part(url: str, name: str) -> str | None:
    """The root of the project's own site (its host names package ``name``) when ``url`` is one part of it at its
    top (``rollupjs.org/introduction/``, ``esbuild.github.io/api/``, ``angular.dev/overview``), not a directory of
    documentation, versions or a language, nor one that names the package; else ``None``."""
    parts = urlsplit(url)
    segments = path_segments(parts.path)
    if len(segments) != 1 or not names_package(url, name, path=False, strict=True):
        return None
    top = segments[0].lower()
    if top in _DOC_DIRS or _is_version(top) or _is_language(top) or names_package(f"https://x/{top}", name):
        return None
    return urlunsplit(parts._replace(path="/", query="", fragment=""))


def _language_shown(home: str, evidence: list[Link]) -> tuple[str, Link] | None:
    """The language directory (``/en/``) that every page the ``evidence`` shows on the host of ``home`` is in
    (its images and files aside): a site that keeps its documentation in one tree per language; else ``None``."""
    pages = [link for link in evidence if _host(link.url) == _host(home) and path_segments(urlsplit(link.url).path)
             and not _IMAGE.search(link.url) and "." not in path_segments(urlsplit(link.url).path)[-1]]  # fmt: skip
    languages = {path_segments(urlsplit(link.url).path)[0] for link in pages}
    if len(languages) != 1 or not _is_language(language := languages.pop()):
        return None
    origin = urlunsplit(urlsplit(home)._replace(path="", query="", fragment=""))
    return f"{origin}/{language}/", pages[0]


def _is_language(segment: str) -> bool:
    """A human language's code (``en``, ``en-US``, ``zh_cn``), not a programming language's (``js``, ``go``)."""
    return bool(LANGUAGE.match(segment)) and segment.lower() not in _DIRECTORY_NAMES


def docs_directory_shown(home: str, evidence: list[Link]) -> tuple[str, Link] | None:
    """The documentation directory the ``evidence`` shows on the host of ``home`` (a host's root): the first path
    segment ``doc``, ``docs`` or ``documentation`` (after a language code: ``/en-US/docs/``) most links go under,
    with the language code every one of them has after it (``/docs/en/…``); ``None`` when none shows one."""
    heads: dict[str, list[tuple[Link, str | None]]] = {}
    for link in evidence:
        if _host(link.url) != _host(home):
            continue
        segments = path_segments(urlsplit(link.url).path)
        i = 1 if len(segments) > 1 and _is_language(segments[0]) else 0
        if len(segments) <= i or segments[i].lower() not in _DOC_DIRS:
            continue
        language = segments[i + 1] if len(segments) > i + 2 and _is_language(segments[i + 1]) else None
        heads.setdefault("/".join(segments[: i + 1]), []).append((link, language))
    if not heads:
        return _language_shown(home, evidence)
    head, links = max(heads.items(), key=lambda item: len(item[1]))
    languages = {language for _, language in links}
    tail = f"{languages.pop()}/" if len(languages) == 1 and None not in languages and len(links) > 1 else ""
    origin = urlunsplit(urlsplit(home)._replace(path="", query="", fragment=""))
    return f"{origin}/{head}/{tail}", links[0][0]
