"""The generate stage: a non-streamed job run by the engine while its client is watched."""

from __future__ import annotations

import asyncio

from mock_server.endpoints.state import AppState
from mock_server.engine.core import Job
from mock_server.stages.admit import watch_hang_up
from mock_server.wire.asgi import Receive, cancel


async def complete(state: AppState, job: Job, receive: Receive) -> bool:
    """Run `job` to its end; False if its client went away meanwhile (nothing to answer)."""
    engine = state.engine
    gone = asyncio.Event()
    watcher: asyncio.Task[None] | None = None

    def watch() -> None:
        nonlocal watcher
        watcher = asyncio.create_task(watch_hang_up(state, receive, job, gone))

    try:
        if state.config.fast.generate:
            # The watcher starts when the engine first hands the loop over: a request
            # that completes in one go (most, without --mock-itl-ms) needs no task.
            await engine.complete(job, watch)
        else:
            watch()
            async for _ in engine.run(job):
                pass
    finally:
        cancel(watcher)
    return not gone.is_set()
