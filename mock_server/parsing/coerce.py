"""pydantic-like lax coercion with pydantic's error items, for the fields the mock reads."""

from __future__ import annotations

import math
from typing import Any, TypeVar

from mock_server.wire.errors import validation_item

Errors = list[dict[str, Any]]
_MISSING = object()
_TRUE = {"true", "1", "yes", "on", "t", "y"}
_FALSE = {"false", "0", "no", "off", "f", "n"}
_NUMBER_ERRORS = {  # pydantic's error type prefix, type message and parse message
    int: ("int", "Input should be a valid integer", "unable to parse string as an integer"),
    float: ("float", "Input should be a valid number", "unable to parse string as a number"),
}
N = TypeVar("N", int, float)


def _from_str(value: Any, number: type[N], loc: str, errors: Errors) -> N | None:
    """What `to_int` and `to_float` do with a value that is no number: a string is parsed with
    surrounding white space allowed (pydantic's lax mode), anything else is a type error."""
    kind, valid, unparsable = _NUMBER_ERRORS[number]
    if isinstance(value, str):
        try:
            return number(value.strip())
        except ValueError:
            msg = f"{valid}, {unparsable}"
            errors.append(validation_item(f"{kind}_parsing", loc, msg, value))
            return None
    errors.append(validation_item(f"{kind}_type", loc, valid, value))
    return None


def to_int(value: Any, loc: str, errors: Errors) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        if not math.isfinite(value):
            msg = "Input should be a finite number"
            errors.append(validation_item("finite_number", loc, msg, value))
            return None
        msg = "Input should be a valid integer, got a number with a fractional part"
        errors.append(validation_item("int_from_float", loc, msg, value))
        return None
    return _from_str(value, int, loc, errors)


def to_float(value: Any, loc: str, errors: Errors) -> float | None:
    if isinstance(value, bool | int | float):
        return float(value)
    return _from_str(value, float, loc, errors)


def to_bool(value: Any, loc: str, errors: Errors) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    errors.append(validation_item("bool_type", loc, "Input should be a valid boolean", value))
    return None


def to_str(value: Any, loc: str, errors: Errors) -> str | None:
    if isinstance(value, str):
        return value
    errors.append(validation_item("string_type", loc, "Input should be a valid string", value))
    return None


def to_int_list(value: Any, loc: str, errors: Errors) -> list[int] | None:
    if not isinstance(value, list | tuple):
        errors.append(validation_item("list_type", loc, "Input should be a valid list", value))
        return None
    out: list[int] = []
    before = len(errors)
    for i, item in enumerate(value):
        parsed = to_int(item, f"{loc}.{i}", errors)
        if parsed is not None:
            out.append(parsed)
    return out if len(errors) == before else None


def to_dict(value: Any, loc: str, errors: Errors) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    msg = "Input should be a valid dictionary"
    errors.append(validation_item("dict_type", loc, msg, value))
    return None


def field(
    body: dict[str, Any],
    key: str,
    convert: Any,
    loc: str,
    errors: Errors,
    default: Any,
    nullable: bool = True,
) -> Any:
    """Read one field: missing -> default; null -> default if nullable, else a type error."""
    value = body.get(key, _MISSING)
    if value is _MISSING:
        return default
    if value is None:
        if nullable:
            return default
        before = len(errors)
        convert(None, f"{loc}.{key}", errors)
        return default if len(errors) > before else None
    result = convert(value, f"{loc}.{key}", errors)
    return default if result is None else result
