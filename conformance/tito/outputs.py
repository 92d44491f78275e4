"""The per-token outputs a start flag adds to every answer, recognised by their form.

`--enable-return-routed-experts` and `--return-sampling-mask` are documented serve flags. A
correct server started with one sends the field on every choice; one started without sends
null. The flag itself cannot be asked for, but its output can be read: a field in the form
the document gives (a base64 `.npy` of routed experts; one support set per token, holding the
sampled token) is the flag's, so the suite detects it instead of failing the server for it.
A value in any other form is no flag's output, and fails GEN-RESP-007 as before.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

NPY_MAGIC = b"\x93NUMPY"


def sampling_mask_problem(choice: dict[str, Any]) -> str | None:
    """None when `sampling_mask` is one list of token ids per generated token, each holding
    the token sampled there (vLLM's `test_generate_sampling_mask`)."""
    mask, tokens = choice.get("sampling_mask"), choice.get("token_ids")
    if not isinstance(mask, list) or not isinstance(tokens, list):
        return f"sampling_mask is {type(mask).__name__}, not a list per token"
    if len(mask) != len(tokens):
        return f"sampling_mask has {len(mask)} entries for {len(tokens)} tokens"
    for i, (support, token) in enumerate(zip(mask, tokens, strict=True)):
        if not isinstance(support, list) or not all(type(t) is int for t in support):
            return f"sampling_mask[{i}] is not a list of token ids"
        if token not in support:
            return f"sampling_mask[{i}] does not hold the sampled token {token}"
    return None


def routed_experts_problem(choice: dict[str, Any]) -> str | None:
    """None when `routed_experts` is a base64 `.npy` array (vLLM's own encoding)."""
    value = choice.get("routed_experts")
    if not isinstance(value, str):
        return f"routed_experts is {type(value).__name__}, not a base64 string"
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return f"routed_experts {value[:40]!r} is not base64"
    if not raw.startswith(NPY_MAGIC):
        return f"routed_experts decodes to {raw[:8]!r}, not a .npy array"
    return None


@dataclass(frozen=True)
class FlagOutput:
    key: str  # the choice field
    feature: str  # the --expect name, detected from the field's form
    flag: str  # the serve flag that turns it on
    problem: Callable[[dict[str, Any]], str | None]  # what keeps a value from being its form


FLAG_OUTPUTS = (
    FlagOutput(
        "routed_experts", "routed-experts", "--enable-return-routed-experts", routed_experts_problem
    ),
    FlagOutput("sampling_mask", "sampling-mask", "--return-sampling-mask", sampling_mask_problem),
)


def detected(body: Any, evidence: dict[str, str]) -> tuple[str, ...]:
    """The flag outputs every choice of a generate answer carries in their form."""
    choices = body.get("choices") if isinstance(body, dict) else None
    choices = [c for c in choices or [] if isinstance(c, dict)]
    found = []
    for output in FLAG_OUTPUTS:
        present = [c for c in choices if c.get(output.key) is not None]
        problems = [p for p in map(output.problem, present) if p]
        if present and not problems and len(present) == len(choices):
            found.append(output.feature)
            evidence[output.feature] = f"every choice carried a well-formed {output.key}"
        elif present:
            evidence[output.feature] = f"{output.key} present but not the flag's: {problems[:1]}"
        else:
            evidence[output.feature] = f"no choice carried {output.key}"
    return tuple(found)


LARGE_TOKEN_BYTES = 64 * 1024
"""Past this many bytes per sampled token, a server sends per-token support sets of about the
whole vocabulary (a plain token with 20 logprobs takes ~2 KB)."""
LEAN_TOP_K = 20


def lean(payload: dict[str, Any], bytes_per_token: int | None) -> dict[str, Any]:
    """`payload`, sampling from at most LEAN_TOP_K tokens when this server answers every
    sampled token with its whole support set (`--return-sampling-mask` without a top_k: about
    1 MB a token at 151,936 ids). A check that samples n = 8 x 48 tokens would otherwise ask
    for 365 MB; with a top_k its answer is what it would be without the flag, and the rule the
    check judges does not depend on the size of the support. Greedy, top_k'd or allowed-id
    requests, and servers without large per-token outputs, are sent as written."""
    sp = payload.get("sampling_params")
    if (bytes_per_token or 0) <= LARGE_TOKEN_BYTES or not isinstance(sp, dict):
        return payload
    if sp.get("temperature", 1.0) == 0 or "top_k" in sp or sp.get("allowed_token_ids"):
        return payload
    return {**payload, "sampling_params": {**sp, "top_k": LEAN_TOP_K}}
