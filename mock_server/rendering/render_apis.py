"""Render for the other request APIs: Anthropic `/v1/messages/render` and OpenAI
`/v1/responses/render`, both registered by vLLM 0.32 with `--enable-scale-out`.

Each turns its request into the chat messages the ChatML template renders, then into the same
GenerateRequest as chat render (`render.generate_request`), so generate answers them alike.
What vLLM fills in was read from its answers (`tests/fixtures/vllm-0.32-issue11/render_*`):
messages render requires `model`, `messages` and `max_tokens`, names requests `chatcmpl-…` and
streams with `stream_options` `{include_usage: true, continuous_usage_stats: true}`; responses
render requires `input`, names requests `resp_…`, takes `max_output_tokens` (default: the rest
of the context) and adds `extra_args: {}` to the sampling params.
"""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mock_server.endpoints.state import AppState
from mock_server.parsing import coerce as c
from mock_server.parsing.request import stop_list
from mock_server.rendering.render import (
    NO_TOKENIZER,
    SAMPLING_FIELD_ORDER,
    chat_template,
    generate_request,
    guard,
    read_object,
    sampling_params,
)
from mock_server.wire.errors import ValidationFailure, bad_request, validation_item

_KNOBS: tuple[tuple[str, str, Any], ...] = (
    ("temperature", "temperature", c.to_float),
    ("top_p", "top_p", c.to_float),
    ("top_k", "top_k", c.to_int),
    ("stream", "stream", c.to_bool),
)


def _required(body: dict[str, Any], key: str, errors: c.Errors) -> None:
    if key not in body:
        errors.append(validation_item("missing", f"body.{key}", "Field required", body))


def _messages(value: Any, loc: str, errors: c.Errors) -> list[Any]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, list):
        return value
    errors.append(validation_item("list_type", loc, "Input should be a valid list", value))
    return []


def _fields(
    body: dict[str, Any], errors: c.Errors, knobs: tuple[tuple[str, str, Any], ...]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, name, convert in knobs:
        value = c.field(body, key, convert, "body", errors, None)
        if value is not None:
            out[name] = value
    model = c.field(body, "model", c.to_str, "body", errors, None)
    if model is not None:
        out["model"] = model
    return out


def _system(value: Any) -> list[dict[str, Any]]:
    return [] if value in (None, "", []) else [{"role": "system", "content": value}]


def render_api_routes(state: AppState) -> list[Route]:
    cfg, tok = state.config, state.engine.tokenizer

    def need_tokenizer() -> None:
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)

    async def render_messages(request: Request) -> Response:
        body = await read_object(state, request)
        errors: c.Errors = []
        for key in ("model", "messages", "max_tokens"):
            _required(body, key, errors)
        knobs = (*_KNOBS, ("max_tokens", "max_tokens", c.to_int))
        knobs += (("stop_sequences", "stop", stop_list),)
        fields = _fields(body, errors, knobs)
        messages = _messages(body.get("messages", []), "body.messages", errors)
        if errors:
            raise ValidationFailure(errors)
        need_tokenizer()
        if fields.get("stream"):
            fields["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
        prompt = chat_template([*_system(body.get("system")), *messages])
        rid = f"chatcmpl-{secrets.token_hex(8)}"
        ids = tok.encode(prompt)
        return JSONResponse(generate_request(cfg, rid, ids, fields, sampling_params(fields)))

    async def render_responses(request: Request) -> Response:
        body = await read_object(state, request)
        errors: c.Errors = []
        # vLLM's ResponsesRequest adds one key in a before-validator: its error shows one more
        _required({**body, "": None} if "input" not in body else body, "input", errors)
        knobs = (*_KNOBS, ("max_output_tokens", "max_tokens", c.to_int))
        fields = _fields(body, errors, knobs)
        messages = _messages(body.get("input", []), "body.input", errors)
        if errors:
            raise ValidationFailure(errors)
        need_tokenizer()
        prompt = chat_template([*_system(body.get("instructions")), *messages])
        ids = tok.encode(prompt)
        fields.setdefault("max_tokens", max(cfg.max_model_len - len(ids), 1))
        sp = sampling_params(fields) | {"extra_args": {}}
        sp = {key: sp[key] for key in SAMPLING_FIELD_ORDER if key in sp} | sp
        rid = f"resp_{secrets.token_hex(8)}"
        return JSONResponse(generate_request(cfg, rid, ids, fields, sp))

    handlers = [
        ("/v1/messages/render", render_messages),
        ("/v1/responses/render", render_responses),
    ]
    return [Route(path, guard(cfg, h), methods=["POST"]) for path, h in handlers]
