"""Aborting requests, on both paths."""

from __future__ import annotations

from .model import MUST, SHOULD, Feature, Requirement, Source

F = Feature.ABORT

REQUIREMENTS = [
    Requirement(
        "ABORT-001",
        MUST,
        F,
        "It is registered wherever /inference/v1/generate is",
        "/inference/v1/abort_requests answers wherever generate does",
        expected_status=200,
    ),
    Requirement(
        "ABORT-002",
        MUST,
        F,
        "POST /inference/v1/abort_requests aborts in-flight requests.",
        "aborting a live stream ends it with a finish_reason abort chunk, then [DONE]",
    ),
    Requirement(
        "ABORT-003",
        MUST,
        F,
        "POST /inference/v1/abort_requests aborts in-flight requests.",
        "aborting a live non-streamed request answers it with finish_reason abort",
    ),
    Requirement(
        "ABORT-004",
        SHOULD,
        F,
        "An aborted non-streamed request answers 200 with the tokens generated so far.",
        "an aborted non-streamed request keeps its partial output",
        source=Source.VLLM,
        evidence="capture abort_target_nonstream (65 tokens, finish_reason abort)",
    ),
    Requirement(
        "ABORT-005",
        MUST,
        F,
        "A missing request_ids returns a 400.",
        "abort without request_ids is a 400",
        expected_status=400,
    ),
    Requirement(
        "ABORT-006",
        MUST,
        F,
        "The response is empty and the abort finishes in the background.",
        "abort answers 200 with an empty body",
        expected_status=200,
    ),
    Requirement(
        "ABORT-007",
        MUST,
        F,
        "With --tokens-only, the same handler is also served at POST /abort_requests for "
        "existing deployments.",
        "on tokens-only, /abort_requests aborts a live request and 400s a missing request_ids",
    ),
    Requirement(
        "ABORT-008",
        SHOULD,
        F,
        "/abort_requests is served only with --tokens-only (404 otherwise, outside dev mode).",
        "no /abort_requests without --tokens-only",
        source=Source.VLLM,
        expected_status=404,
        evidence="vllm-cpu.md: POST /abort_requests {} is 404 on a scale-out server",
    ),
    Requirement(
        "ABORT-009",
        SHOULD,
        F,
        "A client that disconnects mid-stream aborts its request.",
        "disconnecting a stream aborts the request (checked where the server exposes stats)",
        source=Source.VLLM,
        evidence="vllm-source-notes §1.1 (with_cancellation)",
    ),
]
