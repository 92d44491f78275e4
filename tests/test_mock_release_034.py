"""`--mock-vllm-version 0.33|0.34`: the derender output mode, judged by the release's own models.

vLLM's pydantic models cannot be imported without torch, so the answer's JSON schema is built
from the release's source with the drift reader's `ast` models (`live/drift/surface.py`):
`GenerateDerenderResponse` and `GenerateDerenderStreamResponse` of
`vllm/entrypoints/scale_out/token_in_token_out/protocol.py`, and every model they name. The
source comes from the kit's cache; without it these tests skip (fill it with
`tito-conformance drift --vllm-version 0.34.0`, and `0.33.0`). What the suite makes of a
0.33/0.34 mock (exactly the release's listed deviations) is test_mock_release_wire.py's.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import jsonschema
import pytest

from live.drift.fetch import Source, cache_root, cached_wheel, dists_for
from live.drift.surface import PROTOCOL_MODULE, Model, SourceIndex
from mock_server.harness.testing import asgi_client

pytestmark = pytest.mark.anyio
GEN = "/inference/v1/generate"
SO = ["--enable-scale-out"]
BODY: dict[str, Any] = {
    "token_ids": [1, 2, 3],
    "sampling_params": {"max_tokens": 5, "seed": 7, "logprobs": 2},
    "output_mode": "derender",
}
_SCALARS: dict[str, dict[str, Any]] = {
    "int": {"type": "integer"},
    "NonNegativeInt": {"type": "integer", "minimum": 0},
    "float": {"type": "number"},
    "str": {"type": "string"},
    "bool": {"type": "boolean"},
}
_ARRAYS = {"list", "List", "Sequence", "tuple", "set"}
_MAPS = {"dict", "Dict", "Mapping"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def release_index(version: str) -> SourceIndex:
    """The release's sources (the extracted cache, else its cached wheel); skip without them."""
    for dist in dists_for(version):
        root = cache_root() / "sources" / f"{dist}-{version}"
        wheel = cached_wheel(version)
        source = Source(f"{dist} {version}", root, wheel)
        if source.read(PROTOCOL_MODULE.replace(".", "/") + ".py") is not None:
            return SourceIndex(source)
    pytest.skip(f"no vLLM {version} source cached: tito-conformance drift --vllm-version {version}")


class SchemaFromSource:
    """A JSON schema of one model, from its class bodies: every field typed as annotated, the
    required ones required, no other key (the answer is a dump of exactly these fields)."""

    def __init__(self, index: SourceIndex) -> None:
        self.index = index

    def model(self, module: str, name: str) -> Model:
        found = self.index.model(module, name) or self.index.model(PROTOCOL_MODULE, name)
        assert found is not None, name
        return found

    def of_model(self, model: Model, depth: int = 0) -> dict[str, Any]:
        props = {
            name: self.of(model.module, ast.parse(info.annotation, mode="eval").body, depth + 1)
            for name, info in model.fields.items()
        }
        required = [name for name, info in model.fields.items() if info.required]
        return {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        }

    def of(self, module: str, node: ast.expr, depth: int) -> dict[str, Any]:
        if depth > 8:
            return {}
        if isinstance(node, ast.Constant) and node.value is None:
            return {"type": "null"}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return {
                "anyOf": [self.of(module, node.left, depth), self.of(module, node.right, depth)]
            }
        if isinstance(node, ast.Subscript):
            return self._subscript(module, node, depth)
        if isinstance(node, ast.Name):
            return self._name(module, node.id, depth)
        return {}  # typing.Any and the like

    def _subscript(self, module: str, node: ast.Subscript, depth: int) -> dict[str, Any]:
        base = node.value.id if isinstance(node.value, ast.Name) else ""
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Literal":
            return {"enum": [ast.literal_eval(v) for v in items]}
        if base in ("Optional", "Union"):
            parts = [self.of(module, v, depth) for v in items]
            return {"anyOf": [*parts, {"type": "null"}] if base == "Optional" else parts}
        if base == "Annotated":
            return self.of(module, items[0], depth)
        if base in _ARRAYS:
            return {"type": "array", "items": self.of(module, items[0], depth)}
        if base in _MAPS:
            return {"type": "object", "additionalProperties": self.of(module, items[-1], depth)}
        return {}

    def _name(self, module: str, name: str, depth: int) -> dict[str, Any]:
        if name in _SCALARS:
            return _SCALARS[name]
        found = self.index.model(module, name)
        if found is not None and found.fields:
            return self.of_model(found, depth)
        alias = self.index.lookup(module, name)
        if alias is not None and isinstance(alias[1], ast.expr):
            return self.of(alias[0], alias[1], depth + 1)
        return {}  # a third party's type (openai's), or Any / JsonValue


def dumped_keys(index: SourceIndex, model: Model) -> list[str]:
    """The keys `model_dump()` writes: every field but an `exclude_if` one (null here) and
    `tool_calls`, which ChatMessage's and DeltaMessage's serializers pop when empty."""
    found = index.lookup(model.module, model.name)
    assert found is not None and isinstance(found[1], ast.ClassDef)
    excluded = {"tool_calls"}
    for stmt in found[1].body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.value, ast.Call):
            continue
        if any(k.arg == "exclude_if" for k in stmt.value.keywords):
            excluded.add(ast.unparse(stmt.target))
    return [k for k in model.fields if k not in excluded]


def events(text: str) -> list[Any]:
    return [
        json.loads(block[6:])
        for block in text.split("\n\n")
        if block.startswith("data: ") and block != "data: [DONE]"
    ]


@pytest.mark.parametrize("version", ["0.33", "0.34"])
async def test_derender_answer_is_the_release_s_generate_derender_response(version: str) -> None:
    index = release_index(f"{version}.0")
    schemas = SchemaFromSource(index)
    response = schemas.model(PROTOCOL_MODULE, "GenerateDerenderResponse")
    async with asgi_client([*SO, "--mock-vllm-version", version]) as client:
        body = (await client.post(GEN, json=BODY)).json()
        text = (await client.post(GEN, json={**BODY, "output_mode": "text"})).json()
    jsonschema.validate(body, schemas.of_model(response))
    assert list(body) == list(response.fields)
    choice = body["choices"][0]
    choice_model = schemas.model(PROTOCOL_MODULE, "GenerateDerenderChoice")
    assert list(choice) == list(choice_model.fields)
    message = schemas.model(choice_model.module, "ChatMessage")
    assert list(choice["message"]) == dumped_keys(index, message)
    # the parsed message of a server without a parser is the text level's text
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == text["choices"][0]["text"]
    assert choice["token_ids"] == text["choices"][0]["token_ids"]
    # chat logprobs, cut to the request's count as /v1/chat/completions cuts them
    assert all(len(e["top_logprobs"]) <= 2 for e in choice["logprobs"]["content"])


async def test_streamed_derender_chunks_are_the_release_s_stream_response() -> None:
    index = release_index("0.34.0")
    schemas = SchemaFromSource(index)
    chunk_model = schemas.model(PROTOCOL_MODULE, "GenerateDerenderStreamResponse")
    streamed = {**BODY, "stream": True, "stream_options": {"include_usage": True}}
    async with asgi_client([*SO, "--mock-vllm-version", "0.34"]) as client:
        r = await client.post(GEN, json=streamed)
        whole = (await client.post(GEN, json={**BODY, "output_mode": "text"})).json()
    chunks = events(r.text)
    schema = schemas.of_model(chunk_model)
    for chunk in chunks:
        jsonschema.validate(chunk, schema)
        assert chunk["output_mode"] == "derender"
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0]["role"] == "assistant" and all("role" not in d for d in deltas[1:])
    assert "".join(d.get("content", "") for d in deltas) == whole["choices"][0]["text"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5


@pytest.mark.parametrize(
    ("version", "body", "status"),
    [
        ("0.32", BODY, 400),  # not one of its output modes
        ("0.33", {**BODY, "stream": True}, 400),  # 0.33 does not stream derender
        ("0.33", {**BODY, "parse_context": {"return_tokens_as_token_ids": True}}, 400),
        ("0.34", {**BODY, "parse_context": {"return_tokens_as_token_ids": True}}, 200),
        ("0.34", {**BODY, "parse_context": {"from_a_newer_render": 1}}, 400),
        ("0.34", {**BODY, "output_mode": "text", "parse_context": {"from_a_newer_render": 1}}, 200),
        ("0.34", {**BODY, "parse_context": {"history_tool_call_cnt": -1}}, 400),
        ("0.32", {**BODY, "output_mode": "text", "parse_context": "ignored"}, 200),
    ],
)
async def test_derender_and_parse_context_per_release(
    version: str, body: dict[str, Any], status: int
) -> None:
    async with asgi_client([*SO, "--mock-vllm-version", version]) as client:
        r = await client.post(GEN, json=body)
    assert r.status_code == status, r.text


async def test_derender_needs_a_tokenizer_and_detokenize_as_text_does() -> None:
    async with asgi_client(["--tokens-only", "--mock-vllm-version", "0.34"]) as client:
        r = await client.post(GEN, json=BODY)
    assert r.status_code == 400
    assert r.json()["error"]["message"].startswith("output_mode='derender' requires a tokenizer")
    body = {**BODY, "sampling_params": {"detokenize": False}}
    async with asgi_client([*SO, "--mock-vllm-version", "0.34"]) as client:
        r = await client.post(GEN, json=body)
    assert r.status_code == 400
    assert "output_mode='derender' requires sampling_params.detokenize" in r.text


async def test_parse_context_return_tokens_as_token_ids_sets_the_logprob_tokens() -> None:
    body = {**BODY, "parse_context": {"return_tokens_as_token_ids": True}}
    async with asgi_client([*SO, "--mock-vllm-version", "0.34"]) as client:
        entry = (await client.post(GEN, json=body)).json()["choices"][0]["logprobs"]["content"][0]
    assert entry["token"].startswith("token_id:") and entry["bytes"] is None
