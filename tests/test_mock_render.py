"""Render -> generate -> derender on the real paths, consistent with each other."""

from __future__ import annotations

import pytest

from mock_server.harness.testing import asgi_client
from openapi import schema_validator

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_pipeline_roundtrip() -> None:
    async with asgi_client(["--enable-scale-out"]) as c:
        r = await c.post(
            "/v1/chat/completions/render",
            json={
                "messages": [{"role": "user", "content": "hi there"}],
                "max_tokens": 6,
                "temperature": 0,
            },
        )
        assert r.status_code == 200
        rendered = r.json()
        schema_validator("GenerateRequest").validate(rendered)
        assert rendered["token_ids"][:3] == [151644, 872, 198]
        gen = (await c.post("/inference/v1/generate", json=rendered)).json()
        assert len(gen["choices"][0]["token_ids"]) == 6
        d = await c.post("/v1/chat/completions/derender", json={"generate_response": gen})
        assert d.status_code == 200 and d.json()["id"] == gen["request_id"]
        schema_validator("ChatCompletionResponse").validate(d.json())
        r = await c.post(
            "/v1/completions/render", json={"prompt": "def hello(", "max_tokens": 3, "logprobs": 1}
        )
        (req,) = r.json()
        gen = (await c.post("/inference/v1/generate", json=req)).json()
        d = await c.post("/v1/completions/derender", json={"generate_responses": [gen]})
        schema_validator("CompletionResponse").validate(d.json())
        text = d.json()["choices"][0]["text"]
        assert text == "".join(d.json()["choices"][0]["logprobs"]["tokens"])
        text_resp = (
            await c.post("/inference/v1/generate", json={**req, "output_mode": "text"})
        ).json()
        bad = await c.post("/v1/completions/derender", json={"generate_responses": [text_resp]})
        assert bad.status_code == 400 and "literal_error" in bad.json()["error"]["message"]
        empty = await c.post("/v1/completions/derender", json={"generate_responses": []})
        assert empty.status_code == 400


async def test_stream_derender_sequence() -> None:
    async with asgi_client(["--enable-scale-out"]) as c:
        gen = await c.post(
            "/inference/v1/generate",
            json={
                "token_ids": [1, 2],
                "stream": True,
                "sampling_params": {"max_tokens": 8, "seed": 3, "ignore_eos": True},
            },
        )
        import json

        chunks = [json.loads(x[6:]) for x in gen.text.split("\n\n") if x.startswith("data: {")]
        state, text = None, ""
        for chunk in chunks:
            d = await c.post(
                "/v1/completions/derender",
                json={"stream": True, "generate_chunk": chunk, "stream_state": state},
            )
            schema_validator("DerenderStreamResponse").validate(d.json())
            state = d.json()["stream_state"]
            text += d.json()["chunk"]["choices"][0]["text"]
        full = await c.post(
            "/inference/v1/generate",
            json={
                "token_ids": [1, 2],
                "output_mode": "text",
                "sampling_params": {"max_tokens": 8, "seed": 3, "ignore_eos": True},
            },
        )
        assert text == full.json()["choices"][0]["text"]


async def test_tokens_only_render() -> None:
    async with asgi_client(["--tokens-only"]) as c:
        r = await c.post("/v1/completions/render", json={"prompt": "hi"})
        assert r.status_code == 400 and "Tokenizer not available" in r.json()["error"]["message"]
        r = await c.post("/v1/completions/render", json={"prompt": [5, 6], "max_tokens": 2})
        assert r.status_code == 200 and r.json()[0]["token_ids"] == [5, 6]


async def test_sampling_params_in_vllm_struct_order() -> None:
    """msgspec encodes SamplingParams in field order: `n` first, `seed` after `min_p`."""
    async with asgi_client(["--enable-scale-out", "--mock-vocab-size", "2048"]) as c:
        r = await c.post(
            "/v1/completions/render",
            json={"prompt": [1, 2, 3], "n": 2, "seed": 7, "max_tokens": 4, "top_k": 5},
        )
        assert r.status_code == 200
        keys = list(r.json()[0]["sampling_params"])
        assert keys[:10] == [
            "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature",
            "top_p", "top_k", "min_p", "seed", "stop",
        ]  # fmt: skip
        assert keys[-4:] == ["output_kind", "skip_clone", "bad_words", "skip_reading_prefix_cache"]


async def test_models_has_vllm_permission_object() -> None:
    async with asgi_client([]) as c:
        (card,) = (await c.get("/v1/models")).json()["data"]
        (permission,) = card["permission"]
        assert permission["object"] == "model_permission"
        assert permission["id"].startswith("modelperm-") and len(permission["id"]) == 26
