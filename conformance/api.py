"""Talking TITO: request builders, schema validation, stream collection.

Every JSON body and every SSE chunk a check sees goes through `validate` against
`openapi/tito.yaml`; the semantics no schema can express live in `semantics.py`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from openapi import schema_validator

from .http import Reply, ServerBroke, Stream
from .session import Session

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
LEGACY_ABORT = "/abort_requests"
PROMPT = [10, 11, 12, 13]
SEED = 1234


def body(
    max_tokens: int | None = 8,
    prompt: list[int] | None = None,
    top: dict[str, Any] | None = None,
    **sampling: Any,
) -> dict[str, Any]:
    """A generate body: a short prompt, greedy unless told otherwise."""
    params: dict[str, Any] = {"temperature": 0}
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    params.update(sampling)
    result: dict[str, Any] = {"token_ids": list(prompt or PROMPT), "sampling_params": params}
    result.update(top or {})
    return result


def seeded(max_tokens: int = 12, **sampling: Any) -> dict[str, Any]:
    """A sampled but reproducible request (temperature 1, fixed seed)."""
    return body(max_tokens, temperature=1.0, seed=SEED, **sampling)


def validate(schema: str, instance: Any, what: str) -> None:
    """Fail with the first schema errors, pointing at where they are."""
    errors = sorted(schema_validator(schema).iter_errors(instance), key=lambda e: list(e.path))
    if errors:
        shown = "; ".join(
            f"at /{'/'.join(str(p) for p in e.path)}: {e.message[:200]}" for e in errors[:3]
        )
        raise AssertionError(f"{what} does not match {schema}: {shown}")


def status_is(reply: Reply, expected: int, what: str) -> None:
    if reply.status != expected:
        raise AssertionError(
            f"{what}: expected HTTP {expected}, got {reply.status}: {reply.body[:300]!r}"
        )


def generate(
    s: Session,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
    what: str = "generate",
) -> dict[str, Any]:
    """POST generate, demand a 200 and a body valid against GenerateResponse."""
    reply = s.client.post(GENERATE, payload, headers=headers)
    status_is(reply, 200, what)
    data = reply.json()
    validate("GenerateResponse", data, f"{what} response")
    assert isinstance(data, dict)
    return data


def rejected(
    s: Session,
    payload: Any,
    status: int = 400,
    path: str = GENERATE,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
    auth: bool = True,
    what: str = "request",
) -> Reply:
    """Send something bad and demand exactly `status` (the body shape is ERR-002's business)."""
    if content is not None:
        reply = s.client.post(path, content=content, headers=headers, auth=auth)
    else:
        reply = s.client.post(path, payload, headers=headers, auth=auth)
    status_is(reply, status, what)
    return reply


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
                c = joined.setdefault(choice.get("index", 0), Choice(choice.get("index", 0)))
                c.chunks.append(choice)
                c.token_ids += choice.get("token_ids") or []
                c.text += choice.get("text") or ""
                c.logprobs += (choice.get("logprobs") or {}).get("content") or []
                if choice.get("finish_reason") is not None:
                    c.finish_reason = choice["finish_reason"]
                    c.stop_reason = choice.get("stop_reason")
        return joined

    def usage_chunks(self) -> list[dict[str, Any]]:
        return [c for c in self.chunks if c.get("choices") == [] and c.get("usage")]


def read_stream(stream: Stream, stop_after_tokens: int | None = None) -> Streamed:
    """Read (and validate) every event; optionally stop once enough tokens arrived."""
    chunks: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    done = False
    after_done = 0
    tokens = 0
    for data in stream.events():
        if done:
            after_done += 1
            continue
        if data == "[DONE]":
            done = True
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ServerBroke(f"stream event is neither [DONE] nor JSON: {data[:200]!r}") from None
        validate("GenerateStreamPayload", chunk, f"stream event #{len(chunks) + 1}")
        chunks.append(chunk)
        if "error" in chunk:
            errors.append(chunk)
        for choice in chunk.get("choices") or []:
            tokens += len(choice.get("token_ids") or [])
        if stop_after_tokens is not None and tokens >= stop_after_tokens:
            break
    ctype = stream.headers.get("content-type", "")
    return Streamed(stream.status, ctype, chunks, done, after_done, errors)


def stream(
    s: Session,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
    what: str = "stream",
) -> Streamed:
    """POST a streamed generate and read it to the end; demands 200 and text/event-stream."""
    with s.client.stream(GENERATE, {**payload, "stream": True}, headers=headers) as st:
        if st.status != 200:
            reply = st.read_body()
            raise AssertionError(
                f"{what}: expected HTTP 200, got {st.status}: {reply.body[:300]!r}"
            )
        ctype = st.headers.get("content-type", "")
        if not ctype.startswith("text/event-stream"):
            raise AssertionError(f"{what}: Content-Type is {ctype!r}, not text/event-stream")
        return read_stream(st)


def dumps_body(payload: Any) -> bytes:
    """The bytes `post` would send for `payload`, for requests with a custom Content-Type."""
    return json.dumps(payload, separators=(",", ":")).encode()
