"""Whether a negative case is negative only in a way pydantic's lax mode forgives.

The spec types request fields strictly (what a client should send), but vLLM parses bodies
with pydantic in lax mode: `true` or `"5"` where an integer is expected, `1` or `"yes"` where
a boolean is. A server that coerces like that is not wrong to accept such a case (vLLM 0.32
does, live), so `negative_data_rejection` must not hold it to a 400. Every other check still
runs on it. The decision is schema-directed: every validation error of the body must be a
`type` error that lax coercion repairs (inside `anyOf`/`oneOf`: some branch whose errors all
are).
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema.exceptions import ValidationError

_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")
_INTEGER = re.compile(r"^\s*[-+]?\d+\s*$")
_TRUE_FALSE = {"0", "1", "true", "false", "yes", "no", "on", "off", "t", "f", "y", "n"}


def _coerces(instance: Any, wanted: str) -> bool:
    """pydantic v2 lax mode's conversions into one JSON Schema type."""
    if wanted == "integer":
        if isinstance(instance, bool):
            return True
        if isinstance(instance, str):
            return bool(_INTEGER.match(instance))
        return isinstance(instance, float) and instance.is_integer()
    if wanted == "number":
        return isinstance(instance, bool) or (
            isinstance(instance, str) and bool(_NUMBER.match(instance))
        )
    if wanted == "boolean":
        if isinstance(instance, int) and not isinstance(instance, bool):
            return instance in (0, 1)
        if isinstance(instance, float):
            return instance in (0.0, 1.0)
        return isinstance(instance, str) and instance.strip().lower() in _TRUE_FALSE
    return False


def forgiven(error: ValidationError) -> bool:
    """Whether lax coercion repairs this error."""
    if error.validator == "type":
        wanted = error.validator_value
        kinds = wanted if isinstance(wanted, list) else [wanted]
        return any(_coerces(error.instance, str(k)) for k in kinds)
    if error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.schema_path[0], []).append(sub)
        return any(all(forgiven(e) for e in errs) for errs in branches.values())
    return False


def lax_valid(validator: Any, body: Any) -> bool:
    """True when `body` fails the schema only where pydantic's lax mode would coerce it."""
    errors = list(validator.iter_errors(body))
    return bool(errors) and all(forgiven(e) for e in errors)
