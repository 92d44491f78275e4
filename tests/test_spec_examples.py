"""Every example in the spec validates against the schema it illustrates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import openapi

NON_SCHEMA_PARENTS = {"properties", "patternProperties", "$defs", "responses", "paths"}


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _walk(node: Any, pointer: str, parent_key: str) -> Iterator[tuple[str, str, Any]]:
    """(schema pointer, example id, value) for schema `examples` and media-type examples."""
    if isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{pointer}/{index}", str(index))
        return
    if not isinstance(node, dict):
        return
    examples = node.get("examples")
    if isinstance(examples, list) and parent_key not in NON_SCHEMA_PARENTS:
        for index, value in enumerate(examples):
            yield pointer, f"{pointer}/examples/{index}", value
    elif isinstance(examples, dict) and ("schema" in node or "itemSchema" in node):
        key = "schema" if "schema" in node else "itemSchema"
        for name, example in examples.items():
            yield f"{pointer}/{key}", f"{pointer}/examples/{_escape(name)}", example["value"]
    if "example" in node and ("schema" in node or "itemSchema" in node):
        key = "schema" if "schema" in node else "itemSchema"
        yield f"{pointer}/{key}", f"{pointer}/example", node["example"]
    for key, value in node.items():
        if key in {"examples", "example"}:
            continue
        yield from _walk(value, f"{pointer}/{_escape(key)}", key)


EXAMPLES = list(_walk(openapi.load_spec(), "#", ""))


def test_every_component_schema_has_examples() -> None:
    schemas = openapi.load_spec()["components"]["schemas"]
    print(f"{len(EXAMPLES)} examples for {len(schemas)} component schemas")
    assert [name for name, schema in schemas.items() if not schema.get("examples")] == []
    assert len(EXAMPLES) > len(schemas)


@pytest.mark.parametrize(
    ("schema_pointer", "value"),
    [(schema, value) for schema, _, value in EXAMPLES],
    ids=[example_id for _, example_id, _ in EXAMPLES],
)
def test_example_validates(schema_pointer: str, value: Any) -> None:
    validator = openapi.schema_validator(schema_pointer)
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(value)]
    assert errors == []
