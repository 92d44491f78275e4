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
"""

from __future__ import annotations

import json
import math
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .api import GENERATE, PROMPT, body, chunk_of
from .http import Reply, sse_data
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

    def choices(self) -> list[dict[str, Any]]:
        if self.body is not None:
            found = self.body.get("choices")
            return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []
        return [c for _, chunk in self.chunks for c in chunk.get("choices") or []]

    @property
    def tokens(self) -> int:
        return sum(len(c.get("token_ids") or []) for c in self.choices())

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

    def outcome(self, itl_s: float) -> Outcome:
        if self.finish_reason == "abort":
            return Outcome.LANDED
        if self.tokens < self.max_tokens or self.finish_reason is None:
            return Outcome.CUT
        if ran_past(
            self.max_tokens,
            max(itl_s, self.gap_s()),
            self.first_token_s,
            self.action_sent_s,
            self.action_answered_s,
            self.ended_s,
        ):
            return Outcome.IGNORED
        return Outcome.TOO_CLOSE

    def describe(self) -> str:
        def at(value: float | None) -> str:
            return "never" if value is None else f"{value * 1000:.0f} ms"

        status = self.action.status if self.action is not None else None
        return (
            f"{self.max_tokens} tokens asked; first token at {at(self.first_token_s)}; the "
            f"action was sent at {at(self.action_sent_s)} and answered {status} at "
            f"{at(self.action_answered_s)}; the request ended at {at(self.ended_s)} with "
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


def _payload(max_tokens: int, stream: bool, rid: str) -> dict[str, Any]:
    """A greedy request running to max_tokens. Its id goes in the body and in X-Request-Id, so
    whichever the server honours, the action finds it (each rule is its own requirement)."""
    return body(max_tokens, ignore_eos=True, top={"stream": stream, "request_id": rid})


def stream_with(s: Session, rid: str, max_tokens: int, action: Callable[[str], Reply]) -> Timeline:
    """Stream a request; once its first token arrives, run `action(request_id)` while a reader
    keeps reading; read to the end. The action gets the id the server named in its chunks."""
    line = Timeline(max_tokens, rid)
    deadline = max(s.config.stream_deadline, 3 * s.limits.seconds_for(max_tokens) + 10)
    started = time.monotonic()

    def now() -> float:
        return time.monotonic() - started

    with s.client.stream(
        GENERATE, _payload(max_tokens, True, rid), headers={"X-Request-Id": rid}, deadline=deadline
    ) as st:
        if st.status != 200:
            raise AssertionError(
                f"a streamed generate answered HTTP {st.status}: {st.read_body().body[:200]!r}"
            )
        events = st.events()
        for data in events:
            if not _keep(line, now(), data, s):
                break
            if line.first_token_s is not None:
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
        named = next((c.get("request_id") for _, c in line.chunks if c.get("request_id")), None)
        line.action_sent_s = now()
        try:
            line.action = action(named if isinstance(named, str) else f"generate-tokens-{rid}")
        finally:
            line.action_answered_s = now()
            reader.join(deadline)
        if failure:
            raise failure[0]
    return line


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
    s: Session, rid: str, max_tokens: int, delay_s: float, action: Callable[[str], Reply]
) -> Timeline:
    """A non-streamed request; `delay_s` after sending it, run `action` and repeat it every
    margin until the answer comes (an early action may find no request to act on yet)."""
    line = Timeline(max_tokens, rid)
    timeout = s.timeout_for(max_tokens)
    started = time.monotonic()
    box: dict[str, Any] = {}

    def send() -> None:
        try:
            box["reply"] = s.client.post(
                GENERATE,
                _payload(max_tokens, False, rid),
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
    every = min(MIN_MARGIN_S, max(MIN_GAP_S, s.limits.seconds_for(max_tokens) / 20))
    while worker.is_alive():
        sent = time.monotonic() - started
        answer = action(f"generate-tokens-{rid}")  # the documented id (GEN-RESP-004)
        if line.action is None:
            line.action, line.action_sent_s = answer, sent
            line.action_answered_s = time.monotonic() - started
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
    attempt: Callable[[int, int], Timeline],
    what: str,
    landed: Callable[[Timeline, int], bool] | None = None,
) -> tuple[Timeline, Outcome]:
    """Run `attempt(max_tokens, try_number)` with growing requests until the action and the
    request provably overlap; Inconclusive when even the longest could not. `landed(line,
    try_number)` says whether the action took effect (default: the request ended as aborted)."""
    tried: list[str] = []
    itl = s.limits.itl_s or 0.0
    for number, max_tokens in enumerate(sizes(s)):
        line = attempt(max_tokens, number)
        if landed is None:
            outcome = line.outcome(itl)
        elif landed(line, number):
            outcome = Outcome.LANDED
        elif outlived(line.action_answered_s, line.ended_s, max(itl, line.gap_s())):
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
