"""Derender (GenerateResponse -> OpenAI response), batch and streaming form.

The body is checked against the spec's request schema first (vLLM validates it with pydantic:
a wrongly typed nested field is a 400, never a 500 or an echoed bad value), so the code below
only ever reads well-typed values. It decodes with generate's tokenizer, so it turns back
exactly what generate produced.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mock_server import coerce as c
from mock_server.errors import ValidationFailure, bad_request, validation_item
from mock_server.render import NO_TOKENIZER, guard, read_object
from mock_server.schema_check import schema_errors
from mock_server.state import AppState
from mock_server.tokenizer import Tokenizer

_SCHEMAS = {"completions": "DerenderCompletionRequest", "chat": "DerenderChatRequest"}


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


def validate(body: dict[str, Any], kind: str, accept_text: bool) -> dict[str, Any]:
    """The body, checked against its form (streaming or not) of the spec's request schema."""
    streamed = body.get("stream") is True
    if kind == "completions" and not streamed and body.get("generate_responses") == []:
        raise bad_request("generate_responses must not be empty")
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
    if errors:
        raise ValidationFailure(errors)
    return dict(integral(body))


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
    if not errors and offset < 0:
        msg = "Input should be greater than or equal to 0"
        item = validation_item("greater_than_equal", f"{loc}.logprob_text_offset", msg, offset)
        errors.append(item)
    if errors:
        raise ValidationFailure(errors)
    return bytes(pending), offset, role_sent


def _decode_text(tok: Tokenizer, ids: list[int]) -> str:
    return tok.decode([t for t in ids if 0 <= t < tok.vocab_size])


def _completion_logprobs(tok: Tokenizer, choice: dict[str, Any], offset: int) -> tuple[Any, int]:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None, offset
    out: dict[str, list[Any]] = {
        "text_offset": [],
        "token_logprobs": [],
        "tokens": [],
        "top_logprobs": [],
    }
    for entry in content:
        text = tok.token_text(int(entry.get("token_id", 0)) % tok.vocab_size)
        out["text_offset"].append(offset)
        out["token_logprobs"].append(entry.get("logprob"))
        out["tokens"].append(text)
        out["top_logprobs"].append(
            {
                tok.token_text(int(t.get("token_id", 0)) % tok.vocab_size): t.get("logprob")
                for t in entry.get("top_logprobs") or []
            }
        )
        offset += len(text)
    return out, offset


def derender_routes(state: AppState) -> list[Route]:
    cfg, tok = state.config, state.engine.tokenizer
    accept_text = cfg.has_defect("derender-accepts-text")

    async def read(request: Request, kind: str) -> dict[str, Any]:
        body = validate(await read_object(state, request), kind, accept_text)
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)
        return body

    async def derender_completions(request: Request) -> Response:
        body = await read(request, "completions")
        if body.get("stream") is True:
            return _stream(body, "text_completion")
        responses = body["generate_responses"]
        choices: list[dict[str, Any]] = []
        prompt_total, completion_total = 0, 0
        for resp in responses:
            prompt_total += int(resp["usage"].get("prompt_tokens") or 0)
            for choice in resp["choices"]:
                ids = choice["token_ids"]
                completion_total += len(ids)
                logprobs, _ = _completion_logprobs(tok, choice, 0)
                choices.append(
                    {
                        "index": len(choices),
                        "text": _decode_text(tok, ids),
                        "logprobs": logprobs,
                        "finish_reason": choice.get("finish_reason"),
                        "stop_reason": choice.get("stop_reason"),
                        "token_ids": None,
                        "prompt_logprobs": None,
                        "prompt_token_ids": None,
                        "routed_experts": None,
                    }
                )
        first = responses[0]
        return JSONResponse(
            {
                "id": first.get("request_id"),
                "object": "text_completion",
                "created": int(time.time()),
                "model": first.get("model") or cfg.model_name,
                "choices": choices,
                "service_tier": None,
                "system_fingerprint": None,
                "usage": {
                    "prompt_tokens": prompt_total,
                    "total_tokens": prompt_total + completion_total,
                    "completion_tokens": completion_total,
                    "prompt_tokens_details": None,
                    "completion_tokens_details": None,
                },
                "kv_transfer_params": None,
                "ec_transfer_params": None,
                "metrics": None,
            }
        )

    async def derender_chat(request: Request) -> Response:
        body = await read(request, "chat")
        if body.get("stream") is True:
            return _stream(body, "chat.completion.chunk")
        resp = body["generate_response"]
        choices: list[dict[str, Any]] = []
        for choice in resp["choices"]:
            choices.append(
                {
                    "index": choice["index"],
                    "message": {
                        "role": "assistant",
                        "content": _decode_text(tok, choice["token_ids"]),
                        "refusal": None,
                        "annotations": None,
                        "audio": None,
                        "function_call": None,
                        "reasoning": None,
                    },
                    "logprobs": None,
                    "finish_reason": choice.get("finish_reason"),
                    "stop_reason": choice.get("stop_reason"),
                    "token_ids": None,
                    "routed_experts": None,
                }
            )
        return JSONResponse(
            {
                "id": resp.get("request_id"),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": resp.get("model") or cfg.model_name,
                "choices": choices,
                "service_tier": None,
                "system_fingerprint": None,
                "usage": resp.get("usage") or None,
                "prompt_logprobs": None,
                "prompt_token_ids": None,
                "prompt_text": None,
                "kv_transfer_params": None,
                "ec_transfer_params": None,
                "metrics": None,
            }
        )

    def _stream(body: dict[str, Any], obj: str) -> Response:
        chunk = body["generate_chunk"]
        pending, offset, role_sent = stream_state(body.get("stream_state"))
        choices: list[dict[str, Any]] = []
        for choice in chunk["choices"]:
            ids = [t for t in choice["token_ids"] if 0 <= t < tok.vocab_size]
            data = pending + b"".join(tok.piece(t) for t in ids if not tok.is_special(t))
            final = choice.get("finish_reason") is not None
            text, pending = _split_utf8(data, final)
            logprobs, offset = _completion_logprobs(tok, choice, offset)
            base: dict[str, Any] = {"index": choice["index"]}
            if obj == "text_completion":
                base.update({"text": text, "logprobs": logprobs})
            else:
                delta: dict[str, Any] = {"content": text}
                if not role_sent:
                    delta = {"role": "assistant", **delta}
                    role_sent = True
                base.update({"delta": delta, "logprobs": None})
            base.update(
                {
                    "finish_reason": choice.get("finish_reason"),
                    "stop_reason": choice.get("stop_reason"),
                    "prompt_token_ids": None,
                    "token_ids": None,
                }
            )
            choices.append(base)
        new_state = {
            "pending_bytes": list(pending),
            "role_sent": role_sent,
            "logprob_text_offset": offset,
        }
        return JSONResponse(
            {
                "chunk": {
                    "id": chunk.get("request_id"),
                    "object": obj,
                    "created": int(time.time()),
                    "model": cfg.model_name,
                    "choices": choices,
                    "usage": chunk.get("usage"),
                    "system_fingerprint": None,
                    "metrics": None,
                },
                "stream_state": new_state,
            }
        )

    handlers = [
        ("/v1/completions/derender", derender_completions),
        ("/v1/chat/completions/derender", derender_chat),
    ]
    return [Route(path, guard(cfg, h), methods=["POST"]) for path, h in handlers]


def _split_utf8(data: bytes, final: bool) -> tuple[str, bytes]:
    """Decode what is complete; keep an incomplete trailing character for the next chunk."""
    if final:
        return data.decode("utf-8", errors="replace"), b""
    tail_start = len(data)
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead & 0xC0 != 0x80:  # found the last lead byte
            need = (
                2
                if lead >> 5 == 0b110
                else 3
                if lead >> 4 == 0b1110
                else 4
                if lead >> 3 == 0b11110
                else 1
            )
            if need > back:
                tail_start = len(data) - back
            break
    return data[:tail_start].decode("utf-8", errors="replace"), data[tail_start:]
