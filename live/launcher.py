"""One launcher for vLLM and for the mock alike (STYLE §3, llama.cpp's ServerProcess).

`LiveServer` is `conformance.server.process.ServerProcess` (spawn in its own session, wait for
`/health` with a deadline, stop every process of the session, a log whose tail goes into every
error) plus what a real vLLM needs: a longer deadline, renicing the engine (CPU), a warm-up
request, start timings, and `restart()`, which brings back a server that died mid-run on the
same port so a suite's client keeps working; its log is appended to across restarts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from conformance.server.process import (
    ServerProcess,
    ServerStartError,
    install_signal_handlers,
    stop_all,
)
from conformance.wire import Client, ServerBroke
from loopback.ports import is_free
from loopback.timeouts import (
    DEATH_WATCH_S,
    HEALTH_POLL_S,
    HEALTH_READ_S,
    PROBE_S,
    SERVER_START_S,
    SERVER_STOP_GRACE_S,
    SERVER_WARMUP_S,
    STAYS_HEALTHY_S,
)

from . import procgroup

__all__ = [
    "WARMUP_BODY",
    "LiveServer",
    "ServerStartError",
    "Timings",
    "install_signal_handlers",
    "stop_all",
]

WARMUP_BODY = {"token_ids": [10, 11, 12], "sampling_params": {"max_tokens": 2}}


@dataclass
class Timings:
    starts_s: list[float] = field(default_factory=list)  # spawn -> healthy, per start
    warmup_s: list[float] = field(default_factory=list)
    reniced_threads: list[int] = field(default_factory=list)


@dataclass(eq=False)
class LiveServer(ServerProcess):
    start_deadline_s: float = SERVER_START_S
    up_statuses: tuple[int, ...] = (200,)
    poll_s: float = HEALTH_POLL_S
    stop_grace_s: float = SERVER_STOP_GRACE_S
    log_lines: int = 40
    renice_engine: bool = False
    api_key: str | None = None
    warmup: bool = True
    warmup_timeout_s: float = SERVER_WARMUP_S
    timings: Timings = field(default_factory=Timings)
    restarts: int = 0
    _client: Client | None = field(default=None, init=False, repr=False)

    @property
    def client(self) -> Client:
        """The kit's client for this server's readiness and warm-up (one per server: a
        restart keeps the port). It never stops on timeouts: a starting server has many."""
        if self._client is None:
            self._client = Client(
                self.base_url, self.api_key, self.warmup_timeout_s, stop_after=None, keep_log=False
            )
        return self._client

    def healthy(self, timeout: float = PROBE_S) -> bool:
        """Whether /health answers an up status within `timeout` (the launcher's readiness)."""
        try:
            reply = self.client.get(self.health_path, auth=False, timeout=timeout)
        except ServerBroke:
            return False
        return reply.status in self.up_statuses

    def stays_healthy(self, watch_s: float = DEATH_WATCH_S) -> bool:
        """Whether it is alive and `/health` answers for STAYS_HEALTHY_S on end within
        `watch_s`: a server that was just killed can still answer it for a moment (vLLM's 500
        comes before its exit; uvicorn drains)."""
        ends = time.monotonic() + watch_s
        healthy_since: float | None = None
        while time.monotonic() < ends:
            if not self.alive:
                return False
            if self.healthy(timeout=HEALTH_READ_S):
                healthy_since = healthy_since or time.monotonic()
                if time.monotonic() - healthy_since >= STAYS_HEALTHY_S:
                    return True
            else:
                healthy_since = None
            time.sleep(HEALTH_POLL_S)
        return self.alive and healthy_since is not None

    def stop(self) -> list[int]:
        stopped = super().stop()
        if self._client is not None:
            self._client.close()
            self._client = None
        return stopped

    def _on_healthy(self) -> None:
        """Renice, warm up (the first request can take ~14 s on CPU), renice new threads."""
        assert self.last_start_s is not None
        self.timings.starts_s.append(round(self.last_start_s, 2))
        if self.renice_engine:
            self.timings.reniced_threads.append(procgroup.renice(self.pid))
        if self.warmup:
            self._warm_up()
        if self.renice_engine:
            self.timings.reniced_threads.append(procgroup.renice(self.pid))

    def _warm_up(self) -> None:
        t0 = time.monotonic()
        try:
            self.client.post("/inference/v1/generate", WARMUP_BODY, timeout=self.warmup_timeout_s)
        except ServerBroke as exc:
            raise ServerStartError(
                f"warm-up request failed: {exc}; log tail:\n{self.log_tail()}"
            ) from exc
        self.timings.warmup_s.append(round(time.monotonic() - t0, 2))
        if not self.alive:
            raise ServerStartError(f"server died on warm-up; log tail:\n{self.log_tail()}")

    def restart(self) -> LiveServer:
        """Stop whatever is left of the session, start again on the same port, same log."""
        self._end_session()
        self.restarts += 1
        ends = time.monotonic() + 30.0
        while not is_free(self.port) and time.monotonic() < ends:
            time.sleep(HEALTH_POLL_S)
        return self.start()
