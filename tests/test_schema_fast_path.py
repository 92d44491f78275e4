"""`openapi.is_valid` (jsonschema-rs) decides exactly as `openapi.schema_validator` (jsonschema).

The suite asks the Rust validator first and walks jsonschema's errors only for an invalid body
(`api.schema_leaves`), so a body the Rust one wrongly passed would be a failure nobody sees.
The corpus: every schema's own examples, and each of them broken by every fault the
generated-fault catalogue holds for its shape (dropped, null, wrong type, wrong value, added).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from benchmarks.fault_catalogue import SHAPES, generate_faults, mutate
from openapi import is_valid, load_spec, schema_validator

SCHEMAS: dict[str, Any] = load_spec()["components"]["schemas"]
FIELD = ("drop", "null", "wrong-type", "wrong-value", "add")
UMBRELLAS = {  # the union a shape is one branch of: validated as the suite validates it
    "generate": "GenerateResponse",
    "generate-text": "GenerateResponse",
}


def _agree(schema: str, body: Any) -> bool:
    return is_valid(schema, body) == schema_validator(schema).is_valid(body)


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
def test_examples_are_judged_alike(schema: str) -> None:
    examples = SCHEMAS[schema].get("examples", [])
    assert examples, f"{schema} has no example to judge"
    for example in examples:
        assert is_valid(schema, example), f"{schema}'s own example is invalid to jsonschema-rs"
        assert _agree(schema, example)


@pytest.mark.parametrize("where", sorted(SHAPES))
def test_broken_examples_are_judged_alike(where: str) -> None:
    schema = SHAPES[where]
    checked = invalid = 0
    for example in SCHEMAS[schema]["examples"]:
        for fault in (f for f in generate_faults() if f.where == where and f.mutation in FIELD):
            body = copy.deepcopy(example)
            if not mutate(body, fault):
                continue
            for name in (schema, UMBRELLAS.get(where, schema)):
                assert _agree(name, body), f"{fault.name} on {name}: {body!r:.300}"
            checked += 1
            invalid += not is_valid(schema, body)
    assert checked >= 3, f"no fault of {where} applies to its examples"
    assert invalid, f"every broken {where} example was valid: the corpus breaks nothing"


def test_a_schema_reaching_content_schema_stays_on_jsonschema() -> None:
    """The SSE item schema asserts the JSON inside `data` (`contentSchema`, which jsonschema-rs
    only annotates): `is_valid` must still reject a chunk that breaks its schema there."""
    pointer = "#/paths/~1inference~1v1~1generate/post/responses/200/content/text~1event-stream"
    event = {"data": '{"choices": "not a list"}'}
    assert not schema_validator(f"{pointer}/itemSchema").is_valid(event)
    assert not is_valid(f"{pointer}/itemSchema", event)
