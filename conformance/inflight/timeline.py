"""What one in-flight attempt saw, and what it shows by itself: whether the server said the
action landed (an `abort` finish), cut the request short, or let it run to its end. Whether a
request that ran to its end ignored the action is never read from the timeline alone (the
client's timing is not evidence): `proof` decides it, for the suite's checks, the fuzzer's
abort sequence and the hang-ups alike."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from conformance.wire import Client, Reply, ServerBroke, Unsendable, sse_data
from conformance.wire.bounded import ClientBroke
from conformance.wire.exchange import Exchange

if TYPE_CHECKING:
    from conformance.inflight.plans import Plan

GENERATE = "/inference/v1/generate"

REPEAT_EVERY_S = 0.1
"""The longest gap between repeats of an action on a non-streamed request."""


class Outcome(StrEnum):
    LANDED = "landed"  # the server ended the request as aborted
    IGNORED = "ignored"  # ran to its natural end although an action provably reached it
    CUT = "cut"  # ended early, but not as an abort
    RAN = "ran to its end"  # ran to its natural end: ignored only if `proof` shows it
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
    unread: bool = False
    """The client's wall clock ran out while the answer still came: its end was never seen."""
    whole: bool = False
    """A non-streamed request (its answer is `body` once read)."""
    request_sent_s: float | None = None
    """A non-streamed request: when its body was written to the socket (else when its worker
    began sending it), since the line's start."""
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
    reads: list[tuple[float, float, bool]] = field(default_factory=list)
    """(sent, answered, held) of every read of the engines after an action: whether they still
    held the request (`acting`'s `witness`)."""
    proof: str = ""
    """Why the action provably reached the request in flight (`proof`), where it did."""
    exchange: Exchange | None = None
    """The request as sent and answered (its reproducer is sent again by `inflight.script`)."""
    early: bool = False
    """The action went out once the server accepted the stream, and again until it ended."""
    delay_s: float | None = None
    """A non-streamed request: how long after it the action went out, and its repeats' gap."""
    every_s: float | None = None

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

    def landed(self) -> bool:
        """Some sequence ended as aborted (a correct server ends every unfinished one so)."""
        return any(c.get("finish_reason") == "abort" for c in self.choices())

    def outcome(self) -> Outcome:
        """What the server's own answer says: landed, cut, ran to its end (undecided), or no
        action went out."""
        if self.landed():
            return Outcome.LANDED
        if self.unread:
            return Outcome.TOO_CLOSE  # its end was never read: nothing to judge
        if self.action_sent_s is None and not self.actions:
            return Outcome.TOO_CLOSE  # no action went out (no token was seen): nothing to judge
        if not self.ran_to_end():
            return Outcome.CUT
        return Outcome.RAN

    def sent(self) -> list[tuple[float, float]]:
        """(sent, answered) of every action that was answered."""
        if self.actions:
            return list(self.actions)
        if self.action_sent_s is None or self.action_answered_s is None:
            return []
        return [(self.action_sent_s, self.action_answered_s)]

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
            + ("; the client's deadline ran out before it read the end" if self.unread else "")
            + (f"; {self.proof}" if self.proof else "")
        )


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


def completed_in(client: Client, body: dict[str, Any], plan: Plan, **how: Any) -> float | None:
    """One sample of `proof.Fastest`: the seconds from sending `body` (non-streamed, `plan`'s
    request) to its answer's head, or None unless it ran to its end (an abort, a short answer,
    an error or no answer tells nothing of how fast the whole request completes).

    The head, not the whole body: a non-streamed answer leaves the server once generated, and
    how slowly the client then reads a long body is its own pace, never the server's (a slow
    reader made the bound twice the generation and a correct server fail ABORT-003)."""
    try:
        reply = client.post(GENERATE, body, **how)
        data = reply.json() if reply.status == 200 else None
    except (ServerBroke, Unsendable, ClientBroke):  # no sample: no bound, never a proof
        return None
    sent, head = reply.exchange.body_sent_at, reply.exchange.head_at
    # untraced (an in-process app): from the request's start to its head, as recorded
    took = head - sent if sent is not None and head is not None else reply.exchange.elapsed_s
    body_seen = data if isinstance(data, dict) else {}
    whole = Timeline(plan.max_tokens, "", n=plan.n, body=body_seen)
    return took if took is not None and body_seen and whole.ran_to_end() else None
