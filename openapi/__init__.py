"""The TITO OpenAPI document, shipped inside the package.

Everything in the kit reads the API from here: the mock validates what it sends, the suite
validates what it receives, the fuzzer generates from it. Keeping the loader next to the YAML
means an installed wheel finds the spec without the repository.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_FILE = "tito.yaml"
SPEC_URI = "urn:tito:openapi"
SSE_MEDIA_TYPE = "text/event-stream"

__all__ = [
    "SPEC_URI",
    "load_spec",
    "media_schema",
    "registry",
    "schema_validator",
    "is_valid",
    "all_valid",
    "spec_path",
    "sse_event_validator",
    "TitoValidator",
]


def spec_path() -> Path:
    """Filesystem path of `tito.yaml` inside the installed package."""
    return Path(str(resources.files(__name__).joinpath(SPEC_FILE)))


# libyaml's safe loader where PyYAML was built with it (its wheels are): the same document, parsed
# in a fifth of the time, and every mock and CLI process parses the spec once.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def load_spec() -> dict[str, Any]:
    """The parsed spec. Cached: callers must treat it as read-only."""
    with spec_path().open(encoding="utf-8") as fh:
        data = yaml.load(fh, Loader=_SAFE_LOADER)
    if not isinstance(data, dict):
        raise ValueError(f"{spec_path()} is not an OpenAPI document")
    return data


@cache
def registry() -> Registry[Any]:
    """A referencing registry holding the whole spec, so `#/components/...` refs resolve."""
    resource = Resource.from_contents(load_spec(), default_specification=DRAFT202012)
    return Registry().with_resource(SPEC_URI, resource)


def _content_schema(
    validator: Validator, content_schema: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """Assert `contentSchema` on JSON-encoded strings (an annotation in plain 2020-12).

    The SSE `itemSchema` carries each chunk as a JSON string in `data`; without this keyword
    a validator would accept any string there.
    """
    if schema.get("contentMediaType") != "application/json" or not isinstance(instance, str):
        return
    try:
        decoded = json.loads(instance)
    except ValueError as exc:
        yield ValidationError(f"{instance[:60]!r} is not JSON ({exc})")
        return
    yield from validator.descend(decoded, content_schema)


TitoValidator = validators.extend(Draft202012Validator, {"contentSchema": _content_schema})
"""Draft 2020-12 plus an asserting `contentSchema` for `contentMediaType: application/json`."""


def _pointer(name: str) -> str:
    return name if name.startswith("#/") else f"#/components/schemas/{name}"


@cache
def schema_validator(pointer: str) -> Validator:
    """A JSON Schema validator for the schema at `pointer` (e.g. `#/components/schemas/X`)."""
    schema = {"$ref": SPEC_URI + _pointer(pointer)}
    validator: Validator = TitoValidator(schema, registry=registry())
    return validator


def is_valid(pointer: str, instance: Any) -> bool:
    """Whether `instance` is valid against the schema at `pointer`, by the rules
    `schema_validator` applies.

    A suite run validates a few thousand bodies and stream events, nearly all valid; the
    pure-Python validator spends 10-60 ms on each (most of a run against a fast server), the
    Rust one (jsonschema-rs, schemathesis's own validator) well under 1 ms. Callers ask this
    first and walk `schema_validator`'s errors only for an invalid body, so every message
    stays jsonschema's. A schema reaching `contentSchema` (asserted here, an annotation to
    jsonschema-rs) stays on the Python validator.
    """
    fast = _fast_validator(_pointer(pointer))
    if fast is not None:
        try:
            return bool(fast.is_valid(instance))
        except (ValueError, TypeError, OverflowError):  # not JSON it can take: ask jsonschema
            pass
    return bool(schema_validator(pointer).is_valid(instance))


def all_valid(pointer: str, instances: list[Any]) -> bool:
    """Whether every one of `instances` is valid (`is_valid`), asked in one call: a stream's
    chunks, judged by the load at tens of thousands a second, cross into Rust once, not once
    each (a third of the cost per chunk)."""
    fast = _fast_validator(f"{_pointer(pointer)}[]")
    if fast is not None:
        try:
            return bool(fast.is_valid(instances))
        except (ValueError, TypeError, OverflowError):
            pass
    return all(is_valid(pointer, instance) for instance in instances)


@cache
def _rs_registry() -> jsonschema_rs.Registry:
    return jsonschema_rs.Registry([(SPEC_URI, load_spec())], draft=jsonschema_rs.Draft202012)


@cache
def _fast_validator(pointer: str) -> jsonschema_rs.Draft202012Validator | None:
    """The Rust validator of the schema at `pointer` (`pointer[]`: of a list of them)."""
    one = pointer.removesuffix("[]")
    if _reaches_content_schema(one):
        return None
    schema: dict[str, Any] = {"$ref": SPEC_URI + one}
    if one != pointer:
        schema = {"type": "array", "items": schema}
    return jsonschema_rs.Draft202012Validator(schema, registry=_rs_registry())


def _reaches_content_schema(pointer: str) -> bool:
    """Whether the schema at `pointer`, its subschemas or any schema they `$ref` holds the
    `contentSchema` keyword."""
    seen: set[str] = set()
    pending = [pointer]
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        stack: list[Any] = [_at(ref)]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if "contentSchema" in node:
                    return True
                target = node.get("$ref")
                if isinstance(target, str) and target.startswith("#/"):
                    pending.append(target)
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return False


def sse_event_validator(
    path: str = "/inference/v1/generate", method: str = "post", status: int | str = 200
) -> Validator:
    """The validator of one SSE event (`{"data": ..., "event"?: ...}`) of a streamed answer.

    It checks the OpenAPI 3.2 `itemSchema`, including the JSON inside `data`.
    """
    found = media_schema(path, method, status, SSE_MEDIA_TYPE)
    if found is None or "itemSchema" not in found[1]:
        raise KeyError(f"no {SSE_MEDIA_TYPE} itemSchema for {method.upper()} {path} {status}")
    pointer, _ = found
    return schema_validator(f"{pointer}/content/{_escape(SSE_MEDIA_TYPE)}/itemSchema")


def media_schema(
    path: str, method: str, status: int | str, media_type: str = "application/json"
) -> tuple[str, dict[str, Any]] | None:
    """The JSON pointer of the response object and its media-type object, if documented.

    A `$ref`'d response yields the pointer of the component it names, so
    `pointer + "/content/<escaped media type>/schema"` always resolves. For
    `text/event-stream` the media-type object carries `itemSchema` (OpenAPI 3.2): one event.
    """
    operation = load_spec()["paths"].get(path, {}).get(method.lower())
    if operation is None:
        return None
    responses = operation.get("responses", {})
    key = str(status) if str(status) in responses else f"{str(status)[0]}XX"
    response = responses.get(key, responses.get("default"))
    if response is None:
        return None
    pointer = f"#/paths/{_escape(path)}/{method.lower()}/responses/{key}"
    if "$ref" in response:
        pointer = response["$ref"]
        response = _resolve(pointer)
    content = response.get("content", {})
    if media_type not in content:
        return None
    return pointer, content[media_type]


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _at(ref: str) -> Any:
    node: Any = load_spec()
    for part in ref.removeprefix("#/").split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def _resolve(ref: str) -> dict[str, Any]:
    return dict(_at(ref))
