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
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail


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
