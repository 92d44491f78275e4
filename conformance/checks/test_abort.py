"""Aborting live requests, on both paths."""

from __future__ import annotations

import time

import pytest

from conformance import api
from conformance.http import Reply
from conformance.in_flight import (
    Inconclusive,
    Outcome,
    Timeline,
    overlapped,
    stream_with,
    whole_with,
)
from conformance.registry import checks
from conformance.semantics import check_spans, fail
from conformance.session import Session

LONG = api.body(None, ignore_eos=True)  # the server's default max_tokens: a long request


def aborted_stream(
    s: Session, path: str = api.ABORT, auth: bool = True
) -> tuple[Timeline, Outcome]:
    """A stream aborted after its first token, as long as it takes to provably overlap."""

    def attempt(max_tokens: int, number: int) -> Timeline:
        def abort(request_id: str) -> Reply:
            return s.client.post(path, {"request_ids": ids_for(request_id)}, auth=auth)

        return stream_with(s, s.rid(f"abort-stream-{number}"), max_tokens, abort)

    return overlapped(s, attempt, f"aborting a stream through {path}")


def ids_for(request_id: str) -> list[str]:
    """The id to abort, with and without the documented prefix: a server that gets the prefix
    wrong fails GEN-RESP-004, not every abort check."""
    bare = request_id.removeprefix("generate-tokens-")
    return list(dict.fromkeys([request_id, f"generate-tokens-{bare}", bare]))


def stream_case(s: Session) -> tuple[Timeline, Outcome]:
    return s.remember("abort-stream", lambda: aborted_stream(s))


def judge_abort_landed(line: Timeline, outcome: Outcome, what: str) -> None:
    """The abort was answered 200 and the request ended as aborted (ABORT-002/003, 007)."""
    if line.action is not None:
        api.status_is(line.action, 200, f"the abort of {what}")
    if outcome is Outcome.IGNORED:
        fail(
            f"{what} ran to its end although the abort was answered well before: {line.describe()}"
        )
    if outcome is Outcome.CUT:
        fail(f"{what} ended without a finish_reason 'abort' chunk: {line.describe()}")


def landed_or_skip(line: Timeline, outcome: Outcome) -> None:
    """What comes after an abort can only be judged where the abort landed (ABORT-002's)."""
    if outcome is not Outcome.LANDED:
        pytest.skip(f"not applicable: the abort did not land ({outcome}; judged by ABORT-002)")


@checks("ABORT-001", needs=("generate",))
def test_abort_registered(tito: Session) -> None:
    reply = tito.client.post(api.ABORT, {"request_ids": []})  # sent, so a failure shows it
    if reply.status in (404, 405):
        fail(f"generate is served but POST {api.ABORT} answered {reply.status}")


@checks("ABORT-002", needs=("abort",))
def test_abort_stream(tito: Session) -> None:
    line, outcome = stream_case(tito)
    judge_abort_landed(line, outcome, "the aborted stream")
    if not line.done:
        fail(f"the aborted stream did not end with data: [DONE]: {line.describe()}")


@checks("STOP-005", needs=("abort",))
def test_abort_stop_reason_null(tito: Session) -> None:
    line, outcome = stream_case(tito)
    landed_or_skip(line, outcome)
    last = [c for c in line.choices() if c.get("finish_reason")][-1]
    if last.get("stop_reason") is not None:
        fail(f"an aborted choice has stop_reason {last.get('stop_reason')!r}, expected null")


@checks("WV-003", needs=("abort",))
def test_abort_chunk_weight_versions(tito: Session) -> None:
    line, outcome = stream_case(tito)
    landed_or_skip(line, outcome)
    last = [c for c in line.choices() if c.get("finish_reason")][-1]
    check_spans(last.get("weight_versions"), line.tokens, "the last chunk after an abort")


def aborted_whole(s: Session) -> tuple[Timeline, Outcome]:
    """A non-streamed request aborted a quarter into its expected generation."""

    def make() -> tuple[Timeline, Outcome]:
        def attempt(max_tokens: int, number: int) -> Timeline:
            def abort(request_id: str) -> Reply:
                # also the bare id: a server that drops the prefix fails GEN-RESP-004, not this
                return s.client.post(api.ABORT, {"request_ids": ids_for(request_id)})

            pace = s.limits  # a quarter into the expected generation, then earlier each try
            share = (0.25, 0.1, 0.0)[min(number, 2)]
            delay = (pace.ttft_s or 0.0) + share * (pace.itl_s or 0.0) * max_tokens
            rid = s.rid(f"abort-whole-{number}")
            return whole_with(s, rid, max_tokens, max(delay, 0.005), abort)

        return overlapped(s, attempt, "aborting a non-streamed request")

    return s.remember("abort-whole", make)


@checks("ABORT-003", needs=("abort",))
def test_abort_non_streamed(tito: Session) -> None:
    line, outcome = aborted_whole(tito)
    judge_abort_landed(line, outcome, "the aborted non-streamed request")


@checks("ABORT-004", needs=("abort",))
def test_abort_keeps_partial_output(tito: Session) -> None:
    line, outcome = aborted_whole(tito)
    landed_or_skip(line, outcome)
    if line.tokens:
        return
    surely = 2 * (tito.limits.ttft_s or 0.0) + 4 * (tito.limits.itl_s or 0.0) + 0.05
    if (line.action_sent_s or 0.0) < surely:
        raise Inconclusive(
            f"the abort landed before the first token could exist ({line.describe()}); "
            f"a request of this server has its first token after {surely * 1000:.0f} ms"
        )
    fail(f"the aborted request returned no tokens: {line.describe()}")


@checks("ABORT-005", needs=("abort",))
def test_abort_missing_ids(tito: Session) -> None:
    api.rejected(tito, {}, path=api.ABORT, what="abort without request_ids")


@checks("ABORT-006", needs=("abort",))
def test_abort_empty_200(tito: Session) -> None:
    reply = tito.client.post(api.ABORT, {"request_ids": [f"generate-tokens-{tito.rid('none')}"]})
    api.status_is(reply, 200, "abort of an unknown id")
    if reply.body.strip():
        fail(f"the abort response is not empty: {reply.body[:200]!r}")


@checks(
    "ABORT-007",
    needs=(
        "tokens-only",
        "legacy-abort",
    ),
)
def test_legacy_abort(tito: Session) -> None:
    api.rejected(
        tito, {}, path=api.LEGACY_ABORT, auth=False, what="/abort_requests without request_ids"
    )
    line, outcome = aborted_stream(tito, api.LEGACY_ABORT, auth=False)
    judge_abort_landed(line, outcome, "a stream aborted through /abort_requests")


@checks("ABORT-008", needs=("generate",))
def test_no_legacy_abort_elsewhere(tito: Session) -> None:
    if tito.features.tokens_only:
        pytest.skip("not applicable: the server is tokens-only")
    reply = tito.client.post(api.LEGACY_ABORT, {"request_ids": []}, auth=False)
    if reply.status not in (404, 405) and b"aborted" not in reply.body:
        fail(f"/abort_requests answered {reply.status} on a server without --tokens-only")


@checks("ABORT-009", needs=("mock-stats",))
def test_disconnect_aborts(tito: Session) -> None:
    before = tito.client.get("/mock/stats", auth=False).json()
    with tito.client.stream(api.GENERATE, {**LONG, "stream": True}) as st:
        api.read_stream(st, stop_after_tokens=1, s=tito)
    ends = time.monotonic() + 3
    while time.monotonic() < ends:
        after = tito.client.get("/mock/stats", auth=False).json()
        if after.get("aborted", 0) > before.get("aborted", 0):
            return
        time.sleep(0.05)
    fail(f"a client disconnected mid-stream but the request was not aborted: stats {after}")
