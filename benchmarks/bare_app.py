"""The baseline the mock is measured against: the same bytes from a bare endpoint.

Starlette routing a raw ASGI endpoint under uvicorn with the mock's settings, as the mock's
generate endpoint is served: `POST /json` answers the recorded non-streamed body with its
content-length, `POST /sse` sends the recorded stream one event per `send` (chunked), as the
mock sends them. Nothing is parsed or computed, so mock/bare is the cost of the mock itself
on the same stack.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

Scope = dict[str, Any]
JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]


async def _drain(receive: Any) -> None:
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)


class Recorded:
    """A raw ASGI endpoint (an instance, so Starlette routes to it as to the mock's generate)."""

    def __init__(self, json_body: bytes, events: list[bytes]) -> None:
        self.json_body = json_body
        self.events = events

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        await _drain(receive)
        if not self.events:  # framed by content-length, as the mock frames its answer
            length = [(b"content-length", str(len(self.json_body)).encode())]
            start = {"type": "http.response.start", "status": 200, "headers": length + JSON_HEADERS}
            await send(start)
            await send({"type": "http.response.body", "body": self.json_body})
            return
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        for event in self.events[:-1]:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": self.events[-1]})


def make_app(json_body: bytes, events: list[bytes]) -> Starlette:
    async def health(request: Any) -> Response:
        return Response()

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/json", Recorded(json_body, []), methods=["POST"]),
            Route("/sse", Recorded(b"", events), methods=["POST"]),
        ]
    )


def split_events(stream: bytes) -> list[bytes]:
    """`data: ...\\n\\n` events, each with its blank line."""
    return [part + b"\n\n" for part in stream.split(b"\n\n") if part]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json-file", type=Path, required=True)
    parser.add_argument("--sse-file", type=Path, required=True)
    args = parser.parse_args()
    app = make_app(args.json_file.read_bytes(), split_events(args.sse_file.read_bytes()))
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
