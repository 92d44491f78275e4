"""The parse stage: the media type, the JSON and the body read as vLLM's models read it."""

from __future__ import annotations

from mock_server.behaviour.config import MockConfig
from mock_server.parsing.request import GenerateRequest, parse_generate, parse_plain
from mock_server.stages.refusals import StreamedRejection
from mock_server.wire.asgi import Receive, Scope, header, read_body
from mock_server.wire.errors import ApiError, ValidationFailure
from mock_server.wire.jsonbody import parse_json

UNSUPPORTED_MEDIA = (
    "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed"
)


def is_json_media(scope: Scope) -> bool:
    content_type = (header(scope, "content-type") or "").lower()
    return content_type.split(";", 1)[0].strip() == "application/json"


async def read(cfg: MockConfig, scope: Scope, receive: Receive) -> GenerateRequest:
    """The request, or the 400 (or the parse slot's other answer) its body earns."""
    parse = cfg.policies.parse
    if not is_json_media(scope) and parse.media_type_checked:
        raise ApiError(400, UNSUPPORTED_MEDIA, "Bad Request")
    raw = await read_body(scope, receive, cfg.mock_max_body_bytes)
    try:
        body = parse_json(raw)
    except ValidationFailure:
        if parse.bad_json_status == 500:
            raise ApiError(500, "Internal Server Error", "InternalServerError") from None
        raise
    body = cfg.release.known(body)  # an older release ignores the fields it lacks
    try:
        return (cfg.fast.generate and parse_plain(body, cfg)) or parse_generate(body, cfg)
    except ValidationFailure as failure:
        streamed = isinstance(body, dict) and body.get("stream") is True
        if streamed and parse.schema_error_streamed:
            raise StreamedRejection(failure.to_api_error()) from None
        raise
