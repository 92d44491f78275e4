"""The kit's client for code that runs under gevent: the load's users (Locust's workers
monkey-patch the standard library), over geventhttpclient, the engine of Locust's FastHttpUser.

httpx under gevent spent about 0.4 ms of CPU on each non-streamed generate, four times what the
mock spends answering it: the load generator, not the server, was the ceiling (benchmarks/
bench_load.py). geventhttpclient sends a request and parses its answer (llhttp, in C) for a
fraction of that. Everything else is the kit's own, as `Client` has it: the request recorded
on an `Exchange` (its API key, its curl reproducer, `Sender._prepare`), a whole body read by
`read_bounded` and a stream by `Stream` (bounded in size and wall clock, SSE decoded by
httpx-sse), a server that breaks the transport reported as `ServerBroke`.

Not Locust's FastHttpSession itself: it reads a whole body at once, unbounded, decompresses,
follows redirects, keeps cookies and fires a request event of its own; and a stream's
`iter_content` waits for a full block, where a token's arrival must be seen when it comes.
Imported only in a process that imported gevent's monkey-patching first.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.client import HTTPException
from typing import Any, Unpack, cast
from urllib.parse import urlsplit

import httpx
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPSocketPoolResponse

from conformance.wire.bounded import (
    ClientBroke,
    Reply,
    ServerBroke,
    Stream,
    Unsendable,
    events_for,
    local_fault,
    read_bounded,
    refuse_deep,
)
from conformance.wire.exchange import Exchange
from conformance.wire.sender import MISSING, Opened, Sender, Timed, received


class GreenClient(Sender):
    """`Client`'s `request`, `post` and `stream` over one keep-alive connection (a user sends
    one request at a time): no in-process app, no other host than `base_url`'s."""

    def _open(self, app: Any) -> HTTPClient:
        if app is not None:
            raise ValueError("GreenClient speaks to a socket; an in-process app needs Client")
        parts = urlsplit(self.base_url)
        self._origin = f"{parts.scheme}://{parts.netloc}"
        return HTTPClient.from_url(
            self.base_url,
            concurrency=1,
            connection_timeout=self.timeouts.connect,
            network_timeout=self.timeouts.request,
        )

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, body: Any = MISSING, **how: Unpack[Timed]) -> Reply:
        """Send one request and read its whole (bounded) answer. Each read waits at most the
        client's timeout; `timeout` (default: the client's) bounds the whole answer."""
        limit = how.get("timeout") or self.timeout
        exchange = self._prepare(method, path, body, False, how)
        what = f"{method} {path}"
        started = time.monotonic()
        answer = self._send(exchange, what)
        try:
            received(exchange, answer, started)
            deadline = self._body_deadline(exchange, limit)
            exchange.response_body = read_bounded(answer, deadline, self._max_bytes(exchange, body))
            refuse_deep(exchange.response_body, "the body")  # as `Client`'s: never decoded
        except ServerBroke as exc:
            exchange.error = exchange.error or str(exc)
            raise
        finally:
            answer.close()
        self._note(False)
        self._answered(exchange)
        return Reply(exchange)

    def post(self, path: str, body: Any = MISSING, **kwargs: Any) -> Reply:
        return self.request("POST", path, body, **kwargs)

    @contextmanager
    def stream(
        self, path: str, body: Any = MISSING, *, method: str = "POST", **how: Unpack[Opened]
    ) -> Iterator[Stream]:
        """Send and keep the answer open, read as `Client.stream`'s is; leaving early (a client
        that hangs up) closes the connection."""
        deadline = how.get("deadline") or self.stream_deadline
        wanted = {"Accept": "text/event-stream"} if how.get("content") is None else {}
        how["headers"] = wanted | (how.get("headers") or {})
        exchange = self._prepare(method, path, body, True, how)
        started = time.monotonic()
        answer = self._send(exchange, f"{method} {path} (stream)")
        try:
            received(exchange, answer, started)
            self._note(False)
            yield Stream(
                answer,
                exchange,
                started + deadline,
                deadline,
                self._max_bytes(exchange, body),
                on_stall=lambda: self._note(True),
                max_events=events_for(body),
            )
        finally:
            answer.close()

    # ---------------------------------------- the wire

    def _send(self, exchange: Exchange, what: str) -> httpx.Response:
        """The answer's head, read; its body as an httpx.Response's is read (`_Answer`)."""
        if not exchange.url.startswith(self._origin):
            raise ValueError(f"{exchange.url} is not on {self._origin}")
        uri = exchange.url[len(self._origin) :] or "/"
        try:
            response = self._http.request(
                exchange.method, uri, body=exchange.body or b"", headers=exchange.headers
            )
        except ValueError as exc:  # a header or target the client will not put on the wire
            exchange.error = f"not sent: {exc}"
            raise Unsendable(f"{what}: the client cannot send this request: {exc}") from None
        except (OSError, HTTPException) as exc:
            raise self._broke(exchange, what, exc) from None
        return cast(httpx.Response, _Answer(response, lambda exc: self._broke(exchange, what, exc)))

    def _broke(self, exchange: Exchange, what: str, exc: BaseException) -> Exception:
        """`Sender._failed`'s words for geventhttpclient's errors, recorded on the exchange."""
        if isinstance(exc, TimeoutError):
            self._note(True)
            exchange.error = f"no answer within {self.timeout:g} s"
            return ServerBroke(f"{what}: {exchange.error}", True)
        if local_fault(exc):
            exchange.error = f"the client's socket failed: {exc}"
            return ClientBroke(f"{what}: the client's own socket failed (not the server): {exc}")
        exchange.error = f"{type(exc).__name__}: {exc}"
        return ServerBroke(f"{what}: {exchange.error}")


class _Answer:
    """A geventhttpclient response as the kit's bounded readers read an httpx.Response:
    `status_code`, `headers`, `iter_raw` (what `inflate.decoded` reads; a coded body is
    inflated there), `iter_bytes` and `iter_text`, each chunk as soon as it came."""

    request = None  # httpx's Response, rebuilt around a coded body, takes none

    def __init__(self, response: HTTPSocketPoolResponse, broke: Any) -> None:
        self._response = response
        self._broke = broke
        self.status_code = response.status_code
        self.headers = httpx.Headers(list(response.items()))

    def iter_bytes(self) -> Iterator[bytes]:
        while chunk := self._some():
            yield chunk

    def iter_raw(self, chunk_size: int | None = None) -> Iterator[bytes]:
        return self.iter_bytes()  # what came, undecoded: geventhttpclient decodes nothing

    def iter_text(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for chunk in self.iter_bytes():
            if text := decoder.decode(chunk):
                yield text
        if tail := decoder.decode(b"", final=True):
            yield tail

    def _some(self) -> bytes:
        """The body bytes that arrived: those parsed already, else one read's (b"": the end).
        geventhttpclient's own `read(n)` waits for n bytes, which a stream may never send."""
        response = self._response
        buffer = response._body_buffer
        try:
            while not buffer:
                if response.message_complete:
                    return b""
                sock = response._sock
                if sock is None:
                    raise ConnectionError("the connection closed before the answer ended")
                data = sock.recv(response.block_size)
                response.feed(data)  # the last chunk gives the socket back to the pool
                if not data and not response.message_complete:
                    raise ConnectionError("the connection closed before the answer ended")
        except (OSError, HTTPException) as exc:
            raise self._broke(exc) from None
        chunk = bytes(buffer)
        del buffer[:]
        return chunk

    def close(self) -> None:
        """Give the connection back, or close it when the answer was not read to its end."""
        self._response.release()
