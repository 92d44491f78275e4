"""The client author's fixtures, used the way a client's own test suite would use them."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator

import httpx
import pytest

from mock_server.harness.tito_mock import MockSettings, TitoMock

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
Factory = Callable[..., TitoMock]


def body(max_tokens: int, stream: bool = True) -> dict[str, object]:
    return {
        "token_ids": [151644, 872, 198],
        "sampling_params": {"max_tokens": max_tokens, "seed": 7, "ignore_eos": True},
        "stream": stream,
    }


def events(lines: Iterator[str]) -> Iterator[dict[str, object]]:
    """A minimal SSE reader, as a client would write one: `data:` lines up to [DONE]."""
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])


@pytest.mark.tito_mock(itl_ms=10)
def test_a_chunk_reaches_the_client_before_the_mock_has_produced_the_last(
    tito_transport: httpx.BaseTransport, tito_mock: TitoMock
) -> None:
    client = httpx.Client(transport=tito_transport, base_url="http://tito.mock")
    with client, client.stream("POST", GENERATE, json=body(max_tokens=2000)) as response:
        first = next(events(response.iter_lines()))
        seen_while_reading = tito_mock.stats()
        # Closing after the first chunk is a disconnect the mock turns into an abort: had the
        # transport buffered, the 2,000 tokens would have been generated before we saw one.
    assert first["choices"][0]["finish_reason"] is None  # type: ignore[index]
    assert seen_while_reading["in_flight"] == 1
    assert tito_mock.stats()["finished"] == {"stop": 0, "length": 0, "abort": 1}


@pytest.mark.tito_mock(itl_ms=5)
def test_abort_mid_stream_ends_the_stream_with_finish_reason_abort(
    tito_transport: httpx.BaseTransport,
) -> None:
    client = httpx.Client(transport=tito_transport, base_url="http://tito.mock")
    with client, client.stream("POST", GENERATE, json=body(max_tokens=2000)) as response:
        chunks = events(response.iter_lines())
        request_id = next(chunks)["request_id"]
        assert client.post(ABORT, json={"request_ids": [request_id]}).status_code == 200
        last = list(chunks)[-1]
    assert last["choices"][0]["finish_reason"] == "abort"  # type: ignore[index]


def test_a_client_survives_a_server_that_ignores_aborts(tito_mock_factory: Factory) -> None:
    mock = tito_mock_factory(defects=["abort-ignored"], itl_ms=2)
    client = httpx.Client(transport=mock.transport(), base_url="http://tito.mock")
    with client, client.stream("POST", GENERATE, json=body(max_tokens=60)) as response:
        chunks = events(response.iter_lines())
        request_id = next(chunks)["request_id"]
        client.post(ABORT, json={"request_ids": [request_id]})
        rest = list(chunks)
    assert rest[-1]["choices"][0]["finish_reason"] == "length"  # type: ignore[index]
    assert 1 + sum(len(c["choices"][0]["token_ids"]) for c in rest) == 60  # type: ignore[index]


def test_per_request_fault_headers(tito_transport: httpx.BaseTransport) -> None:
    with httpx.Client(transport=tito_transport, base_url="http://tito.mock") as client:
        cut = client.post(
            GENERATE, json=body(8, stream=False), headers={"X-Mock-Abort-After-Tokens": "3"}
        )
        failed = client.post(GENERATE, json=body(8), headers={"X-Mock-Return-Error": "503"})
    choice = cut.json()["choices"][0]
    assert (choice["finish_reason"], len(choice["token_ids"])) == ("abort", 3)
    assert failed.status_code == 503
    assert failed.json()["error"]["code"] == 503


@pytest.mark.tito_mock(itl_ms=5)
def test_an_async_client_streams_and_aborts_by_closing(
    tito_async_transport: httpx.AsyncBaseTransport, tito_mock: TitoMock
) -> None:
    async def first_then_close() -> tuple[int, int]:
        client = httpx.AsyncClient(transport=tito_async_transport, base_url="http://tito.mock")
        async with client, client.stream("POST", GENERATE, json=body(4000)) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    # Paced, so the 4,000 tokens are still coming: unpaced, a starved client
                    # thread can read its first line after the mock has written them all.
                    return response.status_code, tito_mock.stats()["in_flight"]
        raise AssertionError("no event")

    assert asyncio.run(first_then_close()) == (200, 1)
    assert tito_mock.stats()["aborted"] == 1


@pytest.mark.tito_mock(flags=["--api-key", "secret"])
def test_marker_flags_reach_the_mock_over_the_loopback_port(tito_mock: TitoMock) -> None:
    denied = httpx.post(tito_mock.url(GENERATE), json=body(2, stream=False))
    allowed = httpx.post(
        tito_mock.url(GENERATE),
        json=body(2, stream=False),
        headers={"Authorization": "Bearer secret"},
    )
    assert tito_mock.base_url.startswith("http://127.0.0.1:")
    assert (denied.status_code, allowed.status_code) == (401, 200)
    assert httpx.get(tito_mock.url("/mock/stats")).json() == tito_mock.stats()


def test_the_socket_and_the_transport_drive_one_mock(
    tito_mock: TitoMock, tito_transport: httpx.BaseTransport
) -> None:
    httpx.post(tito_mock.url(GENERATE), json=body(2, stream=False))
    with httpx.Client(transport=tito_transport, base_url="http://tito.mock") as client:
        client.post(GENERATE, json=body(2, stream=False))
    assert tito_mock.stats()["received"] == 2
    tito_mock.reset()
    assert tito_mock.stats() == {
        "received": 0,
        "in_flight": 0,
        "queued": 0,
        "finished": {"stop": 0, "length": 0, "abort": 0},
        "aborted": 0,
        "held": [],
        "hung_up": [],
        "held_by_rank": {"0": []},
    }


def test_a_timeout_on_a_hanging_server(tito_mock_factory: Factory) -> None:
    mock = tito_mock_factory(defects=["hang-generate"])
    client = httpx.Client(transport=mock.transport(), base_url="http://tito.mock", timeout=0.2)
    with client, pytest.raises(httpx.ReadTimeout):
        client.post(GENERATE, json=body(2, stream=False))


def test_unknown_defects_and_flags_are_errors_not_silence(tito_mock_factory: Factory) -> None:
    with pytest.raises(ValueError, match="abort-ignord"):
        tito_mock_factory(defects=["abort-ignord"])
    with pytest.raises(ValueError, match="--no-such-flag"):
        tito_mock_factory(flags=["--no-such-flag"])
    with pytest.raises(ValueError, match="scope"):
        tito_mock_factory(scope="class")


def test_closing_a_mock_ends_requests_a_client_left_hanging() -> None:
    mock = TitoMock(MockSettings.of(defects=["hang-generate"])).__enter__()
    errors: list[Exception] = []

    def wait_forever() -> None:
        with httpx.Client(
            transport=mock.transport(), base_url="http://tito.mock", timeout=None
        ) as c:
            try:
                c.post(GENERATE, json=body(2, stream=False))
            except httpx.HTTPError as exc:
                errors.append(exc)

    waiting = threading.Thread(target=wait_forever)
    waiting.start()
    while mock.stats()["received"] == 0:
        threading.Event().wait(0.01)
    mock.close()
    waiting.join(10)
    assert not waiting.is_alive()
    assert [type(e) for e in errors] == [httpx.RemoteProtocolError]
