"""Start a server as a subprocess, wait for /health, always stop every process of its session.

Used for the embedded mock (`python -m mock_server ...`), and extended by `live.launcher` for
vLLM: the suite never imports the server it tests, it only talks to it over HTTP. A server may
fork workers that outlive it (vLLM's EngineCore), so a stop looks for the session's members in
/proc, not only at the leader; without /proc it falls back to the process group.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
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

from .http import Client, ServerBroke

PROC = Path("/proc")
_RUNNING: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


class ServerStartError(RuntimeError):
    """The server did not become healthy; the message carries the tail of its log."""


class PortTaken(ServerStartError):  # noqa: N818 - a kind of start error, named for its cause
    """Another process answered on the server's port while it started (a free port is only free
    until someone binds it: two servers started at once may be handed the same one); a retry on
    another port is safe."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(eq=False)  # identity, so a running server can sit in a WeakSet
class ServerProcess:
    argv: Sequence[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    start_deadline_s: float = 20.0
    health_path: str = "/health"
    up_statuses: tuple[int, ...] = (200, 401)  # 401: up, but /health is (wrongly) guarded
    poll_s: float = 0.05
    stop_grace_s: float = 5.0  # SIGTERM -> SIGKILL
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
            self._proc = subprocess.Popen(
                list(self.argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
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
        assert self._proc is not None
        ends = time.monotonic() + self.start_deadline_s
        answered_by_other = False
        while (left := ends - time.monotonic()) > 0:
            if self._proc.poll() is not None:
                why = f"server exited with {self._proc.returncode} before it was healthy"
                if answered_by_other:
                    why += f" (port {self.port} answered by another process)"
                error = PortTaken if answered_by_other else ServerStartError
                raise error(f"{why}; log tail:\n{self.log_tail()}")
            if self.healthy(timeout=max(0.1, min(2.0, left))):
                if listens(self._proc.pid, self.port):
                    return
                answered_by_other = True
            time.sleep(self.poll_s)
        raise ServerStartError(
            f"server not healthy within {self.start_deadline_s:g} s; log tail:\n{self.log_tail()}"
        )

    def healthy(self, timeout: float = 2.0) -> bool:
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


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # comm may hold spaces and parentheses: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def listens(sid: int, port: int) -> bool:
    """Whether a process of session `sid` holds the TCP socket listening on `port` (found in
    /proc/net and the members' file descriptors); True where /proc cannot tell."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (PROC / "net" / table).read_text().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{inode}]")
    if not inodes:
        return not (PROC / "net" / "tcp").exists()  # a listener /proc does not show
    for pid in session_members(sid):
        with contextlib.suppress(OSError):
            for fd in (PROC / str(pid) / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return True
    return False


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is `sid`; without /proc, the group's leader."""
    if not PROC.is_dir():
        try:
            os.killpg(sid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [sid]
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields[0] is state, fields[3] is session id
        if fields and fields[3] == str(sid) and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def _signal_all(sid: int, sig: signal.Signals) -> None:
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)


def stop_session(
    sid: int, grace_s: float = 8.0, leader: subprocess.Popen[bytes] | None = None
) -> list[int]:
    """SIGTERM every member, SIGKILL what is left after `grace_s`; return pids that survived.

    Members are found by session id, so workers that outlive their leader are stopped too; the
    `leader`, if we started it, is reaped on the way (a zombie leader would keep its group).
    """

    def left() -> list[int]:
        if leader is not None:
            leader.poll()
        return session_members(sid)

    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        if not left():
            break
        _signal_all(sid, sig)
        ends = time.monotonic() + wait
        while left() and time.monotonic() < ends:
            time.sleep(0.05)
    survivors = left()
    if leader is not None:
        try:
            leader.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            survivors = sorted({*survivors, leader.pid})
    return survivors


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
