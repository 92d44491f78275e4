"""Fields computed from the tokens: a choice's weight_versions spans and routed_experts, and the
`usage` object every answer carries."""

from __future__ import annotations

import base64
import struct
from typing import Any

from mock_server.engine.sequence import TokenRecord


def usage(prompt: int, completion: int, details: tuple[str, ...] = ()) -> dict[str, Any]:
    """vLLM's UsageInfo as dumped: the counts, then the null detail keys the dump keeps
    (`Release.usage_details`; none where it drops nulls, as streamed usage chunks do)."""
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
    }
    for key in details:
        out[key] = None
    return out


def weight_spans(records: list[TokenRecord], skewed: bool = False) -> list[dict[str, Any]]:
    """Half-open, contiguous spans of equal labels over the output tokens. `skewed` (a label
    change that came while the engine was busy, under `Generate.label_skew_above`): the span
    before each change ends one token late, over the first token of the next."""
    spans: list[dict[str, Any]] = []
    for i, rec in enumerate(records):
        if spans and spans[-1]["version"] == rec.version:
            spans[-1]["end"] = i + 1
        else:
            spans.append({"version": rec.version, "start": i, "end": i + 1})
    if skewed:
        for span in spans[:-1]:
            span["end"] += 1
    return spans


def npy_b64(shape: tuple[int, ...], values: list[Any], kind: str = "i") -> str:
    """A base64 `.npy` like vLLM's `numpy2base64`: int32 (`i`, routed_experts) or float32
    (`f`, prompt_token_id_logprobs)."""
    header = f"{{'descr': '<{kind}4', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    raw = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1")
    raw += struct.pack(f"<{len(values)}{kind}", *values)
    return base64.b64encode(raw).decode("ascii")


def routed_experts(prompt: list[int], records: list[TokenRecord]) -> str:
    """One row per token the model ran on: the prompt and every output token but the last
    (vLLM's `test_return_routed_experts`: prompt + output - 1 rows of 2 layers x top-2)."""
    ran = [*prompt, *(rec.token_id for rec in records)][:-1]
    values = [(token + layer * 3 + k) % 8 for token in ran for layer in range(2) for k in range(2)]
    return npy_b64((len(ran), 2, 2), values)
