"""Defects in what an answer is as a whole: its status, its error body, its bytes."""

from __future__ import annotations

from typing import Any

from mock_server.transforms.transformers import Json, transformer

GARBAGE = b'<html>502 upstream hiccup</html>{"choices":'


@transformer("validation-422", "error")
def validation_422(status: int, body: Json, err: Any) -> tuple[int, Json]:
    """FastAPI's status for validation errors instead of vLLM's 400."""
    if status == 400 and err.err_type == "Bad Request":
        body["error"]["code"] = 422
        return 422, body
    return status, body


@transformer("error-body-flat", "error")
def error_body_flat(status: int, body: Json, err: Any) -> tuple[int, Json]:
    if status == 400:
        return status, {"message": err.message, "code": 400}
    return status, body


@transformer("errors-as-200", "error")
def errors_as_200(status: int, body: Json, err: Any) -> tuple[int, Json]:
    """The rejection said in the body only: every 400 keeps its error body, answered 200."""
    return (200, body) if status == 400 else (status, body)


@transformer("disabled-404", "disabled")
def disabled_404(status: int, body: Json) -> tuple[int, Json]:
    """Disabled endpoints look unrouted instead of refused."""
    return 404, {"detail": "Not Found"}


@transformer("disabled-message-wrong", "disabled")
def disabled_message_wrong(status: int, body: Json) -> tuple[int, Json]:
    if "error" in body:
        body["error"]["message"] = "Scale-out is not enabled on this server."
    return status, body


@transformer("unauthorized-body-wrong", "unauthorized")
def unauthorized_body_wrong(status: int, body: Json) -> tuple[int, Json]:
    """FastAPI's HTTPBearer body instead of vLLM's flat one."""
    return status, {"detail": "Not authenticated"}


@transformer("garbage-json", "wire")
def garbage_json(raw: bytes) -> bytes:
    return GARBAGE
