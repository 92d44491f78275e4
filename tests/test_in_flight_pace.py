"""An ignored action needs proof the request was in flight: a fast server's whole answer that
fits before the action was even answered is too close to judge, however late the client read
it; the timeline alone never says "ignored" (`proof.BOUND` does)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from conformance.inflight.attempts import MIN_GAP_S, Outcome, Timeline, whole_with
from conformance.inflight.proof import bound_proof


def line(max_tokens: int, sent_s: float, answered_s: float, ended_s: float) -> Timeline:
    chunk = {"choices": [{"index": 0, "token_ids": [1] * max_tokens, "finish_reason": "length"}]}
    return Timeline(
        max_tokens=max_tokens,
        request_id="r",
        chunks=[(0.005, chunk)],
        first_token_s=0.005,
        action_sent_s=sent_s,
        action_answered_s=answered_s,
        ended_s=ended_s,
    )


def test_a_fast_answer_read_late_is_too_close() -> None:
    # CI, loaded: the mock without latency made 4092 tokens in ~10 ms; the client sent the
    # abort at 155 ms and read the end at 330 ms: the timeline says only "ran to its end"
    late = line(4092, 0.155, 0.163, 0.330)
    assert late.outcome() is Outcome.RAN
    assert bound_proof(late.sent(), late.first_token_s, 0.010) is None


def test_a_paced_answer_that_outlives_the_action_was_ignored() -> None:
    # 1 ms/token: 4092 tokens never complete in under 4 s; the abort was answered at 163 ms
    paced = line(4092, 0.155, 0.163, 4.2)
    assert paced.outcome() is Outcome.RAN
    assert bound_proof(paced.sent(), paced.first_token_s, 4.1) is not None


def test_an_action_before_the_request_was_known_proves_nothing() -> None:
    early = line(4092, 0.001, 0.003, 4.2)  # sent before the first token at 5 ms
    assert bound_proof(early.sent(), early.first_token_s, 4.1) is None


class _FastServer:
    """A non-streamed generate that ends `runs_s` after it arrives, unless an abort comes first:
    an unpaced server whose whole context takes a few milliseconds (the mock: about 8 ms for
    4,092 tokens)."""

    def __init__(self, runs_s: float) -> None:
        self.runs_s = runs_s
        self.aborted = threading.Event()
        self.running = threading.Event()

    def abort(self, request_id: str) -> Any:
        if self.running.is_set():
            self.aborted.set()
        return SimpleNamespace(status=200, body=b"")

    def post(self, path: str, payload: Any, **_: Any) -> Any:
        self.running.set()
        reason = "abort" if self.aborted.wait(self.runs_s) else "length"
        self.running.clear()
        answer = {"choices": [{"index": 0, "token_ids": [1], "finish_reason": reason}]}
        return SimpleNamespace(
            status=200, body=b"", json=lambda: answer, exchange=SimpleNamespace(body_sent_at=None)
        )


def test_an_action_reaches_a_request_that_lasts_a_few_milliseconds() -> None:
    """CI on a loaded machine: the first abort went out 5 ms after the request, which the mock
    had answered in full by then, on every try (ABORT-003 inconclusive). Actions now start
    MIN_GAP_S after the request and repeat as often."""
    landed = 0
    for _ in range(5):
        server = _FastServer(runs_s=0.004)
        session: Any = SimpleNamespace(
            client=server,
            timeout_for=lambda tokens: 5.0,
            limits=SimpleNamespace(seconds_for=lambda tokens: 0.0),
            observe=lambda *args: None,
            state=SimpleNamespace(holds=lambda ids: None),  # engines that name nothing
        )
        line = whole_with(session, "r", 4092, MIN_GAP_S, server.abort)
        landed += line.finish_reason == "abort"
    assert landed >= 3, f"{landed} of 5 aborts landed in a 4 ms request"
