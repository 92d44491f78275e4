"""One request of the diff corpus, and the profiles it applies to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.profiles import profiles_with

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
LEGACY_ABORT = "/abort_requests"

SCALE_OUT = profiles_with("scale-out")
"""Servers with a tokenizer and `--enable-scale-out` (api-key adds a key to scale-out)."""
TOKENS_ONLY = profiles_with("tokens-only")
SERVED = SCALE_OUT | TOKENS_ONLY
"""Profiles where generate, abort, render and derender are registered."""
DISABLED = profiles_with("disabled")
KEYED = profiles_with("api-key")
EVERY = SERVED | DISABLED
PROFILES = tuple(sorted(EVERY))
LONG_TOKENS = 256


@dataclass(frozen=True)
class AbortFlow:
    """Start the request, then abort it by its returned id on `path`.

    Streamed: after `after_events` events; non-streamed: after `delay_s`.
    """

    path: str = ABORT
    after_events: int = 1
    delay_s: float = 0.2


@dataclass(frozen=True)
class Case:
    name: str
    profiles: frozenset[str]
    method: str = "POST"
    path: str = GENERATE
    body: Any = None
    raw: str | None = None
    """Sent as the body verbatim (invalid JSON, a text/plain body)."""
    content_type: str | None = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    auth: str = "key"
    """`key`: send the API key when one is given; `none`: never; `wrong`: a wrong key."""
    abort: AbortFlow | None = None
    covers: str = ""
    """The feature or bad-input class this case exercises (for the report)."""

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True

    @property
    def long(self) -> bool:
        """A generate that may run to the end of the context (no `max_tokens`, or more than
        `LONG_TOKENS`): on a real vLLM on two CPU cores that is ~4,000 tokens at 5-10 ms each,
        so it gets a stream's deadline, not a quick answer's (as the suite scales its waits)."""
        params = self.body.get("sampling_params") if isinstance(self.body, dict) else None
        if self.path != GENERATE or not isinstance(params, dict):
            return False
        tokens = params.get("max_tokens")
        return not isinstance(tokens, int) or tokens > LONG_TOKENS

    def applies_to(self, profile: str) -> bool:
        return profile in self.profiles


def gen(
    name: str,
    profiles: frozenset[str],
    covers: str,
    sampling: dict[str, Any] | None = None,
    tokens: list[int] | None = None,
    **top: Any,
) -> Case:
    """A generate case: prompt `[321, 608, 78, 338, 10]` unless given, then the fields."""
    headers = top.pop("headers", {})
    abort = top.pop("abort", None)
    body: dict[str, Any] = {"token_ids": tokens if tokens is not None else [321, 608, 78, 338, 10]}
    body.update(top)
    body["sampling_params"] = sampling if sampling is not None else {"max_tokens": 4}
    return Case(name, profiles, body=body, headers=headers, abort=abort, covers=covers)
