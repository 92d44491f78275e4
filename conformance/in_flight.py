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
"""

from __future__ import annotations

import json
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .api import GENERATE, PROMPT, body, chunk_of
from .http import Client, Reply, sse_data
from .limits import Limits
from .session import Session

TARGET_S = 1.0  # how long a request should run, so an action lands inside it
MIN_TOKENS = 16
GROWTH = 8  # each retry asks for this many times more tokens
ATTEMPTS = 3
MIN_MARGIN_S = 0.1
MIN_GAP_S = 0.001
"""The soonest an action goes out after its request, and the shortest gap between repeats: an
unpaced server (the mock) generates its whole context, non-streamed, in under 10 ms."""
HEAVY_N = 64
"""Sequences a held request asks for (at most the server's max n). Measured on the mock without
latency: 8 end in ~3 ms, too soon for any action; 64 last ~25 ms alone and fill 256 slots with
four blockers. (A server that steps all of a request's sequences before reading the next
request answers the action late when the machine is loaded: then inconclusive, never a fail.)"""
PER_CLIENT = 24  # blockers per client (the suite's client pools 32 connections)
HEAVY_LOGPROBS = 20  # logprobs per token of a held request (at most the server's max)
QUEUE = (8, 40)  # requests queued ahead of a queued attempt, one attempt each
DEFAULT_SLOTS = 256  # vLLM's default max_num_seqs, where the probe could not learn it
REPEAT_S = 0.005  # how often an action sent before the first token is repeated


class Inconclusive(Exception):  # noqa: N818 - a verdict, not a failure of the server
    """The check could not make its action overlap the request: an error, never a fail."""


class Outcome(StrEnum):
    LANDED = "landed"  # the server ended the request as aborted
    IGNORED = "ignored"  # ran to its natural end long after the action was answered
    CUT = "cut"  # ended early, but not as an abort
    TOO_CLOSE = "too close"  # the action and the end did not provably overlap


@dataclass
class Timeline:
    """What one attempt saw, in seconds since the request was sent."""

    max_tokens: int
    request_id: str
    chunks: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    done: bool = False
    first_token_s: float | None = None
    action_sent_s: float | None = None
    action_answered_s: float | None = None
    action: Reply | None = None
    ended_s: float | None = None
    body: dict[str, Any] | None = None  # the non-streamed answer
    n: int = 1  # sequences asked for
    actions: list[tuple[float, float]] = field(default_factory=list)
    """(sent, answered) of every repeat of the action (the first is `action_sent_s`, ...)."""
    plan: Plan | None = None

    def choices(self) -> list[dict[str, Any]]:
        if self.body is not None:
            found = self.body.get("choices")
            return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []
        return [c for _, chunk in self.chunks for c in chunk.get("choices") or []]

    @property
    def tokens(self) -> int:
        return sum(len(c.get("token_ids") or []) for c in self.choices())

    def tokens_of(self, index: Any) -> int:
        """The tokens of one choice (by its `index`)."""
        return sum(len(c.get("token_ids") or []) for c in self.choices() if c.get("index") == index)

    def ran_to_end(self) -> bool:
        """Every sequence asked for ended at its length, none as aborted."""
        ends: dict[Any, Any] = {}
        for choice in self.choices():
            if choice.get("finish_reason"):
                ends[choice.get("index", 0)] = choice.get("finish_reason")
        if len(ends) < self.n or any(reason == "abort" for reason in ends.values()):
            return False
        return all(self.tokens_of(index) >= self.max_tokens for index in ends)

    def last_finished(self) -> dict[str, Any] | None:
        """The last choice (or chunk of one) that carries a finish_reason."""
        finished = [c for c in self.choices() if c.get("finish_reason")]
        return finished[-1] if finished else None

    @property
    def finish_reason(self) -> Any:
        last = self.last_finished()
        return last.get("finish_reason") if last is not None else None

    def gap_s(self) -> float:
        """The median time between token chunks of this stream (0 if unknown)."""
        times = [t for t, chunk in self.chunks if _token_count(chunk)]
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        return statistics.median(gaps) if gaps else 0.0

    def landed(self) -> bool:
        """Some sequence ended as aborted (a correct server ends every unfinished one so)."""
        return any(c.get("finish_reason") == "abort" for c in self.choices())

    def outcome(self, itl_s: float) -> Outcome:
        if self.landed():
            return Outcome.LANDED
        if not self.ran_to_end():
            return Outcome.CUT
        if self.ignored(itl_s):
            return Outcome.IGNORED
        return Outcome.TOO_CLOSE

    def ignored(self, itl_s: float) -> bool:
        """By the overlap rule, some repeat of the action reached the request in flight."""
        gap = max(itl_s, self.gap_s())
        sent: list[tuple[float | None, float | None]] = list(self.actions) or [
            (self.action_sent_s, self.action_answered_s)
        ]
        return any(
            ran_past(self.max_tokens, gap, self.first_token_s, at, answered, self.ended_s)
            for at, answered in sent
        )

    def describe(self) -> str:
        def at(value: float | None) -> str:
            return "never" if value is None else f"{value * 1000:.0f} ms"

        status = self.action.status if self.action is not None else None
        asked = self.plan.describe() if self.plan is not None else f"{self.max_tokens} tokens"
        repeats = f" (and {len(self.actions) - 1} times more)" if len(self.actions) > 1 else ""
        return (
            f"{asked} asked; first token at {at(self.first_token_s)}; the "
            f"action was sent at {at(self.action_sent_s)} and answered {status} at "
            f"{at(self.action_answered_s)}{repeats}; the request ended at {at(self.ended_s)} with "
            f"finish_reason {self.finish_reason!r} after {self.tokens} tokens"
        )


def ran_past(
    max_tokens: int,
    itl_s: float,
    first_token_s: float | None,
    sent_s: float | None,
    answered_s: float | None,
    ended_s: float | None,
) -> bool:
    """The overlap rule: a request that ran to its end ignored an action only if it could
    not have finished before the action arrived and it outlived the action's answer. At the
    server's measured pace (`itl_s`), a request whose whole generation fits between its first
    token and the moment the action was sent may have ended first, and a late end on the
    client's side is only its reading lagging (a fast server under a loaded client). The
    suite's checks and the fuzzer's abort sequence both judge by this one rule."""
    if itl_s and first_token_s is not None and sent_s is not None:  # noqa: SIM102
        if max_tokens * itl_s < sent_s - first_token_s:  # it may have ended first
            return False
    return outlived(answered_s, ended_s, itl_s)


def outlived(answered_s: float | None, ended_s: float | None, gap_s: float = 0.0) -> bool:
    """The request ran on well after the action was answered: max(0.1 s, 10 gaps) later.
    Anything closer is not evidence that the action was ignored (the suite's abort checks,
    WV-009 and the fuzzer's abort sequence all read it so)."""
    if answered_s is None or ended_s is None:
        return False
    return ended_s - answered_s > max(MIN_MARGIN_S, 10 * gap_s)


def ids_for(request_id: str) -> list[str]:
    """The ids to abort: the one the server named, with and without the documented prefix, so a
    server that gets the prefix wrong fails GEN-RESP-004, not every abort."""
    bare = request_id.removeprefix("generate-tokens-")
    return list(dict.fromkeys([request_id, f"generate-tokens-{bare}", bare]))


def first_request_id(raw: bytes) -> str | None:
    """The request_id of the first complete stream event that names one."""
    for data in sse_data(raw):
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        if isinstance(chunk, dict) and isinstance(chunk.get("request_id"), str):
            return str(chunk["request_id"])
    return None


def _token_count(chunk: dict[str, Any]) -> int:
    return sum(len(c.get("token_ids") or []) for c in chunk.get("choices") or [])


def sizes(s: Session) -> list[int]:
    return sizes_for(s.limits, len(PROMPT))


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

    def describe(self) -> str:
        held = f", n {self.n}" if self.n > 1 else ""
        held += f", logprobs {self.logprobs}" if self.logprobs else ""
        held += f", behind {self.blockers} requests" if self.blockers else ""
        return f"{self.max_tokens} tokens{held}"


def plans(s: Session, queue: bool = True) -> list[Plan]:
    return plans_for(s.limits, len(PROMPT), queue)


def plans_for(limits: Limits, prompt_len: int, queue: bool = True) -> list[Plan]:
    """The attempts of one in-flight action, the one timing policy of the kit: `sizes_for`,
    then, when the context caps them below what the pace asks for, heavier requests (every
    sequence the server allows, with logprobs) and, with `queue` and a known small
    max_num_seqs, requests that wait behind others (an action that lands on a queued request
    proves nothing about one that runs: a check that needs the request running says
    `queue=False`)."""
    sized = sizes_for(limits, prompt_len)
    room = limits.room(prompt_len)
    wanted = sizes_for(Limits(itl_s=limits.itl_s), prompt_len)[0]  # ~TARGET_S of tokens
    if room is None or room >= wanted:
        return [Plan(tokens) for tokens in sized]
    tokens = max(2, room)
    n = limits.n(HEAVY_N)
    # logprobs make each token dearer, but only for a few sequences: a server that steps all
    # of a request's sequences before it reads another request would answer the action late
    heavy = Plan(tokens, n, (limits.logprobs(HEAVY_LOGPROBS) or None) if n <= 4 else None)
    found = [Plan(tokens), heavy]
    if queue:  # fill its running slots (vLLM's default: 256 when not learned), wait behind
        fill = math.ceil((limits.max_n or DEFAULT_SLOTS) / n)
        found += [Plan(tokens, n, heavy.logprobs, fill + ahead) for ahead in QUEUE]
    else:
        found.append(heavy)  # another moment
    return found


def payload(plan: Plan, stream: bool, rid: str) -> dict[str, Any]:
    """A request running to max_tokens. Its id goes in the body and in X-Request-Id, so
    whichever the server honours, the action finds it (each rule is its own requirement)."""
    sampling: dict[str, Any] = {"ignore_eos": True}
    if plan.n > 1:  # more than one sequence needs sampling (vLLM: greedy is n = 1)
        sampling |= {"n": plan.n, "temperature": 1.0, "seed": 1}
    if plan.logprobs:
        sampling["logprobs"] = plan.logprobs
    return body(plan.max_tokens, top={"stream": stream, "request_id": rid}, **sampling)


def _as_plan(plan: Plan | int) -> Plan:
    return plan if isinstance(plan, Plan) else Plan(plan)


@contextmanager
def blocking(s: Session, plan: Plan, rid: str) -> Iterator[None]:
    """`plan.blockers` non-streamed requests in flight ahead of the body of the block, sent
    through a client of their own (they are load, not part of the check's exchanges)."""
    if not plan.blockers:
        yield
        return
    timeout = s.timeout_for(plan.max_tokens)
    clients = [
        Client(s.client.base_url, s.client.api_key, timeout=timeout)
        for _ in range(math.ceil(plan.blockers / PER_CLIENT))
    ]
    shape = Plan(plan.max_tokens, plan.n, plan.logprobs)

    def block(number: int) -> None:
        with suppress(AssertionError):  # load only: its answer decides nothing
            clients[number // PER_CLIENT].post(
                GENERATE, payload(shape, False, f"{rid}-ahead-{number}")
            )

    threads = [threading.Thread(target=block, args=(i,), daemon=True) for i in range(plan.blockers)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(min(0.05, plan.blockers * MIN_GAP_S))  # let them reach the server first
        yield
    finally:
        for thread in threads:
            thread.join(timeout)
        for client in clients:
            client.close()


def stream_with(s: Session, rid: str, plan: Plan | int, action: Callable[[str], Reply]) -> Timeline:
    """Stream a request; once its first token arrives, run `action(request_id)` while a reader
    keeps reading; read to the end. The action gets the id the server named in its chunks.
    A request queued behind blockers carries no token until they end: its action goes out once
    the server accepted it, and repeats until it ends (one that came before the server knew the
    id found nothing to act on)."""
    plan = _as_plan(plan)
    line = Timeline(plan.max_tokens, rid, n=plan.n, plan=plan)
    deadline = max(s.config.stream_deadline, 3 * s.limits.seconds_for(plan.max_tokens) + 10)
    early = plan.blockers > 0
    with blocking(s, plan, rid):
        started = time.monotonic()

        def now() -> float:
            return time.monotonic() - started

        with s.client.stream(
            GENERATE, payload(plan, True, rid), headers={"X-Request-Id": rid}, deadline=deadline
        ) as st:
            if st.status != 200:
                raise AssertionError(
                    f"a streamed generate answered HTTP {st.status}: {st.read_body().body[:200]!r}"
                )
            events = st.events()
            if not early:
                for data in events:
                    if not _keep(line, now(), data, s) or line.first_token_s is not None:
                        break
                if line.first_token_s is None:
                    line.ended_s = now()
                    return line  # the stream ended before any token: CUT (or an error event)
            failure: list[BaseException] = []

            def read_rest() -> None:
                try:
                    for data in events:
                        if not _keep(line, now(), data, s):
                            break
                except BaseException as exc:  # re-raised in the check's thread
                    failure.append(exc)
                line.ended_s = now()

            reader = threading.Thread(target=read_rest, daemon=True)
            reader.start()
            try:
                _act(line, action, now, reader if early else None, f"generate-tokens-{rid}")
            finally:
                reader.join(deadline)
            if failure:
                raise failure[0]
    return line


def _act(
    line: Timeline,
    action: Callable[[str], Reply],
    now: Callable[[], float],
    until: threading.Thread | None,
    own_id: str,
) -> None:
    """Run the action once, or (`until`) every REPEAT_S while that reader runs; record each."""
    while True:
        named = next((c.get("request_id") for _, c in line.chunks if c.get("request_id")), None)
        sent = now()
        try:
            answer = action(named if isinstance(named, str) else own_id)
        finally:
            answered = now()
        line.actions.append((sent, answered))
        if line.action is None:
            line.action, line.action_sent_s, line.action_answered_s = answer, sent, answered
        if until is None:
            return
        until.join(REPEAT_S)
        if not until.is_alive():
            return


def _keep(line: Timeline, at: float, data: str, s: Session) -> bool:
    """Record one event; False once the stream is over."""
    if data == "[DONE]":
        line.done = True
        line.ended_s = at
        return False
    chunk = chunk_of(data, "stream event")
    s.observe("GenerateStreamPayload", "in-flight stream event", chunk)
    line.chunks.append((at, chunk))
    if line.first_token_s is None and _token_count(chunk):
        line.first_token_s = at
    return True


def whole_with(
    s: Session, rid: str, plan: Plan | int, delay_s: float, action: Callable[[str], Reply]
) -> Timeline:
    """A non-streamed request; `delay_s` after sending it, run `action` and repeat it every
    margin until the answer comes (an early action may find no request to act on yet)."""
    plan = _as_plan(plan)
    line = Timeline(plan.max_tokens, rid, n=plan.n, plan=plan)
    timeout = s.timeout_for(plan.max_tokens)
    box: dict[str, Any] = {}
    with blocking(s, plan, rid):
        started = time.monotonic()

        def send() -> None:
            try:
                box["reply"] = s.client.post(
                    GENERATE,
                    payload(plan, False, rid),
                    headers={"X-Request-Id": rid},
                    timeout=timeout,
                )
            except BaseException as exc:
                box["error"] = exc
            line.ended_s = time.monotonic() - started

        worker = threading.Thread(target=send, daemon=True)
        worker.start()
        worker.join(delay_s)
        # repeated: an action that came before the request was registered found nothing to act on
        every = min(MIN_MARGIN_S, max(MIN_GAP_S, s.limits.seconds_for(plan.max_tokens) / 20))
        while worker.is_alive():
            sent = time.monotonic() - started
            answer = action(f"generate-tokens-{rid}")  # the documented id (GEN-RESP-004)
            answered = time.monotonic() - started
            line.actions.append((sent, answered))
            if line.action is None:
                line.action, line.action_sent_s, line.action_answered_s = answer, sent, answered
            worker.join(every)
            if time.monotonic() - started > timeout + 5:
                break
        worker.join(timeout)
    if "error" in box:
        raise box["error"]
    if "reply" not in box:
        raise AssertionError(f"the non-streamed request never answered within {timeout:g} s")
    reply: Reply = box["reply"]
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
    raise Inconclusive(
        f"{what}: could not make the action land while the request was provably in flight "
        f"(pace: {s.limits.describe()}); tries: " + " | ".join(tried)
    )
