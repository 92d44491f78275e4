"""The TITO OpenAPI document, shipped inside the package.

Everything in the kit reads the API from here: the mock validates what it sends, the suite
validates what it receives, the fuzzer generates from it. Keeping the loader next to the YAML
means an installed wheel finds the spec without the repository.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_FILE = "tito.yaml"
SPEC_URI = "urn:tito:openapi"

__all__ = [
    "SPEC_URI",
    "load_spec",
    "media_schema",
    "registry",
    "schema_validator",
    "spec_path",
]


def spec_path() -> Path:
    """Filesystem path of `tito.yaml` inside the installed package."""
    return Path(str(resources.files(__name__).joinpath(SPEC_FILE)))


@cache
def load_spec() -> dict[str, Any]:
    """The parsed spec. Cached: callers must treat it as read-only."""
    with spec_path().open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{spec_path()} is not an OpenAPI document")
    return data


@cache
def registry() -> Registry[Any]:
    """A referencing registry holding the whole spec, so `#/components/...` refs resolve."""
    resource = Resource.from_contents(load_spec(), default_specification=DRAFT202012)
    return Registry().with_resource(SPEC_URI, resource)


@cache
def schema_validator(pointer: str) -> Validator:
    """A JSON Schema validator for the schema at `pointer` (e.g. `#/components/schemas/X`)."""
    if not pointer.startswith("#/"):
        pointer = f"#/components/schemas/{pointer}"
    return Draft202012Validator({"$ref": SPEC_URI + pointer}, registry=registry())


def media_schema(
    path: str, method: str, status: int | str, media_type: str = "application/json"
) -> tuple[str, dict[str, Any]] | None:
    """The JSON pointer and media-type object documented for one response, if any.

    For `text/event-stream` the object carries `itemSchema` (OpenAPI 3.2): one event.
    """
    operation = load_spec()["paths"].get(path, {}).get(method.lower())
    if operation is None:
        return None
    responses = operation.get("responses", {})
    key = str(status) if str(status) in responses else f"{str(status)[0]}XX"
    response = responses.get(key, responses.get("default"))
    if response is None:
        return None
    if "$ref" in response:
        ref = response["$ref"]
        response = _resolve(ref)
    content = response.get("content", {})
    if media_type not in content:
        return None
    escaped = path.replace("~", "~0").replace("/", "~1")
    return f"#/paths/{escaped}/{method.lower()}/responses/{key}", content[media_type]


def _resolve(ref: str) -> dict[str, Any]:
    node: Any = load_spec()
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return dict(node)
