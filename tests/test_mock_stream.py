"""Streamed generate: vLLM's exact SSE framing and chunk rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from httpx_sse import aconnect_sse

from mock_server.harness.testing import asgi_client
from openapi import schema_validator

pytestmark = pytest.mark.anyio
URL = "/inference/v1/generate"
SO = ["--enable-scale-out"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def stream(
    argv: list[str], req: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[bytes, list[Any]]:
    """Raw bytes and the parsed events (the final "[DONE]" kept as a string)."""
    async with asgi_client(argv) as client:
        raw = (await client.post(URL, json={**req, "stream": True}, headers=headers or {})).content
        events: list[Any] = []
        async with aconnect_sse(
            client, "POST", URL, json={**req, "stream": True}, headers=headers or {}
        ) as source:
            assert source.response.headers["content-type"] == "text/event-stream; charset=utf-8"
            async for sse in source.aiter_sse():
                events.append(sse.data if sse.data == "[DONE]" else json.loads(sse.data))
    for ev in events[:-1]:
        schema_validator("GenerateStreamPayload").validate(ev)
    return raw, events


async def test_framing_and_chunks() -> None:
    req = {
        "token_ids": [1, 2, 3],
        "sampling_params": {"max_tokens": 5, "temperature": 0, "logprobs": 1},
    }
    raw, events = await stream(SO, req)
    assert raw.endswith(b"data: [DONE]\n\n")
    parts = raw.split(b"\n\n")
    assert parts[-1] == b"" and all(p.startswith(b"data: ") for p in parts[:-1])
    assert b": " not in parts[0][6:]  # compact JSON
    chunks = events[:-1]
    assert events[-1] == "[DONE]" and len(chunks) == 5
    for chunk in chunks[:-1]:
        assert list(chunk) == ["request_id", "usage", "output_mode", "choices"]
        (choice,) = chunk["choices"]
        assert choice["finish_reason"] is None and choice["weight_versions"] is None
        assert len(choice["token_ids"]) == 1 and len(choice["logprobs"]["content"]) == 1
    last = chunks[-1]["choices"][0]
    assert last["finish_reason"] == "length"
    assert last["weight_versions"] == [{"version": "default", "start": 0, "end": 5}]
    async with asgi_client(SO) as client:
        full = (await client.post(URL, json=req)).json()
    assert [c["choices"][0]["token_ids"][0] for c in chunks] == full["choices"][0]["token_ids"]


async def test_usage_chunks() -> None:
    req = {
        "token_ids": [1, 2, 3],
        "stream_options": {"include_usage": True},
        "sampling_params": {"max_tokens": 3, "ignore_eos": True},
    }
    _, events = await stream(SO, req)
    usage = events[-2]
    assert usage["choices"] == [] and usage["usage"] == {
        "prompt_tokens": 3,
        "total_tokens": 6,
        "completion_tokens": 3,
    }
    schema_validator("GenerateUsageChunk").validate(usage)
    req["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    _, events = await stream(SO, req)
    assert [e["usage"]["completion_tokens"] for e in events[:-2]] == [1, 2, 3]
    assert events[0]["usage"]["prompt_tokens_details"] is None


async def test_n2_interleaved_and_prompt_ids_first_chunk_only() -> None:
    req = {
        "token_ids": [1, 2, 3],
        "return_token_ids": True,
        "sampling_params": {"max_tokens": 3, "n": 2, "ignore_eos": True},
    }
    _, events = await stream(SO, req)
    chunks = events[:-1]
    assert chunks[0]["prompt_token_ids"] == [1, 2, 3]
    assert all("prompt_token_ids" not in c for c in chunks[1:])
    assert all(len(c["choices"]) == 1 for c in chunks)
    finals = [c["choices"][0] for c in chunks if c["choices"][0]["finish_reason"]]
    assert sorted(f["index"] for f in finals) == [0, 1]


async def test_engine_side_errors_are_events() -> None:
    req = {"token_ids": [1], "sampling_params": {"logprobs": 21}}
    raw, events = await stream(SO, req)
    assert len(events) == 2 and events[1] == "[DONE]"
    schema_validator("StreamErrorEvent").validate(events[0])
    assert raw.startswith(b'data: {"error": {"message": ')  # json.dumps spacing, as vLLM
    _, events = await stream(
        SO, {"token_ids": [1], "sampling_params": {}}, {"X-data-parallel-rank": "3"}
    )
    assert "out of range" in events[0]["error"]["message"]
    async with asgi_client(SO) as client:  # schema errors stay HTTP 400
        r = await client.post(URL, json={"token_ids": [], "stream": True, "sampling_params": {}})
    assert r.status_code == 400


async def test_stop_token_stream() -> None:
    req = {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 6, "seed": 5}}
    async with asgi_client(SO) as client:
        ids = (await client.post(URL, json=req)).json()["choices"][0]["token_ids"]
    req["sampling_params"]["stop_token_ids"] = [ids[2]]
    _, events = await stream(SO, req)
    last = events[-2]["choices"][0]
    assert last["finish_reason"] == "stop" and last["stop_reason"] == ids[2]
    assert last["token_ids"] == [ids[2]]
