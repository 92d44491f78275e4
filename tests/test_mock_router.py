"""The kit's router, a test instrument: correct, it forwards faithfully; each defect breaks the
one duty it names. Engines and router run in this process (uvicorn threads), so each test is
short; what the engines did is read from each engine's own `/mock/stats`."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest

from loopback.ports import free_port
from mock_server.harness.testing import running_server
from mock_server.router import ROUTER_DEFECTS, create_router_app
from mock_server.router.server import serving

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
ITL_MS = 20
FLAGS = ["--enable-scale-out", "--mock-itl-ms", str(ITL_MS)]
DEV = {"VLLM_SERVER_DEV_MODE": "1"}
KEY = "engine-secret"


def body(max_tokens: int = 3, stream: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "token_ids": [151644, 872, 198],
        "sampling_params": {"max_tokens": max_tokens, "seed": 7, "ignore_eos": True},
        "stream": stream,
        **extra,
    }


@pytest.fixture(scope="module")
def engines() -> Iterator[list[str]]:
    with running_server(FLAGS, DEV) as first, running_server(FLAGS, DEV) as second:
        yield [first, second]


@pytest.fixture(scope="module")
def keyed_engines() -> Iterator[list[str]]:
    keyed = [*FLAGS, "--api-key", KEY]
    with running_server(keyed) as first, running_server(keyed) as second:
        yield [first, second]


@contextmanager
def routed(
    engines: list[str], defect: str | None = None, key: str | None = None
) -> Iterator[httpx.Client]:
    """A fresh router (its round-robin starts at engine 0) and a client of it."""
    app = create_router_app(engines, defect=defect, engine_api_key=key)
    with serving(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield client


def stats(engines: list[str]) -> list[dict[str, Any]]:
    return [httpx.get(url + "/mock/stats").json() for url in engines]


def totals(engines: list[str], received: int = 0) -> dict[str, int]:
    """Summed over the engines, once they received `received` requests in all and none of them
    runs one any more (a busy machine forwards late: counted early, a request that had not
    arrived yet ended in the next test's window)."""
    deadline = time.monotonic() + 30
    while True:
        now = stats(engines)
        arrived = sum(s["received"] for s in now) >= received
        if arrived and all(s["in_flight"] == 0 for s in now) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return {
        "received": sum(s["received"] for s in now),
        "in_flight": sum(s["in_flight"] for s in now),
        "aborted": sum(s["aborted"] for s in now),
        "length": sum(s["finished"]["length"] for s in now),
    }


def events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])


def finish_reason(stream: Iterator[dict[str, Any]]) -> str | None:
    for event in stream:
        reason = event["choices"][0]["finish_reason"] if event["choices"] else None
        if reason is not None:
            return str(reason)
    return None


# -- the correct router ------------------------------------------------------------------------
def test_requests_go_round_robin_and_answers_pass_byte_for_byte(engines: list[str]) -> None:
    before = [s["received"] for s in stats(engines)]
    direct = httpx.post(engines[0] + GENERATE, json=body(), headers={"X-Request-Id": "rr"})
    with routed(engines) as client:
        answers = [client.post(GENERATE, json=body(), headers={"X-Request-Id": "rr"}) for _ in "ab"]
    after = [s["received"] for s in stats(engines)]
    assert [a - b for a, b in zip(after, before, strict=True)] == [2, 1]  # direct went to 0
    kept = {k: v for k, v in direct.headers.items() if k not in ("date", "content-length")}
    for answer in answers:
        assert answer.status_code == 200
        assert json.loads(answer.content) | {"created": 0} == direct.json() | {"created": 0}
        assert {k: answer.headers.get(k) for k in kept} == kept


def test_a_stream_reaches_the_client_while_the_engine_still_runs_it(engines: list[str]) -> None:
    with (
        routed(engines) as client,
        client.stream("POST", GENERATE, json=body(100, stream=True)) as response,
    ):  # 100 tokens, two seconds: still running when a busy client has read its first
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = events(response)  # one reader: dropping one mid-way closes the stream
        next(stream)
        assert sum(s["in_flight"] for s in stats(engines)) == 1
        assert finish_reason(stream) == "length"


@pytest.mark.parametrize("path", [ABORT, "/abort_requests"])
def test_an_abort_through_the_router_ends_streams_on_every_engine(
    engines: list[str], path: str
) -> None:
    with routed(engines) as client, ExitStack() as stack:
        opened = [
            stack.enter_context(client.stream("POST", GENERATE, json=body(200, stream=True)))
            for _ in "ab"
        ]
        streams = [events(r) for r in opened]
        ids = [next(s)["request_id"] for s in streams]
        assert [s["in_flight"] for s in stats(engines)] == [1, 1]
        assert client.post(path, json={"request_ids": ids}).status_code == 200
        assert [finish_reason(s) for s in streams] == ["abort", "abort"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
def test_a_client_that_leaves_takes_the_engine_request_along(
    engines: list[str], stream: bool
) -> None:
    before = totals(engines)
    leave(engines, None, stream)
    after = totals(engines, before["received"] + 1)
    assert (after["aborted"] - before["aborted"], after["length"] - before["length"]) == (1, 0)


def leave(engines: list[str], defect: str | None, stream: bool) -> None:
    """A request the client gives up on once the engine runs it (150 tokens: three seconds,
    time enough on a busy machine to leave before it ends)."""
    arrived = sum(s["received"] for s in stats(engines)) + 1
    with routed(engines, defect) as client:
        _leave(client, engines, stream)
        # the router stays up until the engines are idle: its shutdown would cancel a request
        # it kept, and the engine would count that as an abort
        totals(engines, arrived)


def _leave(client: httpx.Client, engines: list[str], stream: bool) -> None:
    if stream:
        with client.stream("POST", GENERATE, json=body(150, stream=True)) as response:
            next(events(response))
        return
    # non-streamed: nothing arrives before the end, so leave once an engine runs it (a
    # client timeout could leave before the router forwarded it at all)
    payload = json.dumps(body(150)).encode()
    head = f"POST {GENERATE} HTTP/1.1\r\nHost: {client.base_url.host}\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    port = client.base_url.port or 80
    with socket.create_connection((client.base_url.host, port), timeout=10) as sock:
        sock.sendall(head.encode() + payload)
        deadline = time.monotonic() + 30
        while not sum(s["in_flight"] for s in stats(engines)):
            assert time.monotonic() < deadline, "no engine ran the request"
            time.sleep(0.01)


def test_headers_status_and_error_bodies_pass_through(engines: list[str]) -> None:
    headers = {"X-Mock-Return-Error": "503", "Content-Type": "application/json"}
    direct = httpx.post(engines[0] + GENERATE, json=body(), headers=headers)
    with routed(engines) as client:
        answer = client.post(GENERATE, json=body(), headers=headers)
        ranked = client.post(GENERATE, json=body(), headers={"X-data-parallel-rank": "5"})
    assert (answer.status_code, answer.content) == (503, direct.content)
    assert answer.headers["content-type"] == direct.headers["content-type"]
    assert ranked.status_code == 400  # the engine saw the rank: it has one (dp 1)


def test_weight_labels_reach_every_engine(engines: list[str]) -> None:
    with routed(engines) as client:
        client.post("/update_weight_version", json={"new_version": "router-a"})
        updated = [httpx.get(url + "/weight_info").json()["weight_version"] for url in engines]
        client.post("/finish_weight_update", json={"weight_version": "router-b"})
        finished = [httpx.get(url + "/weight_info").json()["weight_version"] for url in engines]
    assert (updated, finished) == (["router-a"] * 2, ["router-b"] * 2)


def test_an_unreachable_engine_is_a_502_with_a_vllm_error_body() -> None:
    with routed([f"http://127.0.0.1:{free_port()}"]) as client:
        answer = client.post(GENERATE, json=body())
    assert answer.status_code == 502
    assert set(answer.json()["error"]) == {"message", "type", "param", "code"}


def test_a_broadcast_answers_200_when_one_engine_did(engines: list[str]) -> None:
    with routed([f"http://127.0.0.1:{free_port()}", engines[0]]) as client:
        assert client.post(ABORT, json={"request_ids": ["x"]}).status_code == 200


@pytest.mark.parametrize("defect", [None, "request-id-rewritten", "echo-dropped"])
@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        ("POST", GENERATE, b"\xff\xfe{"),
        ("POST", GENERATE, b'{"request_id": ' * 2000),
        ("DELETE", GENERATE, b""),
        ("GET", "/%ff%00/..%2f", b""),
        ("POST", ABORT, b"[1, 2"),
    ],
)
def test_bad_input_never_makes_the_router_fail(
    engines: list[str], defect: str | None, method: str, path: str, content: bytes
) -> None:
    with routed(engines, defect) as client:
        answer = client.request(method, path, content=content, timeout=5)
    assert answer.status_code in (400, 404, 405, 422)


# -- each defect breaks its one duty -----------------------------------------------------------
def test_every_defect_has_a_test_here() -> None:
    tested = {
        "abort-one-engine",
        "legacy-abort-one-engine",
        "disconnect-kept-stream",
        "disconnect-kept-unary",
        "dp-rank-dropped",
        "request-id-rewritten",
        "echo-dropped",
        "stream-buffered",
        "error-502",
        "error-body-plain",
        "key-bypassed",
        "key-dropped",
        "weight-update-one-engine",
    }
    assert set(ROUTER_DEFECTS) == tested


@pytest.mark.parametrize(
    ("defect", "path"),
    [("abort-one-engine", ABORT), ("legacy-abort-one-engine", "/abort_requests")],
)
def test_an_abort_to_one_engine_misses_the_stream(
    engines: list[str], defect: str, path: str
) -> None:
    with (
        routed(engines, defect) as client,
        client.stream("POST", GENERATE, json=body(30, stream=True)) as response,
    ):
        stream = events(response)
        request_id = next(stream)["request_id"]
        client.post(path, json={"request_ids": [request_id]})  # lands on the other engine
        assert finish_reason(stream) == "length"


@pytest.mark.parametrize(
    ("defect", "stream"),
    [("disconnect-kept-stream", True), ("disconnect-kept-unary", False)],
)
def test_a_kept_request_runs_to_its_end(engines: list[str], defect: str, stream: bool) -> None:
    before = totals(engines)
    leave(engines, defect, stream)
    after = totals(engines, before["received"] + 1)
    assert (after["aborted"] - before["aborted"], after["length"] - before["length"]) == (0, 1)


def test_dp_rank_dropped(engines: list[str]) -> None:
    with routed(engines, "dp-rank-dropped") as client:
        answer = client.post(GENERATE, json=body(), headers={"X-data-parallel-rank": "5"})
    assert answer.status_code == 200  # the engine (dp 1) never saw rank 5


@pytest.mark.parametrize(
    ("defect", "kept"), [(None, True), ("request-id-rewritten", False)], ids=["correct", "defect"]
)
@pytest.mark.parametrize("where", ["header", "body"])
def test_request_id_rewritten(
    engines: list[str], defect: str | None, kept: bool, where: str
) -> None:
    headers = {"X-Request-Id": "client-7"} if where == "header" else {}
    extra = {"request_id": "client-7"} if where == "body" else {}
    with routed(engines, defect) as client:
        answer = client.post(GENERATE, json=body(**extra), headers=headers).json()
    assert (answer["request_id"] == "generate-tokens-client-7") is kept


def test_echo_dropped(engines: list[str]) -> None:
    with routed(engines, "echo-dropped") as client:
        whole = client.post(GENERATE, json=body()).json()
        with client.stream("POST", GENERATE, json=body(stream=True)) as response:
            chunks = list(events(response))
    assert whole["choices"] and chunks
    assert not any("output_mode" in part for part in [whole, *chunks])


def test_stream_buffered(engines: list[str]) -> None:
    with (
        routed(engines, "stream-buffered") as client,
        client.stream("POST", GENERATE, json=body(20, stream=True)) as response,
    ):
        stream = events(response)
        next(stream)
        assert sum(s["in_flight"] for s in stats(engines)) == 0  # the engine was done


def test_error_502(engines: list[str]) -> None:
    direct = httpx.post(engines[0] + GENERATE, json=body(max_tokens=-1))
    with routed(engines, "error-502") as client:
        answer = client.post(GENERATE, json=body(max_tokens=-1))
    assert (direct.status_code, answer.status_code, answer.content) == (400, 502, direct.content)


def test_error_body_plain(engines: list[str]) -> None:
    direct = httpx.post(engines[0] + GENERATE, json=body(max_tokens=-1))
    with routed(engines, "error-body-plain") as client:
        answer = client.post(GENERATE, json=body(max_tokens=-1))
    assert answer.status_code == direct.status_code == 400
    assert answer.headers["content-type"].startswith("text/plain")
    assert answer.text == direct.json()["error"]["message"]


@pytest.mark.parametrize(("defect", "status"), [(None, 401), ("key-bypassed", 200)])
def test_key_bypassed(keyed_engines: list[str], defect: str | None, status: int) -> None:
    with routed(keyed_engines, defect, key=KEY) as client:
        assert client.post(GENERATE, json=body()).status_code == status  # the client sent none


@pytest.mark.parametrize(("defect", "status"), [(None, 200), ("key-dropped", 401)])
def test_key_dropped(keyed_engines: list[str], defect: str | None, status: int) -> None:
    keyed = {"Authorization": f"Bearer {KEY}"}
    with routed(keyed_engines, defect) as client:
        assert client.post(GENERATE, json=body(), headers=keyed).status_code == 200
        abort = client.post(ABORT, json={"request_ids": []}, headers=keyed)
        assert abort.status_code == status  # the key reached the engine on generate only


def test_weight_update_one_engine(engines: list[str]) -> None:
    with routed(engines, "weight-update-one-engine") as client:
        client.post("/update_weight_version", json={"new_version": "only-one"})
    labels = [httpx.get(url + "/weight_info").json()["weight_version"] for url in engines]
    assert labels.count("only-one") == 1
