"""Render (prompt -> GenerateRequest): the OpenAI bodies turned into generate requests.

It uses the same tokenizer and chat template as generate, so render output can be POSTed to
/inference/v1/generate unchanged. The fields render reads are parsed as vLLM's pydantic
models parse them (lax mode: `7.0` is an int), and the sampling values are checked as
SamplingParams checks them, so what it returns is always a valid GenerateRequest.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mock_server.behaviour.config import MockConfig
from mock_server.endpoints.gating import answered
from mock_server.endpoints.state import AppState
from mock_server.engine.tokenizer import Tokenizer
from mock_server.parsing import coerce as c
from mock_server.parsing import parse_context
from mock_server.parsing.request import check_salt, check_sampling, stop_list
from mock_server.parsing.schema_check import schema_errors
from mock_server.stages.parse import UNSUPPORTED_MEDIA
from mock_server.wire.errors import ApiError, ValidationFailure, bad_request, validation_item
from mock_server.wire.jsonbody import parse_json

Handler = Callable[[Request], Awaitable[Response]]
NO_TOKENIZER = "Tokenizer not available when `skip_tokenizer_init=True`"
SAMPLING_MAX_TOKENS = 16  # SamplingParams.max_tokens' default, left out of its msgspec dump
EMPTY_PROMPT = "Either prompt or prompt_embeds must be provided and non-empty."
NEGATIVE_IDS = "token_ids must not contain negative values"
_FIELDS: tuple[tuple[str, Any], ...] = (
    ("model", c.to_str),
    ("temperature", c.to_float),
    ("top_p", c.to_float),
    ("min_p", c.to_float),
    ("presence_penalty", c.to_float),
    ("frequency_penalty", c.to_float),
    ("repetition_penalty", c.to_float),
    ("seed", c.to_int),
    ("top_k", c.to_int),
    ("n", c.to_int),
    ("min_tokens", c.to_int),
    ("max_tokens", c.to_int),
    ("ignore_eos", c.to_bool),
    ("skip_special_tokens", c.to_bool),
    ("include_stop_str_in_output", c.to_bool),
    ("detokenize", c.to_bool),
    ("stream", c.to_bool),
    ("cache_salt", c.to_str),
    ("stop", stop_list),
    ("stop_token_ids", c.to_int_list),
)
"""The fields of CompletionRequest / ChatCompletionRequest render reads, with their types."""
_CHAT_FIELDS: tuple[tuple[str, Any], ...] = (
    ("max_completion_tokens", c.to_int),
    ("logprobs", c.to_bool),
    ("top_logprobs", c.to_int),
    ("add_generation_prompt", c.to_bool),
)
# vLLM 0.32 `SamplingParams.__struct_fields__` (the public ones): msgspec encodes in this order.
SAMPLING_FIELD_ORDER = (
    "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature",
    "watermarking", "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos",
    "max_tokens", "min_tokens", "logprobs", "prompt_logprobs", "prompt_logprob_token_ids",
    "prompt_logprob_start", "logprob_token_ids", "flat_logprobs", "detokenize",
    "skip_special_tokens", "spaces_between_special_tokens", "include_stop_str_in_output",
    "output_kind", "stream_interval", "skip_clone", "output_text_buffer_length",
    "structured_outputs", "logit_bias", "allowed_token_ids", "extra_args", "bad_words",
    "skip_reading_prefix_cache", "thinking_token_budget", "repetition_detection",
    "routed_experts_prompt_start", "trace_decode_token_ids",
)  # fmt: skip
_SAMPLING_KEYS = (
    "seed",
    "top_k",
    "n",
    "min_tokens",
    "ignore_eos",
    "skip_special_tokens",
    "include_stop_str_in_output",
    "detokenize",
)


def parse_fields(
    body: dict[str, Any], chat: bool, errors: c.Errors, echo: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The fields render reads, coerced; a null or absent field is left out. `echo`: the
    release's `render_echo` (0.33+: return_token_ids, a bool)."""
    fields = (*_FIELDS, *_CHAT_FIELDS) if chat else (*_FIELDS, ("logprobs", c.to_int))
    fields += tuple((key, c.to_bool) for key in echo)
    out: dict[str, Any] = {}
    for key, convert in fields:
        value = c.field(body, key, convert, "body", errors, None)
        if value is not None:
            out[key] = value
    return out


def _text(value: Any, loc: str, errors: c.Errors) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [
            c.field(p, "text", c.to_str, f"{loc}.{i}", errors, "")
            for i, p in enumerate(value)
            if isinstance(p, dict)
        ]
        return "".join(texts)
    errors.append(validation_item("string_type", loc, "Input should be a valid string", value))
    return ""


def chat_template(messages: list[Any], add_generation_prompt: bool = True) -> str:
    """A small ChatML template (Qwen's shape without tools or thinking)."""
    parts = []
    errors: c.Errors = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise bad_request("Each message must be an object")
        loc = f"body.messages.{i}"
        role = c.field(message, "role", c.to_str, loc, errors, "user")
        content = _text(message.get("content"), f"{loc}.content", errors)
        parts.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    if errors:
        raise ValidationFailure(errors)
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def stream_options(body: dict[str, Any], stream: bool, errors: c.Errors) -> Any:
    """vLLM's StreamOptions with its defaults filled in (null when absent); only with stream."""
    raw = body.get("stream_options")
    if raw is None or c.to_dict(raw, "body.stream_options", errors) is None:
        return None
    loc = "body.stream_options"
    out = {
        "include_usage": c.field(raw, "include_usage", c.to_bool, loc, errors, False),
        "continuous_usage_stats": c.field(
            raw, "continuous_usage_stats", c.to_bool, loc, errors, False
        ),
    }
    if not errors and not stream:
        msg = "Stream options can only be defined when `stream=True`. (parameter=stream_options)"
        raise ApiError(400, msg, "BadRequestError", "stream_options")
    return out


def sampling_params(fields: dict[str, Any]) -> dict[str, Any]:
    """Mirrors msgspec omit_defaults output of vLLM's render: keys in struct field order."""
    temperature = float(fields.get("temperature", 1.0))
    sp: dict[str, Any] = {
        "presence_penalty": float(fields.get("presence_penalty") or 0.0),
        "frequency_penalty": float(fields.get("frequency_penalty") or 0.0),
        "repetition_penalty": float(fields.get("repetition_penalty") or 1.0),
        "temperature": temperature,
    }
    if temperature != 0.0:
        sp["top_p"] = float(fields.get("top_p", 1.0))
        sp["min_p"] = float(fields.get("min_p") or 0.0)
    sp["stop"] = list(fields.get("stop") or [])
    sp["stop_token_ids"] = list(fields.get("stop_token_ids") or [])
    for key in _SAMPLING_KEYS:
        if key in fields:
            sp[key] = fields[key]
    max_tokens = fields.get("max_completion_tokens") or fields.get("max_tokens")
    if max_tokens is not None:
        sp["max_tokens"] = max_tokens
    logprobs = fields.get("logprobs")
    if logprobs is True:
        logprobs = fields.get("top_logprobs")
    if isinstance(logprobs, int) and not isinstance(logprobs, bool):
        sp["logprobs"] = logprobs
    check_sampling(sp)
    kind = (
        1 if fields.get("stream") else 2
    )  # RequestOutputKind: DELTA when streamed, else FINAL_ONLY
    sp.update(
        {
            "output_kind": kind,
            "skip_clone": True,
            "bad_words": [],
            "skip_reading_prefix_cache": False,
        }
    )
    ordered = {key: sp[key] for key in SAMPLING_FIELD_ORDER if key in sp}
    return ordered | sp  # a key missing from the order keeps its place after the known ones


def max_tokens_stated(sp: dict[str, Any], default: int | None) -> dict[str, Any]:
    """0.34's GenerateRequest dump (`_serialize`): a max_tokens that SamplingParams leaves
    out at its own default, 16, put back after every other key (`default`: the request
    model's, 16 for completions)."""
    if sp.get("max_tokens", default) != SAMPLING_MAX_TOKENS:
        return sp
    out = {key: value for key, value in sp.items() if key != "max_tokens"}
    out["max_tokens"] = SAMPLING_MAX_TOKENS
    return out


def generate_request(
    cfg: MockConfig,
    rid: str,
    ids: list[int],
    fields: dict[str, Any],
    sp: dict[str, Any],
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The GenerateRequest render answers; `context`: chat's parse_context (0.33+)."""
    out = {
        "request_id": rid,
        "token_ids": ids,
        "token_offsets": None,
        "features": None,
        "content_parts": None,
        "sampling_params": sp,
        "model": fields.get("model"),
        "reasoning_ended": None,
        "reasoning_parser_kwargs": None,
        "return_token_ids": fields.get("return_token_ids"),
        "output_mode": "tokens",
        "parse_context": context,
        "stream": bool(fields.get("stream")),
        "stream_options": fields.get("stream_options"),
        "cache_salt": fields.get("cache_salt"),
        "priority": 0,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
    }
    # the ids are the tokenizer's or checked ints >= 0: one stands for all (a long prompt would
    # otherwise cost seconds of per-item schema checking); parse_context is the release's
    checked = {k: v for k, v in out.items() if k != "parse_context"}
    errors = schema_errors("GenerateRequest", {**checked, "token_ids": ids[:1]}, "body")
    if errors:  # a value the checks above let through: still a 400, never an invalid answer
        raise ValidationFailure(errors)
    if cfg.policies.build.render_ids_as_strings:
        out["token_ids"] = [str(t) for t in ids]
    if cfg.policies.build.render_params_lost:
        out["sampling_params"] = {**sp, "temperature": 1.0, "max_tokens": 16}
    return cfg.release.rendered(out)


def completion_prompts(
    body: dict[str, Any], tok: Tokenizer, has_tok: bool, errors: c.Errors
) -> list[list[int]]:
    """CompletionRequest.prompt: str | list[str] | list[int] | list[list[int]]."""
    prompt = body.get("prompt")
    if prompt is None or prompt == "":
        text = EMPTY_PROMPT
        item = validation_item("value_error", "body", f"Value error, {text}", body)
        raise ValidationFailure([{**item, "ctx": {"error": ValueError(text)}}])

    def one(p: Any, loc: str) -> list[int]:
        if isinstance(p, str):
            if not has_tok:
                raise bad_request(NO_TOKENIZER)
            return tok.encode(p)
        ids = c.to_int_list(p, loc, errors)
        if ids is None:
            return []
        if any(t < 0 for t in ids):
            ctx = {"error": ValueError(NEGATIVE_IDS)}
            msg = f"Value error, {NEGATIVE_IDS}"
            errors.append(validation_item("value_error", loc, msg, p, ctx))
        if not ids:
            raise bad_request("The decoder prompt cannot be empty")
        return ids

    if isinstance(prompt, list) and prompt and all(isinstance(p, list | str) for p in prompt):
        out = [one(p, f"body.prompt.{i}") for i, p in enumerate(prompt)]
    elif isinstance(prompt, str | list):
        out = [one(prompt, "body.prompt")]
    else:
        msg = "Input should be a valid string"
        errors.append(validation_item("string_type", "body.prompt", msg, prompt))
        out = []
    return out


async def read_object(state: AppState, request: Request) -> dict[str, Any]:
    """The JSON object body of a render/derender request (media type, size, JSON, object)."""
    ctype = request.headers.get("content-type", "").lower().split(";", 1)[0].strip()
    if ctype != "application/json":
        raise ApiError(400, UNSUPPORTED_MEDIA, "Bad Request")
    declared = request.headers.get("content-length", "")
    limit = state.config.mock_max_body_bytes
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(
            413,
            f"Request body exceeds the mock's limit of {limit} bytes.",
            "Request Entity Too Large",
        )
    body = parse_json(await request.body())
    if not isinstance(body, dict):
        raise ValidationFailure(
            [
                validation_item(
                    "model_attributes_type",
                    "body",
                    "Input should be a valid dictionary or object to extract fields from",
                    body,
                )
            ]
        )
    return body


def guard(cfg: MockConfig, handler: Handler) -> Handler:
    """The 403 of a server without the scale-out endpoints, and errors as vLLM answers them."""

    inner = answered(cfg, handler)

    async def endpoint(request: Request) -> Response:
        if not cfg.scale_out:
            from mock_server.endpoints.gating import disabled_response

            return disabled_response(cfg)
        response: Response = await inner(request)
        return response

    return endpoint


def checked_fields(
    body: dict[str, Any], chat: bool, errors: c.Errors, echo: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fields, sampling_params); every type error of the body together, as pydantic does."""
    fields = parse_fields(body, chat, errors, echo)
    options = stream_options(body, bool(fields.get("stream")), errors)
    if options is not None:
        fields["stream_options"] = options
    if errors:
        raise ValidationFailure(errors)
    if "cache_salt" in fields:
        check_salt(fields["cache_salt"])
    return fields, sampling_params(fields)


def render_completion(
    cfg: MockConfig, tok: Tokenizer, body: dict[str, Any]
) -> list[dict[str, Any]]:
    """A CompletionRequest as the GenerateRequests it renders to, one per prompt."""
    errors: c.Errors = []
    prompts = completion_prompts(body, tok, cfg.has_tokenizer, errors)
    fields, sp = checked_fields(body, False, errors, cfg.release.render_echo)
    if cfg.release.render_max_tokens_stated:
        sp = max_tokens_stated(sp, SAMPLING_MAX_TOKENS)  # CompletionRequest's default too
    rid = f"cmpl-{secrets.token_hex(8)}"
    return [generate_request(cfg, rid, ids, fields, sp) for ids in prompts]


def render_chat(cfg: MockConfig, tok: Tokenizer, body: dict[str, Any]) -> dict[str, Any]:
    """A ChatCompletionRequest as the GenerateRequest it renders to (templated prompt)."""
    messages = body.get("messages")
    if "messages" not in body:
        raise ValidationFailure(
            [validation_item("missing", "body.messages", "Field required", body)]
        )
    if not isinstance(messages, list):
        msg = "Input should be a valid list"
        raise ValidationFailure([validation_item("list_type", "body.messages", msg, messages)])
    context = None
    if "parse_context" in cfg.release.render_keys:  # 0.33+: render reads the tool fields
        body = parse_context.check_tools(body, cfg.release)
        errors: c.Errors = []
        context = parse_context.rendered(body, messages, cfg.release, errors)
        if errors:
            raise ValidationFailure(errors)
    fields, sp = checked_fields(body, True, [], cfg.release.render_echo)
    if cfg.release.render_max_tokens_stated:
        sp = max_tokens_stated(sp, None)
    if not cfg.has_tokenizer:
        raise bad_request(NO_TOKENIZER)
    prompt = chat_template(messages, fields.get("add_generation_prompt", True))
    rid = f"chatcmpl-{secrets.token_hex(8)}"
    return generate_request(cfg, rid, tok.encode(prompt), fields, sp, context)


def render_routes(state: AppState) -> list[Route]:
    cfg, tok = state.config, state.engine.tokenizer

    async def completions(request: Request) -> Response:
        return JSONResponse(render_completion(cfg, tok, await read_object(state, request)))

    async def chat(request: Request) -> Response:
        return JSONResponse(render_chat(cfg, tok, await read_object(state, request)))

    handlers = [
        ("/v1/completions/render", completions),
        ("/v1/chat/completions/render", chat),
    ]
    return [Route(path, guard(cfg, h), methods=["POST"]) for path, h in handlers]
