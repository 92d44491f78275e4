"""The kit's one timeout configuration: every wait of every sender follows from one number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when used: the pytest plugin reads DEFAULT_TIMEOUT_S, light
    import httpx

DEFAULT_TIMEOUT_S = 30.0
"""The one default of every `--timeout` (run, fuzz, diff, live) and of every sender: long
enough for a real vLLM on two CPU cores, whose first answers take seconds; the suite scales
its generate waits up from it by the learned pace (`Session.timeout_for`)."""
CONNECT_CAP_S = 5.0
STREAM_FACTOR = 3.0
ANSWER_FACTOR = 2 / 3


@dataclass(frozen=True)
class Timeouts:
    """Every wait of a sender, in one object (STYLE §8): all follow from `request` unless set.

    `request`: the longest wait for an answer's status line or for one chunk of it; a whole
    plain body must end within twice that. `connect`: the TCP connect (at most 5 s: a refused
    or unroutable server is found fast). `stream`: the wall clock of one streamed answer (3x).
    `answer`: how long a correct answer may take before the fuzzer calls it slow (2/3 x, so a
    slow answer is told from one that never came)."""

    request: float = DEFAULT_TIMEOUT_S
    connect: float = 0.0
    stream: float = 0.0
    answer: float = 0.0

    def __post_init__(self) -> None:
        if self.request <= 0:
            raise ValueError(f"a timeout must be positive, not {self.request:g}")
        derived = {
            "connect": min(self.request, CONNECT_CAP_S),
            "stream": STREAM_FACTOR * self.request,
            "answer": ANSWER_FACTOR * self.request,
        }
        for name, value in derived.items():
            if not getattr(self, name):
                object.__setattr__(self, name, round(value, 3))

    @classmethod
    def of(cls, timeout: float | Timeouts | None, stream: float | None = None) -> Timeouts:
        """`timeout` as a `Timeouts` (a number is its `request`; None the default)."""
        if isinstance(timeout, Timeouts):
            return timeout
        return cls(DEFAULT_TIMEOUT_S if timeout is None else timeout, stream=stream or 0.0)

    def for_httpx(self, read: float | None = None) -> httpx.Timeout:
        import httpx

        read = read or self.request
        return httpx.Timeout(read, connect=min(self.connect, read))


# processes and readiness
POLL_S = 0.05
"""How often a wait on this machine looks again: at a process, a session, a `/health`."""
PROBE_S = 2.0
"""The longest one readiness probe (`GET /health`) waits: a server still starting answers
nothing, and the next probe is sent rather than this one waited on."""
STOP_GRACE_S = 5.0
"""SIGTERM -> SIGKILL: how long a server has to end on its own before it is killed."""
REAP_S = 5.0
"""How long a killed process may take to be gone (and its leader reaped)."""
