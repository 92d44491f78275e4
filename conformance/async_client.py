"""The kit's client for asyncio code (a stream read while its abort is sent beside it): the
same configuration, recording and bounds as `http.Client`."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from .bounded import AsyncStream, Reply, ServerBroke, aread_bounded
from .sender import MISSING, Sender, received, wire


class AsyncClient(Sender):
    """The same client for asyncio code (a stream read while its abort is sent beside it)."""

    def _open(self, app: Any) -> httpx.AsyncClient:
        transport = None
        if app is not None:
            from openapi.asgi_transport import AsyncStreamingTransport

            transport = AsyncStreamingTransport(app, self._portal)
        return httpx.AsyncClient(
            timeout=self.timeouts.for_httpx(), limits=self._limits(), transport=transport
        )

    async def aclose(self) -> None:
        await self._http.aclose()
        self._stack.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = MISSING,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        timeout: float | None = None,
    ) -> Reply:
        """`Client.request`, awaited."""
        exchange = self._prepare(method, path, body, content, headers, auth, stream=False)
        limit = timeout or self.timeout
        started = time.monotonic()
        try:
            async with self._http.stream(
                method,
                exchange.url,
                content=exchange.body,
                headers=wire(exchange.headers),
                timeout=self.timeouts.for_httpx(limit),
            ) as response:
                received(exchange, response, started)
                exchange.response_body = await aread_bounded(
                    response, self._body_deadline(exchange, limit), self._max_bytes(body)
                )
        except (httpx.HTTPError, ServerBroke) as exc:
            raise self._failed(exchange, f"{method} {path}", exc, limit) from None
        self._note(False)
        return Reply(exchange)

    async def post(self, path: str, body: Any = MISSING, **kwargs: Any) -> Reply:
        return await self.request("POST", path, body, **kwargs)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        body: Any = MISSING,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncStream]:
        """Send and keep the answer open: its `chunks()` or `events()` are read as they come,
        bounded by `deadline` (default: the stream budget) and the size cap."""
        exchange = self._prepare(method, path, body, content, headers, auth, stream=True)
        started = time.monotonic()
        ends = started + (deadline or self.stream_deadline)
        try:
            async with self._http.stream(
                method, exchange.url, content=exchange.body, headers=wire(exchange.headers)
            ) as response:
                received(exchange, response, started)
                self._note(False)
                yield AsyncStream(response, exchange, ends, self._max_bytes(body))
        except httpx.HTTPError as exc:
            raise self._stream_failed(exchange, f"{method} {path} (stream)", exc) from None
