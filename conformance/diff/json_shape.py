"""Compare two JSON documents by structure: keys, key order, types, nulls, chosen lengths.

Token values and free text are never compared. A few enum-like values are (`finish_reason`,
`output_mode`, error `type`/`code`, `object`), because a client branches on them, and
`request_id` is compared with its random part masked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from conformance.diff.answer import Difference, describe

ENUM_KEYS = frozenset({"finish_reason", "output_mode", "object", "type", "code"})
TIMING_EQUIVALENT = frozenset({"abort", "length"})
"""In an abort flow, whether the abort landed before the last token is timing, not structure."""
_RANDOM_TAIL = re.compile(r"[0-9a-fA-F]{8,}(-[0-9a-fA-F]{4,})*$")
_ID_KEY = re.compile(r"^-?\d+$")


@dataclass(frozen=True)
class JsonRules:
    """What the walker compares beyond keys and types."""

    length_patterns: frozenset[str] = frozenset()
    """Locations (indices as `[*]`) of lists whose length the request determines."""
    key_order: bool = True
    timing_dependent: bool = False
    finish_reason_determined: bool = True
    """False when the model decides how a choice ends (EOS, stop strings, stop ids)."""
    empty_vs_items: bool = False
    """Report an empty list against a non-empty one (off where the model decides lengths)."""
    map_suffixes: tuple[str, ...] = (".logprobs.top_logprobs[*]",)
    """Objects keyed by token text (OpenAI completions logprobs), by `[*]` location suffix:
    only their values are compared."""
    value_normalizers: dict[str, Callable[[Any], Any]] = field(default_factory=dict)


def mask_request_id(value: Any) -> Any:
    """`generate-tokens-94dde397beeb7db8` -> `generate-tokens-<random>`; given ids stay."""
    if isinstance(value, str):
        return _RANDOM_TAIL.sub("<random>", value)
    return value


DEFAULT_RULES = JsonRules(value_normalizers={"request_id": mask_request_id})


def pattern_of(location: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", location)


def compare_json(
    reference: Any, candidate: Any, location: str = "$", rules: JsonRules = DEFAULT_RULES
) -> list[Difference]:
    """Every structural difference between two parsed JSON values."""
    return list(_walk(reference, candidate, location, rules))


def _kind(value: Any) -> str:
    text = describe(value)
    return "array" if text.startswith("array") else text


def _walk(ref: Any, cand: Any, loc: str, rules: JsonRules) -> Iterator[Difference]:
    if _kind(ref) != _kind(cand):
        yield Difference(loc, "type", describe(ref), describe(cand))
        return
    if isinstance(ref, dict):
        yield from _walk_object(ref, cand, loc, rules)
    elif isinstance(ref, list):
        yield from _walk_array(ref, cand, loc, rules)


def _is_id_map(obj: dict[str, Any]) -> bool:
    """Objects keyed by token ids (`prompt_logprobs` entries): keys are values, not structure."""
    return bool(obj) and all(_ID_KEY.match(key) for key in obj)


def _walk_object(
    ref: dict[str, Any], cand: dict[str, Any], loc: str, rules: JsonRules
) -> Iterator[Difference]:
    if pattern_of(loc).endswith(rules.map_suffixes):
        if ref and cand:
            yield from _walk(
                next(iter(ref.values())), next(iter(cand.values())), f"{loc}{{token}}", rules
            )
        return
    if _is_id_map(ref) or _is_id_map(cand):
        if _is_id_map(ref) != _is_id_map(cand):
            yield Difference(loc, "keys", _keys_text(ref), _keys_text(cand))
            return
        if ref and cand:
            yield from _walk(
                next(iter(ref.values())), next(iter(cand.values())), f"{loc}{{id}}", rules
            )
        return
    for key in ref:
        if key not in cand:
            yield Difference(f"{loc}.{key}", "missing key", describe(ref[key]), "absent")
    for key in cand:
        if key not in ref:
            yield Difference(f"{loc}.{key}", "extra key", "absent", describe(cand[key]))
    common = [key for key in ref if key in cand]
    cand_order = [key for key in cand if key in ref]
    if rules.key_order and common != cand_order:
        yield Difference(loc, "key order", ", ".join(common), ", ".join(cand_order))
    outcome_differs = False
    if "finish_reason" in common:
        outcome_differs = ref["finish_reason"] != cand["finish_reason"]
    for key in common:
        child = f"{loc}.{key}"
        if key == "stop_reason" and outcome_differs:
            continue  # a different finish_reason explains a different stop_reason
        yield from _walk(ref[key], cand[key], child, rules)
        if key in ENUM_KEYS or key in rules.value_normalizers:
            yield from _compare_value(key, ref[key], cand[key], child, rules)


def _same_outcome(ref: Any, cand: Any, rules: JsonRules) -> bool:
    if ref == cand:
        return True
    if rules.timing_dependent and {ref, cand} <= TIMING_EQUIVALENT:
        return True
    return not rules.finish_reason_determined and ref is not None and cand is not None


def _compare_value(
    key: str, ref: Any, cand: Any, loc: str, rules: JsonRules
) -> Iterator[Difference]:
    if isinstance(ref, dict | list) or isinstance(cand, dict | list):
        return
    normalize = rules.value_normalizers.get(key, lambda value: value)
    ref_value, cand_value = normalize(ref), normalize(cand)
    if key == "finish_reason" and _same_outcome(ref_value, cand_value, rules):
        return
    if ref_value != cand_value and type(ref) is type(cand):
        yield Difference(loc, "value", repr(ref_value), repr(cand_value))


def _walk_array(
    ref: list[Any], cand: list[Any], loc: str, rules: JsonRules
) -> Iterator[Difference]:
    if len(ref) != len(cand) and pattern_of(loc) in rules.length_patterns:
        yield Difference(loc, "length", str(len(ref)), str(len(cand)))
    elif rules.empty_vs_items and bool(ref) != bool(cand):
        yield Difference(loc, "empty vs items", describe(ref), describe(cand))
    for index in range(max(len(ref), len(cand))):
        if not ref or not cand:
            return
        left = ref[min(index, len(ref) - 1)]
        right = cand[min(index, len(cand) - 1)]
        yield from _walk(left, right, f"{loc}[{index}]", rules)


def _keys_text(obj: dict[str, Any]) -> str:
    if _is_id_map(obj):
        return "object keyed by token id"
    return "keys " + ", ".join(obj) if obj else "empty object"


def collapse(differences: list[Difference]) -> list[Difference]:
    """One difference per (pattern, kind): the first occurrence stands for its repeats."""
    seen: set[tuple[str, str]] = set()
    kept: list[Difference] = []
    for difference in differences:
        key = (difference.pattern, difference.kind)
        if key not in seen:
            seen.add(key)
            kept.append(difference)
    return kept
