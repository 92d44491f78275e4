"""Abort endpoints: /inference/v1/abort_requests, legacy /abort_requests, dev-mode abort-all."""

from __future__ import annotations

import json
from typing import Any

from mock_server.endpoints.gating import send_disabled, send_error
from mock_server.endpoints.state import AppState
from mock_server.wire.asgi import (
    Disconnected,
    Receive,
    Scope,
    Send,
    read_body,
    send_bytes,
    send_json,
)
from mock_server.wire.errors import ApiError, ValidationFailure, http_error
from mock_server.wire.errors import validation_item as item
from mock_server.wire.jsonbody import TooDeep, loads


def _ids(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def validated(body: Any, required: bool = True) -> None:
    """The body as vLLM 0.34's `AbortRequestsRequest` reads it (`request_ids: str |
    list[str]`, required; other keys ignored): pydantic's errors, located under `body`, as
    the handler re-raises them (`Release.abort_model`). `required` False: a missing
    request_ids passes (the `abort-missing-ids-200` defect)."""
    if not isinstance(body, dict):
        msg = "Input should be a valid dictionary or instance of AbortRequestsRequest"
        ctx = {"class_name": "AbortRequestsRequest"}
        raise ValidationFailure([item("model_type", "body", msg, body, ctx)])
    loc = "body.request_ids"
    if "request_ids" not in body:
        if required:
            raise ValidationFailure([item("missing", loc, "Field required", body)])
        return
    ids = body["request_ids"]
    if isinstance(ids, str):
        return
    errors = [item("string_type", loc, "Input should be a valid string", ids)]
    if isinstance(ids, list):  # the list branch: each item that is not a string
        errors += [
            item("string_type", f"{loc}.{i}", "Input should be a valid string", v)
            for i, v in enumerate(ids)
            if not isinstance(v, str)
        ]
        if len(errors) == 1:
            return
    else:
        errors.append(item("list_type", loc, "Input should be a valid list", ids))
    raise ValidationFailure(errors)


class AbortEndpoint:
    """vLLM's TITO abort handler: no content-type check, empty 200, background abort."""

    def __init__(self, state: AppState, legacy: bool = False) -> None:
        self.state = state
        self.legacy = legacy  # served as the tokens-only /abort_requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cfg = self.state.config
        if not cfg.scale_out and not cfg.policies.gate.disabled_abort_open:
            await send_disabled(send, cfg)
            return
        try:
            raw = await read_body(scope, receive, cfg.mock_max_body_bytes)
            try:
                body = loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError, TooDeep) as exc:
                # vLLM 0.32 answers a 500 for too deep a body here (RecursionError)
                raise http_error(400, f"JSON decode error: {exc}") from None
            if cfg.release.abort_model:
                validated(body, cfg.policies.admit.abort_ids_required)
            if not isinstance(body, dict):
                # real vLLM answers 500 here (AttributeError); the mock refuses bad input cleanly
                raise http_error(400, "Request body must be a JSON object")
            ids = body.get("request_ids")
            if ids is None and cfg.policies.admit.abort_ids_required:
                raise http_error(400, "Missing 'request_ids' in request body")
        except Disconnected:
            return
        except ApiError as err:
            await send_error(send, cfg, err)
            return
        except ValidationFailure as failure:
            await send_error(send, cfg, failure.to_api_error())
            return
        if not self.legacy or cfg.policies.admit.legacy_abort_acts:
            self.state.engine.abort(_ids(ids))
        if cfg.policies.write.abort_json_body:
            await send_json(send, 200, {"status": "ok"})
            return
        await send_bytes(send, 200, b"", content_type=None)


class DevAbortEndpoint:
    """VLLM_SERVER_DEV_MODE=1 /abort_requests: missing or empty request_ids aborts everything."""

    def __init__(self, state: AppState) -> None:
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            raw = await read_body(scope, receive, self.state.config.mock_max_body_bytes)
        except Disconnected:
            return
        except ApiError as err:
            await send_error(send, self.state.config, err)
            return
        body: Any = {}
        if raw.strip():
            try:
                body = loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError, TooDeep):
                await send_json(send, 400, {"error": "Invalid JSON format"})
                return
            except ApiError as err:
                await send_error(send, self.state.config, err)
                return
        if not isinstance(body, dict):
            await send_json(send, 400, {"error": "Request body must be a JSON object"})
            return
        ids = _ids(body.get("request_ids"))
        engine = self.state.engine
        count = engine.abort(ids) if ids else engine.abort_all()
        key = self.state.config.policies.write.dev_abort_count_key
        await send_json(send, 200, {"status": "aborted", key: count})
