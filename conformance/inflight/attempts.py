"""Act on a request while it provably runs: the one routine behind every check that waits.

An abort (or a weight-label change) decides a requirement only if it landed while the request
was generating. No fixed delay proves that: a server may emit its whole context in 100 ms or
take seconds for its first token. So the request is sized to the server's pace (learned by the
probe), the action goes out once the first token has arrived (or, for a non-streamed request,
in the middle of its expected generation), and the outcome is read from a timeline:

- the server says the action landed (an `abort` finish) -> judged;
- the request ran to its natural end although an action provably reached it in flight (the
  requirement's `proofs`: `proof.ENGINE`, engines that still held it after the action was
  answered; `proof.BOUND`, the fastest completion of the same request, never the client's
  reading pace) -> the action was ignored, judged;
- otherwise the two did not provably overlap -> tried again with a longer request, and when
  even the longest plan cannot be overlapped, the requirement is a skip of kind `limit`
  naming the measured times (`OutOfReach`), never a failure or an error.

A server fast enough to emit its whole context before any action can reach it (no latency, a
small `--max-model-len`) is made to hold the request longer rather than given up on (`Plan`):
the request asks for every sequence it may (`n`) with logprobs, and where the server's
`max_num_seqs` is known and small, it waits in the queue behind `blockers` requests sent
ahead of it; the action then goes out as soon as the request is accepted, and repeats until
it ends. A server that completes requests far faster than its client reads them (the pace
learned is the client's) gets queued attempts too (`plans.outran_plans`). The same overlap
rule judges every plan.

This module binds the session-free parts to a `Session` (its client, limits, pace and
observed bodies): `timeline` (what an attempt saw, and the rule), `plans` (the attempts) and
`acting` (the sending), whose public names are importable from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from conformance.api import GENERATE, PROMPT, chunk_of
from conformance.grounds import builds_on, unpaced_blocks
from conformance.inflight.acting import (
    REPEAT_S,
    Action,
    Witness,
    act,
    first_token,
    stream_acting,
    whole_acting,
)
from conformance.inflight.plans import (
    ATTEMPTS,
    DEFAULT_SLOTS,
    GROWTH,
    HEAVY_LOGPROBS,
    HEAVY_N,
    MIN_GAP_S,
    MIN_TOKENS,
    PER_CLIENT,
    QUEUE,
    TARGET_S,
    Plan,
    as_plan,
    blockers,
    outran_plans,
    payload,
    plans_for,
    sizes_for,
    stream_deadline,
)
from conformance.inflight.proof import SHARE, Fastest, Proof, bound_proof, engine_proof
from conformance.inflight.timeline import (
    REPEAT_EVERY_S,
    Outcome,
    Timeline,
    completed_in,
    first_request_id,
    ids_for,
    token_count,
)
from conformance.outcomes import Inconclusive, OutOfReach
from conformance.requirements import by_id
from conformance.session import Session
from conformance.wire import Reply, ServerBroke, is_event_stream
from conformance.wire.bounded import PastDeadline

__all__ = [
    "ATTEMPTS",
    "DEFAULT_SLOTS",
    "GROWTH",
    "HEAVY_LOGPROBS",
    "HEAVY_N",
    "MIN_GAP_S",
    "MIN_TOKENS",
    "PER_CLIENT",
    "QUEUE",
    "REPEAT_S",
    "TARGET_S",
    "Inconclusive",
    "OutOfReach",
    "Outcome",
    "Plan",
    "Timeline",
    "act",
    "blocking",
    "first_request_id",
    "first_token",
    "fastest",
    "ids_for",
    "overlapped",
    "payload",
    "plans",
    "plans_for",
    "proven",
    "sizes",
    "sizes_for",
    "stream_with",
    "token_count",
    "whole_with",
]


def sizes(s: Session) -> list[int]:
    return sizes_for(s.limits, len(PROMPT))


def plans(s: Session, queue: bool = True) -> list[Plan]:
    return plans_for(s.limits, len(PROMPT), queue)


@contextmanager
def blocking(s: Session, plan: Plan, rid: str) -> Iterator[None]:
    """`plan.blockers` requests in flight ahead of the body of the block (`plans.blockers`)."""
    if not plan.blockers:
        yield
        return
    with blockers(s.client, plan, rid, s.timeout_for(plan.max_tokens)):
        yield


def _observed(s: Session) -> Callable[[str], dict[str, Any]]:
    def read(data: str) -> dict[str, Any]:
        chunk = chunk_of(data, "stream event")
        s.observe("GenerateStreamPayload", "in-flight stream event", chunk)
        return chunk

    return read


def stream_with(s: Session, rid: str, plan: Plan | int, action: Action) -> Timeline:
    """Stream a request; once its first token arrives, run `action(request_id)` while a reader
    keeps reading; read to the end. The action gets the id the server named in its chunks.
    A request queued behind blockers carries no token until they end: its action goes out once
    the server accepted it, and repeats until it ends (one that came before the server knew the
    id found nothing to act on)."""
    unpaced_blocks(s)
    plan = as_plan(plan)
    line = Timeline(plan.max_tokens, rid, n=plan.n, plan=plan)
    with blocking(s, plan, rid), _read_till_deadline(line):
        stream_acting(
            s.client,
            line,
            GENERATE,
            action,
            own_id=f"generate-tokens-{rid}",
            body=payload(plan, True, rid),
            headers={"X-Request-Id": rid},
            deadline=stream_deadline(s.limits, plan.max_tokens, s.config.stream_deadline),
            early=plan.blockers > 0,
            read=_observed(s),
            witness=_witness(s),
        )
    if line.status != 200:
        raise AssertionError(f"a streamed generate answered HTTP {line.status}: {line.raw[:200]!r}")
    if not is_event_stream({"content-type": line.content_type or ""}):
        raise ServerBroke(
            f"not an SSE stream: a streamed generate answered Content-Type {line.content_type!r}"
        )
    return line


def _witness(s: Session) -> Witness:
    """Whether the engines still hold a request, by any of its ids (`proof.ENGINE`)."""
    return lambda request_id: s.state.holds(ids_for(request_id))


@contextmanager
def _read_till_deadline(line: Timeline) -> Iterator[None]:
    """An answer still coming within its budget of tokens when the client's wall clock ran out
    is an attempt that saw no end (too close to judge), not a FAIL: a busy client reads slower
    than a correct server writes (seen: WV-009 failing so, at load 9; ABORT-003 on a 4,092 x 2
    token body behind a slow reader). A stream past its tokens, or one that stalled, still
    fails."""
    try:
        yield
    except PastDeadline:
        if line.done or line.tokens > line.n * line.max_tokens:
            raise
        line.unread = True


def whole_with(s: Session, rid: str, plan: Plan | int, delay_s: float, action: Action) -> Timeline:
    """A non-streamed request; `delay_s` after sending it, run `action` and repeat it every
    margin until the answer comes (an early action may find no request to act on yet)."""
    plan = as_plan(plan)
    line = Timeline(plan.max_tokens, rid, n=plan.n, plan=plan, whole=True)
    timeout = s.timeout_for(plan.max_tokens)

    def send() -> Reply:
        return s.client.post(
            GENERATE, payload(plan, False, rid), headers={"X-Request-Id": rid}, timeout=timeout
        )

    with blocking(s, plan, rid), _read_till_deadline(line):
        reply = whole_acting(
            line,
            send,
            action,
            own_id=f"generate-tokens-{rid}",  # the documented id (GEN-RESP-004)
            delay_s=delay_s,
            every_s=min(REPEAT_EVERY_S, max(MIN_GAP_S, s.limits.seconds_for(plan.max_tokens) / 20)),
            timeout=timeout,
            witness=_witness(s),
        )
    if line.unread:  # a long body a slow client could not read in time: nothing to judge
        return line
    if reply.status != 200:
        raise AssertionError(
            f"the non-streamed request answered HTTP {reply.status}: {reply.body[:200]!r}"
        )
    data = reply.json()
    if not isinstance(data, dict):
        raise AssertionError(f"the non-streamed answer is not a JSON object: {reply.body[:200]!r}")
    s.observe("GenerateResponse", "aborted non-streamed generate", data)
    line.body = data
    return line


def fastest(s: Session, plan: Plan) -> float | None:
    """The fastest the server has completed `plan`'s request alone (no blockers ahead: a queue
    proves nothing about when a request starts), non-streamed, from this client: the bound of
    `proof.BOUND`. Sampled only when a verdict needs it; None when it never completed."""
    alone = plan.alone
    timeout = s.timeout_for(plan.max_tokens)

    def sample() -> float | None:
        body = payload(alone, False, s.rid("fastest"))
        return completed_in(s.client, body, alone, timeout=timeout)

    return s.remember("fastest", Fastest).of(alone, sample)


def known_whole(s: Session, line: Timeline) -> float | None:
    """When the server provably knew a non-streamed request: its first token due after the
    request was written out. From the line's start instead, a busy client whose worker thread
    sent late would count actions that reached the server before the request did."""
    if line.request_sent_s is None:
        return None
    return line.request_sent_s + (s.limits.ttft_s or 0.0)


def proven(
    s: Session, line: Timeline, plan: Plan, proofs: tuple[Proof, ...], known_s: float | None
) -> Outcome:
    """A request that ran to its end ignored its action only where the requirement's evidence
    shows the action reached it in flight (`proof`); else the two did not provably overlap."""
    if Proof.ENGINE in proofs:  # a stream's first token proves the server held it; else reads
        line.proof = engine_proof(line.sent(), line.reads, line.first_token_s) or ""
    if Proof.BOUND in proofs and not line.proof:
        line.proof = bound_proof(line.sent(), known_s, fastest(s, plan)) or ""
    return Outcome.IGNORED if line.proof else Outcome.TOO_CLOSE


def overlapped(
    s: Session,
    attempt: Callable[[Plan, int], Timeline],
    what: str,
    landed: Callable[[Timeline, int], bool] | None = None,
    queue: bool = True,
    requirement: str = "ABORT-002",
) -> tuple[Timeline, Outcome]:
    """Run `attempt(plan, try_number)` with ever longer-lasting requests (`plans`) until the
    action and the request provably overlap; `OutOfReach` when even the longest could not.
    `landed(line, try_number)` says whether the action took effect (default: the request ended
    as aborted); a request that ran to its end ignored it only by the `requirement`'s proofs;
    `queue=False` keeps the request from waiting in the server's queue."""
    tried: list[str] = []
    proofs = by_id()[requirement].proofs
    for number, plan in enumerate(_attempts(s, queue)):
        line = attempt(plan, number)
        if landed is None:
            outcome = line.outcome()
        elif landed(line, number):
            outcome = Outcome.LANDED
        else:
            outcome = Outcome.RAN if line.ran_to_end() else Outcome.TOO_CLOSE
        if outcome is Outcome.RAN:
            known = known_whole(s, line) if line.whole else line.first_token_s
            outcome = proven(s, line, plan, proofs, known)
        if outcome is not Outcome.TOO_CLOSE:
            return line, outcome
        tried.append(line.describe())
        if line.unread:
            break  # a longer request would outlast the client's deadline too
    if not line.whole:  # streams whose deltas lose tokens show none to act on: STREAM-003's
        builds_on(s, "STREAM-003")
    raise OutOfReach(
        f"{what}: no plan made the action provably reach the request in flight (pace: "
        f"{s.limits.describe()}; fastest completions: {_fastest_seen(s)}); tries: "
        + " | ".join(tried)
    )


def _attempts(s: Session, queue: bool) -> Iterator[Plan]:
    """`plans`, then, where the server outran the pace its client learned (`outran`) and none
    of them queued, requests queued behind blockers (`plans.outran_plans`)."""
    sized = plans(s, queue)
    yield from sized
    if queue and not any(p.blockers for p in sized) and _outran(s, sized[-1]):
        yield from outran_plans(s.limits, len(PROMPT))


def _outran(s: Session, plan: Plan) -> bool:
    """The server completed `plan` alone in under SHARE of its time at the learned pace: the
    pace is the client's reading, not the server's generation."""
    seen = s.remember("fastest", Fastest).times().get(plan.alone)
    return seen is not None and seen < SHARE * s.limits.seconds_for(plan.max_tokens)


def _fastest_seen(s: Session) -> str:
    seen = s.remember("fastest", Fastest).times()
    if not seen:
        return "none sampled"
    return ", ".join(
        f"{plan.describe() if isinstance(plan, Plan) else plan} {t * 1000:.0f} ms"
        for plan, t in seen.items()
    )
