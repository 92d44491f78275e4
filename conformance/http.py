"""The suite's HTTP client: bounded in time and size, and it records every exchange.

A server under test may hang, send garbage, close a stream early or never end it. Every way a
server can break the transport becomes `ServerBroke`, an AssertionError, so pytest reports it as a
failure of the check with a readable message; the suite itself never hangs or crashes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import httpx
from httpx_sse import EventSource, SSEError

from .exchange import Exchange, dumps

MAX_BODY = 8 * 1024 * 1024
MAX_EVENTS = 20_000
UNRESPONSIVE_AFTER = 3  # consecutive timeouts before the client stops sending
_MISSING: Any = object()


def auth_header(api_key: str | None) -> dict[str, str]:
    """The API key as vLLM's middleware reads it: the one place the kit spells the header."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class ServerBroke(AssertionError):
    """The server did not speak HTTP/JSON/SSE acceptably: timeout, garbage, too big, cut off."""


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
                raise ServerBroke("stream did not end before its deadline; stopped reading")
            yield text


class Stream:
    """An open SSE response. `events()` yields each event's data, bounded."""

    def __init__(self, bounded: _BoundedResponse) -> None:
        self.response = bounded._response
        self.exchange = bounded._exchange
        self._bounded = bounded
        self._events: Iterator[str] | None = None

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def headers(self) -> dict[str, str]:
        return self.exchange.response_headers

    def read_body(self) -> Reply:
        """For a non-SSE answer (an error status): read it as a plain bounded body."""
        self.exchange.response_body = _read_bounded(self.response, time.monotonic() + 10)
        return Reply(self.exchange)

    def events(self) -> Iterator[str]:
        """The event iterator; calling it again continues where the last reader stopped."""
        if self._events is None:
            self._events = self._iter_events()
        return self._events

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
            raise ServerBroke("the stream stalled: read timed out mid-stream") from None
        except httpx.HTTPError as exc:
            self.exchange.error = f"stream broke: {type(exc).__name__}: {exc}"
            raise ServerBroke(f"the stream broke off: {type(exc).__name__}: {exc}") from None


def sse_data(raw: bytes) -> list[str]:
    """The data of each complete event in SSE bytes, decoded by httpx-sse: the one SSE
    decoder of the kit (the suite's streams, the fuzzer's and the diff's bytes alike)."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)
    return [event.data for event in EventSource(response).iter_sse()]


def _read_bounded(response: httpx.Response, deadline: float, max_bytes: int = MAX_BODY) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise ServerBroke(f"response body exceeded {max_bytes} bytes; stopped reading")
        if time.monotonic() > deadline:
            raise ServerBroke("response body did not end before its deadline; stopped reading")
    return b"".join(chunks)


class Client:
    """One client per run; `log` holds the exchanges of the current check."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 10.0,
        stream_deadline: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.stream_deadline = stream_deadline
        self.log: list[Exchange] = []
        self.bound_for: Callable[[Any], int] | None = None
        """The most bytes a correct answer to a body may take (learned: `Limits.body_bound`);
        None: MAX_BODY for every answer."""
        self._timeouts = 0
        self._lock = threading.Lock()
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            limits=httpx.Limits(max_connections=32),
        )

    def close(self) -> None:
        self._http.close()

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
        if self._timeouts >= UNRESPONSIVE_AFTER:
            raise ServerBroke(
                f"the server stopped answering ({self._timeouts} consecutive timeouts of "
                f"{self.timeout:g} s); {method} {path} was not sent"
            )
        sent: dict[str, str] = {}
        if body is not _MISSING:
            content = dumps(body)
            sent["Content-Type"] = "application/json"
        if auth:
            sent.update(auth_header(self.api_key))
        sent.update(headers or {})
        exchange = Exchange(method, self.base_url + path, sent, content, stream=stream)
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
        """Send one request and read its whole (bounded) answer."""
        exchange = self._prepare(method, path, body, content, headers, auth, stream=False)
        limit = timeout or self.timeout
        try:
            with self._http.stream(
                method, path, content=exchange.body, headers=exchange.headers, timeout=limit
            ) as response:
                exchange.status = response.status_code
                exchange.response_headers = {k.lower(): v for k, v in response.headers.items()}
                exchange.response_body = _read_bounded(
                    response, time.monotonic() + 2 * limit, self._max_bytes(body)
                )
        except httpx.TimeoutException:
            self._note(True)
            exchange.error = f"no complete answer within {limit:g} s"
            raise ServerBroke(f"{method} {path}: no complete answer within {limit:g} s") from None
        except httpx.HTTPError as exc:
            self._note(False)
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise ServerBroke(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        except ServerBroke as exc:
            exchange.error = str(exc)
            raise
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
        body: Any,
        *,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        deadline: float | None = None,
    ) -> Iterator[Stream]:
        """POST and keep the answer open; the caller reads events as they come."""
        wanted = {"Accept": "text/event-stream", **(headers or {})}
        exchange = self._prepare("POST", path, body, None, wanted, auth, stream=True)
        ends = time.monotonic() + (deadline or self.stream_deadline)
        try:
            with self._http.stream(
                "POST", path, content=exchange.body, headers=exchange.headers
            ) as response:
                exchange.status = response.status_code
                exchange.response_headers = {k.lower(): v for k, v in response.headers.items()}
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
                f"POST {path} (stream): no answer within {self.timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise ServerBroke(f"POST {path} (stream): {type(exc).__name__}: {exc}") from None
