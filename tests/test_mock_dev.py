"""The dev-mode weight endpoints validate their embedded body fields as vLLM 0.32 does."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.harness.testing import asgi_client
from openapi import schema_validator

DEV = {"VLLM_SERVER_DEV_MODE": "1"}
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def post(path: str, **kw: Any) -> tuple[int, Any]:
    async with asgi_client(["--enable-scale-out"], DEV) as client:
        reply = await client.post(path, **kw)
        return reply.status_code, reply.json()


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/update_weight_version", {}, "body.new_version"),
        ("/update_weight_version", {"new_version": None}, "body.new_version"),
        ("/update_weight_version", {"new_version": 7}, "body.new_version"),
        ("/finish_weight_update", {"weight_version": 5}, "body.weight_version"),
        ("/finish_weight_update", {"weight_version": ["x"]}, "body.weight_version"),
        ("/finish_weight_update", [1], "body"),
    ],
)
async def test_bad_dev_bodies_are_vllm_400s(path: str, body: Any, param: str) -> None:
    status, data = await post(path, json=body)
    assert status == 400
    assert not list(schema_validator("ErrorResponse").iter_errors(data)), data
    assert data["error"]["param"] == param
    assert data["error"]["message"].startswith("1 validation error:")


async def test_invalid_json_is_a_400() -> None:
    json_type = {"Content-Type": "application/json"}
    status, data = await post("/finish_weight_update", content=b"{", headers=json_type)
    assert status == 400 and data["error"]["code"] == 400


@pytest.mark.parametrize("media_type", ["text/plain", "x", None, "text/json"])
async def test_a_body_under_another_media_type_counts_as_absent(media_type: str | None) -> None:
    """FastAPI reads these Body(embed=True) fields only from application/json or */*+json
    (vLLM 0.32 live: text/plain update_weight_version -> 400 "Field required")."""
    headers = {"Content-Type": media_type} if media_type else {}
    body = b'{"new_version": "v2", "weight_version": "v2"}'
    status, data = await post("/update_weight_version", content=body, headers=headers)
    assert status == 400 and data["error"]["param"] == "body.new_version"
    assert "'type': 'missing'" in data["error"]["message"]
    async with asgi_client(["--enable-scale-out"], DEV) as client:
        reply = await client.post("/finish_weight_update", content=body, headers=headers)
        assert reply.is_success
        assert (await client.get("/weight_info")).json() == {"weight_version": "default"}
        json_type = {"Content-Type": "application/vnd.tito+json; charset=utf-8"}
        await client.post("/finish_weight_update", content=body, headers=json_type)
        assert (await client.get("/weight_info")).json() == {"weight_version": "v2"}


async def test_labels_set_and_read() -> None:
    async with asgi_client(["--enable-scale-out"], DEV) as client:
        assert (await client.post("/finish_weight_update", json={})).status_code == 200
        assert (await client.get("/weight_info")).json() == {"weight_version": "default"}
        await client.post("/finish_weight_update", json={"weight_version": "v2"})
        assert (await client.get("/weight_info")).json() == {"weight_version": "v2"}
        reply = await client.post("/update_weight_version", json={"new_version": "v3"})
        assert reply.json() == {"success": True, "new_version": "v3"}
        await client.post("/finish_weight_update", json={"weight_version": None})
        assert (await client.get("/weight_info")).json() == {"weight_version": "v3"}
