"""A started server is ready when `GET /health` answers: waited for with a deadline, and given
up on at once when its process exits (its log then says why; the deadline would only hide it).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx

from .timeouts import POLL_S, PROBE_S

HEALTH_PATH = "/health"


class NotReady(RuntimeError):
    """The server did not answer in time."""


class ExitedBeforeReady(NotReady):
    """The server's process exited before it answered; `returncode` is its exit status."""

    def __init__(self, returncode: int) -> None:
        super().__init__(f"exited with {returncode} before it was ready")
        self.returncode = returncode


def answers(
    url: str,
    timeout: float = PROBE_S,
    statuses: tuple[int, ...] = (200,),
    path: str = HEALTH_PATH,
) -> bool:
    """One `GET url+path` on a connection of its own (one kept alive must not outlive a
    restart): whether it answered one of `statuses` within `timeout`."""
    try:
        return httpx.get(url + path, timeout=timeout).status_code in statuses
    except httpx.HTTPError:
        return False


Probe = Callable[[float], bool]
"""Whether the server is ready, waiting at most the given seconds."""


def wait_ready(
    process: subprocess.Popen[bytes],
    ready: str | Probe,
    within: float,
    poll_s: float = POLL_S,
    probe_s: float = PROBE_S,
) -> float:
    """Until `ready` (a base URL whose `/health` answers 200, or a probe) holds; return the
    seconds it took. `ExitedBeforeReady` as soon as `process` exits, `NotReady` after `within`
    seconds. Each probe waits at most `probe_s`, never past the deadline."""
    probe: Probe = (lambda t: answers(ready, t)) if isinstance(ready, str) else ready
    start = time.monotonic()
    ends = start + within
    while (left := ends - time.monotonic()) > 0:
        if process.poll() is not None:
            raise ExitedBeforeReady(process.returncode)
        if probe(max(0.1, min(probe_s, left))):
            return time.monotonic() - start
        time.sleep(poll_s)
    raise NotReady(f"not ready within {within:g} s")
