"""API key and data-parallel rank: who may call, and where the request goes."""

from __future__ import annotations

from conformance.requirements.model import (
    MUST,
    SCHEMA_CHECKS,
    SHOULD,
    Feature,
    Requirement,
    Source,
    fuzz,
)

A = Feature.API_KEY
D = Feature.DP_RANK

REQUIREMENTS = [
    Requirement(
        "AUTH-001",
        MUST,
        A,
        "requires the API key when --api-key is set, like /inference/v1/generate.",
        "generate without the key, or with a wrong key, is a 401; with it, a 200",
        expected_status=401,
        needs=("api-key",),
        anchor="api-key",
        ground="key-demanded",
        fuzz=(fuzz(110, checks=("positive_data_acceptance",), statuses=(401, 401)),),
        diff=("no-key-generate", "wrong-key-generate", "no-key-stream"),
    ),
    Requirement(
        "AUTH-002",
        MUST,
        A,
        "requires the API key when --api-key is set, like /inference/v1/generate.",
        "/inference/v1/abort_requests without the key is a 401",
        expected_status=401,
        needs=("api-key", "abort"),
        diff=("no-key-abort",),
    ),
    Requirement(
        "AUTH-003",
        MUST,
        A,
        "That path doesn't require the API key, even when --api-key is set.",
        "/abort_requests (tokens-only) works without the key",
        expected_status=200,
        needs=("api-key", "legacy-abort"),
        diff=("no-key-legacy-abort",),
    ),
    Requirement(
        "AUTH-004",
        SHOULD,
        A,
        'A 401 has the body {"error": "Unauthorized"}.',
        "the 401 body is vLLM's flat shape",
        source=Source.VLLM,
        expected_status=401,
        evidence="capture apikey_generate_no_key_401",
        needs=("api-key",),
        fuzz=(
            fuzz(40, checks=("error_body_shape",), statuses=(401, 401)),
            fuzz(40, checks=SCHEMA_CHECKS, statuses=(401, 401)),
        ),
        diff=("no-key-generate", "wrong-key-generate"),
    ),
    Requirement(
        "AUTH-005",
        SHOULD,
        A,
        "GET /health does not require the API key.",
        "/health is open",
        source=Source.VLLM,
        expected_status=200,
        evidence="capture apikey_health_no_key",
        needs=("api-key",),
        diff=("no-key-health",),
    ),
    Requirement(
        "DP-001",
        MUST,
        D,
        "Send the header X-data-parallel-rank: <int> to pin a request to one data-parallel (DP) "
        "engine rank",
        "every rank in [0, data_parallel_size) is accepted",
        expected_status=200,
        needs=("generate",),
        anchor="data-parallel",
        diff=("dp-rank-0",),
    ),
    Requirement(
        "DP-002",
        MUST,
        D,
        "Without the header, or with a non-integer value, the request is load balanced.",
        "a non-integer X-data-parallel-rank is ignored (200)",
        expected_status=200,
        needs=("generate",),
        diff=("dp-rank-abc",),
    ),
    Requirement(
        "DP-003",
        MUST,
        D,
        "A rank outside [0, data_parallel_size) is rejected.",
        "rank data_parallel_size and rank -1 are a 400",
        expected_status=400,
        needs=("generate",),
        diff=("dp-rank-1", "dp-rank-minus-1"),
    ),
]
