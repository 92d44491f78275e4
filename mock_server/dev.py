"""VLLM_SERVER_DEV_MODE=1 weight-label endpoints (no API key: not under a guarded prefix)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from mock_server.state import AppState

Endpoint = Callable[[Request], Awaitable[JSONResponse]]


async def _json(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def dev_endpoints(state: AppState) -> tuple[Endpoint, Endpoint, Endpoint]:
    async def update_weight_version(request: Request) -> JSONResponse:
        body = await _json(request)
        label = body.get("new_version") if isinstance(body, dict) else None
        if not isinstance(label, str):
            return JSONResponse({"error": "new_version (string) is required"}, status_code=400)
        state.engine.set_weight_version(label)
        return JSONResponse({"success": True, "new_version": label})

    async def finish_weight_update(request: Request) -> JSONResponse:
        body = await _json(request)
        if not isinstance(body, dict):
            return JSONResponse({"error": "Request body must be a JSON object"}, status_code=400)
        label = body.get("weight_version")
        if isinstance(label, str):
            state.engine.set_weight_version(label)
        return JSONResponse({"message": "Weight update finished"})

    async def weight_info(request: Request) -> JSONResponse:
        return JSONResponse({"weight_version": state.engine.weight_version})

    return update_weight_version, finish_weight_update, weight_info
