"""Derender takes what vLLM 0.32's input models take, with vLLM's defaults and its 400s.

Found by fuzzing a live vLLM 0.32: its derender inputs are lax (only `choices` and each
choice's `index` are required), while the spec used to reuse generate's strict output schemas.
The answers recorded below are what the live server sent for the same bodies (curl, tiny Qwen3
model); the mock must match their structure (keys, order, types, nulls), except for the
`stream_state` (DIFFERENCES row 14: opaque to clients).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from conformance.diff.json_shape import compare_json
from conformance.fuzz.sanitize import accept_derender
from conformance.fuzz.settings import ServerFacts
from mock_server.harness.testing import asgi_client
from openapi import schema_validator

pytestmark = pytest.mark.anyio
SCALE_OUT = ["--enable-scale-out", "--mock-vocab-size", "2048"]
CMPL, CHAT = "/v1/completions/derender", "/v1/chat/completions/derender"
MINIMAL_STREAM = {"stream": True, "generate_chunk": {"choices": [{"index": 0}]}}
MINIMAL_CMPL = {"generate_responses": [{"choices": [{"index": 0, "token_ids": [3]}]}]}
MINIMAL_CHAT = {"generate_response": {"choices": [{"index": 0, "token_ids": [3]}]}}
USAGE = {
    "prompt_tokens": 0,
    "total_tokens": 1,
    "completion_tokens": 1,
    "prompt_tokens_details": None,
    "completion_tokens_details": None,
}
VLLM_CMPL = {
    "id": "80704eb2fa828ab3",
    "object": "text_completion",
    "created": 1796237418,
    "model": "/work/live-cache/models/tiny-qwen3-27c3628e607f1dfe",
    "choices": [
        {
            "index": 0,
            "text": "!",
            "logprobs": None,
            "finish_reason": "stop",
            "stop_reason": None,
            "token_ids": None,
            "prompt_logprobs": None,
            "prompt_token_ids": None,
            "routed_experts": None,
        }
    ],
    "service_tier": None,
    "system_fingerprint": None,
    "usage": USAGE,
    "kv_transfer_params": None,
    "ec_transfer_params": None,
    "metrics": None,
}
VLLM_CHAT = {
    "id": "93285631093edf51",
    "object": "chat.completion",
    "created": 1796237418,
    "model": "/work/live-cache/models/tiny-qwen3-27c3628e607f1dfe",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "!",
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "reasoning": None,
            },
            "logprobs": None,
            "finish_reason": "stop",
            "stop_reason": None,
            "token_ids": None,
            "routed_experts": None,
        }
    ],
    "service_tier": None,
    "system_fingerprint": None,
    "usage": USAGE,
    "prompt_logprobs": None,
    "prompt_token_ids": None,
    "prompt_text": None,
    "kv_transfer_params": None,
    "ec_transfer_params": None,
    "metrics": None,
}
VLLM_CMPL_CHUNK = {
    "id": "bdc6beed471efafd",
    "object": "text_completion",
    "created": 1796237418,
    "model": "/work/live-cache/models/tiny-qwen3-27c3628e607f1dfe",
    "choices": [
        {
            "index": 0,
            "text": "",
            "logprobs": None,
            "finish_reason": None,
            "stop_reason": None,
            "prompt_token_ids": None,
            "token_ids": None,
        }
    ],
    "usage": None,
    "system_fingerprint": None,
    "metrics": None,
}
VLLM_CHAT_CHUNK = {
    "id": "bbd68191dc94d054",
    "object": "chat.completion.chunk",
    "created": 1796237418,
    "model": "/work/live-cache/models/tiny-qwen3-27c3628e607f1dfe",
    "choices": [
        {
            "index": 0,
            "delta": {"role": "assistant", "content": None, "reasoning": None},
            "logprobs": None,
            "finish_reason": None,
            "stop_reason": None,
            "token_ids": None,
        }
    ],
    "usage": None,
    "system_fingerprint": None,
    "prompt_token_ids": None,
    "prompt_text": None,
    "metrics": None,
}
RANDOM_ID = re.compile(r"^[0-9a-f]{16}$")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def assert_400(r: Any, message: str, err_type: str = "BadRequestError", param: Any = None) -> None:
    assert r.status_code == 400, r.text
    schema_validator("ErrorResponse").validate(r.json())
    error = r.json()["error"]
    assert message in error["message"], error["message"]
    assert (error["type"], error["param"]) == (err_type, param), error


# ---- the spec --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "schema, body",
    [
        ("DerenderCompletionRequest", MINIMAL_STREAM),
        ("DerenderChatRequest", MINIMAL_STREAM),
        ("DerenderCompletionRequest", MINIMAL_CMPL),
        ("DerenderChatRequest", MINIMAL_CHAT),
        ("DerenderCompletionRequest", {"generate_responses": [{"choices": [{"index": -3}]}]}),
        ("DerenderChatRequest", {**MINIMAL_CHAT, "chat_request": {"messages": [{"role": "x"}]}}),
        ("DerenderChatRequest", {**MINIMAL_CHAT, "chat_request": None, "model": None}),
        ("DerenderCompletionRequest", {**MINIMAL_CMPL, "completion_request": {"prompt": [1]}}),
        (
            "DerenderCompletionRequest",
            {"stream": True, "generate_chunk": {"choices": [{"index": 0, "token_ids": [-1]}]}},
        ),
        ("DerenderChatRequest", {"stream": True, "generate_chunk": {"choices": []}}),
        (
            "DerenderCompletionRequest",
            {**MINIMAL_CMPL, "prompt_tokens": [8, 9], "prompt_token_ids": [None]},
        ),
    ],
)
def test_spec_accepts_what_vllm_accepts(schema: str, body: dict[str, Any]) -> None:
    schema_validator(schema).validate(body)


@pytest.mark.parametrize(
    "schema, body",
    [
        ("DerenderChatRequest", {**MINIMAL_CHAT, "chat_request": {}}),
        ("DerenderChatRequest", {**MINIMAL_CHAT, "chat_request": {"messages": [{}]}}),
        ("DerenderCompletionRequest", {**MINIMAL_CMPL, "completion_request": {}}),
        ("DerenderCompletionRequest", {**MINIMAL_CMPL, "completion_request": {"prompt": ""}}),
        ("DerenderCompletionRequest", {"generate_responses": []}),
        ("DerenderChatRequest", {"generate_response": {"choices": [{"token_ids": [3]}]}}),
        (
            "DerenderChatRequest",
            {"generate_response": {"choices": [{"index": 0}], "request_id": None}},
        ),
        (
            "DerenderCompletionRequest",
            {"generate_responses": [{"choices": [{"index": 0, "token_ids": [-1]}]}]},
        ),
        (
            "DerenderChatRequest",
            {"generate_response": {"output_mode": "text", "choices": [{"index": 0}]}},
        ),
        ("DerenderChatRequest", {**MINIMAL_STREAM, "stream_state": {"prefix_offset": -1}}),
    ],
)
def test_spec_rejects_what_vllm_rejects(schema: str, body: dict[str, Any]) -> None:
    assert list(schema_validator(schema).iter_errors(body))


# ---- the mock: minimal inputs take vLLM's defaults ---------------------------------------------
@pytest.mark.parametrize(
    "path, body, reference",
    [
        (CMPL, MINIMAL_CMPL, VLLM_CMPL),
        (CHAT, MINIMAL_CHAT, VLLM_CHAT),
        (CMPL, MINIMAL_STREAM, VLLM_CMPL_CHUNK),
        (CHAT, MINIMAL_STREAM, VLLM_CHAT_CHUNK),
    ],
)
async def test_minimal_inputs_answered_as_vllm_answers_them(
    path: str, body: dict[str, Any], reference: dict[str, Any]
) -> None:
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post(path, json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    if body.get("stream"):
        schema_validator("DerenderStreamResponse").validate(answer)
        answer = answer["chunk"]
    assert compare_json(reference, answer) == []
    assert RANDOM_ID.match(answer["id"]), answer["id"]  # vLLM's random_uuid(): 16 hex digits


async def test_usage_counts_prompt_tokens_not_the_generate_usage() -> None:
    resp = {
        "request_id": "generate-tokens-x",
        "usage": {"prompt_tokens": 7, "total_tokens": 9, "completion_tokens": 2},
        "choices": [{"index": 5, "token_ids": [3, 5]}],
    }
    async with asgi_client(SCALE_OUT) as c:
        chat = (await c.post(CHAT, json={"generate_response": resp, "prompt_tokens": 4})).json()
        cmpl = (await c.post(CMPL, json={"generate_responses": [resp, resp]})).json()
    assert chat["id"] == "generate-tokens-x" and chat["choices"][0]["index"] == 5
    assert (chat["usage"]["prompt_tokens"], chat["usage"]["total_tokens"]) == (4, 6)
    assert [ch["index"] for ch in cmpl["choices"]] == [0, 1]  # completions renumbers
    assert (cmpl["usage"]["prompt_tokens"], cmpl["usage"]["completion_tokens"]) == (0, 4)


async def test_metrics_and_transfer_params_are_echoed() -> None:
    resp = {
        "metrics": {"x": 1, "queue_time_ms": 2},
        "kv_transfer_params": {"a": 1},
        "prompt_logprobs": [None, {"5": {"logprob": -1}}],
        "choices": [{"index": 0, "token_ids": [3]}],
    }
    async with asgi_client(SCALE_OUT) as c:
        chat = (await c.post(CHAT, json={"generate_response": resp})).json()
    assert chat["kv_transfer_params"] == {"a": 1}
    assert chat["metrics"]["queue_time_ms"] == 2.0 and chat["metrics"]["x"] == 1
    assert chat["metrics"]["speculative_decoding"] is None
    assert chat["prompt_logprobs"] == [
        None,
        {"5": {"logprob": -1.0, "rank": None, "decoded_token": None}},
    ]


# ---- the mock: vLLM's 400s after validation -----------------------------------------------------
@pytest.mark.parametrize(
    "key, given",
    [("prompt_tokens", [8]), ("prompt_token_ids", [[1], None, [2]])],
)
async def test_length_mismatch_is_a_body_validation_error(key: str, given: list[Any]) -> None:
    two = {"generate_responses": MINIMAL_CMPL["generate_responses"] * 2, key: given}
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post(CMPL, json=two)
    text = f"{key} length ({len(given)}) must equal generate_responses length (2)"
    assert_400(r, f"'loc': 'body', 'msg': 'Value error, {text}'", "Bad Request", "body")


async def test_chat_request_without_messages_is_rejected() -> None:
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post(CHAT, json={**MINIMAL_CHAT, "chat_request": {}})
        ok = await c.post(CHAT, json={**MINIMAL_CHAT, "chat_request": {"messages": []}})
        null = await c.post(CHAT, json={**MINIMAL_CHAT, "chat_request": {"messages": None}})
    param = "body.chat_request.messages"
    assert_400(r, f"'type': 'missing', 'loc': '{param}'", "Bad Request", param)
    assert ok.status_code == 200, ok.text
    assert_400(null, "'NoneType' object is not iterable")


@pytest.mark.parametrize(
    "path, body, message, param",
    [
        (
            CMPL,
            {**MINIMAL_CMPL, "completion_request": {}},
            "non-empty. (parameter=prompt)",
            "prompt",
        ),
        (CMPL, {"generate_responses": [{"choices": [{"index": 0}]}]}, "has empty or null", None),
        (CHAT, {"generate_response": {"choices": [{"index": 2}]}}, "choice 2 has empty", None),
        (
            CHAT,
            {"stream": True, "generate_chunk": {"choices": [{"index": 0}, {"index": 1}]}},
            "expects at most one choice per chunk (got 2).",
            None,
        ),
        (
            CMPL,
            {"stream": True, "generate_chunk": {"choices": [{"index": 0}, {"index": 1}]}},
            "derender_completion_stream expects at most one choice per chunk",
            None,
        ),
        (
            CMPL,
            {
                "generate_responses": [
                    {
                        "choices": [
                            {
                                "index": 0,
                                "token_ids": [3],
                                "logprobs": {"content": [{"token_id": -1, "logprob": -1}]},
                            }
                        ]
                    }
                ]
            },
            "number too small to fit in target type",
            None,
        ),
        (
            CMPL,
            {**MINIMAL_STREAM, "stream_state": {"output_chunk_lens": [1]}},
            "output_chunk_lens must sum to len(output_token_ids)",
            "body.stream_state",
        ),
    ],
)
async def test_vllm_post_validation_errors(
    path: str, body: dict[str, Any], message: str, param: str | None
) -> None:
    err_type = "Bad Request" if param and param.startswith("body") else "BadRequestError"
    async with asgi_client(SCALE_OUT) as c:
        assert_400(await c.post(path, json=body), message, err_type, param)


async def test_unknown_model_is_404() -> None:
    async with asgi_client(SCALE_OUT) as c:
        r = await c.post(CHAT, json={**MINIMAL_CHAT, "model": "zzz"})
    assert r.status_code == 404, r.text
    assert r.json()["error"]["param"] == "model"


# ---- the fuzzer: a positive case is made acceptable -------------------------------------------
async def test_sanitized_fuzz_finding_is_accepted() -> None:
    """The fuzzer's positive case vLLM rejected: two responses, one prompt count, no tokens."""
    resp = {"choices": [{"index": 0, "token_ids": [], "logprobs": None}], "request_id": "r"}
    body: dict[str, Any] = {
        "generate_responses": [resp, dict(resp)],
        "prompt_tokens": [8],
        "prompt_token_ids": [[321, 608, 5000]],
        "completion_request": {"max_tokens": 3},
    }
    accept_derender(body, ServerFacts("scale-out", vocab_size=2048, model="mock-model"), chat=False)
    assert body["prompt_tokens"] == [8, 0] and body["prompt_token_ids"] == [[321, 608, 904], None]
    schema_validator("DerenderCompletionRequest").validate(body)
    chat: dict[str, Any] = {**MINIMAL_STREAM, "chat_request": {"messages": [{}], "n": 2}}
    chat["generate_chunk"] = {"choices": [{"index": 0}, {"index": 1}]}
    accept_derender(chat, ServerFacts("scale-out", vocab_size=2048), chat=True)
    schema_validator("DerenderChatRequest").validate(chat)
    async with asgi_client(SCALE_OUT) as c:
        assert (await c.post(CMPL, json=body)).status_code == 200
        assert (await c.post(CHAT, json=chat)).status_code == 200
