"""Negative cases that only pydantic's lax mode would accept are not held to a 400."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.fuzz.lax import lax_valid
from openapi import schema_validator

GENERATE = schema_validator("GenerateRequest")
RENDER = schema_validator("RenderCompletionRequest")
SP = {"max_tokens": 2}


@pytest.mark.parametrize(
    "body",
    [
        {"token_ids": [True, 5], "sampling_params": SP},  # vLLM 0.32 live: 200, prompt [1, 5]
        {"token_ids": ["5", 5], "sampling_params": SP},  # live: 200
        {"token_ids": [5], "sampling_params": {"max_tokens": "2", "ignore_eos": 1}},
        {"token_ids": [5], "sampling_params": SP, "stream": "true"},
    ],
)
def test_lax_coercible_bodies_are_forgiven(body: dict[str, Any]) -> None:
    assert not GENERATE.is_valid(body) and lax_valid(GENERATE, body)


@pytest.mark.parametrize(
    "body",
    [
        {"token_ids": ["five"], "sampling_params": SP},
        {"token_ids": [True], "sampling_params": SP, "output_mode": "words"},  # + a real error
        {"sampling_params": SP},  # token_ids missing
        {"token_ids": [True]},  # sampling_params missing
        {"token_ids": [5], "sampling_params": SP, "stream": 2},
        {"token_ids": [[5]], "sampling_params": SP},
        {"token_ids": [5], "sampling_params": SP},  # valid: not a negative case at all
    ],
)
def test_other_invalid_bodies_are_not(body: dict[str, Any]) -> None:
    assert not lax_valid(GENERATE, body)


def test_any_of_needs_one_branch_that_lax_repairs() -> None:
    """Live: render takes prompt [true, false] as token ids [1, 0]."""
    assert lax_valid(RENDER, {"prompt": [True, False]})
    assert lax_valid(RENDER, {"prompt": [["1", 2]]})
    assert not lax_valid(RENDER, {"prompt": [{"a": 1}]})
    assert not lax_valid(RENDER, {"prompt": None})
