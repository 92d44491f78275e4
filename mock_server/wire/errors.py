"""vLLM-shaped errors: `{"error": {"message", "type", "param", "code"}}` and friends."""

from __future__ import annotations

import json
from typing import Any

DISABLED_MESSAGE = (
    "Scale-out endpoints are disabled. Restart vllm serve with --enable-scale-out to enable them."
)
PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Request Entity Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}
ENGINE_TYPES = {
    400: "BadRequestError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    500: "InternalServerError",
    501: "NotImplementedError",
    503: "ServiceUnavailableError",
}


class ApiError(Exception):
    """An error answered as a vLLM ErrorResponse.

    `engine_side` marks checks vLLM runs when the engine admits the request: for a streamed
    request those become a 200 with one error event instead of an HTTP error.
    """

    def __init__(
        self,
        status: int,
        message: str,
        err_type: str | None = None,
        param: str | None = None,
        engine_side: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.err_type = err_type or ENGINE_TYPES.get(status, PHRASES.get(status, "Error"))
        self.param = param
        self.engine_side = engine_side

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.err_type, self.param, self.status)


def error_body(message: str, err_type: str, param: str | None, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": err_type, "param": param, "code": code}}


def bad_request(message: str, param: str | None = None) -> ApiError:
    """A `VLLMValidationError`-style 400 (type BadRequestError)."""
    return ApiError(400, message, "BadRequestError", param)


def param_error(message: str, param: str, value: Any) -> ApiError:
    """vLLM appends ` (parameter=X, value=Y)` to its validation messages."""
    return ApiError(400, f"{message} (parameter={param}, value={value})", "BadRequestError", param)


def http_error(status: int, message: str) -> ApiError:
    """A FastAPI HTTPException as vLLM renders it (type is the HTTP phrase)."""
    return ApiError(status, message, PHRASES.get(status, "Error"))


INPUT_CHARS = 200


def summarise(value: Any) -> str:
    """How vLLM 0.32's validation messages show an offending input (`_summarize_error_input`):
    containers by size, every other value as its text (`'None'`, `'True'`, `'5'`), cut at 200
    characters."""
    if isinstance(value, (bytes, bytearray)):
        return f"<{type(value).__name__} of {len(value)} bytes>"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return f"<{type(value).__name__} of {len(value)} items>"
    try:
        text = value if isinstance(value, str) else str(value)
    except ValueError:  # an int past sys.get_int_max_str_digits()
        return f"<{type(value).__name__}>"
    return text[:INPUT_CHARS] + "...[truncated]" if len(text) > INPUT_CHARS else text


class ValidationFailure(Exception):
    """pydantic-style errors collected while parsing a body (400, type "Bad Request")."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} validation errors")
        self.errors = errors

    def to_api_error(self) -> ApiError:
        param = self.errors[0].get("param") if self.errors else None
        shown = [{k: v for k, v in e.items() if k != "param"} for e in self.errors[:10]]
        noun = "error" if len(self.errors) == 1 else "errors"
        lines = "\n".join("  " + repr(e)[:1000] for e in shown)
        return ApiError(
            400, f"{len(self.errors)} validation {noun}:\n{lines}", "Bad Request", param
        )


def validation_item(
    err_type: str, loc: str, msg: str, value: Any, ctx: dict[str, Any] | None = None
) -> dict[str, Any]:
    item: dict[str, Any] = {"type": err_type, "loc": loc, "msg": msg, "input": summarise(value)}
    if ctx is not None:
        item["ctx"] = ctx
    item["param"] = loc
    return item


def json_bytes(obj: Any) -> bytes:
    """Compact JSON, as pydantic's model_dump_json / FastAPI's JSONResponse emit it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
