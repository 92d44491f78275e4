"""Bodies that parse as JSON but could not be answered (issue 11, part 4): each is a clear 400
in vLLM's error shape, never a 500, and the server keeps serving. What vLLM 0.32 answered to
the same bytes is in `tests/fixtures/vllm-0.32-issue11/bad_*.json` (DIFFERENCES.md #23-#24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.harness.testing import asgi_client, running_server
from mock_server.wire.jsonbody import MAX_DEPTH
from openapi import schema_validator

pytestmark = pytest.mark.anyio
SO = ["--enable-scale-out"]
GEN = "/inference/v1/generate"
LIVE = Path(__file__).parent / "fixtures" / "vllm-0.32-issue11"
HEAD = b'{"token_ids":[321,608],"sampling_params":{"max_tokens":2}'
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def live(name: str) -> dict[str, Any]:
    return json.loads((LIVE / f"{name}.json").read_text(encoding="utf-8"))["response"]


def assert_400(r: httpx.Response, needle: str) -> dict[str, Any]:
    assert r.status_code == 400, r.text
    body = r.json()
    schema_validator("ErrorResponse").validate(body)
    assert needle in body["error"]["message"], body
    return dict(body["error"])


DEEP = [
    ("unterminated", b"[" * 10_000),
    ("balanced", b"[" * 10_000 + b"]" * 10_000),
    ("in a field", HEAD + b',"x":' + b"[" * 2_000 + b"]" * 2_000 + b"}"),
    ("just past the bound", HEAD + b',"x":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"),
]


@pytest.mark.parametrize("raw", [raw for _, raw in DEEP], ids=[name for name, _ in DEEP])
@pytest.mark.parametrize("path", [GEN, "/v1/completions/render", "/v1/chat/completions/derender"])
async def test_deep_nesting_is_a_400(path: str, raw: bytes) -> None:
    async with asgi_client(SO) as c:
        r = await c.post(path, content=raw, headers=JSON)
        error = assert_400(r, "JSON decode error")
        assert "nested deeper" in error["message"]
        assert (await c.post(GEN, content=HEAD + b"}", headers=JSON)).status_code == 200


async def test_nesting_within_the_bound_is_parsed() -> None:
    depth = MAX_DEPTH - 2
    raw = HEAD + b',"x":' + b"[" * depth + b"]" * depth + b"}"
    async with asgi_client(SO) as c:
        assert (await c.post(GEN, content=raw, headers=JSON)).status_code == 200


@pytest.mark.parametrize("path", ["/inference/v1/abort_requests", "/abort_requests"])
async def test_deep_nesting_on_abort_is_a_400_where_vllm_answers_500(path: str) -> None:
    assert live("bad_nested_abort")["status"] == 500  # the vLLM 0.32 answer, for the record
    argv = ["--tokens-only"] if path == "/abort_requests" else SO
    async with asgi_client(argv) as c:
        r = await c.post(path, content=b"[" * 10_000, headers=JSON)
        assert_400(r, "JSON decode error")


SURROGATES = [
    ("raw bytes in request_id", HEAD + b',"request_id":"a\xed\xa0\x80"}'),
    ("escape in request_id", HEAD + b',"request_id":"a\\ud800"}'),
    ("low escape in an unknown key", HEAD + b',"x\\udc00":1}'),
    ("escape in a stop string", b'{"token_ids":[1],"sampling_params":{"stop":["\\ud800"]}}'),
]


@pytest.mark.parametrize("raw", [r for _, r in SURROGATES], ids=[n for n, _ in SURROGATES])
async def test_a_lone_surrogate_is_a_400(raw: bytes) -> None:
    async with asgi_client(SO) as c:
        r = await c.post(GEN, content=raw, headers=JSON)
    assert r.status_code == 400, r.text
    schema_validator("ErrorResponse").validate(r.json())
    message = r.json()["error"]["message"]
    assert "surrogates not allowed" in message or "Invalid UTF-8" in message


async def test_surrogate_message_is_vllms_own() -> None:
    """vLLM 0.32 answers this 400 itself for a stop string; the mock uses it everywhere."""
    expected = live("bad_surrogate_escape_stop")
    async with asgi_client(SO) as c:
        r = await c.post(GEN, content=SURROGATES[3][1], headers=JSON)
    assert r.json()["error"] == expected["body"]["error"]


async def test_a_streamed_surrogate_is_a_400_not_an_error_event() -> None:
    assert live("bad_surrogate_escape_stream")["status"] == 200  # vLLM: 200 + an error event
    raw = HEAD + b',"stream":true,"request_id":"a\\ud800"}'
    async with asgi_client(SO) as c:
        r = await c.post(GEN, content=raw, headers=JSON)
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/json")


async def test_a_valid_surrogate_pair_is_fine() -> None:
    async with asgi_client(SO) as c:
        r = await c.post(GEN, content=HEAD + b',"request_id":"a\\ud83d\\ude00"}', headers=JSON)
    assert r.status_code == 200
    assert r.json()["request_id"] == "generate-tokens-a\U0001f600"


async def test_a_surrogate_label_never_reaches_a_response() -> None:
    """A weight label is echoed in every later answer: it must be refused when set."""
    env = {"VLLM_SERVER_DEV_MODE": "1"}
    async with asgi_client(SO, env) as c:
        r = await c.post(
            "/update_weight_version", content=b'{"new_version":"\\ud800"}', headers=JSON
        )
        assert r.status_code == 400
        assert (await c.post(GEN, content=HEAD + b"}", headers=JSON)).status_code == 200


@pytest.mark.parametrize(
    "value, capture",
    [
        ("NaN", "bad_temperature_nan"),
        ("Infinity", "bad_temperature_infinity"),
        ("-Infinity", "bad_temperature_neg_infinity"),
    ],
)
async def test_non_finite_temperature_is_vllms_400(value: str, capture: str) -> None:
    raw = b'{"token_ids":[321,608],"sampling_params":{"max_tokens":2,"temperature":%s}}' % (
        value.encode()
    )
    expected = live(capture)
    async with asgi_client(SO) as c:
        r = await c.post(GEN, content=raw, headers=JSON)
    assert r.status_code == expected["status"] == 400
    assert r.json() == expected["body"]


@pytest.mark.parametrize(
    "raw, capture",
    [
        (
            b'{"token_ids":[321,608],"sampling_params":{"max_tokens":2,"top_p":NaN}}',
            "bad_top_p_nan",
        ),
        (b'{"token_ids":[321,NaN],"sampling_params":{"max_tokens":2}}', "bad_nan_in_token_ids"),
        (
            b'{"token_ids":[321,608],"priority":NaN,"sampling_params":{"max_tokens":2}}',
            "bad_priority_nan",
        ),
    ],
)
async def test_nan_elsewhere_is_vllms_400(raw: bytes, capture: str) -> None:
    async with asgi_client(SO) as c:
        r = await c.post(GEN, content=raw, headers=JSON)
    assert r.status_code == 400
    assert r.json() == live(capture)["body"]


async def test_nan_temperature_streamed_is_a_400_as_in_vllm() -> None:
    raw = b'{"token_ids":[1],"stream":true,"sampling_params":{"max_tokens":2,"temperature":NaN}}'
    assert live("bad_temperature_nan_stream")["status"] == 400
    async with asgi_client(SO) as c:
        r = await c.post(GEN, content=raw, headers=JSON)
    assert_400(r, "temperature must be a finite number")


def test_over_a_real_socket_the_server_survives_all_three() -> None:
    """The three reproducers of the issue, one request each, over uvicorn."""
    bodies = [b"[" * 10_000, SURROGATES[0][1], SURROGATES[1][1]]
    bodies.append(b'{"token_ids":[1],"sampling_params":{"max_tokens":2,"temperature":NaN}}')
    with running_server(SO) as url, httpx.Client(base_url=url, timeout=10) as c:
        for raw in bodies:
            r = c.post(GEN, content=raw, headers=JSON)
            assert r.status_code == 400, (raw[:40], r.text)
        assert c.get("/health").status_code == 200
