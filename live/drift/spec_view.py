"""The spec's side of the comparison: `openapi/tito.yaml` seen as routes and flat models.

A schema is flattened into the same shape the surface reader gives a vLLM class: `$ref`s are
followed, `allOf` parts merged, a nullable wrapper (`anyOf: [X, {type: null}]`) unwrapped, and a
property whose schema is `false` (forbidden, e.g. `text` in tokens mode) counts as absent.
"""

from __future__ import annotations

from typing import Any

from .surface import FieldInfo, Model

# The TITO surface of the spec: the operations these tags group (weights and server routes
# come from other vLLM routers and are out of scope).
TITO_TAGS = frozenset({"generate", "abort", "render"})
_NO_DEFAULT = object()


def spec_routes(spec: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    """(METHOD, path) -> the request body's schema name, for the TITO operations."""
    found: dict[tuple[str, str], str | None] = {}
    for path, item in spec.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict) or not TITO_TAGS & set(op.get("tags", ())):
                continue
            media = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            ref = media.get("schema", {}).get("$ref", "")
            found[(method.upper(), path)] = ref.rsplit("/", 1)[-1] or None
    return found


def spec_model(spec: dict[str, Any], pointer: str) -> Model | None:
    """The flattened schema at `components/schemas/<pointer>` (`A/oneOf/1`, `A/properties/b`)."""
    node: Any = spec.get("components", {}).get("schemas", {})
    for part in pointer.split("/"):
        node = _deref(spec, node)
        if isinstance(node, list):
            node = node[int(part)] if part.isdigit() and int(part) < len(node) else None
        elif isinstance(node, dict):
            node = node.get(part)
        if node is None:
            return None
    props, required = _flatten(spec, node)
    model = Model(pointer, "openapi/tito.yaml")
    for name, schema in props.items():
        model.fields[name] = _field(spec, name, schema, name in required)
    return model


def spec_values(spec: dict[str, Any], pointer: str, prop: str) -> tuple[Any, ...]:
    """The values `prop` may take across a schema's variants (`const`/`enum` of each `oneOf`
    member, or the keys of its discriminator mapping)."""
    node = _deref(spec, spec.get("components", {}).get("schemas", {}).get(pointer, {}))
    mapping = node.get("discriminator", {}).get("mapping")
    if node.get("discriminator", {}).get("propertyName") == prop and mapping:
        return tuple(mapping)
    values: list[Any] = []
    for member in node.get("oneOf", []) or [node]:
        props, _ = _flatten(spec, member)
        for value in _enum(spec, props.get(prop, {})) or ():
            if value not in values:
                values.append(value)
    return tuple(values)


def _flatten(spec: dict[str, Any], node: Any, depth: int = 0) -> tuple[dict[str, Any], set[str]]:
    node = _deref(spec, node)
    props: dict[str, Any] = {}
    required: set[str] = set()
    if not isinstance(node, dict) or depth > 10:
        return props, required
    for key in ("anyOf", "oneOf"):
        branches = [b for b in node.get(key, []) if not _is_null(spec, b)]
        if len(branches) == 1:
            _merge(props, required, *_flatten(spec, branches[0], depth + 1))
    for part in node.get("allOf", []):
        _merge(props, required, *_flatten(spec, part, depth + 1))
    _merge(props, required, dict(node.get("properties", {})), set(node.get("required", [])))
    return {k: v for k, v in props.items() if v is not False}, required


def _merge(props: dict[str, Any], required: set[str], more: dict[str, Any], req: set[str]) -> None:
    for name, schema in more.items():
        if isinstance(props.get(name), dict) and isinstance(schema, dict):
            props[name] = {**props[name], **schema}
        else:
            props[name] = schema
    required |= req


def _field(spec: dict[str, Any], name: str, schema: Any, required: bool) -> FieldInfo:
    default = schema.get("default", _NO_DEFAULT) if isinstance(schema, dict) else _NO_DEFAULT
    enum = _enum(spec, schema)
    return FieldInfo(
        name=name,
        annotation=_describe(schema),
        required=required,
        nullable=_nullable(spec, schema),
        default=None if default is _NO_DEFAULT else default,
        default_known=default is not _NO_DEFAULT,
        literals=tuple(v for v in enum if v is not None) if enum is not None else None,
    )


def _enum(spec: dict[str, Any], schema: Any) -> tuple[Any, ...] | None:
    schema = _deref(spec, schema)
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return (schema["const"],)
    if "enum" in schema:
        return tuple(schema["enum"])
    return None


def _nullable(spec: dict[str, Any], schema: Any, depth: int = 0) -> bool:
    schema = _deref(spec, schema)
    if not isinstance(schema, dict) or depth > 10:
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if schema.get("const", 0) is None or None in schema.get("enum", [0]):
        return True
    branches = schema.get("anyOf", []) + schema.get("oneOf", [])
    return any(_nullable(spec, b, depth + 1) for b in branches)


def _is_null(spec: dict[str, Any], schema: Any) -> bool:
    schema = _deref(spec, schema)
    return isinstance(schema, dict) and schema.get("type") == "null"


def _deref(spec: dict[str, Any], node: Any) -> Any:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        target: Any = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node, seen = target, seen + 1
    return node


def _describe(schema: Any) -> str:
    if not isinstance(schema, dict):
        return str(schema)
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "type" in schema:
        kind = schema["type"]
        return " | ".join(kind) if isinstance(kind, list) else str(kind)
    if "const" in schema:
        return f"const {schema['const']!r}"
    return "schema"
