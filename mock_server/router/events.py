"""Rewriting the JSON objects of a generate answer: a whole body, or a stream event by event.

Only a router defect rewrites answers; the correct router never parses them, so its bytes are
the engine's. Anything that is not a JSON object (`[DONE]`, a broken event) passes unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from mock_server.router.policy import EventRewrite


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def rewrite_body(raw: bytes, rewrite: EventRewrite) -> bytes:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    return _dumps(rewrite(value)) if isinstance(value, dict) else raw


class EventRewriter:
    """Splits an SSE byte stream at its blank lines and rewrites each event's data; a partial
    event waits for the rest of it."""

    def __init__(self, rewrite: EventRewrite) -> None:
        self.rewrite = rewrite
        self.buffer = b""

    def feed(self, chunk: bytes) -> bytes:
        self.buffer += chunk
        out = b""
        while b"\n\n" in self.buffer:
            event, self.buffer = self.buffer.split(b"\n\n", 1)
            out += self._event(event) + b"\n\n"
        return out

    def close(self) -> bytes:
        rest, self.buffer = self.buffer, b""
        return rest

    def _event(self, event: bytes) -> bytes:
        lines = event.split(b"\n")
        data = [line for line in lines if line.startswith(b"data:")]
        if len(data) != 1:
            return event
        payload = data[0][5:].removeprefix(b" ")
        rewritten = rewrite_body(payload, self.rewrite)
        if rewritten is payload:
            return event
        return b"\n".join(b"data: " + rewritten if line is data[0] else line for line in lines)
