"""A uvicorn server inside this process, on a loopback port: its base URL for the length of a
block, and its stop after; started in a thread of its own, or from an event loop that runs.

The kit's router and the benchmarks' fault proxy serve in a thread (`in_thread`); a client
author's mock serves from the loop its portal already runs, and only needs `listening`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .timeouts import IN_PROCESS_POLL_S, IN_PROCESS_S


@contextmanager
def listening(server: Any, host: str, stopped: Callable[[], object]) -> Iterator[str]:
    """Yield the URL `server` (started, port 0 allowed) is bound to; then ask it to exit and
    wait with `stopped` (a thread's join, a portal task's result) so no socket outlives it."""
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        stopped()


@contextmanager
def in_thread(config: Any, name: str) -> Iterator[str]:
    """`config` (a `uvicorn.Config`; port 0: a free one) served by uvicorn in a daemon thread
    called `name`; yields its base URL once uvicorn says it started. One that has not started
    within `IN_PROCESS_S`, or whose thread ended first, is a RuntimeError."""
    import uvicorn

    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    ends = time.monotonic() + IN_PROCESS_S
    while not server.started and thread.is_alive() and time.monotonic() < ends:
        time.sleep(IN_PROCESS_POLL_S)
    if not server.started:
        server.should_exit = True
        raise RuntimeError(f"{name} did not start on {config.host}:{config.port}")
    with listening(server, config.host, lambda: thread.join(IN_PROCESS_S)) as url:
        yield url
