"""Core generate, the answer: token ids, finish reasons, usage, request ids, optional outputs."""

from __future__ import annotations

from conformance import api
from conformance.checks.test_core import basic, max_tokens_case
from conformance.grounds import TEXT_GROUND, builds_on
from conformance.grounds.probes import finish_broken, ids_disowned, text_answer, usage_broken
from conformance.registry import checks
from conformance.requirements.model import MUST, SHOULD, Feature, Requirement, Source, fuzz
from conformance.session import Session
from conformance.tito.outputs import FLAG_OUTPUTS
from conformance.tito.semantics import check_usage, choices_of, fail

REQUIREMENTS = [
    Requirement(
        "GEN-RESP-001",
        MUST,
        Feature.CORE,
        "Generated token IDs.",
        "every choice carries token_ids, non-negative integers, no more than max_tokens",
        needs=("generate",),
        fields=("token_ids",),
    ),
    Requirement(
        "GEN-RESP-002",
        MUST,
        Feature.CORE,
        "`stop`, `length` or `abort`.",
        "every non-streamed choice has a finish_reason among stop, length, abort",
        needs=("generate",),
        fields=("finish_reason",),
    ),
    Requirement(
        "GEN-RESP-003",
        MUST,
        Feature.CORE,
        "The top level adds request_id, usage, prompt_token_ids and prompt_logprobs.",
        "usage counts equal the prompt and the tokens returned",
        needs=("generate",),
    ),
    Requirement(
        "GEN-RESP-004",
        MUST,
        Feature.CORE,
        "The request ID is the request_id the server returned: the X-Request-Id header or body "
        "request_id you sent, prefixed with generate-tokens-.",
        "a body request_id comes back as generate-tokens-<id>",
        needs=("generate",),
        fuzz=(fuzz(70, checks=("request_id_prefix",)),),
        diff=("request-id-body",),
        fields=("request_id",),
    ),
    Requirement(
        "GEN-RESP-005",
        MUST,
        Feature.CORE,
        "the X-Request-Id header or body request_id you sent, prefixed with generate-tokens-.",
        "an X-Request-Id header comes back as generate-tokens-<header>",
        needs=("generate",),
        diff=("request-id-header", "stream-request-id-header"),
    ),
    Requirement(
        "GEN-RESP-006",
        SHOULD,
        Feature.CORE,
        "When both the X-Request-Id header and a body request_id are sent, the header wins.",
        "X-Request-Id takes precedence over the body request_id",
        source=Source.VLLM,
        evidence="vllm-source-notes §3.5 (_base_request_id)",
        needs=("generate",),
        diff=("request-id-both",),
    ),
    Requirement(
        "GEN-RESP-007",
        MUST,
        Feature.CORE,
        "the last two need `--enable-return-routed-experts` / `--return-sampling-mask`.",
        "without those flags routed_experts and sampling_mask are null or absent",
        needs=("generate",),
    ),
]


@checks("GEN-RESP-001")
def test_token_ids_form(tito: Session) -> None:
    for i, choice in enumerate(max_tokens_case(tito)):
        ids = choice.get("token_ids")
        if not isinstance(ids, list) or any(
            not isinstance(t, int) or isinstance(t, bool) or t < 0 for t in ids
        ):
            fail(f"choice {i} token_ids {ids!r:.100} are not non-negative integers")
        if len(ids) > 5:
            fail(f"choice {i}: max_tokens 5 gave {len(ids)} token_ids")
    disowned = ids_disowned(tito)
    if disowned:
        fail(disowned)


@checks("GEN-RESP-002")
def test_finish_reason_set(tito: Session) -> None:
    n = tito.limits.n(2)
    for i, choice in enumerate(choices_of(api.generate(tito, api.seeded(6, n=n)))):
        if choice.get("finish_reason") not in ("stop", "length", "abort"):
            fail(f"choice {i} finish_reason is {choice.get('finish_reason')!r}")
    why = finish_broken(tito)  # what the checks of a reason stand on, judged here
    if why is not None:
        fail(why)


@checks("GEN-RESP-003")
def test_usage_counts(tito: Session) -> None:
    check_usage(basic(tito), len(api.PROMPT))
    check_usage(api.generate(tito, api.seeded(5, n=tito.limits.n(2))), len(api.PROMPT))
    if "text-mode" in tito.features.names():  # text mode counts the same tokens
        builds_on(tito, TEXT_GROUND)  # where its answers carry no choices at all
        check_usage(text_answer(tito), len(api.PROMPT))
    why = usage_broken(tito)  # what the token counts stand on, judged here too
    if why is not None:
        fail(why)


def names(returned: object, rid: str) -> bool:
    """The returned request_id is built from `rid` (with or without the documented prefix)."""
    return isinstance(returned, str) and returned in (rid, f"generate-tokens-{rid}")


@checks("GEN-RESP-004")
def test_request_id_prefix(tito: Session) -> None:
    rid = tito.rid("body")
    data = api.generate(tito, api.body(1, top={"request_id": rid}))
    if data.get("request_id") != f"generate-tokens-{rid}":
        fail(
            f"body request_id {rid!r} came back as {data.get('request_id')!r}, expected "
            f"'generate-tokens-{rid}'"
        )


@checks("GEN-RESP-005")
def test_request_id_from_header(tito: Session) -> None:
    rid = tito.rid("header")
    data = api.generate(tito, api.body(1), headers={"X-Request-Id": rid})
    if not names(data.get("request_id"), rid):  # the prefix itself is GEN-RESP-004's
        fail(f"X-Request-Id {rid!r} came back as {data.get('request_id')!r}")


@checks("GEN-RESP-006", builds_on=("GEN-RESP-005",))
def test_header_wins_over_body(tito: Session) -> None:
    header, body_id = tito.rid("header"), tito.rid("body")
    data = api.generate(
        tito, api.body(1, top={"request_id": body_id}), headers={"X-Request-Id": header}
    )
    if not names(data.get("request_id"), header):
        fail(
            f"with header {header!r} and body {body_id!r} the request_id is "
            f"{data.get('request_id')!r}"
        )


@checks("GEN-RESP-007")
def test_optional_outputs_off_by_default(tito: Session) -> None:
    """Each field is null unless its flag is on: on, it carries the flag's output in its
    documented form (detected by the probe, or claimed with --expect)."""
    detected = set(tito.features.names())
    for i, choice in enumerate(choices_of(basic(tito))):
        for output in FLAG_OUTPUTS:
            on = output.feature in detected or output.feature in tito.config.expect
            value = choice.get(output.key)
            if on and value is None:
                fail(f"choice {i} has no {output.key} although the server has {output.flag}")
            if not on and value is not None:
                fail(
                    f"choice {i} carries {output.key} although the probe's answer had none "
                    f"({tito.features.evidence.get(output.feature, '')}): without "
                    f"{output.flag} it must be null"
                )
            problem = output.problem(choice) if value is not None else None
            if problem is not None:
                fail(
                    f"choice {i} carries {output.key} that is no {output.flag} output "
                    f"({problem}); without the flag it must be null"
                )
