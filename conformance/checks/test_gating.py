"""Registration: the 403 without either flag, and tokens-only."""

from __future__ import annotations

from conformance import api
from conformance.checks.test_stop import stop_token_case
from conformance.registry import checks
from conformance.requirements.model import (
    DISABLED_MESSAGE,
    GATED_OPERATIONS,
    MUST,
    SHOULD,
    Feature,
    Requirement,
    Source,
    fuzz,
)
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail

REQUIREMENTS = [
    Requirement(
        "DISABLED-001",
        MUST,
        Feature.DISABLED,
        "With neither flag, it returns 403",
        "with neither flag generate answers 403",
        expected_status=403,
        needs=("disabled",),
        anchor="disabled",
        fuzz=(fuzz(33, profiles=("disabled",), operations=("generate",)),),
        diff=("disabled-generate",),
    ),
    Requirement(
        "DISABLED-002",
        MUST,
        Feature.DISABLED,
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
        Feature.DISABLED,
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
        Feature.DISABLED,
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
        Feature.TOKENS_ONLY,
        "--tokens-only always registers it",
        "a tokens-only server serves generate",
        expected_status=200,
        needs=("tokens-only",),
        anchor="tokens-only",
    ),
    Requirement(
        "TOKONLY-002",
        MUST,
        Feature.TOKENS_ONLY,
        "skips loading the tokenizer",
        'output_mode "text" is refused with a 400 on a tokens-only server',
        expected_status=400,
        needs=("tokens-only",),
        diff=("tokens-only-text",),
    ),
    Requirement(
        "TOKONLY-003",
        MUST,
        Feature.TOKENS_ONLY,
        "forces detokenize=False.",
        "sampling_params.detokenize true is overridden: tokens only, no text, 200",
        expected_status=200,
        needs=("tokens-only",),
    ),
    Requirement(
        "TOKONLY-004",
        MUST,
        Feature.TOKENS_ONLY,
        "Stop strings (sampling_params.stop) are then rejected with a 400",
        "stop strings are a 400 on a tokens-only server",
        expected_status=400,
        needs=("tokens-only",),
        diff=("tokens-only-stop",),
    ),
    Requirement(
        "TOKONLY-005",
        MUST,
        Feature.TOKENS_ONLY,
        "use stop_token_ids.",
        "stop_token_ids work on a tokens-only server",
        needs=("tokens-only",),
    ),
]


@checks("DISABLED-001")
def test_disabled_403(tito: Session) -> None:
    api.rejected(tito, api.body(2), status=403, what="generate with neither flag")


@checks("DISABLED-002", builds_on=("DISABLED-001",))
def test_disabled_message(tito: Session) -> None:
    reply = api.rejected(tito, api.body(2), status=403, what="generate with neither flag")
    data = reply.json()
    message = (data.get("error") or {}).get("message") if isinstance(data, dict) else None
    if message != DISABLED_MESSAGE:
        fail(f"the 403 message is {message!r}, expected {DISABLED_MESSAGE!r}")


@checks("DISABLED-003", builds_on=("DISABLED-001",))
def test_disabled_before_validation(tito: Session) -> None:
    api.rejected(tito, {"token_ids": []}, status=403, what="invalid body with neither flag")


@checks("DISABLED-004")
def test_disabled_other_routes(tito: Session) -> None:
    for path, payload in (
        (api.ABORT, {"request_ids": []}),
        ("/v1/completions/render", {"prompt": "hi"}),
        ("/v1/completions/derender", {"generate_responses": []}),
    ):
        api.rejected(tito, payload, status=403, path=path, what=f"{path} with neither flag")


@checks("TOKONLY-001")
def test_tokens_only_generates(tito: Session) -> None:
    api.generate(tito, api.body(2))


@checks("TOKONLY-002")
def test_tokens_only_refuses_text(tito: Session) -> None:
    api.rejected(
        tito, api.body(2, top={"output_mode": "text"}), what='output_mode "text" on tokens-only'
    )


@checks("TOKONLY-003")
def test_tokens_only_forces_no_detokenize(tito: Session) -> None:
    data = api.generate(tito, api.body(2, detokenize=True))
    if any("text" in c for c in choices_of(data)):
        fail("detokenize true on tokens-only produced text")


@checks("TOKONLY-004")
def test_tokens_only_refuses_stop(tito: Session) -> None:
    api.rejected(tito, api.body(2, stop=["zz"]), what="stop strings on tokens-only")


@checks("TOKONLY-005")
def test_tokens_only_stop_token_ids(tito: Session) -> None:
    _, _, token, choice = stop_token_case(tito)
    # Only the stop itself: which stop_reason names it is STOP-001's, which runs here too (a
    # release without stop_reason fails that one requirement, not this one as well).
    if choice.get("finish_reason") != "stop":
        fail(
            f"stop_token_ids [{token}] on tokens-only: finish_reason "
            f"{choice.get('finish_reason')!r}, stop_reason {choice.get('stop_reason')!r}"
        )
