"""A stream as the suite reads it: every chunk in order, and each choice's deltas joined.

Its own module so that what keeps answers (`answers`) and what reads them (`api`) share it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Choice:
    """One choice of a stream, its deltas joined."""

    index: int
    token_ids: list[int] = field(default_factory=list)
    text: str = ""
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: Any = None


def tokens_in(body: Any) -> int:
    """The token ids a body or a stream chunk carries over its choices, read leniently: a
    choice of another form counts none (its form is SCHEMA-*'s business)."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list):
        return 0
    ids = [c.get("token_ids") for c in choices if isinstance(c, dict)]
    return sum(len(t) for t in ids if isinstance(t, list))


def index_of(value: Any) -> int:
    """A choice index as a number, read leniently: its type is SCHEMA-STREAM-001's business."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


@dataclass
class Streamed:
    status: int
    content_type: str
    chunks: list[dict[str, Any]]  # every data chunk, in order (errors included)
    done: bool  # the last event was [DONE]
    after_done: int  # events after [DONE]
    errors: list[dict[str, Any]]

    def choices(self) -> dict[int, Choice]:
        joined: dict[int, Choice] = {}
        for chunk in self.chunks:
            for choice in chunk.get("choices") or []:
                index = index_of(choice.get("index", 0))
                c = joined.setdefault(index, Choice(index))
                c.chunks.append(choice)
                c.token_ids += choice.get("token_ids") or []
                text = choice.get("text")  # a delta that is no string: SCHEMA-STREAM-001's
                c.text += text if isinstance(text, str) else ""
                c.logprobs += (choice.get("logprobs") or {}).get("content") or []
                if choice.get("finish_reason") is not None:
                    c.finish_reason = choice["finish_reason"]
                    c.stop_reason = choice.get("stop_reason")
        return joined

    def usage_chunks(self) -> list[dict[str, Any]]:
        return [c for c in self.chunks if c.get("choices") == [] and c.get("usage")]
