"""Every real vLLM 0.32 answer in `tests/fixtures/vllm-0.32/` against the spec.

Each capture's response (JSON body, empty body, or every SSE event) must match what the spec
documents for its path, method, status and media type; each 2xx request must match the
operation's request schema. The spec's deliberate departures from vLLM are listed in ONE
place, `DELIBERATELY_INVALID`, and asserted to FAIL, so the list cannot go stale.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from typing import Any

import httpx
import pytest
from jsonschema.exceptions import best_match

import openapi
from tests.captures import SSE, Exchange, exchanges

MIN_VALIDATING = 100
NOT_TITO = {
    "/tokenize": "vLLM's tokenizer endpoint, not part of the TITO API",
    "/detokenize": "vLLM's detokenizer endpoint, not part of the TITO API",
    "/v1/completions": "the OpenAI completions endpoint, not part of the TITO API",
}
DELIBERATELY_INVALID: dict[str, str] = {}
"""Captures whose response the spec deliberately rejects: {capture name: reason}."""

REQUEST_SCHEMA_REJECTED: dict[str, str] = {
    "empty_token_ids": "token_ids minItems 1 ('Non-empty')",
    "negative_token_ids": "token_ids items minimum 0 ('no negative IDs')",
    "token_ids_missing": "token_ids is required",
    "token_ids_not_list": "token_ids is an array",
    "missing_sampling_params": "sampling_params is required",
    "max_tokens_0": "max_tokens minimum 1",
    "temperature_negative": "temperature minimum 0",
    "logprobs_neg1_full_vocab_1tok": "logprobs maximum 20 (default --max-logprobs)",
    "cache_salt_empty": "cache_salt minLength 1",
    "output_mode_invalid": "output_mode enum tokens|text",
    "output_mode_text_detokenize_false": "output_mode text requires detokenize true",
    "features_and_content_parts": "features and content_parts are mutually exclusive",
    "invalid_json": "the body is not JSON",
    "wrong_content_type": "only application/json is accepted",
    "abort_requests_missing": "request_ids is required",
    "abort_requests_invalid_json": "the body is not JSON",
    "tokonly_legacy_abort_missing": "request_ids is required",
    "derender_text_response_rejected": "derender accepts only output_mode tokens",
    "tokonly_derender_completions": "generate_responses minItems 1",
}
"""400 captures whose request the schema itself rejects; every other 400 must be valid."""


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _resolve(node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    if "$ref" not in node:
        return None, node
    ref = node["$ref"]
    target: Any = openapi.load_spec()
    for part in ref.removeprefix("#/").split("/"):
        target = target[part.replace("~1", "/").replace("~0", "~")]
    return ref, target


def _errors(pointer: str, instance: Any) -> list[str]:
    """The most relevant errors (best_match looks inside oneOf/anyOf branches)."""
    found = list(openapi.schema_validator(pointer).iter_errors(instance))
    if not found:
        return []
    best = best_match(found)
    assert best is not None
    return [f"{list(best.absolute_path)}: {best.message[:200]}"] + [
        f"{list(e.absolute_path)}: {e.message[:120]}" for e in found[:3] if e is not best
    ]


def _response_object(ex: Exchange) -> tuple[str, dict[str, Any]] | str:
    item = openapi.load_spec()["paths"].get(ex.path)
    if item is None:
        return f"path {ex.path} is not in the spec"
    operation = item.get(ex.method.lower())
    if operation is None:
        fallback = item.get("x-tito-unsupported-methods")
        if fallback is None:
            return f"{ex.method} {ex.path} is not in the spec"
        ref, response = _resolve(fallback)
        assert ref is not None
        return ref, response
    status = str(ex.status)
    if status not in operation["responses"]:
        return f"status {status} is not documented for {ex.method} {ex.path}"
    pointer = f"#/paths/{_escape(ex.path)}/{ex.method.lower()}/responses/{status}"
    ref, response = _resolve(operation["responses"][status])
    return ref or pointer, response


def response_errors(ex: Exchange) -> list[str]:
    """Why the captured answer does not match the spec (empty when it does)."""
    found = _response_object(ex)
    if isinstance(found, str):
        return [found]
    pointer, response = found
    content = response.get("content", {})
    if ex.events is not None:
        if SSE not in content:
            return [f"{pointer} documents no {SSE}"]
        item = f"{pointer}/content/{_escape(SSE)}/itemSchema"
        errors = [f"event {i}: {e}" for i, ev in enumerate(ex.events) for e in _errors(item, ev)]
        if not ex.events or ex.events[-1] != {"data": "[DONE]"}:
            errors.append("the stream does not end with data: [DONE]")
        return errors
    empty = ex.response_body is None and not ex.response_raw
    if empty:
        if content:
            return [f"{pointer} documents a body, the capture has none"]
        return []
    media_type = ex.content_type or "application/json"
    if media_type not in content:
        return [f"{pointer} documents no {media_type} body"]
    return _errors(f"{pointer}/content/{_escape(media_type)}/schema", ex.response_body)


def request_errors(ex: Exchange) -> list[str]:
    """Why the captured request does not match the operation's request schema."""
    operation = openapi.load_spec()["paths"][ex.path][ex.method.lower()]
    content = operation["requestBody"]["content"]
    media_type = ex.request_content_type or "application/json"
    if media_type not in content:
        return [f"request media type {media_type} is not accepted"]
    body = ex.request_body
    if body is None and ex.request_raw is not None:
        try:
            body = json.loads(ex.request_raw)
        except ValueError as exc:
            return [f"request body is not JSON: {exc}"]
    pointer = f"#/paths/{_escape(ex.path)}/{ex.method.lower()}/requestBody/content/"
    return _errors(pointer + f"{_escape(media_type)}/schema", body)


ALL = exchanges()
TITO = [ex for ex in ALL if ex.path not in NOT_TITO]
WITH_REQUEST = [
    ex
    for ex in TITO
    if (ex.request_body is not None or ex.request_raw is not None)
    and (200 <= ex.status < 300 or ex.status == 400)
]


@pytest.mark.parametrize("ex", ALL, ids=[ex.name for ex in ALL])
def test_response_matches_spec(ex: Exchange) -> None:
    if ex.path in NOT_TITO:
        pytest.skip(f"{ex.path}: {NOT_TITO[ex.path]}")
    errors = response_errors(ex)
    if ex.name in DELIBERATELY_INVALID:
        assert errors, f"{ex.name} now validates; drop it from DELIBERATELY_INVALID"
    else:
        assert errors == []


@pytest.mark.parametrize("ex", WITH_REQUEST, ids=[ex.name for ex in WITH_REQUEST])
def test_request_matches_spec(ex: Exchange) -> None:
    errors = request_errors(ex)
    if ex.status == 400 and ex.name in REQUEST_SCHEMA_REJECTED:
        assert errors, f"the schema should reject {ex.name}: {REQUEST_SCHEMA_REJECTED[ex.name]}"
    else:
        assert errors == [], "a request vLLM accepted (or rejected for a non-schema reason)"


def test_deliberate_lists_name_real_captures() -> None:
    names = {ex.name for ex in ALL}
    assert set(DELIBERATELY_INVALID) <= names
    assert set(REQUEST_SCHEMA_REJECTED) <= names
    assert {ex.status for ex in ALL if ex.name in REQUEST_SCHEMA_REJECTED} == {400}


def test_enough_captures_validate() -> None:
    outcome: Counter[str] = Counter()
    for ex in ALL:
        if ex.path in NOT_TITO:
            outcome["skipped (not TITO)"] += 1
        elif ex.name in DELIBERATELY_INVALID:
            outcome["deliberately invalid"] += 1
        elif not response_errors(ex):
            outcome["validated"] += 1
        else:
            outcome["FAILED"] += 1
    events = sum(len(ex.events or []) for ex in TITO)
    print(f"captures: {dict(outcome)}; SSE events validated: {events}")
    assert outcome["FAILED"] == 0
    assert outcome["validated"] >= MIN_VALIDATING


def _as_httpx(ex: Exchange) -> httpx.Response:
    """The captured answer rebuilt as an httpx.Response, the way schemathesis receives one."""
    if ex.events is not None:
        content = "".join(f"data: {event['data']}\n\n" for event in ex.events).encode()
        headers = {"content-type": "text/event-stream; charset=utf-8"}
    else:
        raw = json.dumps(ex.response_body) if ex.response_body is not None else ex.response_raw
        content = (raw or "").encode()
        headers = {k: v for k, v in ex.response_headers.items() if k.lower() == "content-type"}
    request = httpx.Request(ex.method, f"http://127.0.0.1{ex.path}")
    response = httpx.Response(ex.status, headers=headers, content=content, request=request)
    response.read()
    response.elapsed = datetime.timedelta(0)
    return response


DOCUMENTED = [
    ex
    for ex in TITO
    if ex.method.lower() in openapi.load_spec()["paths"].get(ex.path, {})
    and ex.name not in DELIBERATELY_INVALID
]


@pytest.fixture(scope="module")
def schemathesis_schema() -> Any:
    schemathesis = pytest.importorskip("schemathesis")
    return schemathesis.openapi.from_path(str(openapi.spec_path()))


@pytest.mark.parametrize("ex", DOCUMENTED, ids=[ex.name for ex in DOCUMENTED])
def test_schemathesis_accepts_capture(ex: Exchange, schemathesis_schema: Any) -> None:
    """A second, independent validator (schemathesis, jsonschema_rs) agrees with ours."""
    operation = schemathesis_schema[ex.path][ex.method]
    try:
        operation.validate_response(_as_httpx(ex))
    except BaseException as group:  # schemathesis raises a FailureGroup (an ExceptionGroup)
        failures = getattr(group, "exceptions", [group])
        pytest.fail("; ".join(str(failure).splitlines()[0] for failure in failures))
