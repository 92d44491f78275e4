"""Every generate answer a run received, beside the request that asked for it.

Each check of a requirement judges the answers it asked for. A server that breaks a rule only
in some kind of answer (text mode, a stream) would pass them, although the run holds answers
that show it: the checks of `checks/test_every_answer.py` judge those rules again over every
answer here, as SCHEMA-* judges every body's form. An answer is kept as its choices, a
stream's joined per index, so one rule reads a body and a stream alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.tito.streamed import Choice, Streamed
from openapi import all_valid, is_valid

KEPT = 400
"""Answers kept per run: enough for every check's, bounded for a long fuzz."""


@dataclass(frozen=True)
class Answer:
    what: str
    request: dict[str, Any]
    choices: tuple[dict[str, Any], ...]
    streamed: bool
    ids: tuple[Any, ...] = ()  # the request_id of the body, or of each chunk in order
    modes: tuple[Any, ...] = ()  # the output_mode of the body, or of each chunk in order
    header_id: str | None = None  # the X-Request-Id the request was sent with

    @property
    def body_id(self) -> str | None:
        """The request_id the request's body named (None: none, or not a string)."""
        sent = self.request.get("request_id")
        return sent if isinstance(sent, str) and sent else None

    @property
    def params(self) -> dict[str, Any]:
        params = self.request.get("sampling_params")
        return params if isinstance(params, dict) else {}

    @property
    def logprobs(self) -> int | None:
        """The logprobs count asked for (None: not asked)."""
        k = self.params.get("logprobs")
        return k if isinstance(k, int) and not isinstance(k, bool) and k >= 0 else None

    @property
    def text_mode(self) -> bool:
        """Asked for text mode: what it reads stands on TEXT-001 (text-mode answers work)."""
        return self.request.get("output_mode") == "text"

    @property
    def n(self) -> int:
        n = self.params.get("n", 1)
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1


def header_id(headers: dict[str, str] | None) -> str | None:
    found = [v for k, v in (headers or {}).items() if k.lower() == "x-request-id"]
    return found[-1] if found and found[-1] else None


def of_body(
    what: str, request: Any, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Answer | None:
    """The answer, if its form is the spec's (a malformed one is SCHEMA-GEN-001's)."""
    choices = body.get("choices")
    if not isinstance(request, dict) or not isinstance(choices, list):
        return None
    if not is_valid("GenerateResponse", body):
        return None
    kept = tuple(c for c in choices if isinstance(c, dict))
    ids, modes = (body.get("request_id"),), (body.get("output_mode"),)
    return Answer(what, request, kept, False, ids, modes, header_id(headers))


def of_stream(
    what: str, request: Any, streamed: Streamed, headers: dict[str, str] | None = None
) -> Answer | None:
    """A stream's choices as `Streamed.choices` joins them, each with the spans of its last
    chunk that carries them. Kept only if every chunk's form is the spec's
    (SCHEMA-STREAM-001's) and no error event came."""
    if not isinstance(request, dict):
        return None
    chunks = streamed.chunks
    if not all("choices" in c for c in chunks) or not all_valid("GenerateStreamPayload", chunks):
        return None
    joined = tuple(map(_joined, streamed.choices().values()))
    ids = tuple(c.get("request_id") for c in streamed.chunks)
    modes = tuple(c.get("output_mode") for c in streamed.chunks)
    return Answer(what, request, joined, True, ids, modes, header_id(headers))


def _joined(choice: Choice) -> dict[str, Any]:
    """A joined stream choice in a body's shape: logprobs only where a chunk carried them."""
    joined: dict[str, Any] = {
        "index": choice.index,
        "token_ids": choice.token_ids,
        "finish_reason": choice.finish_reason,
        "stop_reason": choice.stop_reason,
    }
    if any(isinstance((c.get("logprobs") or {}).get("content"), list) for c in choice.chunks):
        joined["logprobs"] = {"content": choice.logprobs}
    spans = [c["weight_versions"] for c in choice.chunks if c.get("weight_versions") is not None]
    if spans:
        joined["weight_versions"] = spans[-1]
    return joined
