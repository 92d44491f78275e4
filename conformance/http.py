"""The kit's one HTTP client: every sender (suite, fuzzer, diff, live launcher) goes through it.

It is bounded in time and size (`bounded`), builds the API-key header in one place, records
every exchange, and decodes SSE with httpx-sse (`sse`), sync (`Client`) and async
(`async_client.AsyncClient`), over a socket or in-process into an ASGI app
(`openapi.asgi_transport`, which streams). Its waits all come from one `Timeouts`
(`timeouts`), itself derived from one number, `DEFAULT_TIMEOUT_S` unless a CLI's `--timeout`
says otherwise. Every public name of those modules is importable from here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Unpack

import httpx

from loopback.timeouts import (
    ANSWER_FACTOR,
    CONNECT_CAP_S,
    DEFAULT_TIMEOUT_S,
    STREAM_FACTOR,
    Timeouts,
)

from .async_client import AsyncClient
from .bounded import (
    MAX_BODY,
    MAX_EVENTS,
    AsyncStream,
    Reply,
    ServerBroke,
    Stream,
    Unsendable,
    _BoundedResponse,
    read_bounded,
)
from .outgoing import Outgoing
from .sender import (
    IN_PROCESS_URL,
    MISSING,
    UNRESPONSIVE_AFTER,
    Opened,
    Sender,
    Timed,
    auth_header,
)
from .sse import is_event_stream, sse_data, sse_events

__all__ = [
    "ANSWER_FACTOR",
    "CONNECT_CAP_S",
    "DEFAULT_TIMEOUT_S",
    "IN_PROCESS_URL",
    "MAX_BODY",
    "MAX_EVENTS",
    "STREAM_FACTOR",
    "UNRESPONSIVE_AFTER",
    "AsyncClient",
    "AsyncStream",
    "Client",
    "Reply",
    "ServerBroke",
    "Stream",
    "Timeouts",
    "Unsendable",
    "auth_header",
    "is_event_stream",
    "sse_data",
    "sse_events",
]


class Client(Sender):
    """The sync client. One per run (the suite's `log` holds the exchanges of the current
    check), per fuzz run, per diff target, per launched server. `app`: an ASGI app served
    in-process (through the streaming transport) instead of `base_url`'s socket."""

    def _open(self, app: Any) -> httpx.Client:
        transport = None
        if app is not None:
            from openapi.asgi_transport import StreamingTransport

            transport = StreamingTransport(app, self._portal)
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
            self._http.stream(**out.args(self.timeouts.for_httpx(out.limit), True)) as answer,
        ):
            exchange.response_body = read_bounded(answer, *out.received(answer))
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
        with out.opened(), self._http.stream(**out.args()) as response:
            out.streaming(response)
            yield Stream(
                _BoundedResponse(
                    response,
                    exchange,
                    out.ends,
                    on_stall=lambda: self._note(True),
                    max_bytes=out.max_bytes,
                )
            )
