"""The baseline the mock is measured against: bare ASGI endpoints on the same server stack.

`POST /json` answers a fixed JSON body (as large as the mock's 16-token answer); `POST /sse`
streams `events` fixed events of `size` bytes, then `data: [DONE]`. Nothing is parsed or
computed, so the ratio mock/bare is the cost of the mock itself.
"""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import parse_qs

import uvicorn

Scope = dict[str, Any]


async def _drain(receive: Any) -> None:
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)


def make_app(json_body: bytes, event: bytes) -> Any:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await _drain(receive)
        if scope["path"] == "/health":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        elif scope["path"] == "/json":
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": json_body})
        else:
            query = parse_qs(scope.get("query_string", b"").decode())
            events = int(query.get("events", ["256"])[0])
            headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            for _ in range(events):
                await send({"type": "http.response.body", "body": event, "more_body": True})
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json-bytes", type=int, default=1000)
    parser.add_argument("--event-bytes", type=int, default=300)
    args = parser.parse_args()
    json_body = json.dumps({"pad": "x" * max(0, args.json_bytes - 11)}).encode()
    event = b"data: " + json.dumps({"pad": "x" * max(0, args.event_bytes - 20)}).encode() + b"\n\n"
    uvicorn.run(
        make_app(json_body, event),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )


if __name__ == "__main__":
    main()
