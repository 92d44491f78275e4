"""What the structure comparison reads: one request and the two answers it got."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import httpx

from conformance.wire import Reply
from conformance.wire import sse_events as decoded

SSE_MEDIA_TYPE = "text/event-stream"
NOT_JSON: Any = object()
"""Marker for a body that is absent or does not parse as JSON."""

_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class Request:
    """The request both servers got; only its JSON body and target matter for structure."""

    method: str
    path: str
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    timing_dependent: bool = False
    """An abort flow: whether the abort lands in time is not part of the structure."""

    @property
    def sampling_params(self) -> dict[str, Any]:
        params = self.body.get("sampling_params") if isinstance(self.body, dict) else None
        return params if isinstance(params, dict) else {}

    @property
    def is_generate(self) -> bool:
        return self.path.rstrip("/") == "/inference/v1/generate"


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: status, Content-Type, body bytes and, for SSE, the decoded events."""

    status: int
    content_type: str | None
    body: bytes = b""
    events: tuple[dict[str, Any], ...] | None = None
    """SSE events as `{"data": str, "event"?: str, "id"?: str, "retry"?: int}`."""
    raw_stream: bytes | None = None
    """The SSE bytes as received, when known (framing is checked only if both sides have it)."""
    content_type_params_known: bool = True
    """False when the Content-Type was reconstructed (a capture that kept only the events)."""

    @property
    def media_type(self) -> str | None:
        if self.content_type is None:
            return None
        return self.content_type.split(";")[0].strip().lower()

    @property
    def media_params(self) -> tuple[str, ...]:
        if self.content_type is None:
            return ()
        parts = self.content_type.split(";")[1:]
        return tuple(sorted(p.strip().lower().replace(" ", "") for p in parts if p.strip()))

    @property
    def is_stream(self) -> bool:
        return self.events is not None

    @cached_property
    def json(self) -> Any:
        if not self.body:
            return NOT_JSON
        try:
            return json.loads(self.body)
        except ValueError:
            return NOT_JSON

    @classmethod
    def from_response(cls, response: httpx.Response) -> Answer:
        """Build from a fully read httpx response; SSE bodies are decoded by httpx-sse."""
        return cls.of(response.status_code, response.headers.get("content-type"), response.content)

    @classmethod
    def from_reply(cls, reply: Reply) -> Answer:
        """Build from the kit client's recorded, bounded answer (`conformance.wire.Reply`)."""
        return cls.of(reply.status, reply.headers.get("content-type"), reply.body)

    @classmethod
    def of(cls, status: int, content_type: str | None, body: bytes) -> Answer:
        if content_type and content_type.split(";")[0].strip().lower() == SSE_MEDIA_TYPE:
            return cls(status, content_type, b"", sse_events(body), body)
        return cls(status, content_type, body)


def sse_events(raw: bytes) -> tuple[dict[str, Any], ...]:
    """Decode SSE bytes with the kit's decoder into event objects (the OpenAPI 3.2 item shape)."""
    events: list[dict[str, Any]] = []
    for sse in decoded(raw):
        event: dict[str, Any] = {"data": sse.data}
        if sse.event != "message":
            event["event"] = sse.event
        if sse.id:
            event["id"] = sse.id
        if sse.retry is not None:
            event["retry"] = sse.retry
        events.append(event)
    return tuple(events)


@dataclass(frozen=True)
class Difference:
    """One structural difference, at a path-like location, in words a person can act on."""

    location: str
    """`status`, `content-type`, `$.choices[0].logprobs`, `$sse[final 0].choices[0]`, ..."""
    kind: str
    reference: str
    candidate: str

    @property
    def pattern(self) -> str:
        """The location with list indices as `[*]`: the key intended differences are listed by."""
        return _INDEX.sub("[*]", self.location)

    def __str__(self) -> str:
        return (
            f"{self.location}: {self.kind}: reference {self.reference}, candidate {self.candidate}"
        )

    def as_dict(self) -> dict[str, str]:
        return {
            "location": self.location,
            "pattern": self.pattern,
            "kind": self.kind,
            "reference": self.reference,
            "candidate": self.candidate,
        }


def describe(value: Any) -> str:
    """A short, value-free description of a JSON value: its type (and size for containers)."""
    if value is NOT_JSON:
        return "no JSON"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return f"array({len(value)})"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
