"""How one release's TITO surface differs from the spec, as a flat list of differences.

Differences are information, not verdicts: the spec may lag a release (a new field), narrow it
on purpose (an enum the document states), or the release may have dropped something. Types are
not compared (a Python annotation and a JSON Schema do not map one to one); names, required
vs optional, nullability and defaults (where the spec states one) and enum values are.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from .pairing import NOT_IN_SPEC, PAIRS, UNIONS, Pair, UnionPair
from .spec_view import spec_model, spec_routes, spec_values
from .surface import PROTOCOL_MODULE, FieldInfo, Model, SourceIndex, routes


@dataclass(frozen=True)
class Difference:
    kind: str  # route-added/-removed, body-changed, field-added/-removed, required-changed,
    # nullable-changed, default-changed, enum-added/-removed, model-added/-missing
    subject: str  # `POST /path`, `Schema.field`, `Schema`, `vLLM Class`
    detail: str

    @property
    def key(self) -> str:
        return f"{self.kind} {self.subject}: {self.detail}"


def compare(
    index: SourceIndex,
    spec: dict[str, Any],
    pairs: tuple[Pair, ...] = PAIRS,
    unions: tuple[UnionPair, ...] = UNIONS,
) -> list[Difference]:
    """Every difference between the release behind `index` and `spec`."""
    found = _routes(index, spec, pairs)
    seen: set[str] = set()
    for pair in pairs:
        model = _vllm_model(index, pair.vllm)
        seen.add(pair.vllm.split(".")[0])
        schema = spec_model(spec, pair.spec)
        if schema is None:
            raise ValueError(f"the spec has no schema {pair.spec} (live/drift/pairing.py)")
        if model is None:
            # A body read by hand is still a difference: nothing holds it to the schema (abort
            # before 0.34 let integer ids in), and its model's arrival is a change to name.
            why = ": no model validates this body" if pair.by_hand else ""
            found.append(Difference("model-missing", pair.spec, f"vLLM has no {pair.vllm}{why}"))
            continue
        found += compare_models(model, schema, pair)
    for union in unions:
        tags = [t for _, t in index.union_members(PROTOCOL_MODULE, union.vllm) if t is not None]
        subject = f"{union.spec}.{union.prop}"
        found += _values(subject, tuple(tags), spec_values(spec, union.spec, union.prop))
    found += _unpaired(index, seen)
    return found


def compare_models(model: Model, schema: Model, pair: Pair) -> list[Difference]:
    """Field by field; `pair.view` says whether input rules (required, defaults) apply."""
    found = []
    for name, field in model.fields.items():
        subject = f"{schema.name}.{name}"
        if name not in schema.fields:
            if not pair.subset:
                found.append(Difference("field-added", subject, _describe(field)))
            continue
        spec_field = schema.fields[name]
        found += _values(subject, field.literals, spec_field.literals)
        if pair.view == "input":
            found += _input_rules(subject, field, spec_field)
    for name in schema.fields.keys() - model.fields.keys():
        found.append(Difference("field-removed", f"{schema.name}.{name}", f"not in {model.name}"))
    return found


def _input_rules(subject: str, field: FieldInfo, spec: FieldInfo) -> list[Difference]:
    found = []
    if field.required != spec.required:
        detail = "required in vLLM, optional in the spec"
        if not field.required:
            detail = f"optional in vLLM ({_default_text(field)}), required in the spec"
        found.append(Difference("required-changed", subject, detail))
    if field.nullable != spec.nullable:
        detail = "vLLM accepts null, the spec does not"
        if not field.nullable:
            detail = "vLLM rejects null, the spec allows it"
        found.append(Difference("nullable-changed", subject, detail))
    differs = not field.default_known or field.default != spec.default
    if spec.default_known and not field.required and differs:
        detail = f"vLLM {_default_text(field)}, the spec default {spec.default!r}"
        found.append(Difference("default-changed", subject, detail))
    return found


def _values(
    subject: str, ours: tuple[Any, ...] | None, spec: tuple[Any, ...] | None
) -> list[Difference]:
    if ours is None:
        return []  # vLLM takes any value: a spec enum is a deliberate narrowing
    if spec is None:
        return [Difference("enum-added", subject, f"{list(ours)!r} (the spec: any value)")]
    found = []
    if added := [v for v in ours if v not in spec]:
        found.append(Difference("enum-added", subject, repr(added)))
    if removed := [v for v in spec if v not in ours]:
        found.append(Difference("enum-removed", subject, repr(removed)))
    return found


def _routes(index: SourceIndex, spec: dict[str, Any], pairs: tuple[Pair, ...]) -> list[Difference]:
    ours = {(r.method, r.path): r for r in routes(index)}
    theirs = spec_routes(spec)
    found = [
        Difference("route-added", f"{m} {p}", f"{ours[(m, p)].handler}{_body_text(ours[(m, p)])}")
        for m, p in sorted(ours.keys() - theirs.keys(), key=lambda k: (k[1], k[0]))
    ]
    found += [
        Difference("route-removed", f"{m} {p}", "not registered by vllm/entrypoints/scale_out")
        for m, p in sorted(theirs.keys() - ours.keys(), key=lambda k: (k[1], k[0]))
    ]
    by_class: dict[str, set[str]] = {}
    for pair in pairs:
        if pair.view == "input":
            by_class.setdefault(pair.vllm, set()).add(pair.spec.split("/")[0])
    for key in sorted(ours.keys() & theirs.keys(), key=lambda k: (k[1], k[0])):
        route, expected = ours[key], theirs[key]
        if not route.body or expected is None:
            continue  # a handler that parses the raw body declares no model
        mapped = set().union(*(by_class.get(c, {f"(vLLM {c})"}) for c in route.body))
        if mapped != {expected}:
            detail = f"vLLM {' | '.join(route.body)}, the spec {expected}"
            found.append(Difference("body-changed", f"{key[0]} {key[1]}", detail))
    return found


def _unpaired(index: SourceIndex, paired: set[str]) -> list[Difference]:
    """Classes of the protocol module the spec has no schema for (new models, usually)."""
    classes = index.classes(PROTOCOL_MODULE)
    bases = {b.id for c in classes for b in c.bases if isinstance(b, ast.Name)}
    found = []
    for cls in classes:
        if cls.name in paired or cls.name in bases or cls.name in NOT_IN_SPEC:
            continue
        model = index.model(PROTOCOL_MODULE, cls.name)
        if model is None:
            continue
        fields = ", ".join(f"{f.name}: {f.annotation}" for f in model.fields.values())
        found.append(Difference("model-added", f"vLLM {cls.name}", fields or "no fields"))
    return found


def _vllm_model(index: SourceIndex, name: str) -> Model | None:
    cls, _, attr = name.partition(".")
    model = index.model(PROTOCOL_MODULE, cls)
    if model is None or not attr:
        return model
    return index.field_class(model, attr)


def _describe(field: FieldInfo) -> str:
    return f"{field.annotation}, {'required' if field.required else _default_text(field)}"


def _default_text(field: FieldInfo) -> str:
    if field.required:
        return "required"
    return f"default {field.default!r}" if field.default_known else f"default {field.default}"


def _body_text(route: Any) -> str:
    return f" (body {' | '.join(route.body)})" if route.body else ""
