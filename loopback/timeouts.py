"""Every wait of the kit, named once: a sender's all follow from one number (`Timeouts`); the
others (a run's and a start's deadlines, the polls and graces around a server) are named below,
each kind once, with why it is as long as it is."""

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
RUN_FACTOR = 40.0
"""A whole suite run's wall clock, in request timeouts (RUN_DEADLINE_S at the default): room
for a probe pass, a few dozen checks that each wait a stream's whole budget (3x) on a server
whose streams never end, and the small fuzz, whatever the server does."""
PROBE_SHARE = 0.5
"""What of a run's wall clock its probe pass (features and limits) may spend: a server that
makes every probe request wait its whole timeout leaves the checks the other half."""


@dataclass(frozen=True)
class Timeouts:
    """Every wait of a sender, in one object (STYLE §8): all follow from `request` unless set.

    `request`: the longest wait for an answer's status line or for one chunk of it; a whole
    plain body must end within twice that. `connect`: the TCP connect (at most 5 s: a refused
    or unroutable server is found fast). `stream`: the wall clock of one streamed answer (3x).
    `answer`: how long a correct answer may take before the fuzzer calls it slow (2/3 x, so a
    slow answer is told from one that never came). `run`: a whole suite run's wall clock
    (40x), which no server can stretch: every exchange ends by it."""

    request: float = DEFAULT_TIMEOUT_S
    connect: float = 0.0
    stream: float = 0.0
    answer: float = 0.0
    run: float = 0.0

    def __post_init__(self) -> None:
        if self.request <= 0:
            raise ValueError(f"a timeout must be positive, not {self.request:g}")
        derived = {
            "connect": min(self.request, CONNECT_CAP_S),
            "stream": STREAM_FACTOR * self.request,
            "answer": ANSWER_FACTOR * self.request,
            "run": RUN_FACTOR * self.request,
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

# the kit's other waits: answers derive from the one number; deadlines, polls and graces are
# named for what they wait for (values as the modules that used them had them)
WARMUP_TIMEOUT_S = DEFAULT_TIMEOUT_S
"""The probe's first generate: a real server's first request is its slowest (a request's wait,
or this if longer)."""
RUN_DEADLINE_S = RUN_FACTOR * DEFAULT_TIMEOUT_S
"""One suite run's wall clock at the default timeout (20 min; every `--deadline` defaults to
`Timeouts.run`, 40 request timeouts; per profile in `live`): a server that hangs costs
minutes, not hours, and a whole run of a real vLLM on two CPU cores fits."""
PAST_DEADLINE_S = 60.0
"""How long a check worker's process may outlast the run deadline: the run inside it stops at
its deadline, the process still starts Python, collects and writes its shard."""
SERVER_START_S = 300.0
"""A real vLLM's start until /health answers (`live --start-deadline`): loading the model and
warming up on two CPU cores takes minutes."""
FRONTEND_START_S = 600.0
"""A vLLM release's own server over the simulated core: its start imports a whole release (one
to three minutes on two busy cores) and may share the cores with another server's start."""
MOCK_START_S = 30.0
"""A mock process's start until /health (the embedded mock, a fleet's engines, the fidelity
diff's candidate beside a real vLLM): seconds alone, more on busy cores."""
DIFF_RUN_S = 900.0
"""One `tito-conformance diff` process against a real vLLM: the corpus's long cases at a real
server's pace (twice this where both sides are real servers)."""
HEALTH_READ_S = 1.0
"""One /health read of a watched server: a live server answers in milliseconds whatever its
model's pace, so it is not scaled with the answer waits."""
HEALTH_POLL_S = 0.2
"""How often a server that may have just died is read (alive? /health?): a death is seen
within a check's time, at no cost to the server."""
DEATH_WATCH_S = 5.0
"""How long a server whose check failed is watched for its death: a crash comes a moment after
the 500 that announced it."""
STAYS_HEALTHY_S = 1.0
"""How long a server that may have just crashed must keep answering /health to count as alive:
vLLM 0.32 `--tokens-only` still answers for a moment after its crash (uvicorn drains)."""
ALIVE_POLL_S = 1.0
"""How often a server run in the foreground is checked alive, to exit when it did."""
SIGNAL_SLICE_S = 3600.0
"""A foreground command waits for its stop signal in slices of this (any length: the signal
ends the wait)."""
SHUTDOWN_GRACE_S = 1
"""What uvicorn gives a mock's open connections on shutdown (an int, as uvicorn takes it): the
mock answers in milliseconds, and a test's teardown should not wait for a held stream."""
IN_PROCESS_S = 10.0
"""An in-process mock server's start and stop: milliseconds, unless the machine is stuck."""
IN_PROCESS_POLL_S = 0.005
"""How often an in-process server is asked whether it has started."""
DRAIN_POLL_S = 0.01
"""How often `/pause?mode=wait` looks whether the requests in flight have ended."""
SERVER_STOP_GRACE_S = 8.0
"""SIGTERM -> SIGKILL for a real vLLM: its engine-core processes take seconds to end."""
SERVER_WARMUP_S = 120.0
"""A real vLLM's first generate after /health (compiling, caches): minutes' worth on a CPU."""
ROUTER_START_S = 60.0
"""vllm-router until /health: it waits for every worker's /health before it serves."""
INDEX_READ_S = 60.0
"""One read of a package index (the releases of vllm-router on PyPI)."""
LOCAL_READ_S = 5.0
"""One read of a loopback server's own bookkeeping (`/mock/stats`): milliseconds alone,
seconds on two busy cores."""
