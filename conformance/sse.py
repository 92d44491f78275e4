"""The kit's one SSE decoder (httpx-sse), for bytes read whole or as they arrive."""

from __future__ import annotations

import httpx
from httpx_sse import EventSource, ServerSentEvent

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
