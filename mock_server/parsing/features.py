"""The model validators vLLM 0.32 runs on generate's multimodal `features`.

The mock ignores what `features` carries (no vision model; DIFFERENCES.md #8), but a body vLLM
rejects must not be a 200 here: same modalities across the maps, equal list lengths,
placeholders non-overlapping once sorted, and inside the prompt. Messages, `loc` and order are
the ones vLLM 0.32 answered (`tests/fixtures/vllm-0.32-issue11/features_*.json`). Runs after
the schema check, so every value read here is well typed.
"""

from __future__ import annotations

from typing import Any

from mock_server.wire.errors import validation_item

Items = list[dict[str, Any]]


def _value_error(loc: str, text: str, value: Any) -> dict[str, Any]:
    ctx = {"error": ValueError(text)}
    return validation_item("value_error", loc, f"Value error, {text}", value, ctx)


def _lists(features: dict[str, Any], key: str) -> dict[str, list[Any]]:
    value = features.get(key)
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, list)}


def feature_errors(features: dict[str, Any], loc: str = "body.features") -> Items:
    """MultiModalFeatures' own validator: the first problem it finds, at `body.features`."""
    hashes, places = _lists(features, "mm_hashes"), _lists(features, "mm_placeholders")
    if set(hashes) != set(places):
        text = "mm_hashes and mm_placeholders must use the same modalities"
        return [_value_error(loc, text, features)]
    for modality, items in hashes.items():
        if len(items) != len(places[modality]):
            text = f"{modality} mm_hashes and mm_placeholders must have the same length"
            return [_value_error(loc, text, features)]
    for modality, items in _lists(features, "kwargs_data").items():
        if modality in hashes and len(items) != len(hashes[modality]):
            text = f"{modality} kwargs_data and mm_hashes must have the same length"
            return [_value_error(loc, text, features)]
    ranges = sorted(_ranges(places))
    for (_, end), (next_start, _) in zip(ranges, ranges[1:], strict=False):
        if next_start < end:
            text = "mm_placeholders must be globally non-overlapping and sorted"
            return [_value_error(loc, text, features)]
    return []


def prompt_errors(body: dict[str, Any], features: dict[str, Any], prompt_len: int) -> Items:
    """GenerateRequest's validator: every placeholder inside `token_ids` (loc `body`)."""
    ranges = _ranges(_lists(features, "mm_placeholders"))
    if any(end > prompt_len for _, end in ranges):
        text = "mm_placeholders must remain within the token_ids sequence"
        return [_value_error("body", text, body)]
    return []


def _ranges(places: dict[str, list[Any]]) -> list[tuple[int, int]]:
    out = []
    for items in places.values():
        for item in items:
            if isinstance(item, dict):
                offset, length = item.get("offset"), item.get("length")
                if isinstance(offset, int | float) and isinstance(length, int | float):
                    out.append((int(offset), int(offset) + int(length)))
    return out
