"""What one in-flight attempt saw, and the one rule that judges it (the suite's checks, the
fuzzer's abort sequence and WV-009 alike): an action decides a requirement only if it landed
while the request was provably generating."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from .http import Reply, sse_data

if TYPE_CHECKING:
    from .plans import Plan

MIN_MARGIN_S = 0.1


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
    """The first answer to the action."""
    ended_s: float | None = None
    body: dict[str, Any] | None = None  # the non-streamed answer
    n: int = 1  # sequences asked for
    actions: list[tuple[float, float]] = field(default_factory=list)
    """(sent, answered) of every repeat of the action (the first is `action_sent_s`, ...)."""
    plan: Plan | None = None
    status: int = 0
    content_type: str | None = None
    raw: bytes = b""
    """A streamed answer's bytes as read (what the fuzzer and the diff judge)."""
    events: int = 0
    """Events read, [DONE] included."""

    def named_id(self) -> str | None:
        """The request id the server named in its first chunk that names one."""
        for _, chunk in self.chunks:
            if isinstance(chunk.get("request_id"), str):
                return str(chunk["request_id"])
        return None

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
        times = [t for t, chunk in self.chunks if token_count(chunk)]
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        return statistics.median(gaps) if gaps else 0.0

    def landed(self) -> bool:
        """Some sequence ended as aborted (a correct server ends every unfinished one so)."""
        return any(c.get("finish_reason") == "abort" for c in self.choices())

    def outcome(self, itl_s: float) -> Outcome:
        if self.landed():
            return Outcome.LANDED
        if self.action_sent_s is None and not self.actions:
            return Outcome.TOO_CLOSE  # no action went out (no token was seen): nothing to judge
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


def token_count(chunk: dict[str, Any]) -> int:
    return sum(len(c.get("token_ids") or []) for c in chunk.get("choices") or [])
