"""In-process httpx transports to an ASGI app that stream: the kit's one ASGI transport.

`httpx.ASGITransport` returns a response only once the app has finished, so a client's
streaming loop and its abort-mid-stream path never run against it. These transports hand the
response back at `http.response.start` and each body chunk as the app sends it. The app runs on
its own event loop (an anyio blocking portal), whichever thread or loop the client uses, so one
app can serve a sync client, an async client and a loopback socket at once, and closing a
response early reaches the app as the client disconnect it would see over HTTP.

It lives here, beside the spec's loader, because both sides use it: the mock's client-author
fixtures and the fuzzer's in-process abort sequence (neither package imports the other).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from concurrent.futures import Future
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal

Message = MutableMapping[str, Any]
ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]

Deliver = Callable[[Any], None]
"""Hands one item to the client: an ASGI send message, an exception, or None (the app ended)."""

CLOSE_WAIT_S = 5.0
"""How long closing a response waits for the app to see the disconnect and finish."""


def asgi_scope(request: httpx.Request) -> dict[str, Any]:
    """The ASGI HTTP scope a server would build for `request`."""
    url = request.url
    return {
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
        "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
        "client": ("127.0.0.1", 50000),
    }


def read_timeout(request: httpx.Request) -> float | None:
    """The client's read timeout: the longest wait for the status line or for one chunk."""
    timeout = request.extensions.get("timeout", {})
    value = timeout.get("read") if isinstance(timeout, dict) else None
    return float(value) if value is not None else None


class Exchange:
    """One request run through the app on the portal's loop; the client side only reads."""

    def __init__(self, app: ASGIApp, request: httpx.Request, body: bytes, deliver: Deliver):
        self.app, self.request, self.body, self.deliver = app, request, body, deliver
        self.gone = asyncio.Event()  # binds to the portal's loop on first use
        self.done: Future[None] | None = None

    def start(self, portal: BlockingPortal) -> None:
        self.done = portal.start_task_soon(self._serve)
        self._portal = portal

    async def _serve(self) -> None:
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": self.body, "more_body": False}
            await self.gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            self.deliver(message)

        try:
            await self.app(asgi_scope(self.request), receive, send)
        except Exception as exc:  # the client sees a broken connection, as over HTTP
            self.deliver(exc)
        finally:
            self.deliver(None)

    def disconnect(self) -> Future[None]:
        """Tell the app its client went away; the future ends when the app has finished."""
        assert self.done is not None

        async def hang_up() -> None:
            self.gone.set()
            await asyncio.wait([asyncio.wrap_future(self.done)], timeout=CLOSE_WAIT_S)  # type: ignore[arg-type]

        try:
            return self._portal.start_task_soon(hang_up)
        except RuntimeError:  # the app's loop has been closed: nothing is left to hang up on
            ended: Future[None] = Future()
            ended.set_result(None)
            return ended


def _response(
    start: Any, request: httpx.Request, stream: httpx.SyncByteStream | httpx.AsyncByteStream
) -> httpx.Response:
    if isinstance(start, Exception):
        raise httpx.RemoteProtocolError(f"the app failed: {start!r}", request=request)
    if start is None or start.get("type") != "http.response.start":
        raise httpx.RemoteProtocolError("the app ended without an answer", request=request)
    headers = [(bytes(k), bytes(v)) for k, v in start.get("headers", [])]
    return httpx.Response(start["status"], headers=headers, stream=stream, request=request)


def _step(item: Any, request: httpx.Request) -> tuple[bytes, bool]:
    """One delivered item as (body bytes, whether the body has ended)."""
    if item is None:
        return b"", True
    if isinstance(item, Exception):
        raise httpx.ReadError(f"the app failed mid-body: {item!r}", request=request)
    if item.get("type") != "http.response.body":
        return b"", False
    return bytes(item.get("body", b"")), not item.get("more_body", False)


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, exchange: Exchange, items: queue.Queue[Any], timeout: float | None):
        self.exchange, self.items, self.timeout = exchange, items, timeout

    def __iter__(self) -> Iterator[bytes]:
        ended = False
        while not ended:
            try:
                item = self.items.get(timeout=self.timeout)
            except queue.Empty:
                raise httpx.ReadTimeout("no chunk within the read timeout") from None
            data, ended = _step(item, self.exchange.request)
            if data:
                yield data

    def close(self) -> None:
        self.exchange.disconnect().result(CLOSE_WAIT_S + 1)


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, exchange: Exchange, items: asyncio.Queue[Any], timeout: float | None):
        self.exchange, self.items, self.timeout = exchange, items, timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        ended = False
        while not ended:
            try:
                item = await asyncio.wait_for(self.items.get(), self.timeout)
            except TimeoutError:
                raise httpx.ReadTimeout("no chunk within the read timeout") from None
            data, ended = _step(item, self.exchange.request)
            if data:
                yield data

    async def aclose(self) -> None:
        await asyncio.wrap_future(self.exchange.disconnect())


class StreamingTransport(httpx.BaseTransport):
    """A sync transport into an ASGI app; responses stream as the app produces them."""

    def __init__(self, app: ASGIApp, portal: BlockingPortal) -> None:
        self.app, self.portal = app, portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        items: queue.Queue[Any] = queue.Queue()
        exchange = Exchange(self.app, request, request.read(), items.put)
        exchange.start(self.portal)
        timeout = read_timeout(request)
        try:
            start = items.get(timeout=timeout)
        except queue.Empty:
            exchange.disconnect()
            raise httpx.ReadTimeout("no answer within the read timeout", request=request) from None
        return _response(start, request, _SyncBody(exchange, items, timeout))


class AsyncStreamingTransport(httpx.AsyncBaseTransport):
    """An async transport into an ASGI app; responses stream as the app produces them."""

    def __init__(self, app: ASGIApp, portal: BlockingPortal) -> None:
        self.app, self.portal = app, portal

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        loop = asyncio.get_running_loop()
        items: asyncio.Queue[Any] = asyncio.Queue()

        def deliver(item: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the client's loop has closed: it is gone
                loop.call_soon_threadsafe(items.put_nowait, item)

        exchange = Exchange(self.app, request, await request.aread(), deliver)
        exchange.start(self.portal)
        timeout = read_timeout(request)
        try:
            start = await asyncio.wait_for(items.get(), timeout)
        except TimeoutError:
            exchange.disconnect()
            raise httpx.ReadTimeout("no answer within the read timeout", request=request) from None
        return _response(start, request, _AsyncBody(exchange, items, timeout))
