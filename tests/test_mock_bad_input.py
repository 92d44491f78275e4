"""Bad input the fuzzer found in the correct mock: a vLLM-shaped 400 (never a 200 echoing it,
never a 500), integer-valued floats accepted as pydantic's lax mode accepts them, and a stream
that fails after its start still ends with data: [DONE]."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mock_server.harness.testing import asgi_client
from openapi import schema_validator

pytestmark = pytest.mark.anyio
SCALE_OUT = ["--enable-scale-out"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def assert_400(r: Any, *needles: str) -> None:
    assert r.status_code == 400, r.text
    schema_validator("ErrorResponse").validate(r.json())
    error = r.json()["error"]
    assert error["code"] == 400
    for needle in needles:
        assert needle in error["message"], error["message"]


def chunk(**choice: Any) -> dict[str, Any]:
    base = {"index": 0, "finish_reason": None, "stop_reason": None, "token_ids": [309]}
    return {
        "request_id": "generate-tokens-x",
        "usage": None,
        "output_mode": "tokens",
        "choices": [{**base, "weight_versions": None, "logprobs": None, **choice}],
    }


def response(**choice: Any) -> dict[str, Any]:
    base = {"index": 0, "finish_reason": "length", "stop_reason": None, "token_ids": [309, 5]}
    return {
        "request_id": "generate-tokens-x",
        "usage": {"prompt_tokens": 2, "total_tokens": 4, "completion_tokens": 2},
        "prompt_logprobs": None,
        "prompt_token_ids": None,
        "output_mode": "tokens",
        "choices": [{**base, "weight_versions": [], "logprobs": None, **choice}],
    }


# ---- 1. render ---------------------------------------------------------------------------
async def test_render_rejects_an_object_model_and_negative_ids() -> None:
    """The fuzzer's case: `model` an object, prompt ids negative -> 200 echoing both."""
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post(
            "/v1/completions/render",
            json={"prompt": [-147719487, -5408683678912037622120448, -42060], "model": {"a": {}}},
        )
        assert_400(r, "validation error", "body.model", "string_type", "negative values")
        assert r.json()["error"]["type"] == "Bad Request"


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"prompt": [1, "x"]}, "body.prompt.1"),
        ({"prompt": {"a": 1}}, "body.prompt"),
        ({"prompt": [[1, -2]]}, "negative values"),
        ({"prompt": [1], "seed": "abc"}, "body.seed"),
        ({"prompt": [1], "stream": "maybe"}, "body.stream"),
        ({"prompt": [1], "temperature": 7}, "temperature must be in [0, 2]"),
        ({"prompt": [1], "cache_salt": ""}, "cache_salt"),
        ({"model": "mock-model"}, "prompt"),
    ],
)
async def test_render_wrong_types_are_400(body: dict[str, Any], needle: str) -> None:
    async with asgi_client(SCALE_OUT) as c:
        assert_400(await c.post("/v1/completions/render", json=body), needle)


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"messages": [{"role": "user", "content": "hi"}], "model": True}, "body.model"),
        ({"messages": [{"role": "user", "content": "hi"}], "cache_salt": True}, "cache_salt"),
        ({"messages": [{"role": 5, "content": "hi"}]}, "body.messages.0.role"),
        ({"messages": [{"role": "user", "content": 5}]}, "body.messages.0.content"),
        ({"messages": "hi"}, "body.messages"),
    ],
)
async def test_chat_render_wrong_types_are_400(body: dict[str, Any], needle: str) -> None:
    async with asgi_client(SCALE_OUT) as c:
        assert_400(await c.post("/v1/chat/completions/render", json=body), needle)


async def test_render_answers_are_valid_generate_requests() -> None:
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post(
            "/v1/completions/render",
            json={"prompt": [[7411.0, 2], [3]], "max_tokens": 4.0, "seed": "12", "top_k": True},
        )
        assert r.status_code == 200, r.text
        schema_validator("RenderCompletionResponse").validate(r.json())
        first = r.json()[0]
        assert first["token_ids"] == [7411, 2] and type(first["token_ids"][0]) is int
        assert first["sampling_params"]["max_tokens"] == 4
        assert first["sampling_params"]["seed"] == 12


# ---- 2. derender -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, body, needle",
    [
        (
            "/v1/chat/completions/derender",
            {"generate_response": {**response(index=None)}},
            "body.generate_response.choices.0.index",
        ),
        (
            "/v1/chat/completions/derender",
            {"generate_response": {**response(), "usage": True, "model": False}},
            "body.generate_response.usage",
        ),
        ("/v1/chat/completions/derender", {"generate_response": []}, "body.generate_response"),
        (
            "/v1/chat/completions/derender",
            {"generate_response": {**response(), "choices": ["x"]}},
            "body.generate_response.choices.0",
        ),
        (
            "/v1/completions/derender",
            {"generate_responses": [response(token_ids="abc")]},
            "body.generate_responses.0.choices.0.token_ids",
        ),
        (
            "/v1/completions/derender",
            {"generate_responses": [5]},
            "body.generate_responses.0",
        ),
        (
            "/v1/completions/derender",
            {"generate_responses": [response()], "prompt_tokens": "8"},
            "body.prompt_tokens",
        ),
        (
            "/v1/completions/derender",
            {"stream": True, "generate_chunk": {**chunk(), "metrics": -1.5}, "prompt_tokens": True},
            "body.prompt_tokens",
        ),
        (
            "/v1/completions/derender",
            {"stream": True, "generate_chunk": chunk(logprobs={"content": "x"})},
            "body.generate_chunk.choices.0.logprobs",
        ),
        (
            "/v1/chat/completions/derender",
            {"stream": True, "generate_chunk": chunk(), "stream_state": []},
            "body.stream_state",
        ),
        (
            "/v1/completions/derender",
            {"stream": True, "generate_chunk": chunk(), "stream_state": {"pending_bytes": "ab"}},
            "body.stream_state.pending_bytes",
        ),
        (
            "/v1/chat/completions/derender",
            {"stream": True, "generate_chunk": chunk(), "prompt_token_ids": [1, "a"]},
            "body.prompt_token_ids.1",
        ),
    ],
)
async def test_derender_validates_nested_fields(
    path: str, body: dict[str, Any], needle: str
) -> None:
    async with asgi_client(SCALE_OUT) as c:
        assert_400(await c.post(path, json=body), needle, "validation error")


async def test_derender_text_response_still_rejected_as_vllm_does() -> None:
    text = {**response(text="):"), "output_mode": "text"}
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post("/v1/completions/derender", json={"generate_responses": [text]})
        assert_400(r, "literal_error", "body.generate_responses.0.output_mode", "'tokens'")
        empty = await c.post("/v1/completions/derender", json={"generate_responses": []})
        assert_400(empty, "generate_responses must not be empty")


# ---- 3. integer-valued floats ------------------------------------------------------------
async def test_integral_floats_are_ints_for_derender() -> None:
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post(
            "/v1/completions/derender",
            json={
                "stream": True,
                "generate_chunk": chunk(index=0.0, token_ids=[7411.0, 309.0]),
                "stream_state": {"pending_bytes": [], "logprob_text_offset": 3.0},
            },
        )
        assert r.status_code == 200, r.text
        schema_validator("DerenderStreamResponse").validate(r.json())
        assert type(r.json()["chunk"]["choices"][0]["index"]) is int
        resp = response(index=0.0, token_ids=[309.0, 5.0])
        r = await c.post("/v1/chat/completions/derender", json={"generate_response": resp})
        assert r.status_code == 200, r.text
        schema_validator("ChatCompletionResponse").validate(r.json())


# ---- 4. generate: ignored fields still validated, streams always end with [DONE] -----------
BASE = {"token_ids": [1, 2], "sampling_params": {"max_tokens": 2}}


@pytest.mark.parametrize(
    "sampling, needle",
    [
        ({"logit_bias": {"": None}}, "body.sampling_params.logit_bias"),
        ({"logit_bias": {"5": "x"}}, "body.sampling_params.logit_bias.5"),
        ({"bad_words": [1]}, "body.sampling_params.bad_words.0"),
        ({"spaces_between_special_tokens": "x"}, "spaces_between_special_tokens"),
        ({"stream_interval": 0}, "stream_interval"),
        ({"bad_words": [""]}, "bad_words cannot contain an empty string"),  # engine-side ids: table
        ({"extra_args": []}, "body.sampling_params.extra_args"),
        ({"temperature": 2.5}, "temperature must be in [0, 2]"),
        ({"seed": 2**64}, "can't serialize ints < -2**63 or > 2**64 - 1"),
        ({"seed": -(2**63) - 1}, "can't serialize ints"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_generate_rejects_invalid_ignored_fields(
    sampling: dict[str, Any], needle: str, stream: bool
) -> None:
    body = {**BASE, "stream": stream, "sampling_params": {"max_tokens": 2, **sampling}}
    async with asgi_client(SCALE_OUT) as c:
        assert_400(await c.post("/inference/v1/generate", json=body), needle)


@pytest.mark.parametrize("seed", [2**63, 2**64 - 1, -(2**63)])
async def test_generate_seed_takes_what_msgpack_encodes(seed: int) -> None:
    """vLLM 0.32 answers 200 for these (live probe): msgpack writes unsigned 64-bit ints too."""
    body = {**BASE, "sampling_params": {"max_tokens": 2, "seed": seed}}
    async with asgi_client(SCALE_OUT) as c:
        assert (await c.post("/inference/v1/generate", json=body)).status_code == 200


async def test_generate_priority_is_a_signed_64_bit_field() -> None:
    body = {**BASE, "priority": 2**63}
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post("/inference/v1/generate", json=body)
    assert_400(r, "Input should be less than or equal to 9223372036854775807")
    assert r.json()["error"]["param"] == "body.priority"


async def test_generate_logit_bias_lax_like_pydantic() -> None:
    body = {**BASE, "sampling_params": {"max_tokens": 2, "logit_bias": {"5": 1, "7": "0.5"}}}
    async with asgi_client(SCALE_OUT) as c:
        assert (await c.post("/inference/v1/generate", json=body)).status_code == 200


async def test_stream_failing_after_start_ends_with_done(monkeypatch: pytest.MonkeyPatch) -> None:
    from mock_server.answers import payloads

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(payloads.Builder, "choice", broken)
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post("/inference/v1/generate", json={**BASE, "stream": True})
        assert r.status_code == 200
        events = [e.removeprefix("data: ") for e in r.text.split("\n\n") if e]
        assert events[-1] == "[DONE]", r.text
        error = json.loads(events[-2])
        schema_validator("StreamErrorEvent").validate(error)
        assert error["error"]["code"] == 500
        stats = (await c.get("/mock/stats")).json()
        assert stats["in_flight"] == 0


# ---- 5. field checks before the model lookup ---------------------------------------------
async def test_invalid_features_with_unknown_model_is_400_not_404() -> None:
    body = {**BASE, "model": "no-such-model", "features": {"mm_hashes": {"image": [5]}}}
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post("/inference/v1/generate", json=body)
        assert_400(r, "body.features.mm_hashes.image.0")
        body = {**BASE, "model": "no-such-model", "features": {"mm_placeholders": {"i": [{}]}}}
        assert_400(await c.post("/inference/v1/generate", json=body), "offset")
        unknown = await c.post("/inference/v1/generate", json={**BASE, "model": "no-such-model"})
        assert unknown.status_code == 404


@pytest.mark.parametrize(
    "key, status",
    [("spaces_between_special_tokens", 400), ("output_kind", 400), ("stream_interval", 200)],
)
async def test_null_for_a_plain_typed_sampling_field_is_a_400(key: str, status: int) -> None:
    """`bool` / `RequestOutputKind` fields reject null like `skip_special_tokens` does (vLLM
    0.32, vllm-cpu.md); `int | None` ones take it. Found by fuzzing the mock in CI."""
    body = {**BASE, "sampling_params": {"max_tokens": 2, key: None}}
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post("/inference/v1/generate", json=body)
    assert r.status_code == status, r.text
    if status == 400:
        assert r.json()["error"]["param"] == f"body.sampling_params.{key}"
