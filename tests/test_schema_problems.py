"""Schema errors are reported at the field that is wrong, in the kind of body it is.

The spec's stream payload is a oneOf (tokens chunk, text chunk, usage-only chunk, error event);
an error must be read in the branch the body comes closest to. The bodies are an old release's
(vLLM 0.31: no `output_mode`, no `stop_reason`) and 0.32-shaped ones with one fault each.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conformance import api
from conformance.api import schema_problems
from openapi import load_spec

LEGACY = {"token": "token_id:11", "logprob": -7.01, "bytes": None}
OLD_CHUNK = {  # vLLM 0.31.0: a chunk of a stream with logprobs 1 (live run, tiny model)
    "request_id": "generate-tokens-x",
    "choices": [
        {
            "index": 0,
            "logprobs": {"content": [{**LEGACY, "top_logprobs": [LEGACY]}]},
            "finish_reason": None,
            "token_ids": [11],
            "routed_experts": None,
            "sampling_mask": None,
        }
    ],
    "usage": None,
}
CHUNK = {
    "request_id": "generate-tokens-x",
    "output_mode": "tokens",
    "choices": [
        {"index": 0, "logprobs": None, "finish_reason": None, "stop_reason": None,
         "token_ids": [13]}
    ],
    "usage": None,
}  # fmt: skip


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**base, **changes}


def test_the_sound_chunk_has_no_problem() -> None:
    assert schema_problems("GenerateStreamPayload", CHUNK) == []


def test_an_old_chunk_is_read_as_a_tokens_chunk_with_legacy_logprobs() -> None:
    """Not as a usage chunk whose `choices` and `usage` are both wrong (the live 0.31 run's
    "at /usage: expected type 'object', got None" before the fix)."""
    problems = schema_problems("GenerateStreamPayload", OLD_CHUNK)
    assert problems, "0.31's logprob entries lack token_id"
    assert problems[0].startswith("at /choices/0/logprobs/content/0"), problems
    assert "token_id" in problems[0], problems


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (_with(CHUNK, usage="x"), "at /usage: expected type"),
        (_with(CHUNK, output_mode=7), "at /output_mode"),
        ({**CHUNK, "choices": [{**CHUNK["choices"][0], "token_ids": ["a"]}]},
         "at /choices/0/token_ids/0: expected type"),
    ],
)  # fmt: skip
def test_one_wrong_field_is_reported_at_that_field(body: dict[str, Any], where: str) -> None:
    problems = schema_problems("GenerateStreamPayload", body)
    assert problems and problems[0].startswith(where), problems


def test_an_error_event_is_reported_at_its_error() -> None:
    event = {"error": {"message": "boom", "type": "InternalServerError", "code": "500"}}
    problems = schema_problems("GenerateStreamPayload", event)
    assert problems and problems[0].startswith("at /error/code"), problems


def test_a_leaf_names_its_keys_and_what_decided_its_rule() -> None:
    """The keys a leaf is about: its path, a `false` property's key, and the values that chose
    the rule it broke (a final choice's finish_reason; the body's output_mode)."""
    spec = load_spec()["components"]["schemas"]
    body = copy.deepcopy(spec["GenerateTokensResponse"]["examples"][0])
    choice = body["choices"][0]
    choice["text"] = "hello"  # tokens mode carries no text: a `false` property
    (leaf,) = api.schema_leaves("GenerateResponse", body)
    assert {"choices", "0", "text", "output_mode"} <= leaf.keys
    choice.pop("text")
    choice["finish_reason"], choice["stop_reason"] = "length", 5  # null on length: an `if`'s
    (leaf,) = api.schema_leaves("GenerateResponse", body)
    assert {"stop_reason", "finish_reason"} <= leaf.keys
    assert leaf.text.startswith("at /choices/0/stop_reason:")
