"""The generate-then-abort sequence tells an ignored abort from one it cannot judge. CI's
live-cpu run saw vLLM 0.32's API process, starved by its engine, answer an abort only as the
stream ended (2.7 s after it was sent), which the sequence used to file as "not stopped"; it
reads the timeline with the suite's rule (`in_flight.ran_past`)."""

from __future__ import annotations

import pytest

from conformance.fuzz.inflight import Outcome, stream_then_abort
from conformance.fuzz.stateful import _ends, _not_stopped
from conformance.in_flight import MIN_MARGIN_S
from mock_server.app import create_app
from mock_server.config import parse_args

LONG = {
    "token_ids": [1, 2, 3],
    "stream": True,
    "sampling_params": {"max_tokens": 2048, "ignore_eos": True},
}


def _outcome(answered: float | None, ended: float, sent: float = 0.005) -> Outcome:
    return Outcome(
        status=200, abort_status=200, abort_sent_s=sent, abort_answered_s=answered, ended_s=ended
    )


def test_a_stream_that_outlives_its_answered_abort_was_not_stopped() -> None:
    message = _not_stopped(_outcome(0.01, 0.01 + MIN_MARGIN_S + 1), 2048, 0.001)
    assert message is not None and "the abort did not stop it" in message


def test_the_margin_grows_with_the_servers_pace() -> None:
    """0.5 s after the answer is 10 gaps of a 50 ms/token server: too close to tell."""
    assert _not_stopped(_outcome(0.01, 0.51), 64, 0.05) is None
    assert _not_stopped(_outcome(0.01, 0.51), 64, 0.001) is not None


@pytest.mark.parametrize(("answered", "ended"), [(2.734, 2.734), (3.0, 2.9), (None, 1.0)])
def test_an_abort_answered_as_the_stream_ended_decides_nothing(
    answered: float | None, ended: float
) -> None:
    """Too close to tell: timing never decides a verdict, so no finding."""
    assert _not_stopped(_outcome(answered, ended), 2048, 0.001) is None


@pytest.mark.parametrize("defect", [(), ("abort-ignored",)])
def test_the_outcome_times_the_abort_against_the_stream(defect: tuple[str, ...]) -> None:
    argv = ["--enable-scale-out", "--mock-itl-ms", "1"]  # 2 s of stream: it can outlive
    argv += [a for d in defect for a in ("--mock-defect", d)]
    out = stream_then_abort(LONG, {}, {}, app=create_app(parse_args(argv, {})))
    assert out.status == 200 and out.abort_status == 200 and not out.error
    assert out.abort_answered_s is not None and out.ended_s is not None
    reason, tokens = _ends(out.stream)[0]
    if defect:  # the mock streams on after answering: outlived, a "not stopped" verdict
        assert (reason, tokens) == ("length", 2048)
        assert out.ended_s - out.abort_answered_s >= MIN_MARGIN_S
    else:
        assert reason == "abort" and tokens < 2048
