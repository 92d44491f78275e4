"""Fleets for client authors: engines as processes behind a router, `kill(i)`, the fixture, the
`tito-mock --engines N` command, and the mock's `/metrics` (what a router or rollout code reads
of an engine's load)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from loopback.ports import free_port
from loopback.vllm_router import BINARY_ENV, HOW_TO_GET, find_binary
from mock_server.harness.fleet import Fleet, RouterNotFound, start_fleet
from mock_server.harness.tito_mock import TitoMock

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"


def body(max_tokens: int = 3, stream: bool = False) -> dict[str, Any]:
    return {
        "token_ids": [151644, 872, 198],
        "sampling_params": {"max_tokens": max_tokens, "seed": 7, "ignore_eos": True},
        "stream": stream,
    }


def events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])


def running_on(fleet: Fleet) -> int:
    """The engine that runs the one request in flight."""
    return next(i for i, s in enumerate(fleet.stats()) if s.get("in_flight"))


def settled(fleet: Fleet) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 5
    while True:
        now = fleet.stats()
        if not any(s.get("in_flight") for s in now) or time.monotonic() > deadline:
            return now
        time.sleep(0.02)


# -- the fleet ---------------------------------------------------------------------------------
@pytest.mark.tito_mock_fleet(engines=2, router="kit", itl_ms=20)
def test_the_fixture_starts_engines_behind_a_router(tito_mock_fleet: Fleet) -> None:
    fleet = tito_mock_fleet
    assert (fleet.router, len(fleet.engines)) == ("kit", 2)
    with httpx.Client(base_url=fleet.url, timeout=10) as client:
        answers = [client.post(GENERATE, json=body()) for _ in range(4)]
    assert [a.json()["choices"][0]["finish_reason"] for a in answers] == ["length"] * 4
    assert [s["received"] for s in fleet.stats()] == [2, 2]


REAL = pytest.mark.skipif(find_binary() is None, reason=HOW_TO_GET)


@pytest.mark.parametrize("router", ["kit", pytest.param("vllm-router", marks=REAL)])
def test_a_killed_engine_breaks_its_stream_off(router: str) -> None:
    with (
        start_fleet(2, router=router, itl_ms=20) as fleet,
        httpx.Client(base_url=fleet.url, timeout=10) as client,
        client.stream("POST", GENERATE, json=body(500, stream=True)) as response,
    ):
        stream = events(response)
        next(stream)
        fleet.kill(running_on(fleet))
        with pytest.raises(httpx.TransportError):
            for _ in stream:
                pass


@pytest.mark.tito_mock_fleet(engines=2, router="kit", router_defect="abort-one-engine", itl_ms=20)
def test_a_fleet_takes_a_router_defect(tito_mock_fleet: Fleet) -> None:
    with (
        httpx.Client(base_url=tito_mock_fleet.url, timeout=10) as client,
        client.stream("POST", GENERATE, json=body(30, stream=True)) as response,
    ):
        stream = events(response)
        client.post(ABORT, json={"request_ids": [next(stream)["request_id"]]})
        last = [e for e in stream if e["choices"]][-1]
    assert last["choices"][0]["finish_reason"] == "length"


def test_start_fleet_refuses_what_it_cannot_do(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown router defect"):
        start_fleet(router="kit", router_defect="no-such-defect")
    with pytest.raises(ValueError, match="kit's router"):
        start_fleet(router="vllm-router", router_defect="abort-one-engine")
    with pytest.raises(ValueError, match="rejected"):
        start_fleet(flags=["--no-such-flag"], router="kit")
    monkeypatch.setenv(BINARY_ENV, "/nonexistent/vllm-router")
    with pytest.raises(RouterNotFound, match="pip install vllm-router"):
        start_fleet(router="vllm-router")


@REAL
def test_a_fleet_behind_the_real_vllm_router() -> None:
    with start_fleet(2, router="auto", itl_ms=20) as fleet:
        assert fleet.router == "vllm-router"
        with httpx.Client(base_url=fleet.url, timeout=10) as client:
            whole = client.post(GENERATE, json=body())
            with client.stream("POST", GENERATE, json=body(50, stream=True)) as response:
                next(events(response))  # then leave: vllm-router passes the disconnect on
        after = settled(fleet)
    assert whole.json()["choices"][0]["finish_reason"] == "length"
    assert sum(s["aborted"] for s in after) == 1


def test_tito_mock_engines_serves_a_fleet_until_stopped() -> None:
    port = free_port()
    argv = [sys.executable, "-m", "mock_server", "--engines", "2", "--router", "kit"]
    process = subprocess.Popen(
        [*argv, "--port", str(port), "--mock-itl-ms", "1"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(3)]
        assert lines[0] == f"router (kit): http://127.0.0.1:{port}"
        engines = [line.split(": ", 1)[1] for line in lines[1:]]
        answer = httpx.post(f"http://127.0.0.1:{port}{GENERATE}", json=body(), timeout=10)
        assert answer.status_code == 200
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(15) == 0
    for url in engines:
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/health")


# -- /metrics ------------------------------------------------------------------------------------
def samples(text: str) -> dict[tuple[str, str], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert sample.labels["model_name"] == "mock-model"
            assert sample.labels["engine"] == "0"
            out[(sample.name, sample.labels.get("finished_reason", ""))] = sample.value
    return out


@pytest.mark.tito_mock(flags=["--max-num-seqs", "1"], itl_ms=20)
def test_metrics_carry_the_numbers_of_mock_stats(tito_mock: TitoMock) -> None:
    url = tito_mock.base_url
    httpx.post(url + GENERATE, json=body())
    httpx.post(url + GENERATE, json=body(20), headers={"X-Mock-Abort-After-Tokens": "1"})
    held = [
        threading.Thread(
            target=httpx.post,
            args=(url + GENERATE,),
            kwargs={"json": body(1000), "headers": {"X-Request-Id": rid}, "timeout": 30},
        )
        for rid in ("a", "b")
    ]
    for thread in held:
        thread.start()
        time.sleep(0.1)  # "a" runs first, "b" waits for its slot
    try:
        deadline = time.monotonic() + 5
        while tito_mock.stats()["in_flight"] < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        metrics = httpx.get(url + "/metrics")
        stats = httpx.get(url + "/mock/stats").json()
    finally:
        httpx.post(url + ABORT, json={"request_ids": ["generate-tokens-a", "generate-tokens-b"]})
        for thread in held:
            thread.join(10)
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert (stats["in_flight"], stats["queued"]) == (2, 1)
    assert samples(metrics.text) == {
        ("vllm:num_requests_running", ""): 1.0,
        ("vllm:num_requests_waiting", ""): 1.0,
        ("vllm:request_success_total", "stop"): stats["finished"]["stop"],
        ("vllm:request_success_total", "length"): stats["finished"]["length"],
        ("vllm:request_success_total", "abort"): stats["finished"]["abort"],
    }
    assert (stats["finished"]["length"], stats["finished"]["abort"]) == (1, 1)
