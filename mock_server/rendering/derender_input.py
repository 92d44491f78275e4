"""Derender input: vLLM's lax request models and the checks it runs after them.

The body is checked against the spec's request schema first (vLLM validates it with pydantic:
a wrongly typed nested field is a 400, never a 500 or an echoed bad value). That schema is
vLLM's lax input model: most fields may be absent. What pydantic checks beyond it (model
validators, errors raised from inside nested models) and the bounds vLLM checks before decoding
follow here, in vLLM's order and with its messages, so the answers only ever read valid values.
"""

from __future__ import annotations

import copy
import math
import secrets
from typing import Any

from mock_server.behaviour.config import MockConfig
from mock_server.parsing import coerce as c
from mock_server.parsing.schema_check import schema_errors
from mock_server.rendering.render import EMPTY_PROMPT
from mock_server.wire.errors import ApiError, ValidationFailure, bad_request, validation_item

_SCHEMAS = {"completions": "DerenderCompletionRequest", "chat": "DerenderChatRequest"}
MAX_N_SEQUENCES = 16384
"""vLLM's VLLM_MAX_N_SEQUENCES default: responses per call and choices per response."""


def integral(value: Any, key: str | None = None) -> Any:
    """7.0 -> 7 outside logprob values: JSON Schema and pydantic's lax mode count it an int."""
    if isinstance(value, float) and value.is_integer() and key != "logprob":
        return int(value)
    if isinstance(value, list):
        return [integral(v, key) for v in value]
    if isinstance(value, dict):
        return {k: integral(v, k) for k, v in value.items()}
    return value


def _as_tokens(resp: Any) -> Any:
    """derender-accepts-text: a text response validated as if it were a tokens one."""
    if not isinstance(resp, dict) or resp.get("output_mode") != "text":
        return resp
    out = {**resp, "output_mode": "tokens"}
    if isinstance(resp.get("choices"), list):
        out["choices"] = [
            {k: v for k, v in ch.items() if k not in ("text", "logprobs")} | {"logprobs": None}
            if isinstance(ch, dict)
            else ch
            for ch in resp["choices"]
        ]
    return out


def _raised_during_validation(body: dict[str, Any], kind: str) -> None:
    """Errors vLLM's nested request models raise outright (not as pydantic errors): they win
    over every field error of the body."""
    if kind == "completions":
        req = body.get("completion_request")
        if isinstance(req, dict):
            prompt, embeds = req.get("prompt"), req.get("prompt_embeds")
            if prompt in (None, "") and (embeds is None or embeds == []):
                raise ApiError(
                    400, f"{EMPTY_PROMPT} (parameter=prompt)", "BadRequestError", "prompt"
                )
        return
    req = body.get("chat_request")
    if isinstance(req, dict) and "messages" in req:
        messages = req["messages"]
        if messages is None or isinstance(messages, bool | int | float):  # `for msg in messages`
            raise bad_request(f"'{type(messages).__name__}' object is not iterable")


def _value_error(loc: str, text: str, value: Any) -> ValidationFailure:
    item = validation_item("value_error", loc, f"Value error, {text}", value)
    return ValidationFailure([{**item, "ctx": {"error": ValueError(text)}}])


def _finite(body: Any) -> None:
    """NaN and Infinity parse (JSON's extension, as vLLM parses it) but derender echoes logprobs
    and metrics, and no JSON answer can carry them: refused as pydantic refuses them for a
    finite float, never a 500 while writing the answer."""
    stack: list[tuple[Any, str]] = [(body, "body")]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            msg = "Input should be a finite number"
            raise ValidationFailure([validation_item("finite_number", loc, msg, node)])
        if isinstance(node, dict):
            stack += [(v, f"{loc}.{k}") for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, f"{loc}.{i}") for i, v in enumerate(node)]


def validate(body: dict[str, Any], kind: str, accept_text: bool) -> dict[str, Any]:
    """The body, checked against its form (streaming or not) of the spec's request schema,
    then by the model validators vLLM runs once the fields are valid."""
    _raised_during_validation(body, kind)
    streamed = body.get("stream") is True
    checked = body
    if accept_text:
        checked = copy.copy(body)
        for key in ("generate_response", "generate_chunk"):
            if key in checked:
                checked[key] = _as_tokens(checked[key])
        if isinstance(checked.get("generate_responses"), list):
            checked["generate_responses"] = [_as_tokens(r) for r in checked["generate_responses"]]
    branch = 1 if streamed else 0
    errors = schema_errors(f"#/components/schemas/{_SCHEMAS[kind]}/oneOf/{branch}", checked, "body")
    # an empty list is vLLM's own later check ("generate_responses must not be empty")
    errors = [
        e for e in errors if (e["loc"], e["type"]) != ("body.generate_responses", "too_short")
    ]
    if errors:
        raise ValidationFailure(errors)
    _finite(body)
    out: dict[str, Any] = integral(body)
    if streamed and out.get("stream_state") is not None:
        st = out["stream_state"]
        total, n = sum(st.get("output_chunk_lens", [])), len(st.get("output_token_ids", []))
        if total != n:
            text = "output_chunk_lens must sum to len(output_token_ids)"
            got = f"(got sum={total}, len(output_token_ids)={n})"
            raise _value_error("body.stream_state", f"{text} {got}", st)
    if kind == "completions" and not streamed:
        n = len(out["generate_responses"])
        for key in ("prompt_tokens", "prompt_token_ids"):
            if out.get(key) is not None and len(out[key]) != n:
                text = f"{key} length ({len(out[key])}) must equal generate_responses length ({n})"
                raise _value_error("body", text, body)
    return out


def stream_state(raw: Any) -> tuple[bytes, int, bool]:
    """The state this mock returned last time (pending UTF-8 bytes, text offset, role sent)."""
    if raw is None:
        return b"", 0, False
    errors: c.Errors = []
    loc = "body.stream_state"
    pending = c.field(raw, "pending_bytes", c.to_int_list, loc, errors, [])
    offset = c.field(raw, "logprob_text_offset", c.to_int, loc, errors, 0)
    role_sent = c.field(raw, "role_sent", c.to_bool, loc, errors, False)
    if not errors and any(not 0 <= b <= 255 for b in pending):
        msg = "Input should be less than or equal to 255"
        errors.append(validation_item("less_than_equal", f"{loc}.pending_bytes", msg, pending))
    if errors:
        raise ValidationFailure(errors)
    return bytes(pending), offset, role_sent


def check_model(cfg: MockConfig, model: Any) -> None:
    if model and model not in cfg.served_model_name:
        aliases = ", ".join(cfg.served_model_name)
        message = f"The model `{model}` does not exist. Valid aliases: {aliases}"
        raise ApiError(404, message, "NotFoundError", "model")


def check_bounds(cfg: MockConfig, responses: list[dict[str, Any]]) -> None:
    """vLLM's resource bounds on a non-streaming derender, checked before any decoding."""
    mml = cfg.max_model_len
    if len(responses) > MAX_N_SEQUENCES:
        raise bad_request(
            f"generate_responses count ({len(responses)}) exceeds server maximum "
            f"({MAX_N_SEQUENCES}). Set VLLM_MAX_N_SEQUENCES to increase this limit."
        )
    for gen in responses:
        rid = gen["request_id"]
        if len(gen["choices"]) > MAX_N_SEQUENCES:
            count = len(gen["choices"])
            msg = f"choices count ({count}) in response '{rid}' exceeds server maximum"
            raise bad_request(f"{msg} ({MAX_N_SEQUENCES}).")
        for ch in gen["choices"]:
            ids, content = ch.get("token_ids") or [], (ch.get("logprobs") or {}).get("content")
            if len(ids) > mml:
                at = f"in choice {ch['index']} exceeds max_model_len ({mml})."
                raise bad_request(f"token_ids length ({len(ids)}) {at}")
            if content and len(content) > mml:
                at = f"in choice {ch['index']} exceeds max_model_len ({mml})."
                raise bad_request(f"logprobs.content length ({len(content)}) {at}")
            for entry in content or []:
                top = entry.get("top_logprobs") or []
                if cfg.max_logprobs >= 0 and len(top) > cfg.max_logprobs:
                    at = f"in choice {ch['index']} exceeds max_logprobs ({cfg.max_logprobs})."
                    raise bad_request(f"top_logprobs count ({len(top)}) {at}")
        plp = gen.get("prompt_logprobs") or []
        if len(plp) > mml:
            at = f"in response '{rid}' exceeds max_model_len ({mml})."
            raise bad_request(f"prompt_logprobs length ({len(plp)}) {at}")


def check_prompt_ids(cfg: MockConfig, lists: list[Any]) -> None:
    for ids in lists:
        if ids is not None and len(ids) > cfg.max_model_len:
            msg = f"prompt_token_ids length ({len(ids)}) exceeds max_model_len"
            raise bad_request(f"{msg} ({cfg.max_model_len}).")


def with_request_id(resp: dict[str, Any]) -> dict[str, Any]:
    """vLLM's default for an absent request_id: random_uuid(), 16 hex digits."""
    return resp if "request_id" in resp else {**resp, "request_id": secrets.token_hex(8)}
