"""An npm package's README read from its tarball (docsbot.fleet.tarball), for a registry whose documents come without
one: streamed and stopped at the README, capped, its hash checked against the registry's, and never trusted
further than a name match; and the resolver using it (docsbot.fleet.registry), on the recorded npm answers whose
READMEs were recorded from their tarballs (tests/recorded_registry.py)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import tarfile

import httpx
import pytest

from docsbot.fleet.registry import no_probes, resolve
from docsbot.fleet.tarball import TarballError, is_readme, tarball_readme
from docsbot.project_settings import ProjectSettings
from tests.recorded_registry import NPM_URL, recorded_client, recorded_readme, tarball

URL = "https://registry.test/demo/-/demo-1.0.0.tgz"
ANYWHERE = ProjectSettings(overrides={"DOCSBOT_ALLOWED_NETWORKS": "*"})


def _tgz(*members: tuple[str, bytes], level: int = 6) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return gzip.compress(out.getvalue(), compresslevel=level, mtime=0)


def _sri(body: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(body).digest()).decode()


class _Server:
    """A registry host for the tarball: answers ``routes`` (path → (status, body, headers)) in chunks of 16 KiB,
    and counts the bytes it handed out."""

    def __init__(self, routes: dict[str, tuple[int, bytes, dict[str, str]]]) -> None:
        self.routes = routes
        self.sent = 0
        self.asked: list[str] = []

    def client(self) -> httpx.Client:
        def handle(request: httpx.Request) -> httpx.Response:
            self.asked.append(str(request.url))
            status, body, headers = self.routes.get(request.url.path, (404, b"", {}))

            def chunks():
                for i in range(0, len(body), 16384):
                    self.sent += len(body[i : i + 16384])
                    yield body[i : i + 16384]

            return httpx.Response(status, content=chunks(), headers=headers)

        return httpx.Client(transport=httpx.MockTransport(handle))


def test_the_readme_is_read_stopping_there_and_its_hash_checked():
    readme = b"# Demo\n\n[Documentation](https://demo.dev/docs/)\n"
    body = _tgz(("package/package.json", b"{}"), ("package/Readme.MD", readme), ("package/dist/big.js", b"x" * 99))
    server = _Server({"/demo/-/demo-1.0.0.tgz": (200, body, {})})
    found = tarball_readme(server.client(), URL, _sri(body))
    assert (found.text, found.member, found.verified) == (readme.decode(), "package/Readme.MD", True)
    sha1 = hashlib.sha1(body).hexdigest()
    assert tarball_readme(server.client(), URL, None, sha1).verified  # npm's older dist.shasum
    with pytest.raises(TarballError, match=r"its integrity \(sha512\) is not the registry's"):
        tarball_readme(server.client(), URL, _sri(body + b"tampered"))


def test_a_big_tarball_is_read_only_as_far_as_its_readme():
    """The README first, then 4 MiB that do not compress: the download stops soon after the README, and the hash,
    which would need 4 MiB more (more than is cheap: what was read already, or 1 MiB), is left unchecked."""
    rest = os.urandom(4 * 1024 * 1024)
    body = _tgz(("package/README.md", b"# Big\n"), ("package/dist/blob.bin", rest))
    server = _Server({"/demo/-/demo-1.0.0.tgz": (200, body, {})})
    found = tarball_readme(server.client(), URL, _sri(body))
    assert found.text == "# Big\n" and not found.verified
    assert found.offset < 64 * 1024 and server.sent <= found.offset + 1024 * 1024 + 16384  # not the 4 MiB
    small = _tgz(("package/README.md", b"# Small\n"), ("package/dist/blob.bin", rest[: 512 * 1024]))
    server = _Server({"/demo/-/demo-1.0.0.tgz": (200, small, {})})
    assert tarball_readme(server.client(), URL, _sri(small)).verified  # 512 KiB more: cheap, checked
    assert server.sent == len(small)


def test_what_cannot_be_read_says_why_in_one_line():
    rest = os.urandom(2 * 1024 * 1024)
    late = _tgz(("package/dist/blob.bin", rest), ("package/README.md", b"# Late\n"))
    bomb = _tgz(("package/dist/zeros.bin", bytes(64 * 1024 * 1024)), ("package/README.md", b"# Bomb\n"), level=9)
    nested = _tgz(("package/docs/README.md", b"# Not the package's\n"), ("package/index.js", b""))
    server = _Server({
        "/late.tgz": (200, late, {}),
        "/bomb.tgz": (200, bomb, {}),
        "/nested.tgz": (200, nested, {}),
        "/broken.tgz": (200, b"\x1f\x8b\x08\x00not a gzip body", {}),
        "/gone.tgz": (404, b"", {}),
        "/elsewhere.tgz": (302, b"", {"location": "http://169.254.169.254/latest/meta-data/"}),
    })  # fmt: skip
    client = server.client()
    with pytest.raises(TarballError, match=r"late\.tgz: no README in its first 1 MiB downloaded \(the cap\)"):
        tarball_readme(client, "https://registry.test/late.tgz", max_download=1024 * 1024)
    assert len(bomb) < 1024 * 1024  # 64 MiB of zeros, inflated no further than 8 times the download cap
    with pytest.raises(TarballError, match=r"no README in its first 8 MiB inflated"):
        tarball_readme(client, "https://registry.test/bomb.tgz", max_download=1024 * 1024)
    with pytest.raises(TarballError, match=r"nested\.tgz holds no README"):
        tarball_readme(client, "https://registry.test/nested.tgz")
    with pytest.raises(TarballError, match=r"broken\.tgz is not a readable tarball"):
        tarball_readme(client, "https://registry.test/broken.tgz")
    with pytest.raises(TarballError, match=r"gone\.tgz answers 404"):
        tarball_readme(client, "https://registry.test/gone.tgz")

    def refusal(url: str) -> str | None:
        return None if url.startswith("https://registry.test/") else f"{url}: a link-local address"

    with pytest.raises(TarballError, match=r"169\.254\.169\.254/latest/meta-data/: a link-local address"):
        tarball_readme(client, "https://registry.test/elsewhere.tgz", refusal=refusal)
    assert not [u for u in server.asked if "169.254" in u]


def test_a_readme_is_a_top_level_member_named_as_npm_names_it():
    for member in ("package/README.md", "package/readme", "package/Readme.rst", "pkg/README.markdown",
                   "package/README.txt"):  # fmt: skip
        assert is_readme(member), member
    for member in ("package/docs/README.md", "README.md", "package/README.md.orig", "package/READMEs.md",
                   "../README.md", "package/readme.js"):  # fmt: skip
        assert not is_readme(member), member


def test_the_resolver_reads_the_readme_from_the_tarball_when_the_registry_sends_none():
    """moment's recorded document has no README (the registry this machine reaches leaves it out); its tarball's
    names the documentation under the homepage, a landing page. next's README lies 42 MB into a 43 MB tarball: past
    the cap, so the homepage stays, and the notes say why."""
    with recorded_client() as client:
        found = resolve("moment", None, "npm", client=client, npm_url=NPM_URL, probe=no_probes, settings=ANYWHERE)
        assert found.url == "https://momentjs.com/docs/"
        assert found.notes[0] == "https://momentjs.com/docs/: from npm's README: 'Documentation'"
        assert found.notes[1].startswith("README read from the tarball, package/README.md of https://registry.npmjs")
        assert found.notes[1].endswith("(its hash checked against the registry's)")
        assert recorded_readme("next")["offset"] > 8 * 1024 * 1024
        found = resolve("next", None, "npm", client=client, npm_url=NPM_URL, probe=no_probes, settings=ANYWHERE)
    assert found.url == "https://nextjs.org/"
    assert "the registry sends no README, and none could be read from the tarball" in found.notes[1]
    assert "no README in its first 8 MiB downloaded (the cap)" in found.notes[1]
    tarball.cache_clear()  # 42 MB


def test_a_pin_reads_the_readme_of_its_own_release():
    """The README comes from the tarball of the release being resolved, not the newest one's."""
    old = b"# Demo 1\n\nDocumentation: https://demo.dev/v1/\n"
    new = b"# Demo 2\n\nDocumentation: https://demo.dev/v2/\n"
    tarballs = {"/demo/-/demo-1.0.0.tgz": _tgz(("package/README.md", old)),
                "/demo/-/demo-2.0.0.tgz": _tgz(("package/README.md", new))}  # fmt: skip
    document = {
        "name": "demo",
        "dist-tags": {"latest": "2.0.0"},
        "versions": {
            v: {
                "name": "demo",
                "version": v,
                "dist": {"tarball": f"https://registry.test{path}", "integrity": _sri(body)},
            }
            for v, (path, body) in zip(("1.0.0", "2.0.0"), tarballs.items(), strict=True)
        },
    }

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path in tarballs:
            return httpx.Response(200, content=tarballs[request.url.path])
        return httpx.Response(200, json=document)

    with httpx.Client(transport=httpx.MockTransport(handle)) as client:
        kwargs = {"client": client, "npm_url": "https://registry.test", "probe": no_probes, "settings": ANYWHERE}
        assert resolve("demo", "1.0.0", "npm", **kwargs).url == "https://demo.dev/v1/"
        assert resolve("demo", None, "npm", **kwargs).url == "https://demo.dev/v2/"


@pytest.mark.e2e
def test_the_recorded_registry_serves_each_readme_in_a_tarball_over_http():
    """`docsbot add` run as a process asks the recorded registry over HTTP: the documents it serves name tarballs on
    that server, which hold the recorded README where the real tarball had it, with the hash the document gives."""
    from tests.recorded_registry import RecordedRegistryServer

    with RecordedRegistryServer() as server, httpx.Client() as client:
        document = client.get(f"{server.url}/npm/chalk").json()
        dist = document["versions"][document["dist-tags"]["latest"]]["dist"]
        assert dist["tarball"] == f"{server.url}/npm/chalk/-/chalk-6.0.1.tgz"
        found = tarball_readme(client, dist["tarball"], dist["integrity"])
        assert found.verified and found.member == "package/readme.md"
        assert found.text == recorded_readme("chalk")["text"] and "chalk" in found.text
        assert client.get(f"{server.url}/npm/chalk/-/chalk-1.0.0.tgz").status_code == 404  # not recorded
