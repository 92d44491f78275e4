"""Answers shared by the scale-out endpoints: the disabled 403 and error bodies.

Both are built correct and handed to the `error` / `disabled` transformers once, here, for the
raw-ASGI endpoints and the Starlette ones alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mock_server.behaviour.config import MockConfig
from mock_server.transforms import apply_status
from mock_server.wire.asgi import Send, send_json
from mock_server.wire.errors import DISABLED_MESSAGE, ApiError, ValidationFailure, error_body


def error_answer(cfg: MockConfig, err: ApiError) -> tuple[int, dict[str, Any]]:
    """Status and body of an error, output defects applied."""
    return apply_status(cfg, "error", err.status, err.body(), err)


def disabled_answer(cfg: MockConfig) -> tuple[int, dict[str, Any]]:
    """vLLM's 403 for a scale-out endpoint without --enable-scale-out, defects applied."""
    body = error_body(DISABLED_MESSAGE, "PermissionDeniedError", None, 403)
    return apply_status(cfg, "disabled", 403, body)


async def send_error(send: Send, cfg: MockConfig, err: ApiError) -> None:
    status, body = error_answer(cfg, err)
    await send_json(send, status, body)


async def send_disabled(send: Send, cfg: MockConfig) -> None:
    status, body = disabled_answer(cfg)
    await send_json(send, status, body)


def error_response(cfg: MockConfig, err: ApiError) -> Any:
    """The same error as a Starlette response (for Request/Response endpoints)."""
    from starlette.responses import JSONResponse

    status, body = error_answer(cfg, err)
    return JSONResponse(body, status_code=status)


def disabled_response(cfg: MockConfig) -> Any:
    from starlette.responses import JSONResponse

    status, body = disabled_answer(cfg)
    return JSONResponse(body, status_code=status)


Handler = Callable[[Any], Awaitable[Any]]


def answered(cfg: MockConfig, handler: Handler) -> Handler:
    """A route whose ApiError or validation failure becomes vLLM's error answer (the one
    wrapper of the render, tokenize and OpenAI routes)."""

    async def endpoint(request: Any) -> Any:
        try:
            return await handler(request)
        except ValidationFailure as failure:
            return error_response(cfg, failure.to_api_error())
        except ApiError as err:
            return error_response(cfg, err)

    return endpoint
