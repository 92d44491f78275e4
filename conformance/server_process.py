"""Start a server as a subprocess, wait for /health, always stop its whole process group.

Used for the embedded mock (`python -m mock_server ...`) and reusable for vLLM: the suite never
imports the server it tests, it only talks to it over HTTP.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx


class ServerStartError(RuntimeError):
    """The server did not become healthy; the message carries the tail of its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServerProcess:
    argv: Sequence[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    health_path: str = "/health"
    start_deadline: float = 20.0
    _proc: subprocess.Popen[bytes] | None = None
    _log: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        fd, name = tempfile.mkstemp(prefix="tito-server-", suffix=".log")
        self._log = Path(name)
        with os.fdopen(fd, "wb") as log:
            self._proc = subprocess.Popen(
                list(self.argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        assert self._proc is not None
        ends = time.monotonic() + self.start_deadline
        while time.monotonic() < ends:
            if self._proc.poll() is not None:
                raise ServerStartError(
                    f"server exited with {self._proc.returncode} before it was healthy:\n"
                    f"{self.log_tail()}"
                )
            try:
                status = httpx.get(self.base_url + self.health_path, timeout=1.0).status_code
                if status in (200, 401):  # 401: up, but /health is (wrongly) guarded
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise ServerStartError(
            f"server not healthy within {self.start_deadline:g} s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        if self._log is None or not self._log.exists():
            return ""
        text = self._log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill_group(proc)
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def mock_argv(port: int, flags: Sequence[str], defects: Sequence[str] = ()) -> list[str]:
    """The command line of the embedded mock, run with the current interpreter."""
    argv = [sys.executable, "-m", "mock_server", "--port", str(port), *flags]
    for defect in defects:
        argv += ["--mock-defect", defect]
    return argv
