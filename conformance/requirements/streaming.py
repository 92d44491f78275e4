"""Streaming: SSE framing, deltas, the final chunk, usage and error events."""

from __future__ import annotations

from conformance.requirements.model import MUST, SHOULD, Feature, Requirement, Source, fuzz

F = Feature.STREAMING

REQUIREMENTS = [
    Requirement(
        "STREAM-001",
        MUST,
        F,
        "SSE chunks ending with `data: [DONE]`.",
        "stream: true answers text/event-stream, one JSON chunk per event, each valid "
        "against GenerateStreamChunk",
        expected_status=200,
        needs=("generate",),
        ground="stream-events",
        fuzz=(
            fuzz(80, checks=("stream_well_framed",)),
            fuzz(120, operations=("generate",), stream=True),
        ),
        diff=("stream",),
    ),
    Requirement(
        "STREAM-002",
        MUST,
        F,
        "SSE chunks ending with `data: [DONE]`.",
        "the last event is data: [DONE]",
        needs=("generate",),
        ground="stream-done",
        fuzz=(fuzz(80, checks=("stream_well_framed",)),),
        diff=("stream",),
    ),
    Requirement(
        "STREAM-003",
        MUST,
        F,
        "Stream chunks carry the same per-choice fields for the new tokens.",
        "deltas (token_ids, logprobs) concatenate to the non-streamed result of a seeded request",
        needs=("generate",),
        ground="deltas",
    ),
    Requirement(
        "STREAM-004",
        MUST,
        F,
        "A chunk is sent whenever the engine output carries new text or a finish_reason, even "
        "with no new token IDs.",
        "each choice's last chunk carries its finish_reason; no chunk is empty",
        needs=("generate",),
    ),
    Requirement(
        "STREAM-005",
        SHOULD,
        F,
        "finish_reason is null on every chunk of a choice but its last.",
        "no finish_reason before a choice's last chunk",
        source=Source.VLLM,
        evidence="vllm-source-notes §4; captures *.sse",
        needs=("generate",),
        fields=("finish_reason",),
    ),
    Requirement(
        "STREAM-006",
        SHOULD,
        F,
        "Each chunk carries exactly one choice; with n > 1 choices interleave by index.",
        "one choice per chunk",
        source=Source.VLLM,
        evidence="vllm-source-notes §4",
        needs=("generate",),
        diff=("stream-continuous-usage-n2", "stream-n2-logprobs-return-ids"),
        fields=("choices",),
    ),
    Requirement(
        "STREAM-007",
        SHOULD,
        F,
        "stream_options.include_usage adds one final chunk with choices [] and the usage, "
        "before [DONE].",
        "include_usage gives a usage chunk whose counts match the stream",
        source=Source.VLLM,
        evidence="vllm-source-notes §4; test_stream_include_usage",
        needs=("generate",),
        diff=("stream-include-usage", "stream-continuous-usage-n2"),
    ),
    Requirement(
        "STREAM-008",
        SHOULD,
        F,
        "An engine-side rejection of a streamed request (logprobs above the maximum, DP rank out "
        "of range) is a 200 with one error event, then data: [DONE].",
        "engine-side rejections of a stream arrive as an error event",
        source=Source.VLLM,
        expected_status=200,
        evidence="vllm-cpu.md 'More behaviour'; captures stream_error_*",
        needs=("generate",),
        diff=("stream-logprobs-21", "stream-dp-rank-5"),
    ),
    Requirement(
        "STREAM-009",
        SHOULD,
        F,
        "Schema errors (for example an empty token_ids) stay HTTP 400 with stream: true.",
        "schema errors of a streamed request are still a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md 'More behaviour'",
        needs=("generate",),
        diff=("stream-empty-token-ids",),
    ),
    Requirement(
        "SCHEMA-STREAM-001",
        MUST,
        F,
        "Stream chunks carry the same per-choice fields for the new tokens.",
        "every stream event is valid against the spec's GenerateStreamPayload",
        needs=("generate",),
        fuzz=(
            fuzz(
                50, checks=("response_schema_conformance",), operations=("generate",), stream=True
            ),
            fuzz(60, checks=("stream_chunks_valid",)),
        ),
    ),
]
