"""Registration: disabled gating (neither flag) and tokens-only."""

from __future__ import annotations

from conformance.requirements.model import (
    GATED_OPERATIONS,
    MUST,
    SHOULD,
    Feature,
    Requirement,
    Source,
    fuzz,
)

D = Feature.DISABLED
T = Feature.TOKENS_ONLY
DISABLED_MESSAGE = (
    "Scale-out endpoints are disabled. Restart vllm serve with --enable-scale-out to enable them."
)

REQUIREMENTS = [
    Requirement(
        "DISABLED-001",
        MUST,
        D,
        "With neither flag, it returns 403",
        "with neither flag generate answers 403",
        expected_status=403,
        needs=("disabled",),
        anchor="disabled",
        ground="gated",
        fuzz=(fuzz(33, profiles=("disabled",), operations=("generate",)),),
        diff=("disabled-generate",),
    ),
    Requirement(
        "DISABLED-002",
        MUST,
        D,
        "it returns 403 Scale-out endpoints are disabled. Restart vllm serve with "
        "--enable-scale-out to enable them.",
        "the 403 carries the document's message",
        expected_status=403,
        needs=("disabled",),
        fuzz=(fuzz(32, profiles=("disabled",), operations=GATED_OPERATIONS, statuses=(403, 403)),),
        diff=("disabled-generate",),
    ),
    Requirement(
        "DISABLED-003",
        MUST,
        D,
        "With neither flag, it returns 403",
        "the 403 comes before validation: an invalid body also gets 403",
        expected_status=403,
        needs=("disabled",),
        fuzz=(
            fuzz(
                30,
                profiles=("disabled",),
                operations=GATED_OPERATIONS,
                checks=("negative_data_rejection",),
            ),
            fuzz(
                30,
                profiles=("disabled",),
                operations=GATED_OPERATIONS,
                groups=("negative",),
                statuses=(400, 400),
            ),
        ),
        diff=("disabled-invalid-body",),
    ),
    Requirement(
        "DISABLED-004",
        SHOULD,
        D,
        "With neither flag, /inference/v1/abort_requests, render and derender answer the same 403.",
        "abort, render and derender are gated with the same 403",
        source=Source.VLLM,
        expected_status=403,
        evidence="captures noflag_abort_403, noflag_render_*_403, noflag_derender_*_403",
        needs=("disabled",),
        fuzz=(fuzz(34, profiles=("disabled",), operations=GATED_OPERATIONS),),
        diff=("disabled-render", "disabled-derender", "disabled-abort"),
    ),
    Requirement(
        "TOKONLY-001",
        MUST,
        T,
        "--tokens-only always registers it",
        "a tokens-only server serves generate",
        expected_status=200,
        needs=("tokens-only",),
        anchor="tokens-only",
    ),
    Requirement(
        "TOKONLY-002",
        MUST,
        T,
        "skips loading the tokenizer",
        'output_mode "text" is refused with a 400 on a tokens-only server',
        expected_status=400,
        needs=("tokens-only",),
        diff=("tokens-only-text",),
    ),
    Requirement(
        "TOKONLY-003",
        MUST,
        T,
        "forces detokenize=False.",
        "sampling_params.detokenize true is overridden: tokens only, no text, 200",
        expected_status=200,
        needs=("tokens-only",),
    ),
    Requirement(
        "TOKONLY-004",
        MUST,
        T,
        "Stop strings (sampling_params.stop) are then rejected with a 400",
        "stop strings are a 400 on a tokens-only server",
        expected_status=400,
        needs=("tokens-only",),
        diff=("tokens-only-stop",),
    ),
    Requirement(
        "TOKONLY-005",
        MUST,
        T,
        "use stop_token_ids.",
        "stop_token_ids work on a tokens-only server",
        needs=("tokens-only",),
    ),
]
