"""The kit's router: a Starlette app that proxies every path to N engines, for tests.

It is a test instrument, not a production router: round-robin over the engines, no health
checks or retries. What it must get right is what a TITO client relies on through any router
(broadcast aborts and weight labels, unbuffered streams, every header and byte forwarded,
a client's disconnect passed on), so that each named defect (`policy.py`) breaks exactly one
of those duties. An engine that cannot be reached is a 502 with a vLLM-style error body; an
engine whose answer breaks off mid-stream takes the client's connection down with it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from loopback.connections import KEEPALIVE_S, end_to_end
from mock_server.router.events import EventRewriter, rewrite_body
from mock_server.router.policy import (
    FIRST_ENGINE,
    GENERATE,
    Headers,
    Outgoing,
    Policy,
    policy_for,
)
from mock_server.wire.asgi import Receive, Scope, Send
from mock_server.wire.errors import error_body, json_bytes

CONNECT_TIMEOUT = 5.0


class UpstreamBroken(Exception):
    """An engine's answer broke off after the router began forwarding it. Raised to the
    server, which drops the client's connection: the client sees what the engine did."""


@dataclass
class Answer:
    status: int
    headers: Headers
    body: bytes


class _Sender:
    """The client's side: remembers whether an answer began, and drops everything once the
    client has gone (a defect that keeps reading needs somewhere to send to)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.gone = False

    async def _out(self, message: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            await self._send(message)
        except OSError:
            self.gone = True

    async def start(self, status: int, headers: Headers) -> None:
        self.started = True
        await self._out({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, data: bytes, more: bool) -> None:
        await self._out({"type": "http.response.body", "body": data, "more_body": more})

    async def whole(self, answer: Answer) -> None:
        length = (b"content-length", str(len(answer.body)).encode())
        await self.start(answer.status, [*answer.headers, length])
        await self.body(answer.body, more=False)

    async def error(self, status: int, message: str, err_type: str) -> None:
        body = json_bytes(error_body(message, err_type, None, status))
        await self.whole(Answer(status, [(b"content-type", b"application/json")], body))


class Router:
    """The ASGI endpoint: one `Policy` decides where each request goes and what comes back."""

    def __init__(
        self, engines: Sequence[str], policy: Policy, engine_api_key: str | None = None
    ) -> None:
        if not engines:
            raise ValueError("a router needs at least one engine URL")
        self.engines = [url.rstrip("/") for url in engines]
        self.policy = policy
        self.engine_api_key = engine_api_key
        self._turn = itertools.count()
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT),
                # idle upstream connections go before an engine's uvicorn closes them (5 s):
                # a request sent on one as it closes is reset, and its client gets a 502
                limits=httpx.Limits(
                    max_connections=None, max_keepalive_connections=32, keepalive_expiry=KEEPALIVE_S
                ),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def next_engine(self) -> str:
        return self.engines[next(self._turn) % len(self.engines)]

    # -- one request ---------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        if body is None:  # the client left before it finished sending
            return
        headers = [(k.lower(), v) for k, v in end_to_end(scope["headers"])]
        out = Outgoing(headers, body, self.engine_api_key, scope.get("path", ""))
        if self.policy.request is not None:
            self.policy.request(out)
        keep = bool(self.policy.kept_on_disconnect) and (
            _kind(body) in self.policy.kept_on_disconnect
        )
        sender = _Sender(send)
        failure: list[Exception] = []
        async with anyio.create_task_group() as group:

            async def watch() -> None:  # a client that leaves takes the engine's request along
                await _wait_disconnect(receive)
                sender.gone = True
                if not keep:
                    group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                await self._route(scope, out, sender)
            except Exception as exc:  # never a 500 from the router itself
                if sender.started:
                    failure.append(exc)
                else:
                    await sender.error(502, f"router: {exc!r}", "BadGatewayError")
            group.cancel_scope.cancel()
        if failure and not sender.gone:
            raise UpstreamBroken(str(failure[0])) from failure[0]

    async def _route(self, scope: Scope, out: Outgoing, sender: _Sender) -> None:
        path, method = scope["path"], scope["method"]
        if method == "POST" and path in self.policy.broadcast:
            await sender.whole(await self._broadcast(scope, out))
            return
        engine = self.engines[0] if method == "GET" and path in FIRST_ENGINE else None
        await self._forward(engine or self.next_engine(), scope, out, sender)

    def _request(self, engine: str, scope: Scope, out: Outgoing) -> httpx.Request:
        """The engine's request: built by hand, so httpx adds no header the client did not
        send (only Host and Content-Length)."""
        raw_path = scope.get("raw_path") or scope["path"].encode()
        url = engine + raw_path.decode("latin-1")
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        return httpx.Request(scope["method"], url, headers=out.headers, content=out.body)

    async def _open(self, engine: str, scope: Scope, out: Outgoing) -> httpx.Response | Answer:
        """The engine's streaming response, or the error answer when there is none."""
        try:
            request = self._request(engine, scope, out)
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            return _error(400, f"router: cannot forward this request: {exc}", "BadRequestError")
        try:
            return await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            return _error(502, f"engine {engine} unreachable: {exc!r}", "BadGatewayError")

    async def _forward(self, engine: str, scope: Scope, out: Outgoing, sender: _Sender) -> None:
        response = await self._open(engine, scope, out)
        if isinstance(response, Answer):
            await sender.whole(response)
            return
        try:
            headers = end_to_end(response.headers.raw)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                await self._stream(scope["path"], response, headers, sender)
                return
            try:
                raw = b"".join([chunk async for chunk in response.aiter_raw()])
            except httpx.HTTPError as exc:
                message = f"engine {engine} broke off: {exc!r}"
                await sender.whole(_error(502, message, "BadGatewayError"))
                return
            answer = Answer(response.status_code, headers, raw)
            await sender.whole(self._answer(scope["path"], answer))
        finally:
            with anyio.CancelScope(shield=True):  # also when the client left: close upstream
                await response.aclose()

    async def _stream(
        self, path: str, response: httpx.Response, headers: Headers, sender: _Sender
    ) -> None:
        """Each chunk goes out as it arrives (the `stream-buffered` defect holds them all)."""
        event = self.policy.event if path == GENERATE and response.status_code == 200 else None
        rewriter = EventRewriter(event) if event is not None else None
        chunks = response.aiter_raw()
        if self.policy.buffered_streams:
            held = [chunk async for chunk in chunks]
            chunks = _replay(held)
        await sender.start(response.status_code, headers)
        async for chunk in chunks:
            data = rewriter.feed(chunk) if rewriter is not None else chunk
            if data:
                await sender.body(data, more=True)
        await sender.body(rewriter.close() if rewriter is not None else b"", more=False)

    def _answer(self, path: str, answer: Answer) -> Answer:
        """A whole answer with the policy's rewrites (none for the correct router)."""
        policy = self.policy
        if policy.event is not None and path == GENERATE and answer.status == 200:
            answer.body = rewrite_body(answer.body, policy.event)
        if policy.error is not None and 400 <= answer.status < 500:
            answer.status, answer.headers, answer.body = policy.error(
                answer.status, answer.headers, answer.body
            )
        return answer

    async def _broadcast(self, scope: Scope, out: Outgoing) -> Answer:
        """Every engine gets the request; the answer is the first 200, else the first answer."""
        answers: list[Answer | None] = [None] * len(self.engines)

        async def one(i: int, engine: str) -> None:
            answers[i] = await self._fetch(engine, scope, out)

        async with anyio.create_task_group() as group:
            for i, engine in enumerate(self.engines):
                group.start_soon(one, i, engine)
        got = [a for a in answers if a is not None]
        best = next((a for a in got if a.status == 200), got[0] if got else None)
        if best is None:
            return _error(502, "no engine answered", "BadGatewayError")
        return self._answer(scope["path"], best)

    async def _fetch(self, engine: str, scope: Scope, out: Outgoing) -> Answer | None:
        response = await self._open(engine, scope, out)
        if isinstance(response, Answer):
            return None if response.status == 502 else response
        try:
            raw = b"".join([chunk async for chunk in response.aiter_raw()])
        except httpx.HTTPError:
            return None
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        headers = end_to_end(response.headers.raw)
        return Answer(response.status_code, headers, raw)


def _error(status: int, message: str, err_type: str) -> Answer:
    body = json_bytes(error_body(message, err_type, None, status))
    return Answer(status, [(b"content-type", b"application/json")], body)


async def _replay(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _read_body(receive: Receive) -> bytes | None:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def _wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _kind(body: bytes) -> str:
    """ "stream" for a request that asks for one, else "unary" (what a defect keeps)."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return "unary"
    return "stream" if isinstance(value, dict) and value.get("stream") is True else "unary"


def create_router_app(
    engines: Sequence[str], *, defect: str | None = None, engine_api_key: str | None = None
) -> Starlette:
    """The kit's router in front of `engines` (base URLs), with at most one named defect
    (`ROUTER_DEFECTS`); `engine_api_key` is the key the `key-bypassed` defect sends."""
    router = Router(engines, policy_for(defect), engine_api_key)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await router.aclose()

    app = Starlette(routes=[Route("/{path:path}", router)], lifespan=lifespan)
    app.state.router = router
    return app
