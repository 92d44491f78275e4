"""Abort a streamed generate while it is in flight: read the stream chunk by chunk, send the
abort by the first chunk's `request_id`, read the stream to its end.

schemathesis (and httpx's own ASGI transport) deliver a response only once it is complete, too
late to abort it; so the stream goes through httpx, over HTTP or, in-process, through
`StreamingASGITransport`, which hands the body on as the app sends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from ..in_flight import first_request_id, ids_for

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"


class _AppStream(httpx.AsyncByteStream):
    def __init__(self, queue: asyncio.Queue[Any], task: asyncio.Task[None], gone: asyncio.Event):
        self._queue, self._task, self._gone = queue, task, gone

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            message = await self._queue.get()
            if message is None:
                return
            if message["type"] == "http.response.body":
                if message.get("body"):
                    yield bytes(message["body"])
                if not message.get("more_body", False):
                    return

    async def aclose(self) -> None:
        self._gone.set()  # the app sees the client disconnect, as over HTTP
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(self._task, timeout=5.0)


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """An in-process transport that streams: the response is returned at `http.response.start`
    and its body follows as the app sends it (the app runs in the caller's event loop)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (url.host, url.port or 80),
            "client": ("127.0.0.1", 50000),
        }
        queue: asyncio.Queue[Any] = asyncio.Queue()
        gone = asyncio.Event()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            await queue.put(message)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            finally:
                await queue.put(None)

        task = asyncio.ensure_future(run())
        start = await queue.get()
        if start is None:  # the app ended (raised) before answering
            await task
            raise RuntimeError("the app ended without an answer")
        headers = [(bytes(k), bytes(v)) for k, v in start.get("headers", [])]
        return httpx.Response(
            start["status"], headers=headers, stream=_AppStream(queue, task, gone), request=request
        )


@dataclass
class Outcome:
    """What one stream-then-abort attempt saw."""

    status: int = 0
    stream: bytes = b""
    request_id: str | None = None
    abort_status: int | None = None
    abort_body: bytes = b""
    error: str = ""
    abort_answered_s: float | None = None
    """Seconds from the request to the abort's answer, and to the stream's end."""
    ended_s: float | None = None


async def _attempt(
    client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str], auth: dict[str, str]
) -> Outcome:
    """The abort goes out while the stream is still read, so the outcome tells an abort
    answered only after the stream ended (too late) from one the stream outlived (ignored)."""
    out = Outcome()
    started = time.monotonic()
    aborting: asyncio.Future[None] | None = None

    async def abort(request_id: str) -> None:
        answer = await client.post(ABORT, json={"request_ids": ids_for(request_id)}, headers=auth)
        out.abort_status, out.abort_body = answer.status_code, answer.content
        out.abort_answered_s = round(time.monotonic() - started, 3)

    async with client.stream("POST", GENERATE, json=body, headers=headers) as response:
        out.status = response.status_code
        buffer = bytearray()
        async for piece in response.aiter_bytes():
            buffer += piece
            if out.request_id is None:
                out.request_id = first_request_id(bytes(buffer))
                if out.request_id is not None:
                    aborting = asyncio.ensure_future(abort(out.request_id))
        out.stream = bytes(buffer)
        out.ended_s = round(time.monotonic() - started, 3)
    if aborting is not None:
        await aborting
    return out


def stream_then_abort(
    body: dict[str, Any],
    headers: dict[str, str],
    auth: dict[str, str],
    *,
    app: Any = None,
    base_url: str = "",
    timeout_s: float = 15.0,
) -> Outcome:
    """One attempt; never raises (a timeout or a broken connection is `Outcome.error`)."""

    async def go() -> Outcome:
        transport = StreamingASGITransport(app) if app is not None else None
        async with httpx.AsyncClient(
            transport=transport,
            base_url=base_url if app is None else "http://testserver",
            timeout=timeout_s,
            trust_env=False,
        ) as client:
            return await asyncio.wait_for(_attempt(client, body, headers, auth), timeout_s)

    try:
        return asyncio.run(go())
    except TimeoutError:
        return Outcome(error=f"the stream did not end within {timeout_s:g} s")
    except Exception as exc:
        return Outcome(error=f"{type(exc).__name__}: {exc}")
