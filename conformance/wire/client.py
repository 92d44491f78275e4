"""The sync and async clients, and what they share around one transfer (`Outgoing`): the two
differ only in awaiting, so the arguments, the answer's head, the bounds of its body and its
clock, a failure's report and the count of timeouts are spelled once."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Unpack

import httpx

from conformance.wire.bounded import (
    AsyncStream,
    Reply,
    ServerBroke,
    Stream,
    aread_bounded,
    events_for,
    is_event_stream,
    read_bounded,
    refuse_deep,
)
from conformance.wire.deadline import Bound, bounded_async_transport, bounded_transport, within
from conformance.wire.exchange import Exchange
from conformance.wire.sender import (
    MISSING,
    Opened,
    Sender,
    Timed,
    received,
    tls,
    wire,
)

# ---------------------------------------- the sync client


class Client(Sender):
    """The sync client. One per run (the suite's `log` holds the exchanges of the current
    check), per fuzz run, per diff target, per launched server. `app`: an ASGI app served
    in-process (through the streaming transport) instead of `base_url`'s socket."""

    def _open(self, app: Any) -> httpx.Client:
        transport: httpx.BaseTransport
        if app is not None:
            from openapi.asgi_transport import StreamingTransport

            transport = StreamingTransport(app, self._portal)
        else:
            transport = bounded_transport(verify=tls(), limits=self._limits())
        return httpx.Client(transport=transport, **self._options())

    def close(self) -> None:
        self._http.close()
        self._stack.close()

    def request(self, method: str, path: str, body: Any = MISSING, **how: Unpack[Timed]) -> Reply:
        """Send one request and read its whole (bounded) answer. `path` may be a whole URL;
        `content` and `headers` go out as given (a raw request), `body` as JSON."""
        timeout = how.get("timeout")
        exchange = self._prepare(method, path, body, False, how)
        out = Outgoing(self, exchange, f"{method} {path}", timeout or self.timeout, body)
        with (
            out.answered(),
            within(out.bound),
            self._http.stream(**out.args(self.timeouts.for_httpx(out.limit), True)) as answer,
        ):
            out.read(read_bounded(answer, *out.received(answer)))
        return out.reply()

    def post(self, path: str, body: Any = MISSING, **kwargs: Any) -> Reply:
        return self.request("POST", path, body, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    @contextmanager
    def stream(
        self, path: str, body: Any = MISSING, *, method: str = "POST", **how: Unpack[Opened]
    ) -> Iterator[Stream]:
        """Send and keep the answer open; the caller reads events (or raw chunks) as they
        come. A JSON `body` asks for SSE; raw `content` and `headers` go out as given."""
        deadline = how.get("deadline")
        wanted = {"Accept": "text/event-stream"} if how.get("content") is None else {}
        how["headers"] = wanted | (how.get("headers") or {})
        exchange = self._prepare(method, path, body, True, how)
        what = f"{method} {path} (stream)"
        out = Outgoing(self, exchange, what, deadline or self.stream_deadline, body)
        with out.opened(), within(out.bound), self._http.stream(**out.args()) as response:
            out.streaming(response)
            yield Stream(
                response,
                exchange,
                out.ends,
                out.limit,
                out.max_bytes,
                out.bound,
                on_stall=lambda: self._note(True),
                max_events=out.max_events,
            )


# ---------------------------------------- one request on its way


@dataclass
class Outgoing:
    """A request its `Sender` prepared (and recorded), with the bounds its answer is read in."""

    sender: Sender
    exchange: Exchange
    what: str
    """How a failure names the request: `POST /path`, `POST /path (stream)`."""
    limit: float
    """A whole request's timeout; a stream's whole budget (both cut to a sender's budget)."""
    body: Any
    """The JSON body sent (`MISSING`: none), which sets how large a correct answer may be."""
    started: float = field(default_factory=time.monotonic)
    body_s: float = 0.0
    """How long a plain answer's body may take once its head came."""
    bound: Bound = field(init=False)
    """The exchange's clock, held at every socket read (`wire.deadline`): its head's (a
    stream's whole) until the head came, then its body's."""

    def __post_init__(self) -> None:
        self.limit = self.sender._within_budget(self.limit)
        self.bound = self.sender._bound(self.started, self.limit)

    def args(self, timeout: httpx.Timeout | None = None, traced: bool = False) -> dict[str, Any]:
        """httpx's `stream` arguments: the recorded request as it goes on the wire (`traced`,
        sync clients only: the moment its body was written is recorded on the exchange)."""
        exchange = self.exchange
        args: dict[str, Any] = {"method": exchange.method, "url": exchange.url}
        args.update(content=exchange.body, headers=wire(exchange.headers))
        if timeout is not None:
            args["timeout"] = timeout
        if traced:
            args["extensions"] = {"trace": self._trace}
        return args

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "http11.send_request_body.complete":
            self.exchange.body_sent_at = time.monotonic()
        elif event == "http11.receive_response_headers.complete":
            self.exchange.head_at = time.monotonic()

    @property
    def max_bytes(self) -> int:
        return self.sender._max_bytes(self.exchange, self.body)

    @property
    def ends(self) -> float:
        """When a stream must have ended."""
        return self.started + self.limit

    @property
    def max_events(self) -> int:
        return events_for(self.body)

    def received(self, response: httpx.Response) -> tuple[float, int, int | None]:
        """Record the answer's head; the deadline, size and (SSE) events its whole body is
        read within (the exchange's clock moves on to the body's)."""
        received(self.exchange, response, self.started)
        ends = self.sender._body_deadline(self.exchange, self.limit)
        self.body_s = round(ends - time.monotonic(), 3)
        self.bound.own = ends
        sse = is_event_stream(self.exchange.response_headers)
        return ends, self.max_bytes, self.max_events if sse else None

    def read(self, body: bytes) -> None:
        """Keep the whole body read; one nested past `nesting.MAX_DEPTH` is not decoded."""
        self.exchange.response_body = body
        refuse_deep(body, "the body")

    @contextmanager
    def answered(self) -> Iterator[None]:
        """A transfer that fails (transport error, answer out of bounds) raises the recorded
        `ServerBroke` (`Unsendable`, `OutOfTime`) of `Sender._failed`; one that ends resets the
        timeouts."""
        try:
            yield
        except (httpx.HTTPError, ServerBroke) as exc:
            raise self.sender._failed(
                self.exchange, self.what, exc, self.limit, self.bound, self.body_s
            ) from None
        self.sender._note(False)

    def streaming(self, response: httpx.Response) -> None:
        """Record a stream's head: it opened, so the timeouts start again from none."""
        received(self.exchange, response, self.started)
        self.sender._note(False)

    @contextmanager
    def opened(self) -> Iterator[None]:
        """A stream that cannot be opened or read raises `Sender._stream_failed`'s report."""
        try:
            yield
        except httpx.HTTPError as exc:
            raise self.sender._stream_failed(self.exchange, self.what, exc, self.bound) from None

    def reply(self) -> Reply:
        self.sender._answered(self.exchange)
        return Reply(self.exchange)


# ---------------------------------------- the asyncio client


class AsyncClient(Sender):
    """The same client for asyncio code (a stream read while its abort is sent beside it)."""

    def _open(self, app: Any) -> httpx.AsyncClient:
        transport: httpx.AsyncBaseTransport
        if app is not None:
            from openapi.asgi_transport import AsyncStreamingTransport

            transport = AsyncStreamingTransport(app, self._portal)
        else:
            transport = bounded_async_transport(verify=tls(), limits=self._limits())
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
        with out.answered(), within(out.bound):
            async with self._http.stream(**out.args(self.timeouts.for_httpx(out.limit))) as answer:
                out.read(await aread_bounded(answer, *out.received(answer)))
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
        with out.opened(), within(out.bound):
            async with self._http.stream(**out.args()) as response:
                out.streaming(response)
                yield AsyncStream(response, exchange, out.ends, out.max_bytes, out.limit, out.bound)
