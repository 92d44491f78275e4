"""Faults generated from the spec: one per element of every answer shape, as data.

The mock's defect catalogue holds the mistakes someone thought of; these are every mistake of a
few kinds that `openapi/tito.yaml` admits, so a field no check reads, or a check that judges
beyond its own fields, shows up without anyone having picked the defect. A `Fault` names the
shape of answer it applies to (`where`), the field path in it (arrays as `[]`, map values as
`*`) and the mutation; `mutate` applies one to a decoded body. Only mutations that make the
answer wrong are generated: an optional field is never dropped, a nullable one never nulled.
`benchmarks/fault_proxy.py` applies them to a live server's answers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from openapi import load_spec

Json = Any
Path = tuple[str, ...]


@dataclass(frozen=True)
class Fault:
    """One way to be wrong: `mutation` of the element at `path` of the answers of `where`."""

    name: str
    where: str  # a SHAPES key, an OPERATIONS key, "stream" or "header"
    path: Path
    mutation: str  # drop, null, wrong-type, wrong-value, add, status=..., content-type=..., ...
    value: Json = field(default=None, compare=False)  # wrong-type/add: the value put there;
    # wrong-value: the other members of the element's enum (empty: derive from the value)


SHAPES: dict[str, str] = {
    "generate": "GenerateTokensResponse",  # non-streamed 200, tokens mode
    "generate-text": "GenerateTextResponse",  # non-streamed 200, text mode
    "stream.chunk": "GenerateTokensStreamChunk",
    "stream.text-chunk": "GenerateTextStreamChunk",
    "stream.usage-chunk": "GenerateUsageChunk",
    "stream.error-event": "StreamErrorEvent",
    "error-body": "ErrorResponse",  # any JSON error answer (status >= 400) of any operation
    "abort-dev": "DevAbortResponse",  # /abort_requests under dev mode
    "render": "RenderCompletionResponse",
    "render-chat": "GenerateRequest",
    "derender": "CompletionResponse",
    "derender.stream": "DerenderStreamResponse",
    "derender-chat": "ChatCompletionResponse",
    "derender-chat.stream": "DerenderStreamResponse",
}
"""Each shape of answer and the schema that describes it (one branch of a `oneOf` each)."""

OPERATIONS: dict[str, str] = {
    "generate": "generate",
    "abort": "abortRequests",
    "abort-legacy": "abortRequestsLegacy",
    "render": "renderCompletions",
    "render-chat": "renderChatCompletions",
    "derender": "derenderCompletions",
    "derender-chat": "derenderChatCompletions",
}
"""The TITO operations whose status and content type are faulted, by short name."""

STREAM_FAULTS = ("done:drop", "event:non-json", "events:merged")
_CLOCK = "any Unix time: the document fixes no clock"
_NAME = "the served model's name, which the document does not state"
_WORDS = "words of the server's choosing: the document fixes the error's shape and code only"
_OWN_ID = "an id the server chooses: the request named none"
FREE: dict[str, str] = {
    **{f"{w}.created": _CLOCK for w in ("generate", "generate-text", "derender", "derender-chat")},
    **{f"{w}.model": _NAME for w in ("generate", "generate-text", "derender", "derender-chat")},
    **{f"{w}.id": _OWN_ID for w in ("derender", "derender-chat")},
    **{f"{w}.request_id": _OWN_ID for w in ("render[]", "render-chat")},
    **{
        f"{w}.error.{k}": _WORDS
        for w in ("error-body", "stream.error-event")
        for k in ("message", "type", "param")
    },
    "abort-dev.aborted": "how many requests the server was running when asked",
    **{
        f"render-chat.token_ids{i}": "the chat template's rendering: the document fixes no "
        "template, and a client without the model's cannot tell other ids from these"
        for i in ("", "[]")
    },
    **{
        f"{w}.sampling_params.output_kind": "vLLM's internal output kind, which generate sets "
        "itself (a TITO generate ignores the field)"
        for w in ("render[]", "render-chat")
    },
}
"""Elements whose value the document leaves to the server: another value of the same type is
no defect, so their `wrong-value` faults are listed as free, not run (dropping them, nulling
them or giving them the wrong type is still a fault)."""
_TYPE_VALUES: dict[str, Json] = {
    "string": "wrong",
    "integer": 7,
    "array": [],
    "object": {},
    "boolean": True,
}


@dataclass
class Node:
    """What a schema, its `$ref`s and its `allOf`/`anyOf`/`oneOf` branches say about one element."""

    types: set[str] = field(default_factory=set)  # allowed JSON types; empty: unconstrained
    members: list[Json] = field(default_factory=list)  # enum/const values (non-null)
    props: dict[str, list[Json]] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    items: list[Json] = field(default_factory=list)
    map_values: list[Json] = field(default_factory=list)
    forbidden: bool = False  # the schema is `false`: the element must be absent


def _resolve(schema: Json) -> Json:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Json = load_spec()
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _json_type(value: Json) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array"}.get(
        type(value), "object"
    )


def merge(schemas: list[Json]) -> Node:
    """The element `schemas` (all of which apply) describe: types intersected across `allOf`,
    united across `anyOf`/`oneOf`; properties, required names and items gathered from all."""
    node = Node(forbidden=bool(schemas) and all(s is False for s in schemas))
    for raw in schemas:
        _fold(node, _resolve(raw))
    return node


def _fold(node: Node, s: Json) -> None:
    if not isinstance(s, dict):
        return
    own: set[str] = set()
    if "type" in s:
        own = {s["type"]} if isinstance(s["type"], str) else set(s["type"])
    values = [s["const"]] if "const" in s else list(s.get("enum", []))
    if not own:
        own = {_json_type(v) for v in values}
    node.members += [v for v in values if v is not None and v not in node.members]
    for name, sub in s.get("properties", {}).items():
        node.props.setdefault(name, []).append(sub)
    node.required |= set(s.get("required", []))
    if "then" in s:  # a conditional requirement (the final chunk's weight_versions) still counts
        node.required |= set(_resolve(s["then"]).get("required", []))
        for sub in _resolve(s["then"]).get("allOf", []):
            node.required |= set(_resolve(sub).get("required", []))
    if "items" in s:
        node.items.append(s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        node.map_values.append(s["additionalProperties"])
    for sub in s.get("allOf", []):
        inner = merge([sub])
        own = (own & inner.types) if own and inner.types else (own or inner.types)
        _absorb(node, inner)
    branches = [merge([b]) for b in s.get("anyOf", []) + s.get("oneOf", [])]
    for inner in branches:  # a branch's required names hold whenever its object is there
        _absorb(node, inner)
    if branches:
        united = set().union(*(b.types for b in branches))
        own = (own & united) if own and all(b.types for b in branches) else (own or united)
    node.types = (node.types & own) if node.types and own else (node.types or own)


def _absorb(node: Node, inner: Node) -> None:
    for name, subs in inner.props.items():
        node.props.setdefault(name, []).extend(subs)
    node.required |= inner.required
    node.items += inner.items
    node.map_values += inner.map_values
    node.members += [m for m in inner.members if m not in node.members]


def element(where: str, path: Path) -> str:
    """The element's name, e.g. `generate.choices[].token_ids` or `render[].token_ids`."""
    text = ""
    for part in path:
        text += part if part == "[]" else f".{part}"
    return where + text


def _wrong_type(node: Node) -> Json:
    """A value of the first JSON type (string, integer, array, object, boolean) not allowed."""
    for name, value in _TYPE_VALUES.items():
        allowed = node.types & ({"integer", "number"} if name == "integer" else {name})
        if not allowed:
            return value
    return None


def _field_mutations(node: Node, required: bool) -> Iterator[tuple[str, Json]]:
    if node.forbidden:
        yield "add", "wrong"
        return
    if required:
        yield "drop", None
    if node.types and "null" not in node.types:
        yield "null", None
    if node.types and _wrong_type(node) is not None:
        yield "wrong-type", _wrong_type(node)
    if node.types and not node.types <= {"object", "null"}:
        yield "wrong-value", tuple(node.members)


def _walk(where: str, path: Path, schemas: list[Json], required: bool) -> Iterator[Fault]:
    node = merge(schemas)
    if path:
        for mutation, value in _field_mutations(node, required):
            name = f"{element(where, path)}:{mutation}"
            yield Fault(name, where, path, mutation, value)
    if node.forbidden or len(path) > 12:
        return
    for prop, subs in node.props.items():
        if not all(s is False for s in subs):
            subs = [s for s in subs if s is not False]
        yield from _walk(where, (*path, prop), subs, prop in node.required)
    if node.map_values:
        yield from _walk(where, (*path, "*"), node.map_values, False)
    if node.items:
        yield from _walk(where, (*path, "[]"), node.items, False)


def _operation(operation_id: str) -> tuple[str, Mapping[str, Json]]:
    for path, item in load_spec()["paths"].items():
        for op in item.values():
            if isinstance(op, dict) and op.get("operationId") == operation_id:
                return path, op
    raise KeyError(operation_id)


def operation_path(name: str) -> str:
    """The URL path of the OPERATIONS entry `name`."""
    return _operation(OPERATIONS[name])[0]


def _operation_faults() -> Iterator[Fault]:
    for short, operation_id in OPERATIONS.items():
        responses = _operation(operation_id)[1]["responses"]
        ok = _resolve(responses.get("200", {}))
        content = ok.get("content", {})
        wheres = {short: "text/plain" if content else "application/json"}
        if "text/event-stream" in content:
            wheres["stream"] = "application/json"
        for where, media in wheres.items():
            yield Fault(f"{where}:status=500", where, (), "status=500")
            yield Fault(f"{where}:content-type={media}", where, (), f"content-type={media}")
        if "400" in responses:
            for status in ("200", "422"):
                name = f"{short}:status=400->{status}"
                yield Fault(name, short, (), f"status=400->{status}")
        for header in ok.get("headers", {}):
            for mutation in ("drop", "wrong-value"):
                key = header.lower()
                yield Fault(f"header:{key}:{mutation}", "header", (key,), mutation, ())
        if "text/event-stream" in content:
            yield from (Fault(f"stream:{m}", "stream", (), m) for m in STREAM_FAULTS)


@cache
def generate_faults() -> tuple[Fault, ...]:
    """Every fault, in a stable order: the elements of each shape, then each operation's."""
    faults = [
        fault
        for where, name in SHAPES.items()
        for fault in _walk(where, (), [{"$ref": f"#/components/schemas/{name}"}], False)
    ]
    faults.append(Fault("error-body:plain-text", "error-body", (), "plain-text"))
    faults += _operation_faults()
    names = [f.name for f in faults]
    if len(set(names)) != len(names):
        raise AssertionError(
            f"duplicate fault names: {sorted(n for n in names if names.count(n) > 1)}"
        )
    return tuple(faults)


def shape_count(faults: tuple[Fault, ...]) -> dict[str, int]:
    """How many faults each shape (or operation, stream, header) has."""
    out: dict[str, int] = {}
    for f in faults:
        out[f.where] = out.get(f.where, 0) + 1
    return out


_SKIP = object()


def wrong_value(current: Json, members: tuple[Json, ...]) -> Json:
    """A plausible but wrong value of the same type: another enum member, int + 1, a different
    string, one element fewer; `_SKIP` when there is none (null, an object, an empty list)."""
    others = [m for m in members if m != current and _json_type(m) == _json_type(current)]
    if others:
        return others[0]
    if isinstance(current, bool):
        return not current
    if isinstance(current, int):
        return current + 1
    if isinstance(current, float):
        return current - 0.5
    if isinstance(current, str):
        return f"{current}-x" if current else "x"
    if isinstance(current, list) and current:
        return current[:-1]
    return _SKIP


def _slots(node: Json, path: Path) -> Iterator[tuple[Json, Any]]:
    """Every (container, key) the path names in `node`; the last key may be absent (`add`)."""
    head, rest = path[0], path[1:]
    if head == "[]":
        keys: list[Any] = list(range(len(node))) if isinstance(node, list) else []
    elif head == "*":
        keys = list(node) if isinstance(node, dict) else []
    else:
        keys = [head] if isinstance(node, dict) and (head in node or not rest) else []
    for key in keys:
        if rest:
            yield from _slots(node[key], rest)
        else:
            yield node, key


def mutate(body: Json, fault: Fault) -> int:
    """Apply a field fault to `body` in place; the number of elements it changed."""
    changed = 0
    for container, key in list(_slots(body, fault.path)):
        present = isinstance(container, list) or key in container
        if fault.mutation == "add":
            if not present:
                container[key] = fault.value
                changed += 1
            continue
        if not present:
            continue
        current = container[key]
        if fault.mutation == "drop":
            del container[key]
        elif fault.mutation == "null" and current is not None:
            container[key] = None
        elif fault.mutation == "wrong-type":
            container[key] = fault.value
        elif (
            fault.mutation == "wrong-value"
            and (new := wrong_value(current, fault.value)) is not _SKIP
        ):
            container[key] = new
        else:
            continue
        changed += 1
    return changed


def observe(where: str, body: Json, seen: dict[str, bool], path: Path = ()) -> None:
    """Record each element of `body` in `seen` (name -> holds a value: not null, not empty), so
    a baseline run tells which faults its answers can carry. Digit keys are map keys (`*`)."""
    name = element(where, path)
    valued = body is not None and body != [] and body != {}
    seen[name] = seen.get(name, False) or valued
    if isinstance(body, dict):
        for key, value in body.items():
            observe(where, value, seen, (*path, "*" if key.isdigit() else key))
    elif isinstance(body, list):
        for value in body:
            observe(where, value, seen, (*path, "[]"))


def free(fault: Fault) -> str | None:
    """Why the fault is no defect (`FREE`), if it is none."""
    if fault.mutation != "wrong-value" or not fault.path:
        return None
    return FREE.get(element(fault.where, fault.path))


def exercised(fault: Fault, seen: Mapping[str, bool]) -> bool:
    """Whether the answers recorded in `seen` hold what `fault` changes (else it cannot fire)."""
    if fault.where in ("header", "stream") or fault.mutation.startswith(("status=", "content-")):
        if fault.where == "header":
            return f"header:{fault.path[0]}" in seen
        status = "400" if fault.mutation.startswith("status=400") else "200"
        return f"{fault.where}:{status}" in seen
    if not fault.path:  # error-body:plain-text
        return fault.where in seen
    if fault.mutation == "add":
        return seen.get(element(fault.where, fault.path[:-1]), False)
    name = element(fault.where, fault.path)
    return seen.get(name, False) if fault.mutation in ("null", "wrong-value") else name in seen
