"""Templated stream chunks are byte for byte the chunks the generic path builds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mock_server.behaviour.config import FastPaths
from mock_server.harness.testing import asgi_client

PROMPT = [151644, 872, 198]
ODD_ID = 'a"token_ids":[]\\"é\u2028'.encode()  # quotes, the key itself, escapes, non-ASCII


def body(**params: Any) -> dict[str, Any]:
    return {"token_ids": PROMPT, "sampling_params": {"max_tokens": 12, **params}, "stream": True}


CASES: list[tuple[list[str], dict[str, Any], dict[str, Any]]] = [
    ([], body(seed=1), {}),
    ([], body(seed=2, n=3), {}),
    ([], body(seed=3, ignore_eos=True), {"X-Request-Id": ODD_ID}),
    ([], body(), {}),  # unseeded: the server's own generator, the same for a fresh server
    ([], body(seed=9, stop=["a"], stop_token_ids=[198], min_tokens=4), {}),  # 4+ chunks
    ([], {**body(seed=5), "return_token_ids": True, "stream_options": {"include_usage": True}}, {}),
    ([], body(seed=6, max_tokens=40), {"X-Mock-Abort-After-Tokens": "7"}),
    (["--enable-return-routed-experts", "--served-model-name", "m\u00e9"], body(seed=7), {}),
    (["--mock-vocab-size", "2048"], {**body(seed=4), "token_ids": [2046, 10, 11]}, {}),
]


async def _stream(
    argv: list[str],
    payload: dict[str, Any],
    headers: dict[str, Any],
    templates: bool = True,
) -> bytes:
    fast = FastPaths(templates=templates)
    async with asgi_client(["--enable-scale-out", *argv], fast=fast) as client:
        headers = {"X-Request-Id": "fixed", **headers}  # otherwise a random id
        response = await client.post("/inference/v1/generate", json=payload, headers=headers)
        assert response.status_code == 200
        return response.content


@pytest.mark.parametrize(("argv", "payload", "headers"), CASES)
def test_templated_chunks_equal_built_ones(
    argv: list[str], payload: dict[str, Any], headers: dict[str, Any]
) -> None:
    templated = asyncio.run(_stream(argv, payload, headers))
    built = asyncio.run(_stream(argv, payload, headers, templates=False))
    assert templated.count(b"\n\n") > 3
    assert templated == built
