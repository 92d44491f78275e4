"""Stop handling: stop_token_ids, stop strings, stop_reason."""

from __future__ import annotations

from conformance.requirements.model import MUST, Feature, Requirement

F = Feature.STOP

REQUIREMENTS = [
    Requirement(
        "STOP-001",
        MUST,
        F,
        "Stop token ID or string",
        "a matched stop_token_ids entry ends the choice: finish_reason stop, stop_reason the id",
        needs=("generate",),
        diff=("stop-token-ids-include", "stream-stop-token-ids-seeded"),
        fields=("stop_reason",),
    ),
    Requirement(
        "STOP-002",
        MUST,
        F,
        "token_ids keeps every generated token",
        "the matched stop token stays in token_ids",
        needs=("generate",),
        diff=("stop-token-ids-include",),
    ),
    Requirement(
        "STOP-003",
        MUST,
        F,
        "`null` on EOS, length and abort.",
        "stop_reason is null when EOS ended the choice",
        needs=("generate",),
    ),
    Requirement(
        "STOP-004",
        MUST,
        F,
        "`null` on EOS, length and abort.",
        "stop_reason is null when max_tokens ended the choice",
        needs=("generate",),
        fields=("stop_reason",),
    ),
    Requirement(
        "STOP-005",
        MUST,
        F,
        "`null` on EOS, length and abort.",
        "stop_reason is null on an aborted choice",
        needs=("abort",),
        diff=("abort-flow-stream",),
        fields=("stop_reason",),
    ),
    Requirement(
        "STOP-006",
        MUST,
        F,
        "A matched stop string is cut from text unless include_stop_str_in_output is set.",
        "a matched stop string is cut from text",
        needs=("text-mode",),
    ),
    Requirement(
        "STOP-007",
        MUST,
        F,
        "A matched stop string is cut from text unless include_stop_str_in_output is set.",
        "include_stop_str_in_output keeps the stop string in text",
        needs=("text-mode",),
        diff=("text-stop-include",),
    ),
    Requirement(
        "STOP-008",
        MUST,
        F,
        "token_ids keeps every generated token, so decoding token_ids yourself brings the stop "
        "string back.",
        "a stop string is not trimmed from token_ids",
        needs=("text-mode",),
    ),
    Requirement(
        "STOP-009",
        MUST,
        F,
        "Stop token ID or string",
        "a matched stop string is the stop_reason",
        needs=("text-mode",),
    ),
    Requirement(
        "STOP-010",
        MUST,
        F,
        "That covers text held back for stop string matching",
        "a streamed request with a stop string sends the held-back text: the deltas give the "
        "non-streamed text",
        needs=("text-mode",),
        diff=("text-stream-stop",),
    ),
]
