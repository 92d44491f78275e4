"""What a sender reads back, bounded in time and size: a whole `Reply`, or a `Stream` (sync) /
`AsyncStream` read as it arrives, its events decoded by httpx-sse, the kit's one SSE decoder
(for bytes read whole or as they arrive).

A server under test may hang, send garbage, close a stream early or never end it. Every way a
server can break the transport becomes `ServerBroke`, an AssertionError, so pytest reports it as a
failure of the check with a readable message; the suite itself never hangs or crashes. What an
answer may take is bounded here, as it is read: its decoded size (`inflate`: a compressed body
is decoded a bounded step at a time), one stream line, a stream's events, its nesting
(`nesting`) and its wall clock (per chunk here; per socket read in `deadline`).
"""

from __future__ import annotations

import codecs
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError

from conformance.wire.deadline import Bound
from conformance.wire.exchange import Exchange
from conformance.wire.faults import LOCAL_ERRNOS as LOCAL_ERRNOS  # their old address
from conformance.wire.faults import ClientBroke, OutOfTime, PastDeadline, ServerBroke, local_fault
from conformance.wire.faults import Unsendable as Unsendable
from conformance.wire.inflate import adecoded, decoded
from conformance.wire.nesting import MAX_DEPTH, too_deep

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
        self._pending = bytearray()
        self.count = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The data of the events this chunk completed (each nested no deeper than
        `MAX_DEPTH`: the server's failure, not decoded, otherwise)."""
        start = max(0, len(self._pending) - 3)  # an end may straddle the chunks
        self._pending += chunk
        pending = self._pending
        end = max((at + len(m) for m in _ENDS if (at := pending.rfind(m, start)) >= 0), default=0)
        if not end:  # no blank line yet: no event is complete
            return []
        done = bytes(pending[:end])
        del pending[:end]
        events = sse_data(done)
        for data in events:
            self.count += 1
            refuse_deep(data, f"stream event #{self.count}")
        return events


# ---------------------------------------- answers, bounded

MAX_BODY = 8 * 1024 * 1024
"""A whole answer's decoded body, unless what was asked grows it (`Sender._max_bytes`)."""
MAX_EVENTS = 20_000
"""Events in one stream, whatever it asked for: the longest correct stream the suite asks for
is held under half of it (`inflight.plans.EVENT_BUDGET`). A request that names its n and
max_tokens is held to what those can produce (`events_for`)."""
EVENTS_PER_CHOICE = 2
"""Events a choice may send besides one per token: its finish (an abort's, an error's)."""
EVENTS_BESIDE = 16
"""Events a stream may send besides its choices': a first chunk, usage, [DONE] and room."""
EVENT_BYTES = 1024
"""What one stream event may add to a body of the same tokens: its framing and envelope."""
MAX_LINE = MAX_BODY
"""One line of a stream (an event's `data:`): as large as a whole default body. A correct
event carries one chunk (a token per choice, its logprobs); its largest is a first chunk with a
prompt's logprobs, ~1 KiB a prompt token at 20 logprobs: 8 MiB is some 8,000 prompt tokens,
where the suite's prompts are a few dozen."""
KEPT = 4096
"""What a stream's exchange keeps of its bytes for the report."""


def size(n: int) -> str:
    """A byte count as a report says it: MiB where it is one."""
    return f"{n / 1024 / 1024:g} MiB" if n >= 1024 * 1024 and not n % (1024 * 1024) else f"{n} B"


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
        """The body as JSON, or a failure saying what came instead (the wire refused a body
        nested past `nesting.MAX_DEPTH` before it became a Reply)."""
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


def refuse_deep(raw: bytes | str, what: str) -> None:
    """A body or event nested past `MAX_DEPTH` is the server's failure, before it is decoded."""
    found = too_deep(raw)
    if found is not None:
        raise ServerBroke(
            f"{what} nests {found} arrays/objects deep (more than {MAX_DEPTH}); not decoded"
        )


def events_for(body: Any) -> int:
    """The most events a correct stream answering `body` may send: a token per event per
    choice at most (vLLM sends one chunk per choice per engine step), plus each choice's
    finish and the stream's own; MAX_EVENTS where the body does not say."""
    sp = body.get("sampling_params") if isinstance(body, dict) else None
    n = sp.get("n", 1) if isinstance(sp, dict) else None
    tokens = sp.get("max_tokens") if isinstance(sp, dict) else None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, tokens)):
        return MAX_EVENTS
    assert isinstance(n, int) and isinstance(tokens, int)
    if tokens < 1:
        return MAX_EVENTS
    return min(MAX_EVENTS, max(1, n) * (tokens + EVENTS_PER_CHOICE) + EVENTS_BESIDE)


def too_many(exchange: Exchange, most: int = MAX_EVENTS) -> None:
    """A stream past `most` events is stopped (sync, async and raw readers alike)."""
    if len(exchange.events) > most:
        done = "" if "[DONE]" in exchange.events else ", no [DONE]"
        beyond = "" if most == MAX_EVENTS else ", more than its request can produce"
        raise ServerBroke(
            f"the stream sent more than {most} events without ending{done}{beyond}; stopped reading"
        )


def _event(exchange: Exchange, data: str, most: int = MAX_EVENTS) -> str:
    """Record one event's data (sync and async alike): a stream that never ends is stopped."""
    exchange.events.append(data)
    too_many(exchange, most)
    refuse_deep(data, f"stream event #{len(exchange.events)}")
    return data


def _cut_off(
    exchange: Exchange,
    exc: httpx.HTTPError,
    bound: Bound | None,
    budget: float,
    on_stall: Callable[[], None] = lambda: None,
) -> Exception:
    """What a stream whose transport failed mid-read raises, recorded on the exchange (sync
    and async alike): a read timeout is a stall (told to `on_stall`), or the stream's deadline
    (the run's: `OutOfTime`)."""
    if local_fault(exc):
        exchange.error = f"the client's socket failed: {exc}"
        return ClientBroke(f"the client's own socket failed mid-stream (not the server): {exc}")
    if isinstance(exc, httpx.TimeoutException) and bound is not None and bound.expired:
        if bound.by_run:
            exchange.error = "cut at the run's deadline"
            return OutOfTime("the run's deadline passed while the stream was being read")
        return _past(exchange, budget)
    if isinstance(exc, httpx.TimeoutException):
        on_stall()
        exchange.error = "read timed out mid-stream"
        return ServerBroke("the stream stalled: read timed out mid-stream", True)
    exchange.error = f"stream broke: {type(exc).__name__}: {exc}"
    return ServerBroke(f"the stream broke off: {type(exc).__name__}: {exc}")


def _past(exchange: Exchange, budget: float) -> PastDeadline:
    """A stream still coming at its deadline."""
    done = "[DONE]" in exchange.events[-1:]
    what = f"{len(exchange.events)} events" + ("" if done else ", no [DONE]")
    exchange.error = f"still streaming after {budget:g} s"
    return PastDeadline(f"the stream did not end within {budget:g} s ({what}); stopped reading")


class _Limit:
    """What one streamed answer may take, checked as each decoded piece arrives: its size, its
    open line (an SSE line or event that never ends) and its wall clock."""

    def __init__(self, exchange: Exchange, deadline: float, budget: float, max_bytes: int):
        self.exchange, self.deadline, self.budget = exchange, deadline, budget
        self.max_bytes = max_bytes
        self.read = 0
        self.line = 0  # bytes since the last line break

    def take(self, chunk: bytes) -> None:
        self.read += len(chunk)
        if len(self.exchange.response_body) < KEPT:
            self.exchange.response_body += chunk[:KEPT]
        if self.read > self.max_bytes:
            raise ServerBroke(
                f"the stream passed {size(self.max_bytes)} (decoded); stopped reading"
            )
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        self.line = self.line + len(chunk) if end < 0 else len(chunk) - end - 1
        if self.line > MAX_LINE:
            raise ServerBroke(f"a stream line passed {size(MAX_LINE)} unended; stopped reading")
        if time.monotonic() > self.deadline:
            raise _past(self.exchange, self.budget)


class _BoundedResponse:
    """What httpx-sse reads from: the stream's decoded, bounded pieces as text."""

    def __init__(self, stream: Stream) -> None:
        self.headers = stream.response.headers
        self._stream = stream

    def iter_text(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for chunk in self._stream._pieces():
            yield decoder.decode(chunk)


class Stream:
    """An open SSE response. `events()` yields each event's data, bounded; `chunks()` the raw
    (decoded) body; both read one bounded source, so either continues where the other left."""

    def __init__(
        self,
        response: httpx.Response,
        exchange: Exchange,
        deadline: float,
        budget: float,
        max_bytes: int,
        bound: Bound | None = None,
        on_stall: Callable[[], None] = lambda: None,
        max_events: int = MAX_EVENTS,
    ) -> None:
        self.response = response
        self.exchange = exchange
        self.max_events = max_events
        """The most events this stream may send (`events_for` its request)."""
        self._limit = _Limit(exchange, deadline, budget, max_bytes)
        self._bound = bound
        self._on_stall = on_stall
        self._source: Iterator[bytes] | None = None
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
        body = read_bounded(self.response, self._limit.deadline)
        self.exchange.response_body = body
        refuse_deep(body, "the body")
        return Reply(self.exchange)

    def _pieces(self) -> Iterator[bytes]:
        """The one bounded source under `events` and `chunks`."""
        if self._source is None:
            self._source = self._read()
        return self._source

    def _read(self) -> Iterator[bytes]:
        limit = self._limit
        try:
            for chunk in decoded(self.response):
                limit.take(chunk)
                yield chunk
        except httpx.HTTPError as exc:
            raise _cut_off(self.exchange, exc, self._bound, limit.budget, self._on_stall) from None

    def events(self) -> Iterator[str]:
        """The event iterator; calling it again continues where the last reader stopped."""
        if self._events is None:
            self._events = self._iter_events()
        return self._events

    def chunks(self) -> Iterator[bytes]:
        """The raw body as it arrives, bounded like `events` (for a caller that watches the
        bytes, e.g. for the first request id, rather than reading events)."""
        for chunk in self._pieces():
            self.raw += chunk
            yield chunk

    def _iter_events(self) -> Iterator[str]:
        source = EventSource(cast(httpx.Response, _BoundedResponse(self)))
        try:
            for event in source.iter_sse():
                yield _event(self.exchange, event.data, self.max_events)
        except SSEError as exc:  # an httpx.HTTPError too: the stream's bytes are no SSE
            raise ServerBroke(f"not an SSE stream: {exc}") from None


class AsyncStream:
    """An open streamed answer read from asyncio: raw `chunks()` or SSE `events()`, one bounded
    reader under both (a caller may watch the bytes for an id, then read on)."""

    def __init__(
        self,
        response: httpx.Response,
        exchange: Exchange,
        deadline: float,
        max_bytes: int,
        budget: float = 0.0,
        bound: Bound | None = None,
        max_events: int = MAX_EVENTS,
    ) -> None:
        self.response = response
        self.exchange = exchange
        self.max_events = max_events
        self.headers = response.headers  # what httpx-sse reads the Content-Type from
        self._limit = _Limit(exchange, deadline, budget, max_bytes)
        self._bound = bound
        self._source: AsyncIterator[bytes] | None = None
        self.raw = bytearray()
        """Every byte read so far (the exchange keeps the first 4 KiB)."""

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def read_bytes(self) -> int:
        return self._limit.read

    async def _read(self) -> AsyncIterator[bytes]:
        limit = self._limit
        try:
            async for chunk in adecoded(self.response):
                limit.take(chunk)
                yield chunk
        except httpx.HTTPError as exc:
            raise _cut_off(self.exchange, exc, self._bound, limit.budget) from None

    async def chunks(self) -> AsyncIterator[bytes]:
        if self._source is None:
            self._source = self._read()
        async for chunk in self._source:
            self.raw += chunk
            yield chunk

    async def aiter_text(self) -> AsyncIterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        async for chunk in self.chunks():
            yield decoder.decode(chunk)

    async def events(self) -> AsyncIterator[str]:
        """Each event's data as it arrives (httpx-sse over the bounded reader)."""
        try:
            async for event in EventSource(cast(httpx.Response, self)).aiter_sse():
                yield _event(self.exchange, event.data, self.max_events)
        except SSEError as exc:
            raise ServerBroke(f"not an SSE stream: {exc}") from None


class _Body:
    """A body read piece by piece as it is decoded, cut off by size and wall clock (sync and
    async alike); an SSE body read whole (`events`), by its events too."""

    def __init__(self, deadline: float, max_bytes: int, events: int | None = None) -> None:
        self.deadline, self.max_bytes = deadline, max_bytes
        self.chunks: list[bytes] = []
        self.size = 0
        self.most = events
        self.events = 0

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        if self.most is not None:  # event ends split across pieces go uncounted: a cap
            self.events += chunk.count(b"\n\n") + chunk.count(b"\r\n\r\n")
            if self.events > self.most:
                self.chunks.clear()
                raise ServerBroke(
                    f"the stream (read whole) sent more than {self.most} events without "
                    "ending; stopped reading"
                )
        if self.size > self.max_bytes:
            self.chunks.clear()  # a failure's traceback keeps this frame, not the bytes
            raise ServerBroke(
                f"the response body passed {size(self.max_bytes)} (decoded); stopped reading"
            )
        if time.monotonic() > self.deadline:
            self.chunks.clear()
            raise PastDeadline("response body did not end before its deadline; stopped reading")


def read_bounded(
    response: httpx.Response,
    deadline: float,
    max_bytes: int = MAX_BODY,
    events: int | None = None,
) -> bytes:
    """The whole body, decoded, within `deadline`, `max_bytes` and (an SSE body) `events`."""
    body = _Body(deadline, max_bytes, events)
    for chunk in decoded(response):
        body.add(chunk)
    return b"".join(body.chunks)


async def aread_bounded(
    response: httpx.Response, deadline: float, max_bytes: int, events: int | None = None
) -> bytes:
    body = _Body(deadline, max_bytes, events)
    async for chunk in adecoded(response):
        body.add(chunk)
    return b"".join(body.chunks)
