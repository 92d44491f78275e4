"""An ignored action needs proof the request was in flight: a fast server's whole answer that
fits before the action was even sent is too close to judge, however late the client read it."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from conformance.in_flight import MIN_GAP_S, Outcome, Timeline, whole_with


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
    # CI, loaded: the mock without latency (0.02 ms/token) made 4092 tokens in ~80 ms; the
    # client sent the abort at 155 ms and read the end at 330 ms
    assert line(4092, 0.155, 0.163, 0.330).outcome(0.00002) is Outcome.TOO_CLOSE


def test_a_paced_answer_that_outlives_the_action_was_ignored() -> None:
    # 1 ms/token: 4092 tokens take 4 s, far beyond the abort sent at 155 ms
    assert line(4092, 0.155, 0.163, 4.2).outcome(0.001) is Outcome.IGNORED
    assert line(4092, 0.155, 0.163, 4.2).outcome(0.0) is Outcome.IGNORED, "no pace: as before"


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
        return SimpleNamespace(status=200, body=b"", json=lambda: answer)


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
        )
        line = whole_with(session, "r", 4092, MIN_GAP_S, server.abort)
        landed += line.finish_reason == "abort"
    assert landed >= 3, f"{landed} of 5 aborts landed in a 4 ms request"
