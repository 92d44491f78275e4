"""Bodies checked against the spec's own schemas, each failure worded as pydantic words it.

Where the mock has no hand-written parser for a structure (derender's nested generate
responses, multimodal `features`), the spec's schema is the model vLLM validates against. The
spec and jsonschema load on the first call only: start-up stays fast.
"""

from __future__ import annotations

from typing import Any

from mock_server.wire.errors import validation_item

Items = list[dict[str, Any]]
_TYPES = {
    "integer": ("int_type", "Input should be a valid integer"),
    "number": ("float_type", "Input should be a valid number"),
    "string": ("string_type", "Input should be a valid string"),
    "boolean": ("bool_type", "Input should be a valid boolean"),
    "array": ("list_type", "Input should be a valid list"),
    "object": ("dict_type", "Input should be a valid dictionary"),
    "null": ("none_required", "Input should be None"),
}
_BOUNDS = {
    "minimum": ("greater_than_equal", "greater than or equal to", "ge"),
    "exclusiveMinimum": ("greater_than", "greater than", "gt"),
    "maximum": ("less_than_equal", "less than or equal to", "le"),
    "exclusiveMaximum": ("less_than", "less than", "lt"),
}


def schema_errors(pointer: str, value: Any, loc: str) -> Items:
    """pydantic-style error items for `value` against the spec schema at `pointer`."""
    import openapi  # deferred: the spec and jsonschema are only needed once a body arrives

    items: Items = []
    if openapi.is_valid(pointer, value):
        return items
    validator = openapi.schema_validator(pointer)
    for error in validator.iter_errors(value):
        items.extend(_items(error, loc))
    return items


def _leaf(error: Any) -> Any:
    """The branch of an anyOf/oneOf that explains the failure best."""
    from jsonschema.exceptions import best_match

    while error.validator in ("anyOf", "oneOf") and error.context:
        error = best_match(error.context)
    return error


def _items(error: Any, base: str) -> Items:
    error = _leaf(error)
    loc = ".".join([base, *(str(p) for p in error.absolute_path)])
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = [k for k in value if isinstance(instance, dict) and k not in instance]
        return [
            validation_item("missing", f"{loc}.{k}", "Field required", instance) for k in missing
        ]
    if kind == "type":
        wanted = [value] if isinstance(value, str) else [t for t in value if t != "null"]
        name = wanted[0] if wanted else "null"
        if name == "integer" and isinstance(instance, float):
            msg = "Input should be a valid integer, got a number with a fractional part"
            return [validation_item("int_from_float", loc, msg, instance)]
        err_type, msg = _TYPES.get(name, ("type_error", f"Input should be a valid {name}"))
        return [validation_item(err_type, loc, msg, instance)]
    if kind in _BOUNDS:
        err_type, words, key = _BOUNDS[kind]
        msg = f"Input should be {words} {value}"
        return [validation_item(err_type, loc, msg, instance, {key: value})]
    if kind in ("minItems", "maxItems"):
        size = len(instance) if isinstance(instance, list) else 0
        short = kind == "minItems"
        words = "at least" if short else "at most"
        noun = "item" if value == 1 else "items"
        msg = f"List should have {words} {value} {noun} after validation, not {size}"
        ctx = {"field_type": "List", "min_length" if short else "max_length": value}
        ctx["actual_length"] = size
        return [validation_item("too_short" if short else "too_long", loc, msg, instance, ctx)]
    if kind in ("const", "enum"):
        options = [value] if kind == "const" else list(value)
        shown = [repr(o) for o in options]
        expected = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
        msg = f"Input should be {expected}"
        return [validation_item("literal_error", loc, msg, instance, {"expected": expected})]
    if kind in ("minLength", "maxLength"):
        short = kind == "minLength"
        words = "at least" if short else "at most"
        noun = "character" if value == 1 else "characters"
        msg = f"String should have {words} {value} {noun}"
        err_type = "string_too_short" if short else "string_too_long"
        key = "min_length" if short else "max_length"
        return [validation_item(err_type, loc, msg, instance, {key: value})]
    if kind == "pattern":
        msg = f"String should match pattern '{value}'"
        return [validation_item("string_pattern_mismatch", loc, msg, instance, {"pattern": value})]
    if kind is None or kind == "additionalProperties":  # a `false` schema: a forbidden key
        return [validation_item("extra_forbidden", loc, "Extra inputs are not permitted", instance)]
    text = error.message[:200]
    return [validation_item("value_error", loc, f"Value error, {text}", instance)]
