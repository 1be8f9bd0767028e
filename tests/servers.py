"""A server the tests start as a process of its own (`docsbot serve`, `docsbot mcp --http`, the embedding stand-in):
its output in a log file, its address read from the line it announces itself with, stopped with SIGTERM (SIGKILL
after 30 s)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

from tests.conftest import ROOT

__all__ = ["ServerProcess"]


class ServerProcess:
    """``command`` started in the checkout with ``env``, stdout and stderr into ``log``. :meth:`wait_ready` returns the
    first group of ``ready`` (a regular expression) in the log, the server's URL, and keeps it as ``url``; it fails with
    the log's tail when the process exits first or ``timeout`` seconds pass. :meth:`stop` fails when the log holds a
    traceback if ``no_traceback``."""

    def __init__(
        self, command: list[str], env: dict[str, str], log: Path, ready: str, *, no_traceback: bool = False
    ) -> None:
        self.log = log
        self.ready = re.compile(ready)
        self.no_traceback = no_traceback
        self._log_file = log.open("w")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT
        )
        self.url = ""

    @classmethod
    def docsbot(cls, args: list[str], env: dict[str, str], log: Path, ready: str, **options: bool) -> ServerProcess:
        """``python -m docsbot.cli ARGS`` (the `docsbot` command as this interpreter runs it)."""
        return cls([sys.executable, "-m", "docsbot.cli", *args], env, log, ready, **options)

    def wait_ready(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.ready.search(self.log.read_text())
            if m:
                self.url = m.group(1)
                return self.url
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            time.sleep(0.1)
        self.stop()
        raise AssertionError("the server did not start: " + self.log.read_text()[-3000:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self._log_file.closed:
            self._log_file.close()
        if self.no_traceback:
            assert "Traceback" not in self.log.read_text(), self.log.read_text()[-3000:]
