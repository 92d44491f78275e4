"""A client that hangs up, and whether the engines stopped: the disconnect checks' one routine.

vLLM cancels a request whose client goes away (`with_cancellation`), streamed or not; a router
must pass the hang-up on. Only the engines can say whether the request stopped, so the outcome
is read from their state (`engine_state`: every engine at its own URL, summed), before the
request and after the hang-up:

- the engine counts an abort, or the request is no longer in flight by the time it would have
  ended on its own and never ended so -> stopped;
- it finished although the hang-up came before it could have ended (`proof.BOUND`: the
  fastest completion of the same request, never the client's reading pace) -> kept running,
  or still runs long after -> the failure;
- it ended before the client could hang up -> tried again with a longer request (`plans`),
  then a skip of kind `limit` (`OutOfReach`), never a failure.

A request whose first token takes long is hung up on during that wait, when it surely runs and
has not ended (a stream once its headers came); a fast one, soon after its first token.
"""

from __future__ import annotations

import time
from typing import NoReturn

from conformance import api
from conformance.grounds import builds_on, unpaced_blocks
from conformance.inflight import script
from conformance.inflight.attempts import OutOfReach, Plan, fastest, ids_for, payload, plans
from conformance.inflight.proof import Proof, bound_proof
from conformance.outcomes import Failure
from conformance.server.engine_state import Counts
from conformance.session import Session
from conformance.tito.semantics import fail
from conformance.verdicts.reproducer import Evidence
from conformance.wire import Client, ServerBroke
from conformance.wire.exchange import Exchange

POLL_S = 0.02
HANG_UP_S = 0.005  # the soonest a non-streamed request is hung up on
SLOW_FIRST_TOKEN_S = 0.05
"""A first token slower than this is waited for long enough to hang up inside the wait."""
WAIT_SHARE = 0.3  # how far into a slow first-token wait the client hangs up
SETTLE_S = 3.0  # the least time the engines get to show the request gone


def _read(s: Session) -> Counts:
    found = s.state.read()
    if found is None:
        fail(f"the engines' state could no longer be read ({s.state.where()})")
    return found


def hang_up(s: Session, stream: bool, what: str) -> None:
    """Pass when a hung-up request stops on its engine; fail when it ran on; else retry, then
    a skip of kind `limit` (`OutOfReach`)."""
    if stream:
        unpaced_blocks(s)
    tried: list[str] = []
    for number, plan in enumerate(plans(s, queue=False)):
        before = _read(s)
        started = time.monotonic()
        rid = s.rid(f"hangup-{number}")
        body = payload(plan, stream, rid)
        first, sent = _stream_away(s, body) if stream else _whole_away(s, body, plan)
        gone = time.monotonic() - started
        if first is None:
            tried.append(f"{plan.describe()} was answered before the client hung up")
            continue
        reproducer = script.hang_up(
            what,
            sent,
            [c.base_url for c in s.state.clients],
            wait_s=None if stream and _in_first_token_wait(s) is None else first,
            settle_s=max(SETTLE_S, 1.5 * s.limits.seconds_for(plan.max_tokens) + 1.0),
            evidence=str(Evidence("engines", "aborted", 0)),
        )
        verdict = _after(s, before, plan, started, gone, what, rid, reproducer)
        if verdict is None:
            return
        tried.append(verdict)
    if stream:  # streams whose deltas lose tokens show no first token to hang up after
        builds_on(s, "STREAM-003")
    raise OutOfReach(
        f"{what}: the request could not be caught in flight and hung up on (pace: "
        f"{s.limits.describe()}); tries: " + " | ".join(tried)
    )


def _in_first_token_wait(s: Session) -> float | None:
    """When to hang up inside the first-token wait (`WAIT_SHARE` of it), for a server whose
    first token is slow (`SLOW_FIRST_TOKEN_S`); None when it is too fast to aim inside."""
    ttft = s.limits.ttft_s or 0.0
    return WAIT_SHARE * ttft if ttft >= SLOW_FIRST_TOKEN_S else None


def _stream_away(s: Session, body: dict[str, object]) -> tuple[float, Exchange]:
    """Open a stream and hang up: inside a slow first-token wait (`WAIT_SHARE` of it, once the
    server answered with the stream's headers: it surely runs and has not ended), else after
    its first token; when the client hung up."""
    started = time.monotonic()
    inside = _in_first_token_wait(s)
    with s.client.stream(api.GENERATE, body) as st:
        if inside is not None and st.status == 200:
            time.sleep(max(0.0, inside - (time.monotonic() - started)))
        else:
            api.read_stream(st, stop_after_tokens=1, s=s)
        return time.monotonic() - started, st.exchange


def _whole_away(s: Session, body: dict[str, object], plan: Plan) -> tuple[float | None, Exchange]:
    """Send a non-streamed request through a client of its own whose read timeout is the
    hang-up: inside a slow first-token wait (`WAIT_SHARE` of it), else soon after the first
    token is due (a few tokens in, a quarter of a short request), never by the length of the
    whole generation, whose pace behind a router may be learned far slower than the engine's;
    the hang-up's planned time (None: it was answered first)."""
    ttft = s.limits.ttft_s or 0.0
    itl = s.limits.itl_s or 0.0
    wait = _in_first_token_wait(s) or max(
        HANG_UP_S, 1.5 * ttft + min(5 * itl, 0.25 * itl * plan.max_tokens)
    )
    client = Client(s.client.base_url, s.client.api_key, timeout=wait)
    try:
        client.post(api.GENERATE, body)
    except ServerBroke:
        return wait, client.log[-1]  # the read timed out: the client hung up, as intended
    finally:
        client.close()
    return None, client.log[-1]


def _after(
    s: Session,
    before: Counts,
    plan: Plan,
    started: float,
    gone: float,
    what: str,
    rid: str,
    reproducer: str = "",
) -> str | None:
    """After the hang-up: None when the request stopped; raises when it ran on; else why
    this attempt proves nothing. A request stopped when the engine counts an abort, or when it
    is no longer in flight by the time it would have ended on its own, without ending so. One
    that finished ran on only if the engines say its client went away while they held it
    (`proof.ENGINE`), or it could not have ended before the hang-up (`proof.BOUND`)."""
    natural = s.limits.seconds_for(plan.max_tokens)
    settled = started + max(SETTLE_S, 1.5 * natural + 1.0)
    after = first = None
    heard: str | None = None
    while True:
        after = _read(s)
        first = first or after
        if after.aborted > before.aborted:
            return None
        # the engines name a hung-up request only while they hold it: asked on every poll
        # until it ends, the answer is kept
        heard = heard or (None if after.finished > before.finished else _heard(s, rid))
        if after.finished > before.finished:  # it finished: before or after the hang-up?
            ended = time.monotonic() - started
            # the server answered a read after the hang-up with the request still running (it
            # had the hang-up in hand), and the request could not have ended before then
            seen = first.in_flight > before.in_flight
            bound = (
                bound_proof([(gone, gone)], 0.0, fastest(s, plan)) if seen and not heard else None
            )
            if heard or bound:
                ran = f"read after the hang-up, the engines ran it ({first.describe()}); {bound}"
                _ran_on(
                    reproducer,
                    f"{what}: the client hung up after {gone * 1000:.0f} ms but the request of "
                    f"{plan.describe()} ran to its end (seen at {ended * 1000:.0f} ms): engines "
                    f"{s.state.where()}: {after.describe()}; "
                    + (heard or f"evidence ({Proof.ENGINE}): {ran}"),
                )
            return f"{plan.describe()} ended {after.finished - before.finished} sequence(s)"
        if time.monotonic() >= settled:
            break
        time.sleep(POLL_S)
    if after.in_flight <= before.in_flight:
        return None
    _ran_on(
        reproducer,
        f"{what}: the client hung up after {gone * 1000:.0f} ms but the engines still run "
        f"the request of {plan.describe()} {time.monotonic() - started:.1f} s later "
        f"(evidence: engine state): engines {s.state.where()}: {after.describe()}",
    )


def _ran_on(reproducer: str, message: str) -> NoReturn:
    """The request ran on after its client went away: no abort counted (the evidence)."""
    raise Failure(message, evidence=str(Evidence("engines", "aborted", 0)), reproducer=reproducer)


def _heard(s: Session, rid: str) -> str | None:
    """ENGINE by the engines' own word: they say the client of this request went away while
    they held it (the mock's `/mock/stats` `hung_up`, read while they hold it), and it then
    ended on its own."""
    if not s.state.heard_hang_up(ids_for(rid)):
        return None
    return (
        f"evidence ({Proof.ENGINE}): the engines ({s.state.where()}) say the client of "
        f"{rid!r} went away while they held it"
    )
