"""The respx wiring, as a client whose tests already mock HTTP with respx would use it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import respx

from mock_server.harness.respx_routes import add_routes
from mock_server.harness.tito_mock import TitoMock

GENERATE = "http://tito.mock/inference/v1/generate"
BODY = {"token_ids": [151644, 872, 198], "sampling_params": {"max_tokens": 4, "seed": 7}}


def test_tito_paths_get_the_mocks_answers_and_other_routes_stay_yours(
    tito_respx: respx.MockRouter, tito_mock: TitoMock
) -> None:
    tito_respx.get("http://tito.mock/v1/chat/completions").respond(418)
    answer = httpx.post(GENERATE, json=BODY)
    assert answer.status_code == 200
    assert len(answer.json()["choices"][0]["token_ids"]) == 4
    assert httpx.get("http://tito.mock/v1/chat/completions").status_code == 418
    assert tito_mock.stats()["received"] == 1  # answered by the mock, not by a stub


def test_an_async_client_under_respx_streams(tito_respx: respx.MockRouter) -> None:
    async def stream() -> list[dict[str, object]]:
        async with (
            httpx.AsyncClient() as client,
            client.stream("POST", GENERATE, json={**BODY, "stream": True}) as response,
        ):
            return [
                json.loads(line[6:])
                async for line in response.aiter_lines()
                if line.startswith("data: {")
            ]

    chunks = asyncio.run(stream())
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, None, "length"]  # type: ignore[index]


def test_inside_your_own_respx_mock_with_your_base_url(
    tito_mock_factory: Callable[..., TitoMock],
) -> None:
    mock = tito_mock_factory(flags=["--api-key", "k"], itl_ms=5)
    with respx.mock(assert_all_called=False) as router:
        add_routes(router, mock, base_url="http://vllm.internal:8000")
        with httpx.Client(base_url="http://vllm.internal:8000") as client:
            denied = client.post("/inference/v1/generate", json=BODY)
            params = {"max_tokens": 3000, "ignore_eos": True}
            with client.stream(
                "POST",
                "/inference/v1/generate",
                json={**BODY, "stream": True, "sampling_params": params},
                headers={"Authorization": "Bearer k"},
            ) as response:
                first = next(line for line in response.iter_lines() if line.startswith("data: "))
    assert denied.status_code == 401
    assert json.loads(first[6:])["choices"][0]["finish_reason"] is None
    assert mock.stats()["aborted"] == 1  # closing the stream early reached the mock
