"""Small raw-ASGI helpers: bounded body reads and direct response sends (no framework cost)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mock_server.wire.errors import ApiError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Disconnected(Exception):
    """The client went away while we were reading its body."""


HEADERS = "tito.headers"


def header(scope: Scope, name: str) -> str | None:
    """A request header by case-insensitive name (first occurrence).

    A generate request looks up half a dozen headers: the scope keeps them by lowercased name
    after the first lookup instead of lowercasing every header at every lookup."""
    table: dict[str, str] | None = scope.get(HEADERS)
    if table is None:
        table = {}
        for k, v in scope.get("headers", ()):
            table.setdefault(k.decode("latin1").lower(), v.decode("latin1"))
        scope[HEADERS] = table
    return table.get(name.lower())


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole body, refusing (413) before reading more than `limit` bytes."""
    declared = header(scope, "content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        f"Request body exceeds the mock's limit of {limit} bytes (--mock-max-body-bytes).",
        "Request Entity Too Large",
    )


async def send_bytes(
    send: Send,
    status: int,
    body: bytes,
    content_type: str | None = "application/json",
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type.encode()))
    if extra:
        headers += extra
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_json(send: Send, status: int, obj: Any) -> None:
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    await send_bytes(send, status, body)


async def wait_disconnect(receive: Receive) -> None:
    """Returns when the client disconnects (call only after the body was read)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def cancel(task: asyncio.Task[Any] | None) -> None:
    if task is not None and not task.done():
        task.cancel()


ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
