"""A fault-injecting proxy: a correct server's answers with exactly one `Fault` applied.

The suite's blast radius is measured on defects nobody picked: every request is forwarded to an
upstream server (the mock) and one generated fault (`benchmarks/fault_catalogue.py`) rewrites
the answers of the shape it names, nothing else. Streams are forwarded event by event as they
arrive, and a client that goes away closes the upstream request, so aborts, disconnects and the
server's pace reach the suite as they would without the proxy. With no fault it passes answers
through byte for byte; with `record` it notes which elements its answers held, so a benchmark
knows which faults can fire at all.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import uvicorn

from benchmarks.fault_catalogue import (
    OPERATIONS,
    SHAPES,
    STREAM_FAULTS,
    Fault,
    mutate,
    observe,
    operation_path,
)
from loopback.connections import end_to_end
from loopback.in_process import in_thread

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

_PATHS = {operation_path(name): name for name in OPERATIONS}
NON_JSON_EVENT = b"data: {this is not json\n\n"


def shape_of(operation: str, status: int, body: Any) -> str:
    """The SHAPES key of a decoded answer (or event), "" when it has none."""
    if status >= 400:
        return (
            "error-body" if isinstance(body, dict) and isinstance(body.get("error"), dict) else ""
        )
    if operation == "stream":
        if not isinstance(body, dict):
            return ""
        if "error" in body:
            return "stream.error-event"
        if body.get("choices") == []:
            return "stream.usage-chunk"
        return "stream.text-chunk" if body.get("output_mode") == "text" else "stream.chunk"
    if operation == "generate" and isinstance(body, dict):
        return "generate-text" if body.get("output_mode") == "text" else "generate"
    if operation == "abort-legacy":
        return "abort-dev"
    if operation in ("render", "render-chat"):
        return operation
    if operation in ("derender", "derender-chat"):
        return (
            f"{operation}.stream"
            if isinstance(body, dict) and "stream_state" in body
            else operation
        )
    return ""


class FaultProxy:
    """The ASGI app: forwards to `upstream`, applies `fault` (None: a clean pass-through)."""

    def __init__(self, upstream: str, fault: Fault | None = None, record: bool = False) -> None:
        self.upstream = upstream.rstrip("/")
        self.fault = fault
        self.record = record
        self.applied = 0  # answers (or events) the fault changed
        self.seen: dict[str, bool] = {}  # with `record`: element -> held a value
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        async with anyio.create_task_group() as group:

            async def watch() -> None:  # a client that leaves takes the upstream request along
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(watch)
            await self._exchange(scope, body, send)
            group.cancel_scope.cancel()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Close the upstream client (its connections) on shutdown."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _client_for(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(None, connect=10.0)
            self._client = httpx.AsyncClient(base_url=self.upstream, timeout=timeout)
        return self._client

    async def _exchange(self, scope: Scope, body: bytes, send: Send) -> None:
        path = scope["path"]
        url = path + ("?" + scope["query_string"].decode() if scope["query_string"] else "")
        headers = end_to_end(scope["headers"])
        request = self._client_for().build_request(
            scope["method"], url, headers=headers, content=body
        )
        response = await self._client_for().send(request, stream=True)
        try:
            operation = _PATHS.get(path, "")
            out = end_to_end(response.headers.raw)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                await self._stream(operation, response, out, send)
            else:
                raw = await response.aread()
                status, out, raw = self._answer(operation, response.status_code, out, raw)
                out.append((b"content-length", str(len(raw)).encode()))
                await send({"type": "http.response.start", "status": status, "headers": out})
                await send({"type": "http.response.body", "body": raw})
        finally:
            with anyio.CancelScope(shield=True):  # also when the client left: close upstream
                await response.aclose()

    def _note(self, key: str) -> None:
        if self.record:
            self.seen[key] = True

    def _start(self, where: str, status: int, headers: Headers) -> tuple[int, Headers]:
        """The status, content-type and header faults of the answer's start."""
        self._note(f"{where}:{status}")
        for name, _ in headers:
            self._note(f"header:{name.decode().lower()}")
        f = self.fault
        if f is None or f.where not in (where, "header"):
            return status, headers
        old = status
        if f.mutation == "status=500" and status == 200:
            status = 500
        elif f.mutation.startswith("status=400->") and status == 400:
            status = int(f.mutation.rsplit(">", 1)[1])
        elif f.mutation.startswith("content-type=") and status == 200:
            media = f.mutation.split("=", 1)[1].encode()
            was = [v for k, v in headers if k.lower() == b"content-type"]
            headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
            headers.append((b"content-type", media))
            if [v.split(b";")[0].strip().lower() for v in was] != [media]:
                self.applied += 1  # the answer's own type is no fault (the dev abort's JSON)
        elif f.where == "header":
            key = f.path[0].encode()
            kept = [(k, v) for k, v in headers if k.lower() != key]
            if len(kept) < len(headers):
                wrong = [(k, v + b"-x") for k, v in headers if k.lower() == key]
                headers = kept if f.mutation == "drop" else kept + wrong
                self.applied += 1
        if status != old:
            self.applied += 1
        return status, headers

    def _answer(
        self, operation: str, status: int, headers: Headers, raw: bytes
    ) -> tuple[int, Headers, bytes]:
        """A whole (non-streamed) answer with the fault applied."""
        status_out, headers = self._start(operation, status, headers)
        f = self.fault
        if not raw or not (self.record or (f is not None and f.where in SHAPES)):
            return status_out, headers, raw
        try:
            body = json.loads(raw)
        except ValueError:
            return status_out, headers, raw
        shape = shape_of(operation, status, body)
        if not shape:
            return status_out, headers, raw
        if self.record:
            observe(shape, body, self.seen)
        if f is None or f.where != shape:
            return status_out, headers, raw
        if f.mutation == "plain-text":
            self.applied += 1
            text = str(body["error"].get("message", "error")).encode()
            headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
            return status_out, [*headers, (b"content-type", b"text/plain")], text
        if f.path and mutate(body, f):
            self.applied += 1
            return status_out, headers, _dumps(body)
        return status_out, headers, raw

    async def _stream(
        self, operation: str, response: httpx.Response, headers: Headers, send: Send
    ) -> None:
        """Forward a stream as it arrives; parse it into events only when something reads them."""
        where = "stream" if operation == "generate" else operation
        status, headers = self._start(where, response.status_code, headers)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        f = self.fault
        reads = f is not None and (f.where.startswith("stream.") or f.mutation in STREAM_FAULTS)
        rewrite = _Events(self) if self.record or reads else None
        async for chunk in response.aiter_raw():
            out = rewrite.feed(chunk) if rewrite else chunk
            if out:
                await send({"type": "http.response.body", "body": out, "more_body": True})
        tail = rewrite.close() if rewrite else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})


class _Events:
    """Split an SSE byte stream into events and apply the proxy's fault to each."""

    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        self.buffer = b""
        self.count = 0
        self.held = b""  # events:merged: the first event, waiting for the second

    def feed(self, chunk: bytes) -> bytes:
        """The complete events in `chunk` (rewritten); a partial one waits for its blank line
        (`\\n\\n`, as vLLM and the mock end events)."""
        self.buffer += chunk
        out = b""
        while b"\n\n" in self.buffer:
            event, self.buffer = self.buffer.split(b"\n\n", 1)
            out += self._event(event + b"\n\n")
        return out

    def close(self) -> bytes:
        rest, self.buffer = self.held + self.buffer, b""
        self.held = b""
        return rest

    def _event(self, event: bytes) -> bytes:
        proxy, f = self.proxy, self.proxy.fault
        self.count += 1
        lines = [line for line in event.decode().split("\n") if line.startswith("data:")]
        data = "\n".join(line[5:].removeprefix(" ") for line in lines)
        mutation = f.mutation if f is not None and f.where == "stream" else ""
        if mutation == "events:merged" and self.count <= 2:
            if self.count == 1:
                self.held = event[:-1]  # without its blank line: the next event joins it
                return b""
            proxy.applied += 1
            merged, self.held = self.held + event, b""
            return merged
        if data == "[DONE]":
            if mutation == "done:drop":
                proxy.applied += 1
                return b""
            return event
        if mutation == "event:non-json" and self.count == 1:
            proxy.applied += 1
            return event + NON_JSON_EVENT
        try:
            body = json.loads(data)
        except ValueError:
            return event
        shape = shape_of("stream", 200, body)
        if proxy.record and shape:
            observe(shape, body, proxy.seen)
        if f is not None and f.where == shape and f.path and mutate(body, f):
            proxy.applied += 1
            return b"data: " + _dumps(body) + b"\n\n"
        return event


def _dumps(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """uvicorn serving the ASGI `app` on a free loopback port in a thread; yields its base URL."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="auto",
        access_log=False,
        server_header=False,  # the upstream's own server and date headers pass through
        date_header=False,
    )
    with in_thread(config, "the fault proxy") as url:
        yield url


@contextmanager
def proxied(
    upstream: str, fault: Fault | None = None, record: bool = False
) -> Iterator[tuple[str, FaultProxy]]:
    """A running proxy to `upstream` with `fault`: its base URL and the app (for `applied`)."""
    app = FaultProxy(upstream, fault, record)
    with serve(app) as url:
        yield url, app
