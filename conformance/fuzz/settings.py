"""What one fuzz run targets and how hard it tries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.server.limits import Limits
from conformance.wire import DEFAULT_TIMEOUT_S, Timeouts

SAFE_VOCAB = 256
"""Ids below this exist in every tokenizer (byte-level vocabularies have at least 256)."""
OOV_FLOOR = 10_000_000
"""An id no real vocabulary reaches: the out-of-vocabulary group's id when the size is unknown."""
CI_MAX_EXAMPLES = 150
"""Cases drawn per operation and mode: 150 positive + 150 negative = the issue's "at least 300
generated cases per operation" (an operation without inputs has fewer distinct cases)."""
RUN_MAX_EXAMPLES = 10
"""The small default budget of `tito-conformance run` (per operation and mode)."""
VLLM_MAX_LOGPROBS = 20
"""vLLM's default `--max-logprobs`: the bound when the probe found none."""


@dataclass(frozen=True)
class ServerFacts:
    """The server profile the fuzzer must judge answers by (from its `x-tito-profiles` name)."""

    profile: str  # "scale-out" | "tokens-only" | "disabled"
    api_key_required: bool = False
    dev_mode: bool = False
    vocab_size: int | None = None  # None: unknown, ids are kept below SAFE_VOCAB
    model: str | None = None
    tokenizer: bool | None = None  # detected by the probe; None: as the profile implies
    limits: Limits = field(default_factory=Limits)
    """The suite probe's learned limits: a positive case never goes past one."""

    @property
    def max_logprobs(self) -> int:
        found = self.limits.max_logprobs
        return VLLM_MAX_LOGPROBS if found is None else found

    @property
    def id_bound(self) -> int:
        """Token ids strictly below this are inside the vocabulary."""
        return self.vocab_size if self.vocab_size is not None else SAFE_VOCAB

    @property
    def oov_id(self) -> int:
        return self.vocab_size if self.vocab_size is not None else OOV_FLOOR

    @property
    def has_tokenizer(self) -> bool:
        if self.tokenizer is not None:
            return self.tokenizer
        return self.profile != "tokens-only"


@dataclass(frozen=True)
class FuzzConfig:
    """One run. `app` (an ASGI app, in-process) wins over `base_url`."""

    base_url: str = "http://127.0.0.1:8000"
    app: Any = None
    api_key: str | None = None
    max_examples: int = CI_MAX_EXAMPLES
    seed: int = 0
    max_tokens: int = 4  # generated max_tokens are clamped to [1, max_tokens]
    max_prompt: int = 32  # generated prompts are cut to this many ids
    request_timeout_s: float = DEFAULT_TIMEOUT_S
    answer_budget_s: float = 0.0  # per answer (schemathesis max_response_time); 0: derived
    operations: tuple[str, ...] = ()  # operationIds to fuzz; empty: every operation
    negative: bool = True
    oov_group: bool = True
    stateful: bool = True
    facts: ServerFacts | None = None  # None: probe the server
    senders: int | None = None  # cases sent at once; None: from the learned limits
    extra_headers: dict[str, str] = field(default_factory=dict)
    ends: float | None = None
    """The deadline of the run it is part of (`time.monotonic()`): no case starts once a
    stream's budget from it, what is in flight at it is cut, and nothing is found after it."""

    @property
    def timeouts(self) -> Timeouts:
        """The run's waits: the kit's one timeout configuration (`conformance.wire.Timeouts`)."""
        return Timeouts(self.request_timeout_s, answer=self.answer_budget_s)

    @property
    def target(self) -> str:
        return "in-process ASGI app" if self.app is not None else self.base_url
