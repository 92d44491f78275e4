"""How long an in-flight attempt's request runs: its size at the server's pace (`sizes_for`),
the heavier and queued shapes a fast server with a tiny context needs (`plans_for`), the
requests sent ahead of a queued one (`blockers`), and the wall clock its stream may take.

A server fast enough to emit its whole context before any action can reach it (no latency, a
small `--max-model-len`) is made to hold the request longer rather than given up on (`Plan`):
the request asks for every sequence it may (`n`) with logprobs, and where the server's
`max_num_seqs` is known and small, it waits in the queue behind `blockers` requests sent
ahead of it. The same proof obligation (`proof`) judges every plan.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from conformance.api import GENERATE, body
from conformance.server.limits import Limits
from conformance.wire import Client
from conformance.wire.bounded import MAX_EVENTS

TARGET_S = 1.0  # how long a request should run, so an action lands inside it
MIN_TOKENS = 16
GROWTH = 8  # each retry asks for this many times more tokens
ATTEMPTS = 3
MIN_GAP_S = 0.001
"""The soonest an action goes out after its request, and the shortest gap between repeats: an
unpaced server (the mock) generates its whole context, non-streamed, in under 10 ms."""
HEAVY_N = 64
"""Sequences a held request asks for (at most the server's max n). Measured on the mock without
latency: 8 end in ~3 ms, too soon for any action; 64 last ~25 ms alone and fill 256 slots with
four blockers. (A server that steps all of a request's sequences before reading the next
request answers the action late when the machine is loaded: then out of reach, never a fail.)"""
EVENT_BUDGET = MAX_EVENTS // 2
"""The most events (one per token per sequence) a held stream may send: half the client's
cap (`wire.MAX_EVENTS`), so a fast server with a large context is held by its length, not by
sequences it would stream past the cap."""
PER_CLIENT = 24  # blockers per client (the suite's client pools 32 connections)
HEAVY_LOGPROBS = 20  # logprobs per token of a held request (at most the server's max)
QUEUE = (8, 40)  # requests queued ahead of a queued attempt, one attempt each
DEFAULT_SLOTS = 256  # vLLM's default max_num_seqs, where the probe could not learn it


def sizes_for(limits: Limits, prompt_len: int) -> list[int]:
    """max_tokens per attempt: about TARGET_S of generation at the server's pace, then longer,
    never past the context (capped attempts repeat: each try acts at another moment)."""
    itl = limits.itl_s or 0.0
    first = MIN_TOKENS if itl <= 0 else max(MIN_TOKENS, math.ceil(TARGET_S / itl))
    room = limits.room(prompt_len)
    found: list[int] = []
    tokens = first
    for _ in range(ATTEMPTS):
        found.append(tokens if room is None else max(2, min(tokens, room)))
        tokens *= GROWTH
    return found


@dataclass(frozen=True)
class Plan:
    """How one attempt makes its request last: `max_tokens` per sequence, `n` sequences (sampled,
    seeded, when more than one), `logprobs` per token, behind `blockers` requests of the same
    shape that fill the server's running slots so this one waits in its queue."""

    max_tokens: int
    n: int = 1
    logprobs: int | None = None
    blockers: int = 0

    @property
    def alone(self) -> Plan:
        """The same request with no blockers ahead: the shape its fastest completion is
        sampled by (`attempts.fastest`), and the shape of each blocker."""
        return Plan(self.max_tokens, self.n, self.logprobs)

    def describe(self) -> str:
        held = f", n {self.n}" if self.n > 1 else ""
        held += f", logprobs {self.logprobs}" if self.logprobs else ""
        held += f", behind {self.blockers} requests" if self.blockers else ""
        return f"{self.max_tokens} tokens{held}"

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters that make a request hold this long (beside max_tokens)."""
        found: dict[str, Any] = {"ignore_eos": True}
        if self.n > 1:  # more than one sequence needs sampling (vLLM: greedy is n = 1)
            found |= {"n": self.n, "temperature": 1.0, "seed": 1}
        if self.logprobs:
            found["logprobs"] = self.logprobs
        return found


def plans_for(limits: Limits, prompt_len: int, queue: bool = True) -> list[Plan]:
    """The attempts of one in-flight action, the one timing policy of the kit: `sizes_for`,
    then, when the context caps them below what the pace asks for, heavier requests (every
    sequence the server allows, with logprobs) and, with `queue` and a known small
    max_num_seqs, requests that wait behind others (an action that lands on a queued request
    proves nothing about one that runs: a check that needs the request running says
    `queue=False`)."""
    sized = sizes_for(limits, prompt_len)
    room = limits.room(prompt_len)
    # ~TARGET_S of tokens; a pace measured as 0 (gaps under 10 us) asks for more than any room
    unpaced = limits.itl_s is not None and limits.itl_s <= 0
    wanted = math.inf if unpaced else sizes_for(Limits(itl_s=limits.itl_s), prompt_len)[0]
    if room is None or room >= wanted:
        return [Plan(tokens) for tokens in sized]
    tokens = max(2, room)
    n = limits.n(max(1, min(HEAVY_N, EVENT_BUDGET // tokens)))
    # logprobs make each token dearer on the server, so the action is answered well inside
    # the request's fastest completion (`proof.BOUND`); the server answers it between steps
    heavy = Plan(tokens, n, limits.logprobs(HEAVY_LOGPROBS) or None)
    found = [Plan(tokens), heavy]
    if queue:  # fill its running slots (vLLM's default: 256 when not learned), wait behind
        fill = math.ceil((limits.max_n or DEFAULT_SLOTS) / n)
        found += [Plan(tokens, n, heavy.logprobs, fill + ahead) for ahead in QUEUE]
    else:
        found.append(heavy)  # another moment
    return found


def outran_plans(limits: Limits, prompt_len: int) -> list[Plan]:
    """The attempts for a server that outran the pace its client learned (a fast server read by
    a slow client: every sized request ended before its action could reach it): requests that
    wait in the queue behind blockers, whatever the context. Short, without logprobs, so the
    answers stay small for the client that reads slowly."""
    n = limits.n(HEAVY_N)
    tokens = max(MIN_TOKENS, min(sizes_for(limits, prompt_len)[0], EVENT_BUDGET // n))
    room = limits.room(prompt_len)
    tokens = tokens if room is None else max(2, min(tokens, room))
    fill = math.ceil((limits.max_n or DEFAULT_SLOTS) / n)
    return [Plan(tokens, n, None, fill + ahead) for ahead in QUEUE]


def stream_deadline(limits: Limits, max_tokens: int, budget: float) -> float:
    """The wall clock of an attempt's stream: the sender's budget, or three times the
    generation at the learned pace (plus 10 s), whichever is longer."""
    return max(budget, 3 * limits.seconds_for(max_tokens) + 10)


def payload(plan: Plan, stream: bool, rid: str) -> dict[str, Any]:
    """A request running to max_tokens. Its id goes in the body and in X-Request-Id, so
    whichever the server honours, the action finds it (each rule is its own requirement)."""
    return body(plan.max_tokens, top={"stream": stream, "request_id": rid}, **plan.sampling())


def as_plan(plan: Plan | int) -> Plan:
    return plan if isinstance(plan, Plan) else Plan(plan)


@contextmanager
def blockers(client: Client, plan: Plan, rid: str, timeout: float) -> Iterator[None]:
    """`plan.blockers` non-streamed requests in flight ahead of the body of the block, sent
    through clients of their own to `client`'s server (they are load, not part of the
    caller's exchanges). Each blocker is sent again as soon as it is answered, until the block
    ends: on a server fast enough to finish a blocker in a millisecond, a queue filled once
    has drained before the request it should hold arrives (seen in CI: the request queued
    "behind 41" got its first token 4 ms after it was sent)."""
    if not plan.blockers:
        yield
        return
    clients = [
        Client(client.base_url, client.api_key, timeout=timeout)
        for _ in range(math.ceil(plan.blockers / PER_CLIENT))
    ]
    shape = plan.alone
    done = threading.Event()

    def block(number: int) -> None:
        sent = 0
        while not done.is_set():
            try:  # load only: its answer decides nothing, and one refused ends this blocker
                reply = clients[number // PER_CLIENT].post(
                    GENERATE, payload(shape, False, f"{rid}-ahead-{number}-{sent}")
                )
            except AssertionError:
                return
            if reply.status != 200:
                return
            sent += 1

    threads = [threading.Thread(target=block, args=(i,), daemon=True) for i in range(plan.blockers)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(min(0.05, plan.blockers * MIN_GAP_S))  # let them reach the server first
        yield
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout)
        for client_ in clients:
            client_.close()
