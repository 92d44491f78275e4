"""The structure comparison on hand-made answers: what it reports and what it must not."""

from __future__ import annotations

import json
from typing import Any

from conformance.diff.structure import Answer, Request, compare_answers, compare_json, sse_events

GEN = Request("POST", "/inference/v1/generate", {"token_ids": [1, 2, 3], "sampling_params": {}})
DETERMINED = Request(
    "POST",
    "/inference/v1/generate",
    {"token_ids": [1, 2], "sampling_params": {"max_tokens": 2, "ignore_eos": True}},
)


def body(obj: Any, status: int = 200) -> Answer:
    return Answer(status, "application/json", json.dumps(obj).encode())


def choice(tokens: list[int], finish: str | None = "length", **extra: Any) -> dict[str, Any]:
    return {"index": 0, "finish_reason": finish, "stop_reason": None, "token_ids": tokens, **extra}


def stream(*chunks: Any, done: bool = True, sep: str = "\n\n") -> Answer:
    raw = "".join(f"data: {json.dumps(c)}{sep}" for c in chunks)
    raw += f"data: [DONE]{sep}" if done else ""
    data = raw.encode()
    return Answer(200, "text/event-stream; charset=utf-8", b"", sse_events(data), data)


def kinds(found: list[Any]) -> set[tuple[str, str]]:
    return {(d.pattern, d.kind) for d in found}


def test_same_structure_different_values_is_no_difference() -> None:
    left = body({"request_id": "generate-tokens-0123456789abcdef", "choices": [choice([5, 6])]})
    right = body({"request_id": "generate-tokens-fedcba9876543210", "choices": [choice([7, 8])]})
    assert compare_answers(GEN, left, right) == []


def test_keys_order_types_and_nulls() -> None:
    found = compare_json(
        {"a": 1, "b": None, "c": "x", "d": 1}, {"b": 2, "a": 1, "c": "x", "e": 1}, "$"
    )
    assert kinds(found) == {
        ("$.d", "missing key"),
        ("$.e", "extra key"),
        ("$", "key order"),
        ("$.b", "type"),
    }


def test_only_request_determined_lengths_count() -> None:
    left = body({"choices": [choice([1, 2, 3], "stop"), choice([1], "stop")]})
    shorter = body({"choices": [choice([1], "stop")]})
    assert kinds(compare_answers(GEN, left, shorter)) == {("$.choices", "length")}
    other_tokens = body({"choices": [choice([1], "stop"), choice([1, 2], "stop")]})
    assert compare_answers(GEN, left, other_tokens) == []


def test_token_count_compared_when_both_stop_by_length() -> None:
    left, right = body({"choices": [choice([1, 2])]}), body({"choices": [choice([1, 2, 3])]})
    assert ("$.choices[*].token_ids", "length (finish_reason length on both)") in kinds(
        compare_answers(GEN, left, right)
    )


def test_finish_reason_value_only_where_the_request_decides() -> None:
    left, right = (
        body({"choices": [choice([1], "length")]}),
        body({"choices": [choice([1], "stop")]}),
    )
    assert compare_answers(GEN, left, right) == []
    assert ("$.choices[*].finish_reason", "value") in kinds(
        compare_answers(DETERMINED, left, right)
    )


def test_token_id_keyed_objects_compare_values_only() -> None:
    left = {"prompt_logprobs": [None, {"5": {"logprob": -1.0, "rank": 1}}]}
    right = {"prompt_logprobs": [None, {"9": {"logprob": -2.0, "rank": 3}}]}
    assert compare_json(left, right) == []
    right["prompt_logprobs"][1] = {"9": {"logprob": -2.0}}
    assert kinds(compare_json(left, right)) == {("$.prompt_logprobs[*]{id}.rank", "missing key")}


def test_relations_that_hold_on_one_side_only() -> None:
    content = {"content": [{"token_id": 1, "logprob": -1.0, "rank": 1, "top_logprobs": []}]}
    left = body(
        {
            "choices": [choice([1], "stop", logprobs=content)],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
    )
    right = body(
        {
            "choices": [choice([1, 2], "stop", logprobs=content)],
            "usage": {"prompt_tokens": 4, "completion_tokens": 1},
        }
    )
    assert kinds(compare_answers(GEN, left, right)) >= {
        ("$.choices[*].logprobs.content", "relation len(logprobs.content) == len(token_ids)"),
        ("$.usage.completion_tokens", "relation completion_tokens == tokens returned"),
        ("$.usage.prompt_tokens", "value (the prompt's length)"),
    }


def test_status_and_media_type() -> None:
    found = compare_answers(GEN, body({"a": 1}), body({"a": 1}, 400))
    assert kinds(found) == {("status", "status")}
    plain = Answer(200, "application/json; charset=utf-8", b"{}")
    assert kinds(compare_answers(GEN, body({}), plain)) == {
        ("content-type", "media type parameters")
    }
    unknown = Answer(200, "application/json", b"{}", content_type_params_known=False)
    assert compare_answers(GEN, unknown, plain) == []


def _chunk(tokens: list[int], finish: str | None, **extra: Any) -> dict[str, Any]:
    wv = [{"version": "default", "start": 0, "end": 2}] if finish else None
    return {
        "request_id": "r",
        "usage": None,
        "choices": [choice(tokens, finish, weight_versions=wv)],
        **extra,
    }


def test_sse_chunking_is_not_structure() -> None:
    one = stream(_chunk([1], None), _chunk([2], None), _chunk([3], "length"))
    batched = stream(_chunk([1, 2], None), _chunk([3], "length"))
    assert compare_answers(GEN, one, batched) == []


def test_sse_done_framing_usage_and_weight_versions() -> None:
    good = stream(
        _chunk([1], None),
        _chunk([2], "length"),
        {"request_id": "r", "usage": {"prompt_tokens": 3, "completion_tokens": 2}, "choices": []},
    )
    no_done = stream(_chunk([1], None), _chunk([2], "length"), done=False)
    found = kinds(compare_answers(GEN, good, no_done))
    assert ("$sse:[DONE]", "stream structure") in found
    assert ("$sse:usage-only chunks", "stream structure") in found
    early = _chunk([1], None)
    early["choices"][0]["weight_versions"] = []
    found = kinds(
        compare_answers(
            GEN,
            stream(_chunk([1], None), _chunk([2], "length")),
            stream(early, _chunk([2], "length")),
        )
    )
    assert ("$sse:weight_versions on non-final chunks", "stream structure") in found
    crlf = stream(_chunk([1], None), _chunk([2], "length"), sep="\r\n\r\n")
    found = kinds(compare_answers(GEN, stream(_chunk([1], None), _chunk([2], "length")), crlf))
    assert found == {("$sse:framing", "stream structure")}


def test_sse_error_event_against_chunks() -> None:
    error = stream(
        {"error": {"message": "x", "type": "BadRequestError", "param": None, "code": 400}}
    )
    found = kinds(compare_answers(GEN, error, stream(_chunk([1], "length"))))
    assert ("$sse:error events", "stream structure") in found
