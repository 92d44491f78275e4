"""`conformance.tito.answers`: what the every-answer checks read of a body and of a stream."""

from __future__ import annotations

import copy
from typing import Any

from conformance.api import Streamed
from conformance.tito.answers import of_body, of_stream
from openapi import load_spec

SCHEMAS = load_spec()["components"]["schemas"]
BODY = SCHEMAS["GenerateTokensResponse"]["examples"][0]
REQUEST = {"token_ids": [1, 2], "sampling_params": {"max_tokens": 2, "logprobs": 1, "n": 1}}


def _chunk(index: int, ids: list[int], **more: Any) -> dict[str, Any]:
    choice = {"index": index, "token_ids": ids, "finish_reason": None, **more}
    return {"request_id": "generate-tokens-x", "output_mode": "tokens", "choices": [choice]}


def _streamed(chunks: list[dict[str, Any]]) -> Streamed:
    return Streamed(200, "text/event-stream", chunks, True, 0, [])


def test_a_body_is_its_choices_with_the_request() -> None:
    answer = of_body("generate", REQUEST, copy.deepcopy(BODY))
    assert answer is not None and not answer.streamed
    assert answer.choices == tuple(BODY["choices"])
    assert (answer.n, answer.logprobs) == (1, 1)


def test_a_malformed_body_is_left_to_the_schema_requirement() -> None:
    body = copy.deepcopy(BODY)
    body["choices"][0]["token_ids"] = "12"
    assert of_body("generate", REQUEST, body) is None
    assert of_body("generate", "not a request", copy.deepcopy(BODY)) is None


def test_a_stream_joins_each_choice_in_order() -> None:
    entry = {"token_id": 5, "logprob": -0.1, "rank": 1, "top_logprobs": []}
    spans = [{"version": "default", "start": 0, "end": 3}]
    chunks = [
        _chunk(0, [5], logprobs={"content": [entry]}),
        _chunk(1, [7]),
        _chunk(0, [6, 8], logprobs={"content": [entry, entry]}),
        _chunk(1, [9], finish_reason="length", weight_versions=spans),
        _chunk(0, [], finish_reason="stop", stop_reason=8, weight_versions=spans),
    ]
    answer = of_stream("stream", REQUEST, _streamed(chunks))
    assert answer is not None and answer.streamed
    first, second = answer.choices
    assert first["token_ids"] == [5, 6, 8] and len(first["logprobs"]["content"]) == 3
    assert (first["finish_reason"], first["stop_reason"], first["weight_versions"]) == (
        "stop",
        8,
        spans,
    )
    assert second["token_ids"] == [7, 9] and "logprobs" not in second


def test_a_stream_with_an_error_event_is_not_judged() -> None:
    error = {"error": {"message": "x", "type": "BadRequestError", "param": None, "code": 400}}
    assert of_stream("stream", REQUEST, _streamed([_chunk(0, [5]), error])) is None
