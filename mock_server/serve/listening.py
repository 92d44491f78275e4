"""A started uvicorn server's base URL for the length of a block, and its stop after."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


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
