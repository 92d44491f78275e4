"""Abort, disconnect, capacity queueing and weight-version spans, on a real loopback server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mock_server.harness.testing import asgi_client, running_server
from openapi import schema_validator

pytestmark = pytest.mark.anyio
GEN = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
DEV = {"VLLM_SERVER_DEV_MODE": "1"}
LONG = {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 2000, "ignore_eos": True}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running_server(
        ["--enable-scale-out", "--mock-itl-ms", "2", "--max-num-seqs", "2"], DEV
    ) as url:
        yield url


async def wait_stats(client: httpx.AsyncClient, key: str, value: int) -> dict[str, Any]:
    for _ in range(200):
        stats = (await client.get("/mock/stats")).json()
        if stats[key] == value:
            return stats
        await asyncio.sleep(0.01)
    raise AssertionError(f"{key} never reached {value}: {stats}")


async def test_abort_non_stream_returns_partial(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as client:
        task = asyncio.create_task(client.post(GEN, json=LONG, headers={"X-Request-Id": "a1"}))
        await asyncio.sleep(0.1)
        r = await client.post(ABORT, json={"request_ids": ["generate-tokens-a1"]})
        assert r.status_code == 200 and r.content == b""
        data = (await task).json()
    choice = data["choices"][0]
    assert choice["finish_reason"] == "abort" and choice["stop_reason"] is None
    assert 0 < len(choice["token_ids"]) < 2000
    assert choice["weight_versions"][-1]["end"] == len(choice["token_ids"])


async def test_abort_stream_terminal_chunk(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as client:
        req = {**LONG, "stream": True, "request_id": "s1"}
        async with client.stream("POST", GEN, json=req) as resp:
            lines = resp.aiter_lines()
            first = await anext(lines)
            assert first.startswith("data: ")
            await client.post(ABORT, json={"request_ids": "generate-tokens-s1"})
            rest = [line async for line in lines if line]
    assert rest[-1] == "data: [DONE]"
    last = json.loads(rest[-2][6:])
    schema_validator("GenerateStreamPayload").validate(last)
    choice = last["choices"][0]
    assert choice["finish_reason"] == "abort" and choice["token_ids"] == []
    assert choice["weight_versions"][0]["start"] == 0


async def test_unknown_ids_and_missing(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as client:
        assert (await client.post(ABORT, json={"request_ids": ["nope"]})).status_code == 200
        assert (await client.post(ABORT, json={"request_ids": []})).status_code == 200
        r = await client.post(ABORT, json={})
        assert r.status_code == 400
        assert r.json()["error"]["message"] == "Missing 'request_ids' in request body"
        r = await client.post(ABORT, content=b"{bad", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("JSON decode error")


async def test_disconnect_aborts(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as client:
        await wait_stats(client, "in_flight", 0)
        before = (await client.get("/mock/stats")).json()["aborted"]
        async with client.stream("POST", GEN, json={**LONG, "stream": True}) as resp:
            await anext(resp.aiter_lines())
        stats = await wait_stats(client, "in_flight", 0)
        assert stats["aborted"] == before + 1


async def test_capacity_queues_and_abort_while_queued(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as client:
        fillers = [
            asyncio.create_task(client.post(GEN, json=LONG, headers={"X-Request-Id": f"f{i}"}))
            for i in range(2)
        ]
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(client.post(GEN, json=LONG, headers={"X-Request-Id": "q"}))
        await wait_stats(client, "queued", 1)
        await client.post(ABORT, json={"request_ids": ["generate-tokens-q"]})
        data = (await queued).json()
        assert data["choices"][0]["token_ids"] == [] and data["choices"][0]["weight_versions"] == []
        r = await client.post("/abort_requests", json={})  # dev mode: abort everything
        assert r.json()["status"] == "aborted" and r.json()["aborted"] == 2
        for f in fillers:
            assert (await f).json()["choices"][0]["finish_reason"] == "abort"


async def test_weight_version_split_mid_generation(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as client:
        assert (await client.get("/weight_info")).json() == {"weight_version": "default"}
        req = {"token_ids": [1, 2], "sampling_params": {"max_tokens": 60, "ignore_eos": True}}
        task = asyncio.create_task(client.post(GEN, json=req))
        await asyncio.sleep(0.05)
        r = await client.post("/update_weight_version", json={"new_version": "v8"})
        assert r.json() == {"success": True, "new_version": "v8"}
        spans = (await task).json()["choices"][0]["weight_versions"]
        await client.post("/finish_weight_update", json={"weight_version": "default"})
    assert [s["version"] for s in spans] == ["default", "v8"]
    assert spans[0]["start"] == 0 and spans[0]["end"] == spans[1]["start"] and spans[1]["end"] == 60


async def test_abort_after_tokens_header() -> None:
    async with asgi_client(["--enable-scale-out"]) as client:
        r = await client.post(GEN, json=LONG, headers={"X-Mock-Abort-After-Tokens": "7"})
        choice = r.json()["choices"][0]
        assert choice["finish_reason"] == "abort" and len(choice["token_ids"]) == 7
        r = await client.post(GEN, json=LONG, headers={"X-Mock-Abort-After-Tokens": "0"})
        assert r.json()["choices"][0]["weight_versions"] == []


async def test_gating_and_paths() -> None:
    async with asgi_client([]) as client:
        for path in (GEN, ABORT, "/v1/completions/render", "/v1/chat/completions/derender"):
            r = await client.post(path, json={"token_ids": []})
            assert r.status_code == 403
            schema_validator("ScaleOutDisabledError").validate(r.json())
        assert (await client.post("/abort_requests", json={"request_ids": []})).status_code == 404
    async with asgi_client(["--enable-scale-out"]) as client:
        assert (await client.post("/abort_requests", json={"request_ids": []})).status_code == 404
    async with asgi_client(["--tokens-only", "--api-key", "k"]) as client:
        assert (
            await client.post("/abort_requests", json={"request_ids": ["x"]})
        ).status_code == 200
        r = await client.post(ABORT, json={"request_ids": ["x"]})
        assert r.status_code == 401 and r.json() == {"error": "Unauthorized"}
        assert (await client.get("/health")).status_code == 200
        ok = await client.post(
            ABORT, json={"request_ids": ["x"]}, headers={"Authorization": "bearer k"}
        )
        assert ok.status_code == 200
