"""The generate-then-abort sequence tells an ignored abort from one it cannot judge. CI's
live-cpu run saw vLLM 0.32's API process, starved by its engine, answer an abort only as the
stream ended (2.7 s after it was sent), which the sequence used to file as "not stopped"; it
judges by the suite's one proof obligation (`proof.BOUND`): never the client's pace."""

from __future__ import annotations

import pytest

from conformance.fuzz.abort_stream import Outcome, stream_then_abort
from conformance.fuzz.stateful import _ends, _not_stopped
from mock_server.behaviour.config import parse_args
from mock_server.serve.app import create_app

LONG = {
    "token_ids": [1, 2, 3],
    "stream": True,
    "sampling_params": {"max_tokens": 2048, "ignore_eos": True},
}


def _outcome(answered: float | None, ended: float, sent: float = 0.005) -> Outcome:
    return Outcome(
        status=200, abort_status=200, abort_sent_s=sent, abort_answered_s=answered, ended_s=ended
    )


def test_an_abort_answered_before_the_fastest_completion_could_end_was_not_stopped() -> None:
    # answered at 10 ms; the same request never completed in under 2 s non-streamed
    message = _not_stopped(_outcome(0.01, 1.5), 2048, 2.0)
    assert message is not None and "the abort did not stop it" in message
    assert "evidence (bound)" in message


def test_a_late_read_is_never_evidence() -> None:
    """The issue's busy client: the whole answer took 10 ms on the server, the client read its
    end at 429 ms; the abort was answered at 223 ms. However late the end, no finding."""
    assert _not_stopped(_outcome(0.223, 0.429, sent=0.172), 95, 0.010) is None
    assert _not_stopped(_outcome(0.223, 30.0, sent=0.172), 95, 0.010) is None


def test_no_fastest_completion_decides_nothing() -> None:
    assert _not_stopped(_outcome(0.01, 5.0), 2048, None) is None


@pytest.mark.parametrize(("answered", "ended"), [(2.734, 2.734), (3.0, 2.9), (None, 1.0)])
def test_an_abort_answered_as_the_stream_ended_decides_nothing(
    answered: float | None, ended: float
) -> None:
    """Too close to tell: an answer after half the fastest completion proves nothing."""
    assert _not_stopped(_outcome(answered, ended), 2048, 2.8) is None


@pytest.mark.parametrize("defect", [(), ("abort-ignored",)])
def test_the_outcome_times_the_abort_against_the_stream(defect: tuple[str, ...]) -> None:
    argv = ["--enable-scale-out", "--mock-itl-ms", "1"]  # 2 s of stream: it can outlive
    argv += [a for d in defect for a in ("--mock-defect", d)]
    out = stream_then_abort(LONG, {}, {}, app=create_app(parse_args(argv, {})))
    assert out.status == 200 and out.abort_status == 200 and not out.error
    assert out.abort_answered_s is not None and out.ended_s is not None
    reason, tokens = _ends(out.stream)[0]
    if defect:  # the mock streams on after answering: 2 s of stream, a "not stopped" verdict
        assert (reason, tokens) == ("length", 2048)
        assert _not_stopped(out, 2048, out.ended_s) is not None
    else:
        assert reason == "abort" and tokens < 2048
