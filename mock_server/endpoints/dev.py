"""VLLM_SERVER_DEV_MODE=1 weight-label endpoints (no API key: not under a guarded prefix)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from mock_server.endpoints.state import AppState
from mock_server.wire.errors import ApiError, ValidationFailure, validation_item
from mock_server.wire.jsonbody import TooDeep, loads

Endpoint = Callable[[Request], Awaitable[JSONResponse]]


def _json_media(request: Request) -> bool:
    """FastAPI 0.136's strict rule: the body is read as JSON only under application/json or
    application/*+json; otherwise the embedded fields count as absent (vLLM 0.32 live: a
    text/plain `/update_weight_version` is a 400 "Field required")."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    main, _, subtype = media.partition("/")
    return main == "application" and (subtype == "json" or subtype.endswith("+json"))


async def _body(request: Request) -> bytes:
    raw = await request.body()
    return raw if _json_media(request) else b""


def _embedded(raw: bytes, field: str, required: bool) -> tuple[Any, JSONResponse | None]:
    """One `Body(embed=True)` field, validated as FastAPI/pydantic do in vLLM 0.32's RL router.

    (`vllm/entrypoints/rl/online/api_router.py`: `new_version: Annotated[str, Body(embed=True)]`,
    `weight_version: Annotated[str | None, Body(embed=True)] = None`.) Failures are vLLM's
    usual 400 ErrorResponse with a pydantic-style message, like any other validation error.
    """
    loc = f"body.{field}"
    body: Any = {}
    if raw.strip():
        try:
            body = loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, TooDeep):
            item = validation_item("json_invalid", "body", "JSON decode error", None)
            return None, _invalid([item])
        except ApiError as err:  # a lone surrogate: a label that could never be written back
            return None, JSONResponse(err.body(), status_code=err.status)
    if not isinstance(body, dict):
        item = validation_item("model_attributes_type", "body", "Input should be an object", body)
        return None, _invalid([item])
    if field not in body:
        if required:
            return None, _invalid([validation_item("missing", loc, "Field required", None)])
        return None, None
    value = body[field]
    if isinstance(value, str) or (value is None and not required):
        return value, None
    item = validation_item("string_type", loc, "Input should be a valid string", value)
    return None, _invalid([item])


def _invalid(items: list[dict[str, Any]]) -> JSONResponse:
    error = ValidationFailure(items).to_api_error()
    return JSONResponse(error.body(), status_code=error.status)


def dev_endpoints(state: AppState) -> tuple[Endpoint, Endpoint, Endpoint]:
    async def update_weight_version(request: Request) -> JSONResponse:
        label, problem = _embedded(await _body(request), "new_version", required=True)
        if problem is not None:
            return problem
        state.engine.set_weight_version(label)
        return JSONResponse({"success": True, "new_version": label})

    async def finish_weight_update(request: Request) -> JSONResponse:
        label, problem = _embedded(await _body(request), "weight_version", required=False)
        if problem is not None:
            return problem
        if label is not None:
            state.engine.set_weight_version(label)
        return JSONResponse({"message": "Weight update finished"})

    async def weight_info(request: Request) -> JSONResponse:
        return JSONResponse({"weight_version": state.engine.weight_version})

    return update_weight_version, finish_weight_update, weight_info
