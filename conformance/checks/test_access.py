"""API key and data-parallel rank."""

from __future__ import annotations

from conformance import api
from conformance.grounds import builds_on
from conformance.registry import checks
from conformance.requirements.model import (
    MUST,
    SCHEMA_CHECKS,
    SHOULD,
    Feature,
    Requirement,
    Source,
    fuzz,
)
from conformance.server.dp_rank import HEADER as RANK
from conformance.session import Session
from conformance.tito.semantics import fail

REQUIREMENTS = [
    Requirement(
        "AUTH-001",
        MUST,
        Feature.API_KEY,
        "requires the API key when --api-key is set, like /inference/v1/generate.",
        "generate without the key, or with a wrong key, is a 401; with it, a 200",
        expected_status=401,
        needs=("api-key",),
        anchor="api-key",
        fuzz=(fuzz(110, checks=("positive_data_acceptance",), statuses=(401, 401)),),
        diff=("no-key-generate", "wrong-key-generate", "no-key-stream"),
    ),
    Requirement(
        "AUTH-002",
        MUST,
        Feature.API_KEY,
        "requires the API key when --api-key is set, like /inference/v1/generate.",
        "/inference/v1/abort_requests without the key is a 401",
        expected_status=401,
        needs=("api-key", "abort"),
        diff=("no-key-abort",),
    ),
    Requirement(
        "AUTH-004",
        SHOULD,
        Feature.API_KEY,
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
        Feature.API_KEY,
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
        Feature.DP_RANK,
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
        Feature.DP_RANK,
        "Without the header, or with a non-integer value, the request is load balanced.",
        "a non-integer X-data-parallel-rank is ignored (200)",
        expected_status=200,
        needs=("generate",),
        diff=("dp-rank-abc",),
    ),
    Requirement(
        "DP-003",
        MUST,
        Feature.DP_RANK,
        "A rank outside [0, data_parallel_size) is rejected.",
        "rank data_parallel_size and rank -1 are a 400",
        expected_status=400,
        needs=("generate",),
        diff=("dp-rank-1", "dp-rank-minus-1"),
    ),
]


@checks("AUTH-001")
def test_generate_needs_key(tito: Session) -> None:
    api.rejected(tito, api.body(1), status=401, auth=False, what="generate without a key")
    api.rejected(
        tito,
        api.body(1),
        status=401,
        auth=False,
        headers={"Authorization": "Bearer not-the-key"},
        what="generate, wrong key",
    )
    api.generate(tito, api.body(1), what="generate with the key")


@checks("AUTH-002", builds_on=("AUTH-001",))
def test_abort_needs_key(tito: Session) -> None:
    api.rejected(
        tito,
        {"request_ids": []},
        status=401,
        path=api.ABORT,
        auth=False,
        what="/inference/v1/abort_requests without a key",
    )


GUARDED = (api.GENERATE, api.ABORT, "/v1/completions/render")


@checks("AUTH-004")
def test_unauthorized_body(tito: Session) -> None:
    """Judges the first 401 any guarded path gives (which paths give one is AUTH-001/002's)."""
    for path in GUARDED:
        reply = tito.client.post(path, api.body(1), auth=False)
        if reply.status == 401:
            break
    else:
        builds_on(tito, "AUTH-001")
        fail(f"no guarded path ({', '.join(GUARDED)}) answered 401 without the key")
    if reply.json() != {"error": "Unauthorized"}:
        fail(f'the 401 body is {reply.body[:200]!r}, expected {{"error": "Unauthorized"}}')


@checks("AUTH-005")
def test_health_open(tito: Session) -> None:
    api.status_is(tito.client.get("/health", auth=False), 200, "/health without a key")


@checks("DP-001")
def test_ranks_in_range(tito: Session) -> None:
    for rank in range(tito.features.dp_size or 1):
        api.generate(tito, api.body(1), headers={RANK: str(rank)}, what=f"rank {rank}")


@checks("DP-002")
def test_non_integer_rank_ignored(tito: Session) -> None:
    for value in ("abc", "1.5"):
        api.generate(tito, api.body(1), headers={RANK: value}, what=f"rank header {value!r}")


@checks("DP-003")
def test_rank_out_of_range(tito: Session) -> None:
    outside = tito.features.dp_size if tito.features.dp_size is not None else 1_000_000
    for rank in (outside, -1):
        api.rejected(
            tito,
            api.body(1),
            headers={RANK: str(rank)},
            what=f"rank {rank} (data_parallel_size {tito.features.dp_size})",
        )
