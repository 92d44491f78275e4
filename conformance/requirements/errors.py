"""Errors: what bad input gets back. Mostly vLLM 0.32 behaviour where the document is silent."""

from __future__ import annotations

from .model import MUST, SHOULD, Feature, Requirement, Source

F = Feature.ERRORS

REQUIREMENTS = [
    Requirement(
        "ERR-001",
        MUST,
        F,
        "An unsupported output_mode value.",
        "an unknown output_mode (and null) is a 400",
        expected_status=400,
    ),
    Requirement(
        "ERR-002",
        SHOULD,
        F,
        'Error bodies are {"error": {"message", "type", "param", "code"}} with code equal to the '
        "HTTP status.",
        "4xx bodies have vLLM's ErrorResponse shape",
        source=Source.VLLM,
        evidence="vllm-source-notes §8.1; every 400 capture",
    ),
    Requirement(
        "ERR-003",
        SHOULD,
        F,
        "Request validation errors are 400, not 422.",
        "validation errors are 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md 'Real bugs and surprises'",
    ),
    Requirement(
        "ERR-004",
        SHOULD,
        F,
        "Unknown fields, top level or inside sampling_params, are ignored.",
        "unknown keys do not fail a request",
        source=Source.VLLM,
        expected_status=200,
        evidence="vllm-cpu.md; capture unknown_fields_*",
    ),
    Requirement(
        "ERR-005",
        SHOULD,
        F,
        "A body that is not valid JSON is a 400.",
        "malformed JSON is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="capture invalid_json",
    ),
    Requirement(
        "ERR-006",
        SHOULD,
        F,
        "A Content-Type other than application/json is a 400.",
        "a non-JSON Content-Type is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md; vllm-source-notes §8.2",
    ),
    Requirement(
        "ERR-007",
        SHOULD,
        F,
        "A token id beyond the vocabulary is a 400 and the server keeps serving.",
        "an out-of-vocabulary token id is a 400, never a 5xx",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md (0.32 --tokens-only answers 500 and exits: a known bug)",
    ),
    Requirement(
        "ERR-008",
        SHOULD,
        F,
        "Malformed field values are answered 4xx, never 5xx.",
        "a battery of wrongly typed fields gets 4xx answers",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-source-notes §8.2",
    ),
    Requirement(
        "ERR-009",
        SHOULD,
        F,
        "Explicit null is accepted for the fields vLLM declares nullable.",
        "null for nullable fields is accepted",
        source=Source.VLLM,
        expected_status=200,
        evidence="vllm-cpu.md 'More behaviour'",
    ),
    Requirement(
        "ERR-010",
        SHOULD,
        F,
        "sampling_params.max_tokens 0 is a 400.",
        "max_tokens 0 is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md",
    ),
]
