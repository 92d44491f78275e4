"""Keep generated cases cheap and, in positive mode, truly acceptable.

The spec cannot say everything vLLM checks after validation (a served model name, `n` at most
`max_num_seqs`, no stop strings without a tokenizer, ids inside the vocabulary, ...). A
positive case that breaks one of those rules is rejected for a reason the schema does not
express, so positive cases are nudged inside those rules here; every nudge names the rule.
In both modes `max_tokens`, `n` and the prompt length are bounded so streams stay short, and
token ids at or above the vocabulary are folded back inside (the out-of-vocabulary group sends
them on purpose, separately). A nudge never touches what made a negative case negative: it
only rewrites values the schema accepts anyway (schemathesis revalidates the case after it).
"""

from __future__ import annotations

import zlib
from typing import Any

from .settings import ServerFacts

UNKNOWN_KEY = "x_tito_fuzz_unknown"
"""Added to some positive generate bodies: "Unknown keys are allowed and ignored"."""

DROP_ALWAYS = (
    # vLLM-side rules the schema does not express; each is a 400 (or a 404) on a valid body.
    "features",  # placeholder ranges must fit the prompt, modalities must agree
    "content_parts",  # needs a multimodal model
    "kv_transfer_params",  # passed to msgpack: ints wider than 64 bits are a 400
    "ec_transfer_params",
    "reasoning_parser_kwargs",  # extra="forbid" model
)
DROP_SAMPLING = (
    "structured_outputs",  # exactly one constraint kind
    "prompt_logprob_token_ids",  # 400 with stream and on CPU
    "prompt_logprob_start",
    "logprob_token_ids",
    "logit_bias",  # keys must be token ids
    "extra_args",  # msgpack, as above
    "thinking_token_budget",  # needs a reasoning parser
    "output_kind",  # an enum in vLLM
    "allowed_token_ids",  # an empty list leaves nothing to sample
    "bad_words",  # needs a tokenizer
)


def _is_int(value: Any) -> bool:
    return type(value) is int


def integral_floats_to_ints(value: Any) -> Any:
    """7.0 -> 7 throughout. JSON Schema counts 7.0 as an integer and vLLM's pydantic accepts it;
    the mock does not (reported as a mock bug), so positive cases send plain integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, list):
        return [integral_floats_to_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: integral_floats_to_ints(v) for k, v in value.items()}
    return value


def fold_ids(values: Any, bound: int) -> Any:
    """Ids at or above `bound` folded inside; anything else (negatives, non-ints) untouched."""
    if not isinstance(values, list):
        return values
    return [v % bound if _is_int(v) and v >= bound else v for v in values]


def bound_generate(body: Any, facts: ServerFacts, max_tokens: int, max_prompt: int) -> None:
    """Both modes: short prompts, few tokens, few choices, ids inside the vocabulary."""
    if not isinstance(body, dict):
        return
    ids = body.get("token_ids")
    if isinstance(ids, list):
        body["token_ids"] = fold_ids(
            ids[:max_prompt] if len(ids) > max_prompt else ids, facts.id_bound
        )
    sp = body.get("sampling_params")
    if not isinstance(sp, dict):
        return
    mt = sp.get("max_tokens")
    if mt is None:  # absent or null (both valid): the server default runs to the context's end
        sp["max_tokens"] = max_tokens
    elif isinstance(mt, int) and _is_int(mt) and mt > max_tokens:
        sp["max_tokens"] = 1 + mt % max_tokens
    n = sp.get("n")
    if isinstance(n, int) and _is_int(n) and n > 4:
        sp["n"] = 1 + n % 4
    for key in ("stop_token_ids", "allowed_token_ids"):
        if key in sp:
            sp[key] = fold_ids(sp[key], facts.id_bound)


def accept_generate(
    body: dict[str, Any], facts: ServerFacts, max_tokens: int, header_rank: str | None
) -> None:
    """Positive mode: the vLLM rules behind a 400 that the schema cannot state."""
    for key in DROP_ALWAYS:
        body.pop(key, None)
    if body.get("model") is not None:  # must be a served name (else 404)
        body["model"] = facts.model
    if body.get("priority"):  # needs --scheduling-policy priority
        body["priority"] = 0
    if not facts.has_tokenizer:
        body["output_mode"] = "tokens"  # "output_mode='text' requires a tokenizer"
    sp = body.setdefault("sampling_params", {})
    for key in DROP_SAMPLING:
        sp.pop(key, None)
    if sp.get("max_tokens") is None:  # the server default would run to the context end
        sp["max_tokens"] = max_tokens
    if sp.get("min_tokens", 0) > sp["max_tokens"]:  # "min_tokens must be <= max_tokens"
        sp["min_tokens"] = sp["max_tokens"]
    for key in ("logprobs", "prompt_logprobs"):
        if sp.get(key) == -1:  # -1 asks for the whole vocabulary, over --max-logprobs
            sp[key] = facts.max_logprobs
    if not facts.has_tokenizer or sp.get("detokenize") is False:
        sp.pop("stop", None)  # stop strings need detokenization
    temperature = sp.get("temperature", 1.0)
    if sp.get("n", 1) > 1 and temperature < 1e-5:  # "n must be 1 when using greedy sampling"
        sp["n"] = 1
    if _crc(body) % 5 == 0:
        body[UNKNOWN_KEY] = "ignored"


def accept_headers(headers: dict[str, Any]) -> None:
    """An integer X-data-parallel-rank other than 0 is out of range on a one-rank server."""
    for name in list(headers):
        if name.lower() == "x-data-parallel-rank":
            try:
                rank = int(headers[name])
            except (TypeError, ValueError):
                continue
            if rank != 0:
                headers[name] = "0"


def accept_render(body: dict[str, Any], facts: ServerFacts, max_prompt: int) -> None:
    """Render: token prompts inside the vocabulary, a served model, text only with a tokenizer."""
    if body.get("model") is not None:
        body["model"] = facts.model
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], list):
        body["prompt"] = [fold_ids(p[:max_prompt], facts.id_bound) or [1] for p in prompt[:4]]
    elif isinstance(prompt, list) and (not prompt or _is_int(prompt[0])):
        body["prompt"] = fold_ids(prompt[:max_prompt], facts.id_bound) or [1]
    elif not facts.has_tokenizer:  # "Tokenizer not available when `skip_tokenizer_init=True`"
        body["prompt"] = [1, 2, 3]
    elif isinstance(prompt, list):
        body["prompt"] = [p or "x" for p in prompt[:4]] or ["x"]
    elif not prompt:
        body["prompt"] = "x"
    for key in ("max_tokens", "n", "logprobs", "stream", "echo", "suffix"):
        body.pop(key, None)


def accept_chat(body: dict[str, Any], facts: ServerFacts) -> None:
    """Chat render needs messages with a role and text content."""
    if body.get("model") is not None:
        body["model"] = facts.model
    messages = body.get("messages") or [{}]
    body["messages"] = [
        {"role": "user", "content": str(m.get("content", "hi")) or "hi"} for m in messages[:4]
    ]


def _crc(value: Any) -> int:
    return zlib.crc32(repr(value).encode())
