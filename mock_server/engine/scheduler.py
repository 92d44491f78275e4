"""Capacity: at most max_num_seqs sequences run at once, the rest wait their turn."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any


class Scheduler:
    """At most max_num_seqs sequences run at once; the rest wait in FIFO order."""

    def __init__(self, capacity: int) -> None:
        self.free = capacity
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    def try_acquire(self, n: int) -> bool:
        """`acquire` when it would admit at once, without handing the loop over (no coroutine
        to run for the common case); False, taking nothing, otherwise."""
        if self._waiters or self.free < n:
            return False
        self.free -= n
        return True

    async def acquire(self, n: int, aborted: asyncio.Event) -> bool:
        if self.try_acquire(n):
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (n, fut)
        self._waiters.append(entry)
        abort_wait: asyncio.Future[Any] = asyncio.ensure_future(aborted.wait())
        try:
            waiting: set[asyncio.Future[Any]] = {fut, abort_wait}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            abort_wait.cancel()
        if fut.done() and not fut.cancelled():
            return True
        if entry in self._waiters:
            self._waiters.remove(entry)
        fut.cancel()
        return False

    def release(self, n: int) -> None:
        self.free += n
        while self._waiters and self.free >= self._waiters[0][0]:
            need, fut = self._waiters.popleft()
            self.free -= need
            fut.set_result(None)

    @property
    def queued(self) -> int:
        return len(self._waiters)
