"""The kit's one HTTP client: every sender (suite, fuzzer, diff, live launcher) goes through it.

It is bounded in time and size, builds the API-key header in one place, records every
exchange, and decodes SSE with httpx-sse, sync (`Client`) and async (`AsyncClient`), over a
socket or in-process into an ASGI app (`openapi.asgi_transport`, which streams). Its waits all
come from one `Timeouts`, itself derived from one number, `DEFAULT_TIMEOUT_S` unless a CLI's
`--timeout` says otherwise.

A server under test may hang, send garbage, close a stream early or never end it. Every way a
server can break the transport becomes `ServerBroke`, an AssertionError, so pytest reports it as a
failure of the check with a readable message; the suite itself never hangs or crashes.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, cast

import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError

from .exchange import Exchange, dumps

MAX_BODY = 8 * 1024 * 1024
MAX_EVENTS = 20_000
UNRESPONSIVE_AFTER = 3  # consecutive timeouts before the client stops sending
IN_PROCESS_URL = "http://testserver"
"""The base URL of an in-process app (what schemathesis's ASGI client and reproducers use)."""
_MISSING: Any = object()

DEFAULT_TIMEOUT_S = 30.0
"""The one default of every `--timeout` (run, fuzz, diff, live) and of every sender: long
enough for a real vLLM on two CPU cores, whose first answers take seconds; the suite scales
its generate waits up from it by the learned pace (`Session.timeout_for`)."""
CONNECT_CAP_S = 5.0
STREAM_FACTOR = 3.0
ANSWER_FACTOR = 2 / 3


@dataclass(frozen=True)
class Timeouts:
    """Every wait of a sender, in one object (STYLE §8): all follow from `request` unless set.

    `request`: the longest wait for an answer's status line or for one chunk of it; a whole
    plain body must end within twice that. `connect`: the TCP connect (at most 5 s: a refused
    or unroutable server is found fast). `stream`: the wall clock of one streamed answer (3x).
    `answer`: how long a correct answer may take before the fuzzer calls it slow (2/3 x, so a
    slow answer is told from one that never came)."""

    request: float = DEFAULT_TIMEOUT_S
    connect: float = 0.0
    stream: float = 0.0
    answer: float = 0.0

    def __post_init__(self) -> None:
        if self.request <= 0:
            raise ValueError(f"a timeout must be positive, not {self.request:g}")
        derived = {
            "connect": min(self.request, CONNECT_CAP_S),
            "stream": STREAM_FACTOR * self.request,
            "answer": ANSWER_FACTOR * self.request,
        }
        for name, value in derived.items():
            if not getattr(self, name):
                object.__setattr__(self, name, round(value, 3))

    @classmethod
    def of(cls, timeout: float | Timeouts | None, stream: float | None = None) -> Timeouts:
        """`timeout` as a `Timeouts` (a number is its `request`; None the default)."""
        if isinstance(timeout, Timeouts):
            return timeout
        return cls(DEFAULT_TIMEOUT_S if timeout is None else timeout, stream=stream or 0.0)

    def for_httpx(self, read: float | None = None) -> httpx.Timeout:
        read = read or self.request
        return httpx.Timeout(read, connect=min(self.connect, read))


def auth_header(api_key: str | None) -> dict[str, str]:
    """The API key as vLLM's middleware reads it: the one place the kit spells the header."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class Unsendable(ValueError):
    """The request itself cannot go on the wire (an HTTP/1.1 client refuses it: a header value
    with a control character, say): nothing was sent, so there is no answer to judge."""


class ServerBroke(AssertionError):
    """The server did not speak HTTP/JSON/SSE acceptably: timeout, garbage, too big, cut off.
    `timed_out`: it said nothing in time (rather than saying something broken)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


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
                raise ServerBroke("stream did not end before its deadline; stopped reading", True)
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
        self.exchange.response_body = _read_bounded(self.response, self._bounded._deadline)
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
                    raise ServerBroke("stream did not end before its deadline; stopped", True)
                yield chunk
        except httpx.TimeoutException:
            bounded._on_stall()
            self.exchange.error = "read timed out mid-stream"
            raise ServerBroke("the stream stalled: read timed out mid-stream", True) from None
        except httpx.HTTPError as exc:
            self.exchange.error = f"stream broke: {type(exc).__name__}: {exc}"
            raise ServerBroke(f"the stream broke off: {type(exc).__name__}: {exc}") from None

    def _iter_events(self) -> Iterator[str]:
        source = EventSource(cast(httpx.Response, self._bounded))
        try:
            for event in source.iter_sse():
                self.exchange.events.append(event.data)
                if len(self.exchange.events) > MAX_EVENTS:
                    raise ServerBroke(f"stream sent more than {MAX_EVENTS} events; stopped")
                yield event.data
        except SSEError as exc:
            raise ServerBroke(f"not an SSE stream: {exc}") from None
        except httpx.TimeoutException:
            self._bounded._on_stall()
            self.exchange.error = "read timed out mid-stream"
            raise ServerBroke("the stream stalled: read timed out mid-stream", True) from None
        except httpx.HTTPError as exc:
            self.exchange.error = f"stream broke: {type(exc).__name__}: {exc}"
            raise ServerBroke(f"the stream broke off: {type(exc).__name__}: {exc}") from None


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
                    raise ServerBroke("stream did not end before its deadline; stopped", True)
                yield chunk
        except httpx.TimeoutException:
            self.exchange.error = "read timed out mid-stream"
            raise ServerBroke("the stream stalled: read timed out mid-stream", True) from None
        except httpx.HTTPError as exc:
            self.exchange.error = f"stream broke: {type(exc).__name__}: {exc}"
            raise ServerBroke(f"the stream broke off: {type(exc).__name__}: {exc}") from None

    async def aiter_text(self) -> AsyncIterator[str]:
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        async for chunk in self.chunks():
            yield decoder.decode(chunk)

    async def events(self) -> AsyncIterator[str]:
        """Each event's data as it arrives (httpx-sse over the bounded reader)."""
        try:
            async for event in EventSource(cast(httpx.Response, self)).aiter_sse():
                self.exchange.events.append(event.data)
                if len(self.exchange.events) > MAX_EVENTS:
                    raise ServerBroke(f"stream sent more than {MAX_EVENTS} events; stopped")
                yield event.data
        except SSEError as exc:
            raise ServerBroke(f"not an SSE stream: {exc}") from None


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


def _read_bounded(response: httpx.Response, deadline: float, max_bytes: int = MAX_BODY) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise ServerBroke(f"response body exceeded {max_bytes} bytes; stopped reading")
        if time.monotonic() > deadline:
            raise ServerBroke(
                "response body did not end before its deadline; stopped reading", True
            )
    return b"".join(chunks)


async def _aread_bounded(response: httpx.Response, deadline: float, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise ServerBroke(f"response body exceeded {max_bytes} bytes; stopped reading")
        if time.monotonic() > deadline:
            raise ServerBroke(
                "response body did not end before its deadline; stopped reading", True
            )
    return b"".join(chunks)


def _wire(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Headers as bytes: a generated value outside ASCII goes out as Latin-1 (as requests and
    curl send it), where httpx would refuse it; the spaces around a value go (a server strips
    them anyway, RFC 9110 5.5; h11 refuses to send them)."""
    return [(_latin1(name), _latin1(value.strip(" \t"))) for name, value in headers.items()]


def _latin1(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


class _Sender:
    """What the sync and async clients share: one configuration, the request as recorded (key
    included), the stop after consecutive timeouts, and an in-process app's event loop."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float | Timeouts | None,
        stream_deadline: float | None,
        *,
        app: Any,
        stop_after: int | None,
        keep_log: bool,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeouts = Timeouts.of(timeout, stream_deadline)
        self.timeout = self.timeouts.request
        self.stream_deadline = self.timeouts.stream
        self.log: list[Exchange] = []
        """The exchanges of the current check (kept only with `keep_log`)."""
        self.keep_log = keep_log
        self.stop_after = stop_after
        """Consecutive timeouts after which nothing more is sent (None: never stop)."""
        self.bound_for: Callable[[Any], int] | None = None
        """The most bytes a correct answer to a body may take (learned: `Limits.body_bound`);
        None: MAX_BODY for every answer."""
        self._timeouts = 0
        self._lock = threading.Lock()
        self._stack = contextlib.ExitStack()
        self._portal: Any = None
        if app is not None:  # the app runs on its own loop, whatever loop or thread calls it
            from anyio.from_thread import start_blocking_portal

            self._portal = self._stack.enter_context(start_blocking_portal())

    def _limits(self) -> httpx.Limits:
        return httpx.Limits(max_connections=32)

    def _prepare(
        self,
        method: str,
        path: str,
        body: Any,
        content: bytes | None,
        headers: dict[str, str] | None,
        auth: bool,
        stream: bool,
    ) -> Exchange:
        if self.stop_after is not None and self._timeouts >= self.stop_after:
            raise ServerBroke(
                f"the server stopped answering ({self._timeouts} consecutive timeouts of "
                f"{self.timeout:g} s); {method} {path} was not sent",
                True,
            )
        sent: dict[str, str] = {}
        if body is not _MISSING:
            content = dumps(body)
            sent["Content-Type"] = "application/json"
        if auth:
            sent.update(auth_header(self.api_key))
        sent.update(headers or {})
        url = path if "://" in path else self.base_url + path
        exchange = Exchange(method, url, sent, content, stream=stream)
        if self.keep_log:
            with self._lock:
                self.log.append(exchange)
        return exchange

    def _max_bytes(self, body: Any) -> int:
        if self.bound_for is None or body is _MISSING:
            return MAX_BODY
        return max(MAX_BODY, self.bound_for(body))

    def _note(self, timed_out: bool) -> None:
        with self._lock:
            self._timeouts = self._timeouts + 1 if timed_out else 0

    def _body_deadline(self, exchange: Exchange, limit: float) -> float:
        """A plain body must end within twice the request timeout; an SSE one read whole,
        within the stream budget."""
        budget = 2 * limit
        if is_event_stream(exchange.response_headers):
            budget = max(budget, self.timeouts.stream)
        return time.monotonic() + budget

    def _failed(self, exchange: Exchange, what: str, exc: Exception, limit: float) -> Exception:
        """The ServerBroke of a transport error (recorded on the exchange); `Unsendable` when
        the request never left the client."""
        if isinstance(exc, httpx.LocalProtocolError):
            exchange.error = f"not sent: {exc}"
            return Unsendable(f"{what}: the client cannot send this request: {exc}")
        if isinstance(exc, httpx.TimeoutException):
            self._note(True)
            exchange.error = f"no complete answer within {limit:g} s"
            return ServerBroke(f"{what}: no complete answer within {limit:g} s", True)
        if isinstance(exc, ServerBroke):
            exchange.error = str(exc)
            return exc
        self._note(False)
        exchange.error = f"{type(exc).__name__}: {exc}"
        return ServerBroke(f"{what}: {type(exc).__name__}: {exc}")


def _received(exchange: Exchange, response: httpx.Response, started: float) -> None:
    exchange.status = response.status_code
    exchange.response_headers = {k.lower(): v for k, v in response.headers.items()}
    exchange.elapsed_s = round(time.monotonic() - started, 6)


class Client(_Sender):
    """The sync client. One per run (the suite's `log` holds the exchanges of the current
    check), per fuzz run, per diff target, per launched server. `app`: an ASGI app served
    in-process (through the streaming transport) instead of `base_url`'s socket."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float | Timeouts | None = None,
        stream_deadline: float | None = None,
        *,
        app: Any = None,
        stop_after: int | None = UNRESPONSIVE_AFTER,
        keep_log: bool = True,
    ) -> None:
        super().__init__(
            base_url,
            api_key,
            timeout,
            stream_deadline,
            app=app,
            stop_after=stop_after,
            keep_log=keep_log,
        )
        transport = None
        if app is not None:
            from openapi.asgi_transport import StreamingTransport

            transport = StreamingTransport(app, self._portal)
        self._http = httpx.Client(
            timeout=self.timeouts.for_httpx(), limits=self._limits(), transport=transport
        )

    def close(self) -> None:
        self._http.close()
        self._stack.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = _MISSING,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        timeout: float | None = None,
    ) -> Reply:
        """Send one request and read its whole (bounded) answer. `path` may be a whole URL;
        `content` and `headers` go out as given (a raw request), `body` as JSON."""
        exchange = self._prepare(method, path, body, content, headers, auth, stream=False)
        limit = timeout or self.timeout
        started = time.monotonic()
        try:
            with self._http.stream(
                method,
                exchange.url,
                content=exchange.body,
                headers=_wire(exchange.headers),
                timeout=self.timeouts.for_httpx(limit),
            ) as response:
                _received(exchange, response, started)
                exchange.response_body = _read_bounded(
                    response, self._body_deadline(exchange, limit), self._max_bytes(body)
                )
        except (httpx.HTTPError, ServerBroke) as exc:
            raise self._failed(exchange, f"{method} {path}", exc, limit) from None
        self._note(False)
        return Reply(exchange)

    def post(self, path: str, body: Any = _MISSING, **kwargs: Any) -> Reply:
        return self.request("POST", path, body, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    @contextmanager
    def stream(
        self,
        path: str,
        body: Any = _MISSING,
        *,
        method: str = "POST",
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        deadline: float | None = None,
    ) -> Iterator[Stream]:
        """Send and keep the answer open; the caller reads events (or raw chunks) as they
        come. A JSON `body` asks for SSE; raw `content` and `headers` go out as given."""
        wanted = {"Accept": "text/event-stream"} if content is None else {}
        wanted.update(headers or {})
        exchange = self._prepare(method, path, body, content, wanted, auth, stream=True)
        ends = time.monotonic() + (deadline or self.stream_deadline)
        started = time.monotonic()
        try:
            with self._http.stream(
                method, exchange.url, content=exchange.body, headers=_wire(exchange.headers)
            ) as response:
                _received(exchange, response, started)
                self._note(False)
                yield Stream(
                    _BoundedResponse(
                        response,
                        exchange,
                        ends,
                        on_stall=lambda: self._note(True),
                        max_bytes=self._max_bytes(body),
                    )
                )
        except httpx.TimeoutException:
            self._note(True)
            exchange.error = f"no answer within {self.timeout:g} s"
            raise ServerBroke(
                f"{method} {path} (stream): no answer within {self.timeout:g} s", True
            ) from None
        except httpx.HTTPError as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise ServerBroke(f"{method} {path} (stream): {type(exc).__name__}: {exc}") from None


class AsyncClient(_Sender):
    """The same client for asyncio code (a stream read while its abort is sent beside it)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float | Timeouts | None = None,
        stream_deadline: float | None = None,
        *,
        app: Any = None,
        stop_after: int | None = UNRESPONSIVE_AFTER,
        keep_log: bool = True,
    ) -> None:
        super().__init__(
            base_url,
            api_key,
            timeout,
            stream_deadline,
            app=app,
            stop_after=stop_after,
            keep_log=keep_log,
        )
        transport = None
        if app is not None:
            from openapi.asgi_transport import AsyncStreamingTransport

            transport = AsyncStreamingTransport(app, self._portal)
        self._http = httpx.AsyncClient(
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
        body: Any = _MISSING,
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
                headers=_wire(exchange.headers),
                timeout=self.timeouts.for_httpx(limit),
            ) as response:
                _received(exchange, response, started)
                exchange.response_body = await _aread_bounded(
                    response, self._body_deadline(exchange, limit), self._max_bytes(body)
                )
        except (httpx.HTTPError, ServerBroke) as exc:
            raise self._failed(exchange, f"{method} {path}", exc, limit) from None
        self._note(False)
        return Reply(exchange)

    async def post(self, path: str, body: Any = _MISSING, **kwargs: Any) -> Reply:
        return await self.request("POST", path, body, **kwargs)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        body: Any = _MISSING,
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
                method, exchange.url, content=exchange.body, headers=_wire(exchange.headers)
            ) as response:
                _received(exchange, response, started)
                self._note(False)
                yield AsyncStream(response, exchange, ends, self._max_bytes(body))
        except httpx.TimeoutException:
            self._note(True)
            exchange.error = f"no answer within {self.timeout:g} s"
            raise ServerBroke(
                f"{method} {path} (stream): no answer within {self.timeout:g} s", True
            ) from None
        except httpx.HTTPError as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise ServerBroke(f"{method} {path} (stream): {type(exc).__name__}: {exc}") from None
