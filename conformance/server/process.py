"""Start a server as a subprocess, wait for /health, always stop every process of its session.

Used for the embedded mock (`python -m mock_server ...`), and extended by `live.launcher` for
vLLM: the suite never imports the server it tests, it only talks to it over HTTP. Starting a
session, waiting for readiness and stopping every process of it are `loopback`'s; this adds
the kit's client, the log and the port-taken retry.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from conformance.wire import Client, ServerBroke
from loopback.ports import free_port
from loopback.processes import listens, start_session, stop_session
from loopback.readiness import ExitedBeforeReady, NotReady, wait_ready
from loopback.timeouts import MOCK_START_S, POLL_S, PROBE_S, STOP_GRACE_S

_RUNNING: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


class ServerStartError(RuntimeError):
    """The server did not become healthy; the message carries the tail of its log."""


class PortTaken(ServerStartError):  # noqa: N818 - a kind of start error, named for its cause
    """Another process answered on the server's port while it started (a free port is only free
    until someone binds it: two servers started at once may be handed the same one); a retry on
    another port is safe."""


@dataclass(eq=False)  # identity, so a running server can sit in a WeakSet
class ServerProcess:
    argv: Sequence[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    start_deadline_s: float = MOCK_START_S
    health_path: str = "/health"
    up_statuses: tuple[int, ...] = (200, 401)  # 401: up, but /health is (wrongly) guarded
    poll_s: float = POLL_S
    stop_grace_s: float = STOP_GRACE_S  # SIGTERM -> SIGKILL
    log_path: Path | None = None  # kept and appended to; None: a temporary log, gone on stop
    log_lines: int = 30
    last_start_s: float | None = field(default=None, init=False)  # spawn -> healthy
    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _temp_log: bool = field(default=False, init=False, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="tito-server-", suffix=".log")
            os.close(fd)
            self.log_path, self._temp_log = Path(name), True
        t0 = time.monotonic()
        with self.log_path.open("ab") as log:
            log.write(f"--- start: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._proc = start_session(self.argv, log, self.env)
        _RUNNING.add(self)
        try:
            self._wait_healthy()
            self.last_start_s = time.monotonic() - t0
            self._on_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _on_healthy(self) -> None:
        """For subclasses: more set-up once /health answers; raise ServerStartError to fail."""

    def _wait_healthy(self) -> None:
        """Until /health answers from this server's own processes: an answer from another
        process on the same port (ours then fails to bind, and exits) is `PortTaken`."""
        proc = self._proc
        assert proc is not None
        answered_by_other = False

        def ours_answers(timeout: float) -> bool:
            nonlocal answered_by_other
            if not self.healthy(timeout=timeout):
                return False
            if listens(proc.pid, self.port):
                return True
            answered_by_other = True
            return False

        try:
            wait_ready(proc, ours_answers, self.start_deadline_s, self.poll_s)
        except ExitedBeforeReady as exc:
            why = f"server exited with {exc.returncode} before it was healthy"
            if answered_by_other:
                why += f" (port {self.port} answered by another process)"
            error = PortTaken if answered_by_other else ServerStartError
            raise error(f"{why}; log tail:\n{self.log_tail()}") from None
        except NotReady:
            raise ServerStartError(
                f"server not healthy within {self.start_deadline_s:g} s; "
                f"log tail:\n{self.log_tail()}"
            ) from None

    def healthy(self, timeout: float = PROBE_S) -> bool:
        """/health answers with an up status, through the kit's client (one per call: a
        keep-alive connection must not outlive a restart)."""
        client = Client(self.base_url, timeout=timeout, stop_after=None, keep_log=False)
        try:
            status = client.get(self.health_path, auth=False).status
        except ServerBroke:
            return False
        finally:
            client.close()
        return status in self.up_statuses

    @property
    def pid(self) -> int:
        """The leader's pid, which is also the session id (and process group id)."""
        if self._proc is None:
            raise RuntimeError("server not started")
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    def log_tail(self, lines: int | None = None) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-(lines or self.log_lines) :])

    def stop(self) -> list[int]:
        """End every process of the session; return pids that would not die (should be [])."""
        survivors = self._end_session()
        if self._temp_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path, self._temp_log = None, False
        return survivors

    def _end_session(self) -> list[int]:
        """Stop the processes but keep the log (a restart appends to it)."""
        proc, self._proc = self._proc, None
        _RUNNING.discard(self)
        if proc is None:
            return []
        return stop_session(proc.pid, self.stop_grace_s, leader=proc)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def stop_all() -> None:
    """atexit and signal handlers: no server outlives the process that started it."""
    for server in list(_RUNNING):
        server.stop()


atexit.register(stop_all)


def install_signal_handlers() -> None:
    """For CLI use: turn SIGTERM/SIGHUP into SystemExit so `finally` and atexit run."""

    def _exit(signum: int, _frame: object) -> None:
        stop_all()
        sys.exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit)


@contextlib.contextmanager
def start_on_a_free_port(
    server_for: Callable[[int], ServerProcess], tries: int = 3
) -> Iterator[ServerProcess]:
    """`server_for(port)` running on a free port (on another one when the port is taken) for
    the length of the block, then stopped."""
    for attempt in range(tries):
        try:
            server = server_for(free_port()).start()
            break
        except PortTaken:
            if attempt == tries - 1:
                raise
    try:
        yield server
    finally:
        server.stop()


def mock_argv(port: int, flags: Sequence[str], defects: Sequence[str] = ()) -> list[str]:
    """The command line of the embedded mock, run with the current interpreter."""
    argv = [sys.executable, "-m", "mock_server", "--port", str(port), *flags]
    for defect in defects:
        argv += ["--mock-defect", defect]
    return argv
