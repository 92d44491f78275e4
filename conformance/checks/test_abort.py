"""Aborting live requests, on both paths."""

from __future__ import annotations

from typing import Any

from conformance import api
from conformance.grounds import broken, builds_on
from conformance.inflight import script
from conformance.inflight.attempts import (
    MIN_GAP_S,
    Outcome,
    OutOfReach,
    Plan,
    Timeline,
    ids_for,
    overlapped,
    stream_with,
    whole_with,
)
from conformance.outcomes import Absent, Blocked, Failure
from conformance.registry import checks
from conformance.requirements.model import MUST, SHOULD, Feature, Proof, Requirement, Source, fuzz
from conformance.session import Session
from conformance.tito.semantics import check_spans, fail
from conformance.verdicts.reproducer import Evidence
from conformance.wire import Reply

REQUIREMENTS = [
    Requirement(
        "STOP-005",
        MUST,
        Feature.STOP,
        "`null` on EOS, length and abort.",
        "stop_reason is null on an aborted choice",
        needs=("abort",),
        diff=("abort-flow-stream",),
        fields=("stop_reason",),
    ),
    Requirement(
        "ABORT-001",
        MUST,
        Feature.ABORT,
        "It is registered wherever /inference/v1/generate is",
        "/inference/v1/abort_requests answers wherever generate does",
        expected_status=200,
        needs=("generate",),
        anchor="abort",
    ),
    Requirement(
        "ABORT-002",
        MUST,
        Feature.ABORT,
        "POST /inference/v1/abort_requests aborts in-flight requests.",
        "aborting a live stream ends it with a finish_reason abort chunk, then [DONE]",
        needs=("abort",),
        sequences=("generate-then-abort",),
        diff=("abort-flow-stream", "abort-flow-stream-n2-usage"),
        proofs=(Proof.STATEMENT, Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "ABORT-003",
        MUST,
        Feature.ABORT,
        "POST /inference/v1/abort_requests aborts in-flight requests.",
        "aborting a live non-streamed request answers it with finish_reason abort",
        needs=("abort",),
        diff=("abort-flow-nonstream",),
        proofs=(Proof.STATEMENT, Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "ABORT-004",
        SHOULD,
        Feature.ABORT,
        "An aborted non-streamed request answers 200 with the tokens generated so far.",
        "an aborted non-streamed request keeps its partial output",
        source=Source.VLLM,
        evidence="capture abort_target_nonstream (65 tokens, finish_reason abort)",
        needs=("abort",),
        diff=("abort-flow-nonstream",),
        proofs=(Proof.STATEMENT,),
    ),
    Requirement(
        "ABORT-005",
        MUST,
        Feature.ABORT,
        "A missing request_ids returns a 400.",
        "abort without request_ids is a 400",
        expected_status=400,
        needs=("abort",),
        diff=("abort-missing-ids",),
    ),
    Requirement(
        "ABORT-006",
        MUST,
        Feature.ABORT,
        "The response is empty and the abort finishes in the background.",
        "abort answers 200 with an empty body",
        expected_status=200,
        needs=("abort",),
        fuzz=(fuzz(130, operations=("abortRequests",)),),
        sequences=("generate-then-abort",),
        diff=("abort-unknown-id", "abort-string-ids", "abort-empty-list"),
    ),
]


FINISH = "choices[0].finish_reason"
"""Where a replay shows how the request ended (the last event, or the answer, that says)."""
LONG = api.body(None, ignore_eos=True)  # the server's default max_tokens: a long request


def aborted_stream(
    s: Session, path: str = api.ABORT, auth: bool = True
) -> tuple[Timeline, Outcome]:
    """A stream aborted after its first token, as long as it takes to provably overlap."""

    def attempt(plan: Plan, number: int) -> Timeline:
        def abort(request_id: str) -> Reply:
            return s.client.post(path, {"request_ids": ids_for(request_id)}, auth=auth)

        return stream_with(s, s.rid(f"abort-stream-{number}"), plan, abort)

    return overlapped(s, attempt, f"aborting a stream through {path}")


def stream_case(s: Session) -> tuple[Timeline, Outcome]:
    return s.remember("abort-stream", lambda: aborted_stream(s))


def judge_abort_landed(s: Session, line: Timeline, outcome: Outcome, what: str) -> None:
    """The abort was answered 200 and the request ended as aborted (ABORT-002/003, 007). One
    cut short under another reason than 'abort', where the server misnames every reason, is
    GEN-RESP-002's (blocked on it). Each failure's reproducer is the attempt as a script."""
    if line.action is not None and line.action.status != 200:
        seen = Evidence("action", "status", line.action.status)
        raise Failure(
            f"the abort of {what}: expected HTTP 200, got {api.answer_of(line.action)}",
            evidence=str(seen),
            reproducer=script.of_line(f"the abort of {what}", line, str(seen)),
        )
    if outcome is Outcome.CUT:
        builds_on(s, "GEN-RESP-002")
    if outcome in (Outcome.IGNORED, Outcome.CUT):
        why = (
            "ran to its end although the abort reached it in flight"
            if outcome is Outcome.IGNORED
            else "ended without a finish_reason 'abort' chunk"
        )
        seen = Evidence("answer" if line.whole else "stream", FINISH, line.finish_reason)
        raise Failure(
            f"{what} {why}: {line.describe()}",
            evidence=str(seen),
            reproducer=script.of_line(f"{what} {why}", line, str(seen)),
        )


def landed_or_skip(line: Timeline, outcome: Outcome) -> None:
    """What comes after an abort can only be judged where the abort landed (ABORT-002's)."""
    if outcome is not Outcome.LANDED:
        raise Absent(f"not applicable: the abort did not land ({outcome}; judged by ABORT-002)")


@checks("ABORT-001", needs=("generate",))
def test_abort_registered(tito: Session) -> None:
    reply = tito.client.post(api.ABORT, {"request_ids": []})  # sent, so a failure shows it
    if reply.status != 200:  # a 5xx is no route that aborts either: the probe finds none
        raise api.StatusMismatch(
            f"generate is served but POST {api.ABORT} of no ids answered {reply.status}: "
            f"{reply.body[:200]!r}",
            reply,
        )


@checks("ABORT-002", needs=("abort",), builds_on=("ABORT-001", "STREAM-001"))
def test_abort_stream(tito: Session) -> None:
    line, outcome = stream_case(tito)
    judge_abort_landed(tito, line, outcome, "the aborted stream")
    if not line.done and broken(tito, "STREAM-002") is None:  # no [DONE] at all: STREAM-002's
        what = "the aborted stream did not end with data: [DONE]"
        raise Failure(f"{what}: {line.describe()}", reproducer=script.of_line(what, line))


def aborted_choice(s: Session) -> dict[str, Any]:
    """The last chunk of the aborted stream's choice (where the abort landed)."""
    line, outcome = stream_case(s)
    landed_or_skip(line, outcome)
    last = [c for c in line.choices() if c.get("finish_reason") == "abort"][-1]
    return last  # landed: a chunk said finish_reason abort


@checks("STOP-005", needs=("abort",), builds_on=("ABORT-001", "STREAM-001"))
def test_abort_stop_reason_null(tito: Session) -> None:
    last = aborted_choice(tito)
    if last.get("stop_reason") is not None:
        fail(f"an aborted choice has stop_reason {last.get('stop_reason')!r}, expected null")


@checks("WV-003", needs=("abort",), builds_on=("ABORT-001", "STREAM-001"))
def test_abort_chunk_weight_versions(tito: Session) -> None:
    spans = aborted_choice(tito).get("weight_versions")
    if not isinstance(spans, list):
        builds_on(tito, "WV-001")  # missing everywhere: WV-001's
        fail(f"the last chunk after an abort has weight_versions {spans!r}")


@checks("WV-004", needs=("abort",), builds_on=("ABORT-001", "STREAM-001", "STREAM-003", "WV-003"))
def test_abort_chunk_spans_cover_output(tito: Session) -> None:
    spans = aborted_choice(tito).get("weight_versions")
    if not isinstance(spans, list):
        builds_on(tito, "WV-003")
    try:
        line, last = stream_case(tito)[0], aborted_choice(tito)
        check_spans(spans, line.tokens_of(last.get("index")), "the last chunk after an abort")
    except AssertionError:
        builds_on(tito, "WV-002")  # the same spans are wrong non-streamed too: WV-002's
        raise


def aborted_whole(
    s: Session, shares: tuple[float, ...] = (0.25, 0.1, 0.0), queue: bool = True
) -> tuple[Timeline, Outcome]:
    """A non-streamed request aborted a share into its expected generation (a quarter, then
    earlier each time the abort came too close to the end); `queue`: it may wait behind
    others, and be aborted there before its first token."""

    def make() -> tuple[Timeline, Outcome]:
        def attempt(plan: Plan, number: int) -> Timeline:
            def abort(request_id: str) -> Reply:
                # also the bare id: a server that drops the prefix fails GEN-RESP-004, not this
                return s.client.post(api.ABORT, {"request_ids": ids_for(request_id)})

            pace = s.limits  # a quarter into the expected generation, then earlier each try
            share = shares[min(number, len(shares) - 1)]
            delay = (pace.ttft_s or 0.0) + share * (pace.itl_s or 0.0) * plan.max_tokens
            rid = s.rid(f"abort-whole-{number}")
            return whole_with(s, rid, plan, max(delay, MIN_GAP_S), abort)

        what = "aborting a non-streamed request"
        return overlapped(s, attempt, what, queue=queue, requirement="ABORT-003")

    return s.remember(f"abort-whole-{shares}-{queue}", make)


@checks("ABORT-003", needs=("abort",), builds_on=("ABORT-001",))
def test_abort_non_streamed(tito: Session) -> None:
    line, outcome = aborted_whole(tito)
    if outcome is Outcome.CUT and not any(
        isinstance(c.get("finish_reason"), str) for c in line.choices()
    ):
        builds_on(tito, "GEN-RESP-002")  # no finish_reason at all to read the abort from
    if outcome is Outcome.IGNORED:  # aborted by the id it sent: one the server renamed is
        builds_on(tito, "GEN-RESP-005")  # GEN-RESP-005's (a stream aborts by the id it names)
    judge_abort_landed(tito, line, outcome, "the aborted non-streamed request")


@checks("ABORT-004", needs=("abort",), builds_on=("ABORT-001",))
def test_abort_keeps_partial_output(tito: Session) -> None:
    surely = 2 * (tito.limits.ttft_s or 0.0) + 4 * (tito.limits.itl_s or 0.0) + 0.05
    for shares in ((0.25, 0.1, 0.0), (0.5, 0.25)):  # later when the first came before a token
        try:
            line, outcome = aborted_whole(tito, shares, queue=False)  # it must have run
        except AssertionError as exc:  # the abort itself broke: ABORT-003 says how
            raise Blocked("ABORT-003", f"aborting a non-streamed request: {exc}") from exc
        landed_or_skip(line, outcome)
        if line.tokens:
            return
        if (line.action_sent_s or 0.0) >= surely:
            fail(f"the aborted request returned no tokens: {line.describe()}")
    raise OutOfReach(
        f"the abort landed before the first token could exist ({line.describe()}); "
        f"a request of this server has its first token after {surely * 1000:.0f} ms"
    )


@checks("ABORT-005", needs=("abort",), builds_on=("ABORT-001",))
def test_abort_missing_ids(tito: Session) -> None:
    api.rejected(tito, {}, path=api.ABORT, what="abort without request_ids")


@checks("ABORT-006", needs=("abort",), builds_on=("ABORT-001",))
def test_abort_empty_200(tito: Session) -> None:
    reply = tito.client.post(api.ABORT, {"request_ids": [f"generate-tokens-{tito.rid('none')}"]})
    api.empty_200(reply, "abort of an unknown id")
