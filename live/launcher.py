"""One launcher for vLLM and for the mock alike (STYLE §3, llama.cpp's ServerProcess).

`LiveServer.start()` runs the argv in its own session, waits for `/health` with a deadline,
renices the engine (CPU), sends a warm-up request; `stop()` always ends every process of the
session; `restart()` brings back a server that died mid-run on the same port, so a suite's
client keeps working. Logs are kept (appended across restarts) so a failure shows their tail.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

from . import procgroup

WARMUP_BODY = {"token_ids": [10, 11, 12], "sampling_params": {"max_tokens": 2}}
_RUNNING: weakref.WeakSet[LiveServer] = weakref.WeakSet()


class ServerStartError(RuntimeError):
    """The server did not become healthy; the message carries the tail of its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Timings:
    starts_s: list[float] = field(default_factory=list)  # spawn -> healthy, per start
    warmup_s: list[float] = field(default_factory=list)
    reniced_threads: list[int] = field(default_factory=list)


@dataclass(eq=False)
class LiveServer:
    argv: Sequence[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    start_deadline_s: float = 300.0
    renice_engine: bool = False
    api_key: str | None = None
    warmup: bool = True
    warmup_timeout_s: float = 120.0
    log_path: Path | None = None
    log_lines: int = 40
    timings: Timings = field(default_factory=Timings)
    restarts: int = 0
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="tito-live-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
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
            self.timings.starts_s.append(round(time.monotonic() - t0, 2))
            self._settle()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        assert self._proc is not None
        ends = time.monotonic() + self.start_deadline_s
        while time.monotonic() < ends:
            if self._proc.poll() is not None:
                raise ServerStartError(
                    f"server exited with {self._proc.returncode} before it was healthy; "
                    f"log tail:\n{self.log_tail()}"
                )
            if self.healthy(timeout=2.0):
                return
            time.sleep(0.2)
        raise ServerStartError(
            f"server not healthy within {self.start_deadline_s:g} s; log tail:\n{self.log_tail()}"
        )

    def _settle(self) -> None:
        """Renice, warm up (the first request can take ~14 s on CPU), renice new threads."""
        if self.renice_engine:
            self.timings.reniced_threads.append(procgroup.renice(self.pid))
        if self.warmup:
            t0 = time.monotonic()
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            try:
                httpx.post(
                    self.base_url + "/inference/v1/generate",
                    json=WARMUP_BODY,
                    headers=headers,
                    timeout=self.warmup_timeout_s,
                )
            except httpx.HTTPError as exc:
                raise ServerStartError(
                    f"warm-up request failed: {exc!r}; log tail:\n{self.log_tail()}"
                ) from exc
            self.timings.warmup_s.append(round(time.monotonic() - t0, 2))
            if not self.alive:
                raise ServerStartError(f"server died on warm-up; log tail:\n{self.log_tail()}")
        if self.renice_engine:
            self.timings.reniced_threads.append(procgroup.renice(self.pid))

    def healthy(self, timeout: float = 2.0) -> bool:
        try:
            return httpx.get(self.base_url + "/health", timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def pid(self) -> int:
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
        proc, self._proc = self._proc, None
        _RUNNING.discard(self)
        if proc is None:
            return []
        survivors = procgroup.stop_session(proc.pid)
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            survivors.append(proc.pid)
        return survivors

    def restart(self) -> LiveServer:
        """Stop whatever is left of the session, start again on the same port."""
        self.stop()
        self.restarts += 1
        ends = time.monotonic() + 30.0
        while not _port_free(self.port) and time.monotonic() < ends:
            time.sleep(0.2)
        return self.start()

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def stop_all() -> None:
    """atexit and signal handlers: no server outlives the process that started it."""
    for server in list(_RUNNING):
        server.stop()


atexit.register(stop_all)


def install_signal_handlers() -> None:
    """For CLI use: turn SIGTERM/SIGHUP into SystemExit so `finally` and atexit run."""
    import signal

    def _exit(signum: int, _frame: object) -> None:
        stop_all()
        sys.exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit)
