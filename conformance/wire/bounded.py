"""What a sender reads back, bounded in time and size: a whole `Reply`, or a `Stream` (sync) /
`AsyncStream` read as it arrives, its events decoded by httpx-sse, the kit's one SSE decoder
(for bytes read whole or as they arrive).

A server under test may hang, send garbage, close a stream early or never end it. Every way a
server can break the transport becomes `ServerBroke`, an AssertionError, so pytest reports it as a
failure of the check with a readable message; the suite itself never hangs or crashes.
"""

from __future__ import annotations

import codecs
import errno
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError

from conformance.wire.exchange import Exchange

# ---------------------------------------- SSE, decoded by httpx-sse

_ENDS = (b"\r\n\r\n", b"\n\n", b"\r\r")


def sse_events(raw: bytes) -> list[ServerSentEvent]:
    """The complete events in SSE bytes, decoded by httpx-sse: the one SSE decoder of the kit
    (the suite's streams, the fuzzer's and the diff's bytes alike)."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)
    return list(EventSource(response).iter_sse())


def sse_data(raw: bytes) -> list[str]:
    """The data of each complete event in SSE bytes (`sse_events`)."""
    return [event.data for event in sse_events(raw)]


def is_event_stream(headers: dict[str, str]) -> bool:
    return headers.get("content-type", "").split(";")[0].strip().lower() == "text/event-stream"


class EventReader:
    """Events decoded as raw chunks arrive (a reader that also keeps the bytes, to time each
    event or to act on one, e.g. once a request id is known): only the complete events are
    decoded, each once."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[str]:
        """The data of the events this chunk completed."""
        self._pending += chunk
        end = max((at + len(m) for m in _ENDS if (at := self._pending.rfind(m)) >= 0), default=0)
        if not end:  # no blank line yet: no event is complete
            return []
        done, self._pending = self._pending[:end], self._pending[end:]
        return sse_data(done)


# ---------------------------------------- answers, bounded

MAX_BODY = 8 * 1024 * 1024
MAX_EVENTS = 20_000
EVENT_BYTES = 1024
"""What one stream event may add to a body of the same tokens: its framing and envelope."""


class Unsendable(ValueError):
    """The request itself cannot go on the wire (an HTTP/1.1 client refuses it: a header value
    with a control character, say): nothing was sent, so there is no answer to judge."""


class ClientBroke(RuntimeError):
    """The client's own socket failed under it (closed: EBADF, ENOTSOCK): no statement of the
    server's, so never a FAIL; the harness broke, and the report says so."""


LOCAL_ERRNOS = frozenset({errno.EBADF, errno.ENOTSOCK})


def local_fault(exc: BaseException) -> bool:
    """Whether a transport error is the client's own (its socket closed under it)."""
    seen: BaseException | None = exc
    for _ in range(8):  # httpx -> httpcore -> OSError
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in LOCAL_ERRNOS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class ServerBroke(AssertionError):
    """The server did not speak HTTP/JSON/SSE acceptably: timeout, garbage, too big, cut off.
    `timed_out`: it said nothing in time (rather than saying something broken)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class PastDeadline(ServerBroke):
    """An answer (a stream, or a plain body after its head) still coming when its wall clock
    ran out: the client stopped reading. Only a verdict where the clock is the requirement's;
    in flight, a slow reader can cause it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, True)


@dataclass
class Reply:
    exchange: Exchange

    @property
    def status(self) -> int:
        return self.exchange.status or 0

    @property
    def headers(self) -> dict[str, str]:
        return self.exchange.response_headers

    @property
    def body(self) -> bytes:
        return self.exchange.response_body

    def json(self) -> Any:
        """The body as JSON, or a failure saying what came instead."""
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise ServerBroke(
                f"{self.exchange.method} {self.exchange.url} answered HTTP {self.status} with a "
                f"body that is not JSON ({exc}): {self.body[:200]!r}"
            ) from None

    def events(self) -> list[str]:
        """The data of each event of an SSE body read whole (httpx-sse)."""
        return sse_data(self.body)


def _event(exchange: Exchange, data: str) -> str:
    """Record one event's data (sync and async alike): a stream that never ends is stopped."""
    exchange.events.append(data)
    if len(exchange.events) > MAX_EVENTS:
        raise ServerBroke(f"stream sent more than {MAX_EVENTS} events; stopped")
    return data


def _cut_off(
    exchange: Exchange, exc: httpx.HTTPError, on_stall: Callable[[], None] = lambda: None
) -> ServerBroke | ClientBroke:
    """The ServerBroke of a stream whose transport failed mid-read, recorded on the exchange
    (sync and async alike); a read timeout is a stall, told to `on_stall`."""
    if local_fault(exc):
        exchange.error = f"the client's socket failed: {exc}"
        return ClientBroke(f"the client's own socket failed mid-stream (not the server): {exc}")
    if isinstance(exc, httpx.TimeoutException):
        on_stall()
        exchange.error = "read timed out mid-stream"
        return ServerBroke("the stream stalled: read timed out mid-stream", True)
    exchange.error = f"stream broke: {type(exc).__name__}: {exc}"
    return ServerBroke(f"the stream broke off: {type(exc).__name__}: {exc}")


class _BoundedResponse:
    """What httpx-sse reads from: the real response, cut off by size and wall clock."""

    def __init__(
        self,
        response: httpx.Response,
        exchange: Exchange,
        deadline: float,
        on_stall: Callable[[], None] = lambda: None,
        max_bytes: int = MAX_BODY,
    ) -> None:
        self.headers = response.headers
        self._on_stall = on_stall
        self._max_bytes = max_bytes
        self._response = response
        self._exchange = exchange
        self._deadline = deadline
        self.read_bytes = 0

    def iter_text(self) -> Iterator[str]:
        for text in self._response.iter_text():
            self.read_bytes += len(text)
            if len(self._exchange.response_body) < 4096:
                self._exchange.response_body += text.encode()[:4096]
            if self.read_bytes > self._max_bytes:
                raise ServerBroke(f"stream exceeded {self._max_bytes} bytes; stopped reading")
            if time.monotonic() > self._deadline:
                self._on_stall()
                raise PastDeadline("stream did not end before its deadline; stopped reading")
            yield text


class Stream:
    """An open SSE response. `events()` yields each event's data, bounded."""

    def __init__(self, bounded: _BoundedResponse) -> None:
        self.response = bounded._response
        self.exchange = bounded._exchange
        self._bounded = bounded
        self._events: Iterator[str] | None = None
        self.raw = bytearray()
        """Every byte `chunks` read (the exchange keeps the first 4 KiB)."""

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def headers(self) -> dict[str, str]:
        return self.exchange.response_headers

    def read_body(self) -> Reply:
        """For a non-SSE answer (an error status): read it as a plain bounded body."""
        self.exchange.response_body = read_bounded(self.response, self._bounded._deadline)
        return Reply(self.exchange)

    def events(self) -> Iterator[str]:
        """The event iterator; calling it again continues where the last reader stopped."""
        if self._events is None:
            self._events = self._iter_events()
        return self._events

    def chunks(self) -> Iterator[bytes]:
        """The raw body as it arrives, bounded like `events` (for a caller that watches the
        bytes, e.g. for the first request id, rather than reading events)."""
        bounded = self._bounded
        try:
            for chunk in self.response.iter_bytes():
                bounded.read_bytes += len(chunk)
                self.raw += chunk
                if len(self.exchange.response_body) < 4096:
                    self.exchange.response_body += chunk[:4096]
                if bounded.read_bytes > bounded._max_bytes:
                    raise ServerBroke(
                        f"stream exceeded {bounded._max_bytes} bytes; stopped reading"
                    )
                if time.monotonic() > bounded._deadline:
                    bounded._on_stall()
                    raise PastDeadline("stream did not end before its deadline; stopped")
                yield chunk
        except httpx.HTTPError as exc:
            raise _cut_off(self.exchange, exc, bounded._on_stall) from None

    def _iter_events(self) -> Iterator[str]:
        source = EventSource(cast(httpx.Response, self._bounded))
        try:
            for event in source.iter_sse():
                yield _event(self.exchange, event.data)
        except SSEError as exc:  # an httpx.HTTPError too: the stream's bytes are no SSE
            raise ServerBroke(f"not an SSE stream: {exc}") from None
        except httpx.HTTPError as exc:
            raise _cut_off(self.exchange, exc, self._bounded._on_stall) from None


class AsyncStream:
    """An open streamed answer read from asyncio: raw `chunks()` or SSE `events()`, one bounded
    reader under both (a caller may watch the bytes for an id, then read on)."""

    def __init__(
        self, response: httpx.Response, exchange: Exchange, deadline: float, max_bytes: int
    ) -> None:
        self.response = response
        self.exchange = exchange
        self.headers = response.headers  # what httpx-sse reads the Content-Type from
        self._deadline = deadline
        self._max_bytes = max_bytes
        self.read_bytes = 0
        self.raw = bytearray()
        """Every byte read so far (the exchange keeps the first 4 KiB)."""

    @property
    def status(self) -> int:
        return self.response.status_code

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.response.aiter_bytes():
                self.read_bytes += len(chunk)
                self.raw += chunk
                if len(self.exchange.response_body) < 4096:
                    self.exchange.response_body += chunk[:4096]
                if self.read_bytes > self._max_bytes:
                    raise ServerBroke(f"stream exceeded {self._max_bytes} bytes; stopped reading")
                if time.monotonic() > self._deadline:
                    raise PastDeadline("stream did not end before its deadline; stopped")
                yield chunk
        except httpx.HTTPError as exc:
            raise _cut_off(self.exchange, exc) from None

    async def aiter_text(self) -> AsyncIterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        async for chunk in self.chunks():
            yield decoder.decode(chunk)

    async def events(self) -> AsyncIterator[str]:
        """Each event's data as it arrives (httpx-sse over the bounded reader)."""
        try:
            async for event in EventSource(cast(httpx.Response, self)).aiter_sse():
                yield _event(self.exchange, event.data)
        except SSEError as exc:
            raise ServerBroke(f"not an SSE stream: {exc}") from None


class _Body:
    """A body read chunk by chunk, cut off by size and wall clock (sync and async alike)."""

    def __init__(self, deadline: float, max_bytes: int) -> None:
        self.deadline, self.max_bytes = deadline, max_bytes
        self.chunks: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise ServerBroke(f"response body exceeded {self.max_bytes} bytes; stopped reading")
        if time.monotonic() > self.deadline:
            raise PastDeadline("response body did not end before its deadline; stopped reading")


def read_bounded(response: httpx.Response, deadline: float, max_bytes: int = MAX_BODY) -> bytes:
    body = _Body(deadline, max_bytes)
    for chunk in response.iter_bytes():
        body.add(chunk)
    return b"".join(body.chunks)


async def aread_bounded(response: httpx.Response, deadline: float, max_bytes: int) -> bytes:
    body = _Body(deadline, max_bytes)
    async for chunk in response.aiter_bytes():
        body.add(chunk)
    return b"".join(body.chunks)
