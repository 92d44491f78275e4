"""The spec itself: a valid OpenAPI 3.2 document, shipped in the package, readable by tools."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openapi_spec_validator.validation import OpenAPIV32SpecValidator

import openapi
from tests.captures import FIXTURES

OPERATIONS = 13
REQUIRED_SCHEMAS = [
    "GenerateRequest",
    "SamplingParams",
    "StreamOptions",
    "GenerateResponse",
    "GenerateTokensResponse",
    "GenerateTextResponse",
    "GenerateTokensChoice",
    "GenerateTextChoice",
    "GenerateLogProbs",
    "ChatCompletionLogProbs",
    "WeightVersionSpan",
    "Usage",
    "PromptLogprobs",
    "GenerateStreamChunk",
    "GenerateUsageChunk",
    "GenerateStreamEvent",
    "StreamErrorEvent",
    "ErrorResponse",
    "UnauthorizedError",
    "NotFoundDetail",
    "MethodNotAllowed",
    "AbortRequest",
]
PROFILES = {"scale-out", "tokens-only", "disabled", "dev-mode"}
PROFILE_VALUES = {"served", "forbidden-403", "not-registered-404", "dev-semantics"}


def _operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in openapi.load_spec()["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield path, method, operation


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_spec_is_valid_openapi_3_2() -> None:
    spec = openapi.load_spec()
    assert spec["openapi"] == "3.2.0"
    errors = [error.message for error in OpenAPIV32SpecValidator(spec).iter_errors()]
    assert errors == []


def test_spec_ships_inside_the_package() -> None:
    path = openapi.spec_path()
    assert path.is_file()
    assert path.parent == Path(openapi.__file__).parent


@pytest.mark.parametrize("ref", sorted(set(_refs(openapi.load_spec()))))
def test_every_ref_resolves(ref: str) -> None:
    assert ref.startswith("#/"), "refs stay inside the document"
    resolved = openapi.registry().resolver().lookup(openapi.SPEC_URI + ref).contents
    assert isinstance(resolved, dict)


@pytest.mark.parametrize("name", REQUIRED_SCHEMAS)
def test_named_schema_exists(name: str) -> None:
    schema = openapi.load_spec()["components"]["schemas"][name]
    assert schema.get("description")
    assert schema.get("examples")


def test_operation_count() -> None:
    assert len(list(_operations())) == OPERATIONS


@pytest.mark.parametrize(("path", "method"), [(p, m) for p, m, _ in _operations()])
def test_operation_metadata(path: str, method: str) -> None:
    operation = openapi.load_spec()["paths"][path][method]
    assert operation["operationId"]
    assert "security" in operation, "every operation says whether it needs the API key"
    profiles = operation["x-tito-profiles"]
    assert set(profiles) == PROFILES
    assert set(profiles.values()) <= PROFILE_VALUES
    assert "422" not in operation["responses"], "vLLM answers 400, never 422"
    if profiles["disabled"] == "forbidden-403":
        assert "403" in operation["responses"]


def test_schemathesis_loads_the_spec() -> None:
    schemathesis = pytest.importorskip("schemathesis")
    schema = schemathesis.openapi.from_path(str(openapi.spec_path()))
    assert sum(1 for _ in schema.get_all_operations()) == OPERATIONS


def _response(content: bytes, content_type: str) -> httpx.Response:
    request = httpx.Request("POST", "http://127.0.0.1/inference/v1/generate")
    response = httpx.Response(200, headers={"content-type": content_type}, content=content)
    response.request = request
    response.read()
    response.elapsed = datetime.timedelta(0)
    return response


def test_schemathesis_validates_a_captured_stream() -> None:
    """schemathesis reads the 3.2 `itemSchema`, accepts `[DONE]` and rejects a bad chunk."""
    schemathesis = pytest.importorskip("schemathesis")
    operation = schemathesis.openapi.from_path(str(openapi.spec_path()))["/inference/v1/generate"][
        "POST"
    ]
    raw = (FIXTURES / "stream_include_usage.sse").read_bytes()
    sse = "text/event-stream; charset=utf-8"
    assert operation.is_valid_response(_response(raw, sse))
    broken = raw.replace(b'"token_ids":[1903]', b'"token_ids":["x"]')
    assert not operation.is_valid_response(_response(broken, sse))
    no_sentinel = raw.replace(b"data: [DONE]", b"data: [NOPE]")
    assert not operation.is_valid_response(_response(no_sentinel, sse))


def test_sse_event_validator_checks_the_json_inside_data() -> None:
    validator = openapi.sse_event_validator()
    assert validator.is_valid({"data": "[DONE]"})
    error = '{"error": {"message": "x", "type": "InternalServerError", "param": null, "code": 500}}'
    assert validator.is_valid({"data": error})
    assert not validator.is_valid({"data": "{}"})
    assert not validator.is_valid({"data": "not json"})


SPAN = {"version": "default", "start": 0, "end": 2}
CHOICE = {"index": 0, "finish_reason": "length", "stop_reason": None, "token_ids": [9, 11]}
BASE_REQUEST: dict[str, Any] = {"token_ids": [321, 608, 78], "sampling_params": {"max_tokens": 2}}
NULL_REJECTED_SAMPLING = [
    "temperature",
    "top_p",
    "top_k",
    "min_tokens",
    "n",
    "ignore_eos",
    "include_stop_str_in_output",
    "skip_special_tokens",
    "detokenize",
]
NULL_REJECTED_TOP = ["request_id", "priority", "output_mode"]
NULL_ACCEPTED_SAMPLING = ["max_tokens", "seed", "logprobs", "prompt_logprobs", "stop"]
NULL_ACCEPTED_TOP = [
    "features",
    "content_parts",
    "cache_salt",
    "kv_transfer_params",
    "ec_transfer_params",
    "model",
    "stream",
    "stream_options",
    "return_token_ids",
]


def _request(top: dict[str, Any] | None = None, **sampling: Any) -> dict[str, Any]:
    body = {**BASE_REQUEST, **(top or {})}
    body["sampling_params"] = {**BASE_REQUEST["sampling_params"], **sampling}
    return body


def _valid(body: dict[str, Any]) -> bool:
    return bool(openapi.schema_validator("GenerateRequest").is_valid(body))


@pytest.mark.parametrize("field", NULL_REJECTED_SAMPLING)
def test_null_rejected_in_sampling_params(field: str) -> None:
    """vLLM 0.32 answers 400 for these nulls (vllm-cpu.md)."""
    assert not _valid(_request(**{field: None}))


@pytest.mark.parametrize("field", NULL_REJECTED_TOP)
def test_null_rejected_at_top_level(field: str) -> None:
    assert not _valid(_request({field: None}))


@pytest.mark.parametrize("field", NULL_ACCEPTED_SAMPLING)
def test_null_accepted_in_sampling_params(field: str) -> None:
    assert _valid(_request(**{field: None}))


@pytest.mark.parametrize("field", NULL_ACCEPTED_TOP)
def test_null_accepted_at_top_level(field: str) -> None:
    assert _valid(_request({field: None}))


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        (_request({"not_a_field": 1}), True),
        (_request(not_a_param=1), True),
        (_request(logprobs=20), True),
        (_request(logprobs=-1), True),
        (_request(logprobs=21), False),
        (_request(logprobs=-2), False),
        (_request(max_tokens=0), False),
        (_request(temperature=2.0), True),
        (_request(temperature=2.1), False),
        (_request(top_p=0), False),
        (_request(top_p=1), True),
        (_request(top_k=-1), True),
        (_request(top_k=-2), False),
        (_request(stop=[""]), False),
        (_request({"token_ids": [0]}), True),
        (_request({"token_ids": []}), False),
        (_request({"token_ids": [-1]}), False),
        (_request({"output_mode": "text"}), True),
        (_request({"output_mode": "text"}, detokenize=False), False),
        (_request({"output_mode": "tokens"}, detokenize=False), True),
        (
            _request({"features": {"mm_hashes": {}}, "content_parts": [{"type": "image_url"}]}),
            False,
        ),
        (_request({"features": {"mm_hashes": {}}, "content_parts": None}), True),
        (_request({"features": None, "content_parts": [{"type": "image_url"}]}), True),
        (_request({"features": {"mm_hashes": {}}, "content_parts": []}), True),
        (_request({"cache_salt": "a" * 128}), True),
        (_request({"cache_salt": "a" * 129}), False),
        (_request({"cache_salt": "a/b"}), False),
    ],
)
def test_request_rules(body: dict[str, Any], valid: bool) -> None:
    assert _valid(body) is valid


def test_response_without_output_mode_parses_as_tokens() -> None:
    """Older servers do not return `output_mode`: such a response is a tokens response."""
    body = {
        "request_id": "generate-tokens-42",
        "usage": {"prompt_tokens": 3, "total_tokens": 5, "completion_tokens": 2},
        "prompt_token_ids": None,
        "prompt_logprobs": None,
        "choices": [{**CHOICE, "logprobs": None, "weight_versions": [SPAN]}],
    }
    assert openapi.schema_validator("GenerateResponse").is_valid(body)
    assert openapi.schema_validator("GenerateTokensResponse").is_valid(body)
    assert not openapi.schema_validator("GenerateTextResponse").is_valid(body)


def test_legacy_placeholder_logprobs_are_rejected() -> None:
    """The document: "`token_id` is an integer, not the older `"token_id:<id>"` string"."""
    top = {"token": "token_id:262", "logprob": -1.5, "bytes": None}
    legacy = {"content": [{**top, "top_logprobs": [top]}]}
    assert not openapi.schema_validator("GenerateLogProbs").is_valid(legacy)
    assert openapi.schema_validator("ChatCompletionLogProbs").is_valid(legacy)


@pytest.mark.parametrize(
    ("schema", "choice", "valid"),
    [
        ("GenerateTokensChoice", {**CHOICE, "logprobs": None, "weight_versions": [SPAN]}, True),
        ("GenerateTokensChoice", {**CHOICE, "logprobs": None}, False),
        ("GenerateTokensChoice", {**CHOICE, "logprobs": None, "weight_versions": None}, False),
        ("GenerateTokensChoice", {**CHOICE, "stop_reason": 5, "weight_versions": [SPAN]}, False),
        ("GenerateTokensChoice", {**CHOICE, "text": "x", "weight_versions": [SPAN]}, False),
        (
            "GenerateTokensChoice",
            {**CHOICE, "finish_reason": "repetition", "logprobs": None},
            False,
        ),
        ("GenerateTextChoice", {**CHOICE, "logprobs": None, "weight_versions": [SPAN]}, False),
        (
            "GenerateTextChoice",
            {**CHOICE, "logprobs": None, "weight_versions": [SPAN], "text": "))"},
            True,
        ),
        ("GenerateTokensStreamChoice", {**CHOICE, "finish_reason": None, "logprobs": None}, True),
        (
            "GenerateTokensStreamChoice",
            {**CHOICE, "finish_reason": None, "weight_versions": []},
            False,
        ),
        ("GenerateTokensStreamChoice", {**CHOICE, "logprobs": None}, False),
        ("GenerateTokensStreamChoice", {**CHOICE, "logprobs": None, "weight_versions": []}, True),
    ],
)
def test_choice_rules(schema: str, choice: dict[str, Any], valid: bool) -> None:
    """Final outputs carry weight_versions; length/abort: null stop_reason; tokens: no text."""
    if "logprobs" not in choice:
        choice = {**choice, "logprobs": None}
    assert openapi.schema_validator(schema).is_valid(choice) is valid
