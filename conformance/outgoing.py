"""One request on its way, as both clients send it. `http.Client` and `async_client.AsyncClient`
differ only in awaiting, so what they do around the transfer (its arguments, the answer's head,
the bounds of its body, a failure's report, the count of timeouts) is spelled here once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from .bounded import Reply, ServerBroke
from .exchange import Exchange
from .sender import Sender, received, wire


@dataclass
class Outgoing:
    """A request its `Sender` prepared (and recorded), with the bounds its answer is read in."""

    sender: Sender
    exchange: Exchange
    what: str
    """How a failure names the request: `POST /path`, `POST /path (stream)`."""
    limit: float
    """A whole request's timeout; a stream's whole budget."""
    body: Any
    """The JSON body sent (`MISSING`: none), which sets how large a correct answer may be."""
    started: float = field(default_factory=time.monotonic)

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

    def received(self, response: httpx.Response) -> tuple[float, int]:
        """Record the answer's head; the deadline and size its whole body is read within."""
        received(self.exchange, response, self.started)
        return self.sender._body_deadline(self.exchange, self.limit), self.max_bytes

    @contextmanager
    def answered(self) -> Iterator[None]:
        """A transfer that fails (transport error, answer out of bounds) raises the recorded
        `ServerBroke` (`Unsendable`) of `Sender._failed`; one that ends resets the timeouts."""
        try:
            yield
        except (httpx.HTTPError, ServerBroke) as exc:
            raise self.sender._failed(self.exchange, self.what, exc, self.limit) from None
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
            raise self.sender._stream_failed(self.exchange, self.what, exc) from None

    def reply(self) -> Reply:
        self.sender._answered(self.exchange)
        return Reply(self.exchange)
