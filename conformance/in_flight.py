"""Act on a request while it provably runs: the one routine behind every check that waits.

An abort (or a weight-label change) decides a requirement only if it landed while the request
was generating. No fixed delay proves that: a server may emit its whole context in 100 ms or
take seconds for its first token. So the request is sized to the server's pace (learned by the
probe), the action goes out once the first token has arrived (or, for a non-streamed request,
in the middle of its expected generation), and the outcome is read from a timeline:

- the server says the action landed (an `abort` finish) -> judged;
- the request ran to its natural end although the action was answered well before that end
  (`margin`: many inter-token gaps) -> the action was ignored, judged;
- otherwise the two did not overlap -> tried again with a longer request, and when even a
  request as long as the context cannot be overlapped, the check is `Inconclusive` (an error
  naming why), never a failure.

A server fast enough to emit its whole context before any action can reach it (no latency, a
small `--max-model-len`) is made to hold the request longer rather than given up on (`Plan`):
the request asks for every sequence it may (`n`) with logprobs, and where the server's
`max_num_seqs` is known and small, it waits in the queue behind `blockers` requests sent
ahead of it; the action then goes out as soon as the request is accepted, and repeats until
it ends. The same overlap rule judges every plan.

This module binds the session-free parts to a `Session` (its client, limits, pace and
observed bodies): `timeline` (what an attempt saw, and the rule), `plans` (the attempts) and
`acting` (the sending), whose public names are importable from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .acting import REPEAT_S, Action, act, first_token, stream_acting, whole_acting
from .api import GENERATE, PROMPT, chunk_of
from .foundations import builds_on, unpaced_blocks
from .http import Reply, ServerBroke, is_event_stream
from .plans import (
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
    payload,
    plans_for,
    sizes_for,
    stream_deadline,
)
from .session import Session
from .timeline import (
    MIN_MARGIN_S,
    Outcome,
    Timeline,
    first_request_id,
    ids_for,
    outlived,
    ran_past,
    token_count,
)

__all__ = [
    "ATTEMPTS",
    "DEFAULT_SLOTS",
    "GROWTH",
    "HEAVY_LOGPROBS",
    "HEAVY_N",
    "MIN_GAP_S",
    "MIN_MARGIN_S",
    "MIN_TOKENS",
    "PER_CLIENT",
    "QUEUE",
    "REPEAT_S",
    "TARGET_S",
    "Inconclusive",
    "Outcome",
    "Plan",
    "Timeline",
    "act",
    "blocking",
    "first_request_id",
    "first_token",
    "ids_for",
    "outlived",
    "overlapped",
    "payload",
    "plans",
    "plans_for",
    "ran_past",
    "sizes",
    "sizes_for",
    "stream_with",
    "token_count",
    "whole_with",
]


class Inconclusive(Exception):  # noqa: N818 - a verdict, not a failure of the server
    """The check could not make its action overlap the request: an error, never a fail."""


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
    with blocking(s, plan, rid):
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
        )
    if line.status != 200:
        raise AssertionError(f"a streamed generate answered HTTP {line.status}: {line.raw[:200]!r}")
    if not is_event_stream({"content-type": line.content_type or ""}):
        raise ServerBroke(
            f"not an SSE stream: a streamed generate answered Content-Type {line.content_type!r}"
        )
    return line


def whole_with(s: Session, rid: str, plan: Plan | int, delay_s: float, action: Action) -> Timeline:
    """A non-streamed request; `delay_s` after sending it, run `action` and repeat it every
    margin until the answer comes (an early action may find no request to act on yet)."""
    plan = as_plan(plan)
    line = Timeline(plan.max_tokens, rid, n=plan.n, plan=plan)
    timeout = s.timeout_for(plan.max_tokens)

    def send() -> Reply:
        return s.client.post(
            GENERATE, payload(plan, False, rid), headers={"X-Request-Id": rid}, timeout=timeout
        )

    with blocking(s, plan, rid):
        reply = whole_acting(
            line,
            send,
            action,
            own_id=f"generate-tokens-{rid}",  # the documented id (GEN-RESP-004)
            delay_s=delay_s,
            every_s=min(MIN_MARGIN_S, max(MIN_GAP_S, s.limits.seconds_for(plan.max_tokens) / 20)),
            timeout=timeout,
        )
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


def overlapped(
    s: Session,
    attempt: Callable[[Plan, int], Timeline],
    what: str,
    landed: Callable[[Timeline, int], bool] | None = None,
    queue: bool = True,
) -> tuple[Timeline, Outcome]:
    """Run `attempt(plan, try_number)` with ever longer-lasting requests (`plans`) until the
    action and the request provably overlap; Inconclusive when even the longest could not.
    `landed(line, try_number)` says whether the action took effect (default: the request ended
    as aborted); `queue=False` keeps the request from waiting in the server's queue."""
    tried: list[str] = []
    itl = s.limits.itl_s or 0.0
    for number, plan in enumerate(plans(s, queue)):
        line = attempt(plan, number)
        if landed is None:
            outcome = line.outcome(itl)
        elif landed(line, number):
            outcome = Outcome.LANDED
        elif line.ran_to_end() and line.ignored(itl):
            outcome = Outcome.IGNORED
        else:
            outcome = Outcome.TOO_CLOSE
        if outcome is not Outcome.TOO_CLOSE:
            return line, outcome
        tried.append(line.describe())
    if line.body is None:  # streams whose deltas lose tokens show none to act on: STREAM-003's
        builds_on(s, "STREAM-003")
    raise Inconclusive(
        f"{what}: could not make the action land while the request was provably in flight "
        f"(pace: {s.limits.describe()}); tries: " + " | ".join(tried)
    )
