"""The generated faults and the proxy that applies them (no suite runs: those are benchmarks).

The blast-radius benchmark over generated faults is only as good as its two parts: the faults
must cover the spec's answer shapes and change exactly the element they name, and the proxy
must be invisible without a fault (bytes, streaming pace, disconnects) so that a difference in
the suite's verdicts is the fault's and nobody else's.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from benchmarks.fault_catalogue import (
    FREE,
    OPERATIONS,
    SHAPES,
    Fault,
    exercised,
    free,
    generate_faults,
    merge,
    mutate,
    observe,
)
from benchmarks.fault_proxy import proxied, serve
from mock_server.harness.testing import running_server
from openapi import load_spec

FAULTS = {f.name: f for f in generate_faults()}
GENERATE = "/inference/v1/generate"
SAMPLE = copy.deepcopy(
    load_spec()["components"]["schemas"]["GenerateTokensResponse"]["examples"][0]
)
JSON_BODY = b'{ "request_id" : "generate-tokens-1", "text": "caf\\u00e9 \xc3\xa9" }'
SSE_BODY = [b'data: {"a": 1}\n\n', b'data: {"choices": [] }\n\n', b"data: [DONE]\n\n"]


def test_free_values_name_generated_elements() -> None:
    """Each element the catalogue calls free (`FREE`: no defect in another value) is one of its
    generated faults', so a misspelt name cannot quietly leave a real fault unrun."""
    freed = {f.name.removesuffix(":wrong-value") for f in FAULTS.values() if free(f)}
    assert freed == set(FREE)


def _top_level(schema: str) -> set[str]:
    return set(merge([{"$ref": f"#/components/schemas/{schema}"}]).props)


@pytest.mark.parametrize(
    ("where", "schema"),
    [
        ("generate", "GenerateTokensResponse"),
        ("generate-text", "GenerateTextResponse"),
        ("stream.chunk", "GenerateTokensStreamChunk"),
        ("stream.text-chunk", "GenerateTextStreamChunk"),
    ],
)
def test_every_top_level_field_has_faults(where: str, schema: str) -> None:
    fields = _top_level(schema)
    assert {"request_id", "choices", "output_mode"} <= fields
    faulted = {f.path[0] for f in FAULTS.values() if f.where == where and len(f.path) == 1}
    assert fields - faulted == set()


def test_statuses_content_types_and_stream_framing_have_faults() -> None:
    for op in OPERATIONS:
        assert f"{op}:status=500" in FAULTS
        assert any(n.startswith(f"{op}:content-type=") for n in FAULTS)
    for name in (
        "generate:status=400->200",
        "generate:status=400->422",
        "stream:content-type=application/json",
        "stream:done:drop",
        "stream:event:non-json",
        "stream:events:merged",
        "error-body:plain-text",
        "header:x-request-id:drop",
    ):
        assert name in FAULTS
    assert {f.where for f in FAULTS.values()} >= set(SHAPES)


def test_names_are_unique_and_no_fault_is_conformant() -> None:
    faults = generate_faults()
    assert len({f.name for f in faults}) == len(faults)
    assert FAULTS["generate.choices[].finish_reason:null"]  # required, not nullable
    assert "generate.model:drop" not in FAULTS  # optional: dropping it is no defect
    assert "generate.prompt_token_ids:null" not in FAULTS  # nullable
    assert "stream.chunk.choices[].finish_reason:null" not in FAULTS  # null until the last chunk


def _differences(a: Any, b: Any, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The paths (list indexes as `[]`) where `a` and `b` differ, as deep as both go."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = {(*path, k) for k in a.keys() ^ b.keys()}
        for k in a.keys() & b.keys():
            out |= _differences(a[k], b[k], (*path, k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return set().union(*(_differences(x, y, (*path, "[]")) for x, y in zip(a, b, strict=True)))
    return set() if a == b and type(a) is type(b) else {path}


@pytest.mark.parametrize("mutation", ["drop", "null", "wrong-type", "wrong-value", "add"])
def test_a_fault_changes_exactly_its_element(mutation: str) -> None:
    applied = 0
    for fault in FAULTS.values():
        if fault.where != "generate" or fault.mutation != mutation:
            continue
        body = copy.deepcopy(SAMPLE)
        if not mutate(body, fault):
            continue  # the sample has no such element (logprobs: null, ...)
        applied += 1
        assert _differences(SAMPLE, body) == {fault.path}, fault.name
    assert applied >= 5


def test_observed_elements_decide_which_faults_can_fire() -> None:
    seen: dict[str, bool] = {}
    observe("generate", SAMPLE, seen)
    assert exercised(FAULTS["generate.choices[].token_ids:drop"], seen)
    assert exercised(FAULTS["generate.choices[].token_ids[]:wrong-value"], seen)
    assert exercised(FAULTS["generate.prompt_token_ids:drop"], seen)  # present, null
    assert not exercised(FAULTS["generate.prompt_token_ids:wrong-value"], seen)  # null
    assert not exercised(FAULTS["generate.prompt_token_ids[]:wrong-type"], seen)  # no items
    assert not exercised(FAULTS["generate.choices[].stop_reason:wrong-value"], seen)
    assert exercised(FAULTS["generate.choices[].text:add"], seen)


def _upstream(cancelled: threading.Event) -> Starlette:
    """A fixed server: odd JSON bytes, an SSE stream, and an endless one that notes its end."""

    async def generate(request: Request) -> Response:
        data = await request.json()
        if data.get("endless"):

            async def endless() -> AsyncIterator[bytes]:
                try:
                    while True:
                        yield b'data: {"choices": [{"token_ids": [1]}]}\n\n'
                        await anyio.sleep(0.02)
                finally:
                    cancelled.set()

            return StreamingResponse(endless(), media_type="text/event-stream")
        if data.get("stream"):

            async def events() -> AsyncIterator[bytes]:
                for event in SSE_BODY:
                    yield event

            return StreamingResponse(events(), media_type="text/event-stream")
        status = 400 if data.get("bad") else 200
        return Response(JSON_BODY, status, {"x-custom": "kept"}, media_type="application/json")

    return Starlette(routes=[Route(GENERATE, generate, methods=["POST"])])


@pytest.fixture
def upstream() -> Iterator[tuple[str, threading.Event]]:
    cancelled = threading.Event()
    with serve(_upstream(cancelled)) as url:
        yield url, cancelled


def test_a_clean_proxy_passes_answers_through_byte_for_byte(
    upstream: tuple[str, threading.Event],
) -> None:
    url, _ = upstream
    with proxied(url) as (proxy, app):
        for body in ({}, {"bad": True}, {"stream": True}):
            direct = httpx.post(url + GENERATE, json=body)
            got = httpx.post(proxy + GENERATE, json=body)
            assert (got.status_code, got.content) == (direct.status_code, direct.content)
            assert got.headers.get("x-custom") == direct.headers.get("x-custom")
            assert got.headers["content-type"] == direct.headers["content-type"]
    assert app.applied == 0


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("stream:done:drop", b"".join(SSE_BODY[:2])),
        ("stream:events:merged", SSE_BODY[0][:-1] + b"".join(SSE_BODY[1:])),
        (
            "stream:event:non-json",
            SSE_BODY[0] + b"data: {this is not json\n\n" + b"".join(SSE_BODY[1:]),
        ),
        (
            "stream.usage-chunk.choices:null",
            SSE_BODY[0] + b'data: {"choices":null}\n\n' + SSE_BODY[2],
        ),
    ],
)
def test_stream_faults_rewrite_only_their_events(
    upstream: tuple[str, threading.Event], name: str, expected: bytes
) -> None:
    url, _ = upstream
    with proxied(url, FAULTS[name]) as (proxy, app):
        assert httpx.post(proxy + GENERATE, json={"stream": True}).content == expected
        assert httpx.post(proxy + GENERATE, json={}).content == JSON_BODY  # not a stream
    assert app.applied == 1


@pytest.mark.parametrize(
    ("name", "status", "ctype"),
    [
        ("generate:status=500", 500, "application/json"),
        ("generate:content-type=text/plain", 200, "text/plain"),
        ("stream:content-type=application/json", 200, "application/json"),
    ],
)
def test_status_and_content_type_faults(
    upstream: tuple[str, threading.Event], name: str, status: int, ctype: str
) -> None:
    url, _ = upstream
    stream = name.startswith("stream")
    with proxied(url, FAULTS[name]) as (proxy, _):
        got = httpx.post(proxy + GENERATE, json={"stream": stream})
    assert (got.status_code, got.headers["content-type"]) == (status, ctype)


def test_the_proxy_streams_without_buffering() -> None:
    """A 40-token stream at 25 ms a token: its first event comes long before its end, also
    when the proxy parses every event (a stream fault on)."""
    body = {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 40}, "stream": True}
    fault = FAULTS["stream.chunk.choices[].token_ids[]:wrong-value"]
    with running_server(["--enable-scale-out", "--mock-itl-ms", "25"]) as up:
        for applied in (None, fault):
            with (
                proxied(up, applied) as (proxy, _),
                httpx.stream("POST", proxy + GENERATE, json=body) as r,
            ):
                started = time.monotonic()
                chunks = iter(r.iter_raw())
                assert b"data: " in next(chunks)
                first = time.monotonic() - started
                rest = b"".join(chunks)
                total = time.monotonic() - started
            assert rest.endswith(b"data: [DONE]\n\n")
            assert first < total / 3, (first, total)


def test_a_client_disconnect_closes_the_upstream_stream(
    upstream: tuple[str, threading.Event],
) -> None:
    url, cancelled = upstream
    with proxied(url) as (proxy, _):
        with httpx.stream("POST", proxy + GENERATE, json={"endless": True}) as r:
            next(r.iter_raw())
        assert cancelled.wait(5), "the upstream stream outlived its client"


def test_fault_is_data() -> None:
    fault = FAULTS["generate.choices[].token_ids:drop"]
    assert fault == Fault(fault.name, "generate", ("choices", "[]", "token_ids"), "drop")
