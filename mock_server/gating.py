"""Answers shared by the scale-out endpoints: the disabled 403 and error bodies with defects."""

from __future__ import annotations

from typing import Any

from mock_server.asgi import Send, send_json
from mock_server.config import MockConfig
from mock_server.errors import DISABLED_MESSAGE, ApiError, error_body


async def send_error(send: Send, cfg: MockConfig, err: ApiError) -> None:
    status = err.status
    body: dict[str, Any] = err.body()
    if status == 400 and err.err_type == "Bad Request" and cfg.has_defect("validation-422"):
        status = 422
        body["error"]["code"] = 422
    if status == 400 and cfg.has_defect("error-body-flat"):
        body = {"message": err.message, "code": 400}
    await send_json(send, status, body)


async def send_disabled(send: Send, cfg: MockConfig) -> None:
    if cfg.has_defect("disabled-404"):
        await send_json(send, 404, {"detail": "Not Found"})
        return
    message = DISABLED_MESSAGE
    if cfg.has_defect("disabled-message-wrong"):
        message = "Scale-out is not enabled on this server."
    await send_json(send, 403, error_body(message, "PermissionDeniedError", None, 403))


def error_response(cfg: MockConfig, err: ApiError) -> Any:
    """The same error as a Starlette response (for Request/Response endpoints)."""
    from starlette.responses import JSONResponse

    status, body = err.status, err.body()
    if status == 400 and err.err_type == "Bad Request" and cfg.has_defect("validation-422"):
        status = 422
        body["error"]["code"] = 422
    if status == 400 and cfg.has_defect("error-body-flat"):
        body = {"message": err.message, "code": 400}
    return JSONResponse(body, status_code=status)


def disabled_response(cfg: MockConfig) -> Any:
    from starlette.responses import JSONResponse

    if cfg.has_defect("disabled-404"):
        return JSONResponse({"detail": "Not Found"}, status_code=404)
    message = DISABLED_MESSAGE
    if cfg.has_defect("disabled-message-wrong"):
        message = "Scale-out is not enabled on this server."
    return JSONResponse(error_body(message, "PermissionDeniedError", None, 403), status_code=403)
