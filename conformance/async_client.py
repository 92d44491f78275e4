"""The kit's client for asyncio code (a stream read while its abort is sent beside it): the
same configuration, recording and bounds as `http.Client`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Unpack

import httpx

from .bounded import AsyncStream, Reply, aread_bounded
from .outgoing import Outgoing
from .sender import MISSING, Opened, Sender, Timed


class AsyncClient(Sender):
    """The same client for asyncio code (a stream read while its abort is sent beside it)."""

    def _open(self, app: Any) -> httpx.AsyncClient:
        transport = None
        if app is not None:
            from openapi.asgi_transport import AsyncStreamingTransport

            transport = AsyncStreamingTransport(app, self._portal)
        return httpx.AsyncClient(transport=transport, **self._options())

    async def aclose(self) -> None:
        await self._http.aclose()
        self._stack.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(
        self, method: str, path: str, body: Any = MISSING, **how: Unpack[Timed]
    ) -> Reply:
        """`Client.request`, awaited."""
        timeout = how.get("timeout")
        exchange = self._prepare(method, path, body, False, how)
        out = Outgoing(self, exchange, f"{method} {path}", timeout or self.timeout, body)
        with out.answered():
            async with self._http.stream(**out.args(self.timeouts.for_httpx(out.limit))) as answer:
                exchange.response_body = await aread_bounded(answer, *out.received(answer))
        return out.reply()

    async def post(self, path: str, body: Any = MISSING, **kwargs: Any) -> Reply:
        return await self.request("POST", path, body, **kwargs)

    @asynccontextmanager
    async def stream(
        self, method: str, path: str, body: Any = MISSING, **how: Unpack[Opened]
    ) -> AsyncIterator[AsyncStream]:
        """Send and keep the answer open: its `chunks()` or `events()` are read as they come,
        bounded by `deadline` (default: the stream budget) and the size cap."""
        deadline = how.get("deadline")
        exchange = self._prepare(method, path, body, True, how)
        what = f"{method} {path} (stream)"
        out = Outgoing(self, exchange, what, deadline or self.stream_deadline, body)
        with out.opened():
            async with self._http.stream(**out.args()) as response:
                out.streaming(response)
                yield AsyncStream(response, exchange, out.ends, out.max_bytes)
