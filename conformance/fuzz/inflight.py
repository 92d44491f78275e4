"""Abort a streamed generate while it is in flight: read the stream chunk by chunk, send the
abort by the first chunk's `request_id`, read the stream to its end.

schemathesis (and httpx's own ASGI transport) deliver a response only once it is complete, too
late to abort it; so the stream goes through httpx, over HTTP or, in-process, through the kit's
one streaming ASGI transport (`openapi.asgi_transport`), which hands the body on as the app
sends it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx
from anyio.from_thread import start_blocking_portal

from openapi.asgi_transport import AsyncStreamingTransport

from ..in_flight import first_request_id, ids_for

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"


@dataclass
class Outcome:
    """What one stream-then-abort attempt saw."""

    status: int = 0
    stream: bytes = b""
    request_id: str | None = None
    abort_status: int | None = None
    abort_body: bytes = b""
    error: str = ""
    abort_sent_s: float | None = None
    """Seconds from the request to the first chunk naming its id (the abort goes out then), to
    the abort's answer, and to the stream's end."""
    abort_answered_s: float | None = None
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
                    out.abort_sent_s = round(time.monotonic() - started, 3)
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

    async def go(transport: httpx.AsyncBaseTransport | None) -> Outcome:
        async with httpx.AsyncClient(
            transport=transport,
            base_url=base_url if app is None else "http://testserver",
            timeout=timeout_s,
            trust_env=False,
        ) as client:
            return await asyncio.wait_for(_attempt(client, body, headers, auth), timeout_s)

    try:
        if app is None:
            return asyncio.run(go(None))
        with start_blocking_portal() as portal:  # the app on its own loop, as over a socket
            return asyncio.run(go(AsyncStreamingTransport(app, portal)))
    except TimeoutError:
        return Outcome(error=f"the stream did not end within {timeout_s:g} s")
    except Exception as exc:
        return Outcome(error=f"{type(exc).__name__}: {exc}")
