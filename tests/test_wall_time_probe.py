"""The probe's independent generates go out side by side (issue 19): against a server whose
first token takes seconds, the probe waits for a few first tokens, not one per request; and a
server with a small max_num_seqs only queues them, so it learns the same as one that does not.
"""

from __future__ import annotations

import time

from conformance.run.embedded import embedded_mock
from conformance.server.features import WAVE, Features
from conformance.server.limits import Limits, queued_wait
from conformance.session import Session

TTFT_S = 1.0
SLOW = ("--mock-ttft-ms", str(int(TTFT_S * 1000)))


def _probe(*flags: str) -> tuple[Features, Limits, float]:
    with embedded_mock("scale-out", flags) as (_, config):
        started = time.monotonic()
        session = Session.open(config)
        took = time.monotonic() - started
        session.close()
    return session.features, session.limits, took


def test_a_slow_servers_probe_waits_for_a_few_first_tokens() -> None:
    features, limits, took = _probe(*SLOW)
    # One after the other it sent 13 generates (13 s here); side by side it waits for five:
    # the first, the features' together, the answer size, n = 64, and the pace alone.
    assert took < 9 * TTFT_S, took
    assert features.dp_size == 1 and features.tokenizer and features.dev_mode
    assert features.logprob_form == "integer"  # the dev abort-all came after the generates
    assert limits.max_n is None and limits.max_logprobs == 20
    assert limits.ttft_s is not None and limits.ttft_s >= TTFT_S


def test_a_small_max_num_seqs_queues_the_probe_and_it_learns_the_same() -> None:
    flags = (*SLOW, "--data-parallel-size", "2")
    queued, queued_limits, _ = _probe(*flags, "--max-num-seqs", "1")
    roomy, _, _ = _probe(*flags)
    assert queued.names() == roomy.names()
    assert queued.dp_size == roomy.dp_size == 2
    assert queued.logprob_form == roomy.logprob_form == "integer"  # none was aborted
    assert queued_limits.max_n == 1


def test_a_request_sent_with_others_may_wait_for_all_of_them() -> None:
    assert queued_wait(30.0, 0.01, WAVE) == 30.0  # a fast server: the configured timeout
    assert queued_wait(30.0, 3.0, WAVE) >= WAVE * 3.0  # one at a time, each 3 s: all of them
