"""The load's client (`conformance.wire.green`, geventhttpclient): it answers what the kit's
`Client` answers, bounds a hostile server as `Client` does, and a client that leaves a stream
early closes that connection and sends on a new one."""

from __future__ import annotations

import json
import time
from contextlib import nullcontext

import pytest

from conformance.wire import Client, ServerBroke
from conformance.wire.green import GreenClient
from mock_server.harness.tito_mock import TitoMock
from tests.test_conformance_hostile import hostile  # noqa: F401  (the fixture)

GENERATE = "/inference/v1/generate"
BODY = {"token_ids": [10, 11, 12], "sampling_params": {"max_tokens": 8, "temperature": 0}}


def _tokens(events: list[str]) -> list[int]:
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    return [t for c in chunks for choice in c["choices"] for t in choice["token_ids"]]


@pytest.mark.tito_mock(flags=["--enable-scale-out", "--api-key", "sk-green-test-key"])
def test_the_green_client_answers_what_the_kits_client_answers(tito_mock: TitoMock) -> None:
    kit = Client(tito_mock.base_url, "sk-green-test-key", 10)
    green = GreenClient(tito_mock.base_url, "sk-green-test-key", 10)
    try:
        want, got = kit.post(GENERATE, BODY), green.post(GENERATE, BODY)
        assert got.status == want.status == 200
        assert got.json()["choices"][0]["token_ids"] == want.json()["choices"][0]["token_ids"]
        assert got.headers["content-type"] == want.headers["content-type"]
        with kit.stream(GENERATE, {**BODY, "stream": True}) as st:
            kit_events = list(st.events())
        with green.stream(GENERATE, {**BODY, "stream": True}) as st:
            assert st.status == 200 and st.headers["content-type"].startswith("text/event-stream")
            green_events = list(st.events())
        assert green_events[-1] == "[DONE]" and st.exchange.events == green_events
        assert _tokens(green_events) == _tokens(kit_events) == got.json()["choices"][0]["token_ids"]
        reproducer = st.exchange.reproducer()
        assert "$TITO_API_KEY" in reproducer and "sk-green-test-key" not in reproducer
        assert GreenClient(tito_mock.base_url, None, 10).post(GENERATE, BODY).status == 401
    finally:
        kit.close()
        green.close()


@pytest.mark.tito_mock(flags=["--enable-scale-out", "--mock-itl-ms", "20"])
def test_a_client_that_hangs_up_closes_the_connection_and_sends_again(
    tito_mock: TitoMock,
) -> None:
    green = GreenClient(tito_mock.base_url, None, 10)
    long = {**BODY, "sampling_params": {"max_tokens": 200, "temperature": 0}, "stream": True}
    try:
        began = time.monotonic()
        with green.stream(GENERATE, long) as st:
            for i, _ in enumerate(st.events()):
                if i == 1:
                    break  # hang up: 198 tokens (4 s) still to come
        assert time.monotonic() - began < 2
        assert green.post(GENERATE, BODY).status == 200  # the pool gave a new connection
    finally:
        green.close()


@pytest.mark.parametrize(
    "hostile, broke",
    [
        ("hang", "no answer within 1 s"),
        ("endless-body", "passed 8 MiB"),
        ("endless-stream", "deadline|more than its request can produce"),
        ("early-close", None),
        ("garbage", None),
    ],
    indirect=["hostile"],
)
def test_a_hostile_server_is_bounded_as_the_kits_client_bounds_it(
    hostile: str,  # noqa: F811
    broke: str | None,
    request: pytest.FixtureRequest,
) -> None:
    mode = request.node.callspec.params["hostile"]
    green = GreenClient(hostile, None, 1.0, 1.5)
    began = time.monotonic()
    try:
        with pytest.raises(ServerBroke, match=broke) if broke else nullcontext():
            if mode in ("endless-stream", "early-close"):
                with green.stream(GENERATE, {**BODY, "stream": True}) as st:
                    events = list(st.events())
                assert len(events) == 1  # early-close: the one event it sent
            else:
                reply = green.post(GENERATE, BODY)
                assert reply.status == 200 and reply.body.startswith(b"<html>")
    finally:
        green.close()
    assert time.monotonic() - began < 10
