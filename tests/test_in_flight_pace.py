"""An ignored action needs proof the request was in flight: a fast server's whole answer that
fits before the action was even sent is too close to judge, however late the client read it."""

from __future__ import annotations

from conformance.in_flight import Outcome, Timeline


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
