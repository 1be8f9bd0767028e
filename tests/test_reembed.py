"""`docsbot reembed` as a user meets it: a version switched to another model while searches read its old vectors, the
migration killed and resumed, a refresh in the middle, the swap, and the crawls accepted after it. Real processes, a
real HTTP server and a real PostgreSQL + pgvector; the second model is a deterministic 512-dimension test embedder
(tests/embedders.py), and one test switches to the provisioned model directory itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import numpy as np
import pytest

from docsbot import store
from docsbot.embedding.migration import describe_switch
from docsbot.embedding.models import DEFAULT_MODEL, DEFAULT_MODEL_DIRNAME, FastEmbedEmbedder
from docsbot.embedding.texts import embed_key, embed_text
from tests.conftest import ROOT, _default_models_dir, docsbot_env
from tests.docsite import DocSiteServer
from tests.embedders import WideHashingEmbedder
from tests.test_embed_cli import cli, crawl
from tests.test_faults import fault_site, page_html, wait_for
from tests.test_web import Serve

OLD, NEW = "test/hashing-384", "test/hashing-512"
QUERY = "Paragraph 1 of page 4"


def rows(db) -> list[tuple]:
    """Every chunk: id, the text its model embeds, embed_hash, embedding as text, embedding_next IS NOT NULL."""
    found = db.execute(
        "SELECT id, context, content, (metadata ->> 'context_cut')::int, embed_hash, embedding::text, "
        "embed_hash_next FROM documents ORDER BY id"
    ).fetchall()
    return [(i, embed_text(ctx, content, cut), key, vec, nxt) for i, ctx, content, cut, key, vec, nxt in found]


def version_row(db) -> tuple:
    return db.execute("SELECT id, embedding_model, embedding_dim, next_model, next_dim FROM versions").fetchone()


def indexes(db) -> dict[str, str]:
    return dict(db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname ~ '^documents_embedding_v'"))


def test_a_version_switches_model_while_searches_read_its_old_vectors_and_a_killed_switch_resumes(
    database_url, db, tmp_path
):
    env = docsbot_env(database_url, tmp_path)
    new_env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="tests.embedders.WideHashingEmbedder")
    with DocSiteServer(fault_site(6)) as server:
        first = crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0")
        assert first.returncode == 0, first.stderr[-3000:]
        version_id = version_row(db)[0]
        assert version_row(db)[1:] == (OLD, 384, None, None)
        assert f"documents_embedding_v{version_id}_hnsw_idx" in indexes(db)
        before = cli(env, "search", QUERY, "--json", "-k", "3")
        assert before.returncode == 0 and before.stdout, before.stderr
        total = len(rows(db))

        # bad input: one line each, nothing recorded
        for args, code, words in (
            (("reembed", "nosuch@1.0", "--model", NEW), 1, "nosuch@1.0 is not indexed; indexed: testdocs@1.0"),
            (("reembed", "testdocs@1.0", "--model", str(tmp_path / "no-model")), 2, "is not a model directory"),
            (("reembed", "testdocs@1.0"), 2, "testdocs@1.0 is already embedded with 'test/hashing-384'"),
            (("reembed", "--model", NEW), 2, "give LIBRARY[@VERSION] or --from-model MODEL"),
            (("reembed", "testdocs@1.0", "--model", "test/hashing-2048"), 2, "a version's HNSW index takes 1 to 2000"),
        ):
            huge = {**env, "DOCSBOT_EMBEDDER": "tests.embedders.HugeHashingEmbedder"}
            bad = cli(new_env if args[-1] == NEW else huge if args[-1].endswith("2048") else env, *args)
            assert bad.returncode == code, (args, bad.stderr)
            assert [line for line in bad.stderr.splitlines() if words in line], (args, bad.stderr)
            assert "Traceback" not in bad.stderr
        assert version_row(db)[1:] == (OLD, 384, None, None)

        # the switch, killed half-way: a slow model, small claims
        log1 = tmp_path / "embedded-1.log"
        slow = {**new_env, "EMBED_LOG": str(log1), "SLOW_EMBEDDER_SECONDS_PER_TEXT": "0.1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "docsbot.cli", "reembed", "testdocs@1.0", "--model", NEW, "--claim", "2"],
            cwd=ROOT, env=slow, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: sum(1 for r in rows(db) if r[4]) >= 6, timeout=120)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        done = {r[0]: r[4] for r in rows(db) if r[4]}
        assert 6 <= len(done) < total
        assert version_row(db)[1:] == (OLD, 384, NEW, 512)  # still the old model's: searches read its vectors

        # meanwhile: searches answer from the old vectors exactly as before; status says where the switch is
        during = cli(env, "search", QUERY, "--json", "-k", "3")
        assert during.returncode == 0 and during.stdout == before.stdout
        status = cli(env, "status")
        assert f"switching to {NEW} (512 dimensions): {len(done)} of {total} done" in status.stdout, status.stdout
        (overview,) = store.version_overview(db)  # what list_libraries and the web pages show (JSON and HTML)
        switch = overview["model_switch"]
        expected = {"model": NEW, "dim": 512, "done": len(done), "total": total}
        assert {k: switch[k] for k in expected} == expected
        # the killed worker's row looks alive for two minutes, as the embedding queue's do
        assert describe_switch({**switch, "rate": None}).endswith("(no worker: `docsbot reembed` continues it)")
        web = Serve(env, tmp_path / "serve.log")
        try:
            web.wait_ready()
            (listed,) = httpx2.get(f"{web.url}/libraries.json", timeout=30).json()["libraries"]
            assert listed["model_switch"]["model"] == NEW and listed["model_switch"]["done"] == len(done)
            page = httpx2.get(f"{web.url}/libraries", timeout=30).text
            assert f"switching to {NEW} (512 dimensions): {len(done)} of {total} done" in page
        finally:
            web.stop()
        # a crawl with the new model is refused until the switch completes; one with the old model goes on, and
        # its new chunks join the switch
        early = crawl(new_env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0")
        assert early.returncode != 0 and "it is being switched to 'test/hashing-512'" in early.stderr
        server.site.put("/docs/p2.html", page_html(2, "second"))
        refresh = crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0")
        assert refresh.returncode == 0, refresh.stderr[-3000:]
        after_refresh = rows(db)
        fresh = [r for r in after_refresh if "second edition" in r[1]]
        assert fresh and not any(r[4] for r in fresh)  # new rows: no next vector yet
        kept = {r[0]: r[4] for r in after_refresh if r[0] in done}

        # resumed: only what was not done is embedded
        log2 = tmp_path / "embedded-2.log"
        resumed = cli({**new_env, "EMBED_LOG": str(log2)}, "reembed", "testdocs@1.0", "--model", NEW)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "continuing testdocs@1.0: test/hashing-384 → test/hashing-512 (512 dimensions)" in resumed.stderr
        assert "switched testdocs@1.0 to test/hashing-512 (512 dimensions)" in resumed.stdout
        embedded_again = set(log2.read_text().split())
        assert embedded_again and not embedded_again & set(kept.values())
        assert len(log2.read_text().split()) <= len(after_refresh) - len(kept)

    # after the swap: every chunk holds the new model's vector and key, the version says so, the old graph is gone
    assert version_row(db)[1:] == (NEW, 512, None, None)
    wide = WideHashingEmbedder()
    final = rows(db)
    assert len(final) == len(after_refresh)
    for _, text, key, vector, next_key in final:
        assert next_key is None and key == embed_key(NEW, text)
        assert np.allclose(np.array(json.loads(vector), dtype=np.float32), wide.embed([text])[0], atol=1e-6)
    assert db.execute("SELECT count(*) FROM documents WHERE embedding_next IS NOT NULL").fetchone()[0] == 0
    graphs = indexes(db)
    assert list(graphs) == [f"documents_embedding_v{version_id}_hnsw_idx"], graphs
    assert "vector(512)" in graphs[f"documents_embedding_v{version_id}_hnsw_idx"]
    assert db.execute(
        "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = %s::regclass",
        (f"documents_embedding_v{version_id}_hnsw_idx",),
    ).fetchone()[0]

    # the new model searches it; the old one no longer does; a crawl with the new model is accepted
    found = cli(new_env, "search", QUERY, "--json", "-k", "1")
    assert found.returncode == 0 and json.loads(found.stdout.splitlines()[0])["url"].endswith("/docs/p4.html")
    assert "switching" not in cli(env, "status").stdout
    with DocSiteServer(fault_site(6)) as server:
        again = crawl(new_env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0")
        assert again.returncode == 0, again.stderr[-3000:]
        stale = crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0")
        assert stale.returncode != 0
        assert "switch it with `docsbot reembed testdocs@1.0 --model NAME_OR_DIR`" in stale.stderr, stale.stderr[-2000:]
    assert version_row(db)[1:] == (NEW, 512, None, None)


def test_a_switch_is_cancelled_without_touching_what_searches_read(database_url, db, tmp_path):
    env = docsbot_env(database_url, tmp_path)
    new_env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="tests.embedders.WideHashingEmbedder")
    with DocSiteServer(fault_site(3)) as server:
        assert crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0").returncode == 0
    vectors = [r[3] for r in rows(db)]
    slow = {**new_env, "EMBED_LOG": str(tmp_path / "log"), "SLOW_EMBEDDER_SECONDS_PER_TEXT": "0.2"}
    # Ctrl-C as a terminal sends it: Python's SIGINT handler in the child whatever the test run inherited (a suite
    # started in the background of a non-interactive shell ignores SIGINT, and so does a child that inherits it)
    interactive = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv = ['docsbot', *sys.argv[1:]]; runpy.run_module('docsbot.cli', run_name='__main__')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", interactive, "reembed", "--from-model", OLD, "--model", NEW, "--claim", "1"],
        cwd=ROOT, env=slow, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: any(r[4] for r in rows(db)), timeout=120)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
    real_env = {k: v for k, v in env.items() if k != "DOCSBOT_EMBEDDER"}
    other = cli(
        real_env, "reembed", "testdocs@1.0", "--model", str(Path(_default_models_dir()) / DEFAULT_MODEL_DIRNAME)
    )
    assert other.returncode == 2 and "is being switched to 'test/hashing-512' already" in other.stderr
    cancelled = cli(env, "reembed", "testdocs@1.0", "--cancel")
    assert cancelled.returncode == 0, cancelled.stderr
    assert "cancelled the switch of testdocs@1.0 to test/hashing-512" in cancelled.stdout
    assert version_row(db)[1:] == (OLD, 384, None, None)
    assert [r[3] for r in rows(db)] == vectors and not any(r[4] for r in rows(db))
    again = cli(env, "reembed", "testdocs@1.0", "--cancel")
    assert again.returncode == 1 and "no switch is under way for testdocs@1.0; nothing cancelled" in again.stderr


@pytest.mark.model
def test_a_version_switches_to_the_provisioned_model_directory(database_url, db, tmp_path):
    """The real model, offline, from its directory: the version records its name and holds its vectors."""
    model_dir = Path(_default_models_dir()) / DEFAULT_MODEL_DIRNAME
    env = docsbot_env(database_url, tmp_path)
    with DocSiteServer(fault_site(2)) as server:
        assert crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0").returncode == 0
    real_env = {k: v for k, v in env.items() if k != "DOCSBOT_EMBEDDER"}
    switched = cli(real_env, "reembed", "--from-model", OLD, "--model", str(model_dir))
    assert switched.returncode == 0, switched.stderr[-3000:]
    assert version_row(db)[1:] == (DEFAULT_MODEL, 384, None, None)
    model = FastEmbedEmbedder(DEFAULT_MODEL, model_dir)
    final = rows(db)
    expected = model.embed([r[1] for r in final])
    got = np.array([json.loads(r[3]) for r in final], dtype=np.float32)
    assert ((got * expected).sum(axis=1)).min() > 0.9999
    assert all(r[2] == embed_key(DEFAULT_MODEL, r[1]) for r in final)
    # the same files labelled as the int8 graph (reference.json's variant): another model, so its crawl is refused
    int8 = tmp_path / "int8"
    int8.mkdir()
    for item in model_dir.iterdir():
        if item.name != "reference.json":
            (int8 / item.name).symlink_to(item)
    reference = json.loads((model_dir / "reference.json").read_text())
    (int8 / "reference.json").write_text(json.dumps({**reference, "variant": "onnx-int8"}))
    with DocSiteServer(fault_site(2)) as server:
        refused = crawl(
            {**real_env, "DOCSBOT_EMBEDDING_MODEL_PATH": str(int8)},
            f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0",
        )  # fmt: skip
    assert refused.returncode != 0
    assert f"but this run uses '{DEFAULT_MODEL}:onnx-int8'" in refused.stderr, refused.stderr[-3000:]
    # a model that is not provisioned: one line naming the directory and what provisions it
    missing = cli(real_env, "reembed", "--from-model", DEFAULT_MODEL, "--model", str(tmp_path))
    assert missing.returncode == 2 and "is not provisioned in" in missing.stderr and "make model" in missing.stderr
    assert os.path.isdir(model_dir)


def test_a_graph_that_makes_other_vectors_is_another_model_to_the_index(tmp_path):
    """reference.json's variant names the graph: the float ones (fused or not) are the model itself, the int8 one is
    ``NAME:onnx-int8``, so that its vectors never join (or are taken over by) a version of the float model."""
    from docsbot.embedding.models import model_identity

    assert model_identity(DEFAULT_MODEL, None) == DEFAULT_MODEL
    assert model_identity(DEFAULT_MODEL, "onnx-fp32") == model_identity(DEFAULT_MODEL, "onnx-fp32-fused")
    assert model_identity(DEFAULT_MODEL, "onnx-int8") == f"{DEFAULT_MODEL}:onnx-int8"
    names = {}
    for variant in ("onnx-fp32-fused", "onnx-int8", None):
        model_dir = tmp_path / str(variant)
        model_dir.mkdir()
        for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json"):
            (model_dir / name).write_text("{}")
        if variant:
            (model_dir / "reference.json").write_text(json.dumps({"variant": variant, "model_bytes": 2}))
        names[variant] = FastEmbedEmbedder(DEFAULT_MODEL, model_dir).name
    assert names == {"onnx-fp32-fused": DEFAULT_MODEL, "onnx-int8": f"{DEFAULT_MODEL}:onnx-int8", None: DEFAULT_MODEL}
    assert embed_key(names["onnx-int8"], "a text") != embed_key(names["onnx-fp32-fused"], "a text")


def test_the_swap_waits_for_a_running_crawl_of_the_version_and_embeds_what_it_wrote(database_url, db, tmp_path):
    env = docsbot_env(database_url, tmp_path)
    new_env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="tests.embedders.WideHashingEmbedder")
    with DocSiteServer(fault_site(3)) as server:
        assert crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0").returncode == 0
    version = store.list_versions(db)[0]
    held = store.lock_version(database_url, version)  # what a crawl of the version holds for its whole run
    log = tmp_path / "reembed.err"
    told = "waiting for the run of testdocs@1.0 in progress to end before the swap"
    try:
        with log.open("w") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "docsbot.cli", "reembed", "testdocs@1.0", "--model", NEW],
                cwd=ROOT, env=new_env, stdout=subprocess.PIPE, stderr=stderr, text=True,
            )  # fmt: skip
        # every chunk has its new vector, but the run holds the lock: nothing is swapped
        wait_for(lambda: told in log.read_text(), timeout=120)
        assert all(r[4] for r in rows(db)) and version_row(db)[1:] == (OLD, 384, NEW, 512)
        # the "crawl" writes a chunk meanwhile
        db.execute(
            "INSERT INTO documents (page_id, version_id, sort_order, content, context, embed_hash, embedding, kind) "
            "SELECT page_id, version_id, 99, 'A chunk the running crawl wrote.', context, 'k', embedding, kind "
            "FROM documents ORDER BY id LIMIT 1"
        )
        db.commit()
        wait_for(lambda: any(r[4] for r in rows(db) if r[1].endswith("wrote.")), timeout=60)  # the switch embeds it
        assert version_row(db)[1:] == (OLD, 384, NEW, 512)  # and still waits for the lock
    finally:
        held.close()
    proc.communicate(timeout=120)
    assert proc.returncode == 0, log.read_text()[-3000:]
    assert version_row(db)[1:] == (NEW, 512, None, None)
    wrote = [r for r in rows(db) if r[1].endswith("A chunk the running crawl wrote.")]
    assert len(wrote) == 1 and wrote[0][2] == embed_key(NEW, wrote[0][1])
    assert len(json.loads(wrote[0][3])) == 512


def test_a_switch_stopped_after_its_swap_leaves_its_graph_to_the_next_run(database_url, db, tmp_path):
    """The graph of the old dimension, left behind when the process ends between the swap and the new graph, counts
    as no graph (the version is searched exactly) and the next `docsbot db migrate` (or crawl, or embed) builds it."""
    env = docsbot_env(database_url, tmp_path)
    new_env = docsbot_env(database_url, tmp_path, DOCSBOT_EMBEDDER="tests.embedders.WideHashingEmbedder")
    with DocSiteServer(fault_site(2)) as server:
        assert crawl(env, f"url={server.url}/docs/index.html", "library=testdocs", "version=1.0").returncode == 0
    version_id = version_row(db)[0]
    name = f"documents_embedding_v{version_id}_hnsw_idx"
    switched = cli(new_env, "reembed", "testdocs@1.0", "--model", NEW)
    assert switched.returncode == 0, switched.stderr[-3000:]
    assert store.vector_indexes(db)[version_id].state == "hnsw" and "vector(512)" in indexes(db)[name]
    db.execute(f"DROP INDEX {name}")
    db.execute(
        f"CREATE INDEX {name} ON documents USING hnsw ((embedding::vector(384)) vector_cosine_ops) "
        f"WHERE version_id = {version_id} AND vector_dims(embedding) = 384"
    )  # what the swap left: the old dimension's graph
    assert store.vector_indexes(db)[version_id].state == "building"
    migrated = cli(env, "db", "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert store.vector_indexes(db)[version_id].state == "hnsw" and "vector(512)" in indexes(db)[name]
