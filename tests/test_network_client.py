"""The kit's one client: one timeout configuration, sync and async, in-process and over HTTP,
and every sender (suite, fuzzer, diff, live launcher) configured from it."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conformance.fuzz.cli import parser as fuzz_parser
from conformance.fuzz.engine import Fuzzer
from conformance.fuzz.settings import FuzzConfig, ServerFacts
from conformance.profiles import MOCK_KNOBS, PROFILES
from conformance.wire import (
    DEFAULT_TIMEOUT_S,
    IN_PROCESS_URL,
    AsyncClient,
    Client,
    ServerBroke,
    Timeouts,
    Unsendable,
)
from live.cli import parser as live_parser
from live.fuzzing import FuzzBudget
from mock_server.behaviour.config import parse_args
from mock_server.serve.app import create_app

KEY = PROFILES["api-key"].api_key
BODY = {"token_ids": [10, 11, 12], "sampling_params": {"max_tokens": 3}}


def test_every_wait_follows_from_one_number() -> None:
    t = Timeouts()
    assert (t.request, t.connect, t.stream, t.answer) == (DEFAULT_TIMEOUT_S, 5.0, 90.0, 20.0)
    short = Timeouts(2.0)
    assert (short.connect, short.stream) == (2.0, 6.0)
    assert Timeouts(10.0, stream=30.0).stream == 30.0  # an explicit budget wins
    with pytest.raises(ValueError):
        Timeouts(0.0)


def test_every_cli_timeout_has_the_one_default() -> None:
    from conformance.cli import _parser as run_parser
    from conformance.diff.cli import _parser as diff_parser

    run = run_parser().parse_args(["run"])
    diff = diff_parser().parse_args(["--reference", "http://a", "--candidate", "http://b"])
    fuzz = fuzz_parser().parse_args(["--base-url", "http://a"])
    live = live_parser().parse_args([])
    assert {run.timeout, diff.timeout, fuzz.timeout, live.timeout} == {DEFAULT_TIMEOUT_S}
    assert FuzzConfig().timeouts == Timeouts()
    assert FuzzBudget().timeout_s == DEFAULT_TIMEOUT_S


@pytest.fixture(scope="module")
def app() -> object:
    profile = PROFILES["api-key"]
    return create_app(parse_args([*profile.flags, *MOCK_KNOBS], dict(profile.env)))


def test_in_process_sync_client_records_and_authenticates(app: object) -> None:
    client = Client(IN_PROCESS_URL, KEY, Timeouts(5.0), app=app)
    try:
        assert client.post("/inference/v1/generate", BODY, auth=False).status == 401
        reply = client.post("/inference/v1/generate", BODY)
        assert reply.status == 200 and reply.json()["choices"]
        assert reply.exchange.elapsed_s is not None
        assert client.log[-1].headers["Authorization"] == f"Bearer {KEY}"
        with client.stream("/inference/v1/generate", {**BODY, "stream": True}) as stream:
            events = list(stream.events())
        assert events[-1] == "[DONE]" and json.loads(events[0])["request_id"]
    finally:
        client.close()


def test_in_process_async_client_streams_chunks_and_events(app: object) -> None:
    async def go() -> tuple[int, list[str], bytes]:
        async with AsyncClient(IN_PROCESS_URL, KEY, 5.0, app=app) as client:
            reply = await client.post("/inference/v1/generate", BODY)
            body = {**BODY, "stream": True}
            async with client.stream("POST", "/inference/v1/generate", body) as stream:
                events = [e async for e in stream.events()]
            return reply.status, events, bytes(stream.raw)

    status, events, raw = asyncio.run(go())
    assert status == 200
    assert events[-1] == "[DONE]" and raw.endswith(b"data: [DONE]\n\n")


def test_a_refused_connection_is_server_broke_not_a_crash() -> None:
    client = Client("http://127.0.0.1:9", timeout=1.0)
    try:
        with pytest.raises(ServerBroke) as broke:
            client.get("/health")
        assert not broke.value.timed_out
        assert client.log[-1].error
    finally:
        client.close()


def test_the_fuzzer_sends_through_the_kit_client(app: object) -> None:
    fuzzer = Fuzzer(
        FuzzConfig(app=app, api_key=KEY, facts=ServerFacts("scale-out", True)),
        ServerFacts("scale-out", True),
    )
    try:
        assert isinstance(fuzzer.client, Client)
        assert fuzzer.client.base_url == IN_PROCESS_URL
        assert fuzzer.alive()
    finally:
        fuzzer.close()


def test_a_raw_request_streams_its_chunks_as_sent(app: object) -> None:
    """What the diff sends: its own bytes and headers, read back raw and bounded."""
    client = Client(IN_PROCESS_URL, KEY, 5.0, app=app)
    raw = json.dumps({**BODY, "stream": True}).encode()
    try:
        with client.stream(
            "/inference/v1/generate", content=raw, headers={"Content-Type": "application/json"}
        ) as stream:
            seen = b"".join(stream.chunks())
        assert stream.status == 200 and seen == bytes(stream.raw)
        assert seen.endswith(b"data: [DONE]\n\n")
        assert "Accept" not in client.log[-1].headers  # sent as given
        reply = client.request(
            "POST", "/inference/v1/generate", content=raw, headers={"Content-Type": "text/plain"}
        )
        assert reply.status == 400 and client.log[-1].body == raw
    finally:
        client.close()


def test_the_diff_reads_a_recorded_answer(app: object) -> None:
    from conformance.diff.answer import Answer

    client = Client(IN_PROCESS_URL, KEY, 5.0, app=app)
    raw = json.dumps({**BODY, "stream": True}).encode()
    try:
        reply = client.request(
            "POST",
            "/inference/v1/generate",
            content=raw,
            headers={"Content-Type": "application/json"},
        )
    finally:
        client.close()
    answer = Answer.from_reply(reply)
    assert answer.is_stream and answer.events is not None
    assert answer.events[-1] == {"data": "[DONE]"} and answer.raw_stream == reply.body


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("X-Saw-Auth", self.headers.get("Authorization", "<none>"))
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


def test_a_header_no_client_can_send_is_unsendable_not_a_server_fault() -> None:
    """Over a socket: spaces around a value go (the server strips them anyway); a control
    character cannot be sent at all, which is no fault of the server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = Client(f"http://127.0.0.1:{server.server_address[1]}", timeout=5.0)
    try:
        reply = client.get("/", headers={"Authorization": "Bearer "})
        assert reply.status == 200 and reply.headers["x-saw-auth"] == "Bearer"
        with pytest.raises(Unsendable):
            client.get("/", headers={"X-Odd": "a\x00b"})
    finally:
        client.close()
        server.shutdown()


def test_idle_connections_go_before_a_server_closes_them() -> None:
    """A request sent on a connection just as uvicorn (vLLM's server, the mock's) closes it for
    idling is reset ("Connection reset by peer" on a generate, seen in a settings run): the
    client drops its idle connections first."""
    import uvicorn

    from loopback.connections import KEEPALIVE_S

    server_idle_s = uvicorn.Config(app=None).timeout_keep_alive
    client = Client("http://127.0.0.1:9")
    try:
        expiry = client._limits().keepalive_expiry
    finally:
        client.close()
    assert expiry is not None
    assert expiry == KEEPALIVE_S and expiry <= server_idle_s / 2, (expiry, server_idle_s)
