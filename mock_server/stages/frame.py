"""The frame stage: a streamed job, generated, built, framed and written event by event
(`mock_server.answers.streaming`) while its client is watched."""

from __future__ import annotations

import asyncio

from mock_server.answers.payloads import Builder
from mock_server.answers.streaming import stream_job
from mock_server.endpoints.state import AppState
from mock_server.engine.core import Job
from mock_server.stages.admit import watch_hang_up
from mock_server.wire.asgi import Receive, Send, cancel


async def stream(state: AppState, job: Job, built: Builder, receive: Receive, send: Send) -> None:
    gone = asyncio.Event()
    watcher = asyncio.create_task(watch_hang_up(state, receive, job, gone))
    try:
        await stream_job(send, state.config, state.engine, job, built, gone)
    finally:
        cancel(watcher)
