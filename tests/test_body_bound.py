"""A correct answer is never cut off as too large: the client's body bound grows with what a
request asks for (choices x tokens, logprobs) and with a stream's per-event framing. WV-009
once failed on the zero-latency mock: its held stream (4 sequences, 20 logprobs a token) sent
more than a bound learned from a plain body allowed."""

from __future__ import annotations

import json

from conformance import api
from conformance.run.embedded import embedded_mock
from conformance.server.limits import LOGPROB_BYTES, Limits
from conformance.session import Session
from conformance.wire.bounded import EVENT_BYTES, MAX_BODY, MAX_EVENTS, MAX_LINE, events_for
from conformance.wire.exchange import Exchange
from conformance.wire.nesting import MAX_DEPTH, too_deep
from conformance.wire.sender import MAX_ANSWER


def _ask(tokens: int, n: int = 1, **more: object) -> dict:
    return {"token_ids": [1], "sampling_params": {"max_tokens": tokens, "n": n, **more}}


def test_the_bound_grows_with_choices_tokens_and_logprobs() -> None:
    limits = Limits(4096, bytes_per_token=10)
    plain = limits.body_bound(_ask(1000))
    assert plain == MAX_BODY + 2 * 10 * 1000
    assert limits.body_bound(_ask(1000, 4)) - MAX_BODY == 4 * (plain - MAX_BODY)
    with_logprobs = limits.body_bound(_ask(1000, logprobs=20))
    assert with_logprobs - plain == 2 * LOGPROB_BYTES * 21 * 1000
    # logprobs are bounded even before the per-token size is learned
    assert Limits(4096).body_bound(_ask(1000, logprobs=5)) > MAX_BODY
    # nothing asked that grows an answer: the default
    assert Limits(4096).body_bound(_ask(1000)) == MAX_BODY
    assert limits.body_bound({"sampling_params": "garbage"}) == MAX_BODY


def test_a_stream_may_spend_its_framing_on_every_event() -> None:
    with embedded_mock("scale-out") as (_, config):
        session = Session.open(config)
        try:
            answer = Exchange("POST", "/", {}, None)
            plain = session.client._max_bytes(answer, _ask(100))
            answer.response_headers = {"content-type": "text/event-stream; charset=utf-8"}
            streamed = session.client._max_bytes(answer, _ask(100))
            assert streamed - plain == EVENT_BYTES * MAX_EVENTS
            # the held request of an in-flight plan, read whole: no part of it is cut off
            held = api.body(2500, n=4, temperature=1.0, seed=1, logprobs=20, ignore_eos=True)
            got = api.stream(session, held)
            events = session.client.log[-1].events
            cap = session.client._max_bytes(session.client.log[-1], held)
        finally:
            session.close()
    assert got.done and not got.errors
    assert sorted(len(c.token_ids) for c in got.choices().values()) == [2500] * 4
    # the margins of issue 38's caps over this, the heaviest stream a check holds (10,000
    # token events at 20 logprobs: `inflight.plans.EVENT_BUDGET`)
    sent = sum(len(e) + len("data: \n\n") for e in events)
    assert len(events) <= events_for(held) <= MAX_EVENTS
    assert 2 * sent < cap <= MAX_ANSWER, (sent, cap)
    assert 100 * max(len(e) for e in events) < MAX_LINE
    deepest = max(_nesting(json.loads(e)) for e in events if e != "[DONE]")
    assert deepest * 8 <= MAX_DEPTH, deepest
    assert too_deep("".join(events)) is None


def _nesting(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    return 0
