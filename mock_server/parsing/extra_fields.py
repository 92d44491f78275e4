"""The generate fields the toy model ignores but vLLM still validates (types, then ranges).

vLLM parses every field with pydantic before it looks the model up, so a wrongly typed field
the mock never uses is still a 400, and comes before the 404 of an unknown model.
"""

from __future__ import annotations

from typing import Any

from mock_server.parsing import coerce as c
from mock_server.parsing.schema_check import schema_errors
from mock_server.wire.errors import ValidationFailure, validation_item

INT64 = (-(2**63), 2**63 - 1)
NOT_NULLABLE = frozenset({"spaces_between_special_tokens", "output_kind"})
"""Plain `bool` / `RequestOutputKind` fields of vLLM 0.32's SamplingParams: null is a 400, as
for the same-typed `skip_special_tokens` (vllm-cpu.md); the others are `X | None`."""
_SAMPLING_TYPES: tuple[tuple[str, Any], ...] = (
    ("spaces_between_special_tokens", c.to_bool),
    ("prompt_logprob_start", c.to_int),
    ("stream_interval", c.to_int),
    ("thinking_token_budget", c.to_int),
    ("output_kind", c.to_int),
    ("truncate_prompt_tokens", c.to_int),
    ("logprob_token_ids", c.to_int_list),
    ("structured_outputs", c.to_dict),
    ("extra_args", c.to_dict),
)


def _str_list(value: Any, loc: str, errors: c.Errors) -> list[str] | None:
    if not isinstance(value, list):
        errors.append(validation_item("list_type", loc, "Input should be a valid list", value))
        return None
    before = len(errors)
    out = [c.to_str(v, f"{loc}.{i}", errors) for i, v in enumerate(value)]
    return [v for v in out if v is not None] if len(errors) == before else None


def _logit_bias(value: Any, loc: str, errors: c.Errors) -> dict[int, float] | None:
    """dict[int, float]: keys are token ids (strings in JSON), values numbers."""
    raw = c.to_dict(value, loc, errors)
    if raw is None:
        return None
    out: dict[int, float] = {}
    for key, bias in raw.items():
        token = c.to_int(key, f"{loc}.{key}.[key]", errors)
        number = c.to_float(bias, f"{loc}.{key}", errors)
        if token is not None and number is not None:
            out[token] = number
    return out


def check_sampling_types(sp: dict[str, Any], errors: c.Errors) -> dict[str, Any]:
    """Type errors (appended) of the ignored sampling fields; the parsed values."""
    loc = "body.sampling_params"
    out: dict[str, Any] = {}
    for key, convert in _SAMPLING_TYPES:
        nullable = key not in NOT_NULLABLE
        out[key] = c.field(sp, key, convert, loc, errors, None, nullable=nullable)
    out["bad_words"] = c.field(sp, "bad_words", _str_list, loc, errors, None)
    out["logit_bias"] = c.field(sp, "logit_bias", _logit_bias, loc, errors, None)
    return out


def check_top_level_types(body: dict[str, Any], errors: c.Errors) -> None:
    """Type errors of the ignored top-level fields, `features` against the spec's schema."""
    loc = "body"
    c.field(body, "reasoning_ended", c.to_bool, loc, errors, None)
    offsets = body.get("token_offsets")
    if offsets is not None:
        if not isinstance(offsets, list):
            msg = "Input should be a valid list"
            errors.append(validation_item("list_type", f"{loc}.token_offsets", msg, offsets))
        else:
            for i, pair in enumerate(offsets):
                where = f"{loc}.token_offsets.{i}"
                ints = c.to_int_list(pair, where, errors)
                if ints is not None and len(ints) != 2:
                    msg = "Tuple should have at most 2 items after validation"
                    errors.append(validation_item("too_long", where, msg, pair))
    parts = body.get("content_parts")
    if isinstance(parts, list):
        for i, part in enumerate(parts):
            c.to_dict(part, f"{loc}.content_parts.{i}", errors)
    features = body.get("features")
    if isinstance(features, dict):
        errors.extend(schema_errors("MultiModalFeatures", features, f"{loc}.features"))


def check_ranges(body: dict[str, Any]) -> None:
    """pydantic's int64 bound of `priority` (the value rows are `mock_server.validation`)."""
    priority = body.get("priority")
    if isinstance(priority, int) and not INT64[0] <= priority <= INT64[1]:
        # pydantic's int64 bound, worded from the spec's own minimum/maximum
        pointer = "#/components/schemas/GenerateRequest/properties/priority"
        raise ValidationFailure(schema_errors(pointer, priority, "body.priority"))
