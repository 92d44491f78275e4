"""Render (prompt -> GenerateRequest) and derender (GenerateResponse -> OpenAI response).

Both use the same tokenizer and chat template as generate, so render output can be POSTed to
/inference/v1/generate unchanged and derender decodes exactly what generate produced.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mock_server.errors import ApiError, ValidationFailure, bad_request, validation_item
from mock_server.gating import error_response
from mock_server.generate import UNSUPPORTED_MEDIA, parse_json
from mock_server.state import AppState
from mock_server.tokenizer import Tokenizer

Handler = Callable[[Request], Awaitable[Response]]
NO_TOKENIZER = "Tokenizer not available when `skip_tokenizer_init=True`"
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


def chat_template(messages: list[Any], add_generation_prompt: bool = True) -> str:
    """A small ChatML template (Qwen's shape without tools or thinking)."""
    parts = []
    for message in messages:
        if not isinstance(message, dict):
            raise bad_request("Each message must be an object")
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"<|im_start|>{message.get('role', 'user')}\n{content}<|im_end|>\n")
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def _sampling_params(body: dict[str, Any], greedy_default: bool) -> dict[str, Any]:
    """Mirrors msgspec omit_defaults output of vLLM's render (key order as captured)."""
    temperature = body.get("temperature")
    temperature = 1.0 if temperature is None else float(str(temperature))
    sp: dict[str, Any] = {
        "presence_penalty": float(body.get("presence_penalty") or 0.0),
        "frequency_penalty": float(body.get("frequency_penalty") or 0.0),
        "repetition_penalty": float(body.get("repetition_penalty") or 1.0),
        "temperature": temperature,
    }
    if temperature != 0.0:
        top_p = body.get("top_p")
        sp["top_p"] = 1.0 if top_p is None else float(top_p)
        sp["min_p"] = float(body.get("min_p") or 0.0)
    stop = body.get("stop") or []
    sp["stop"] = [stop] if isinstance(stop, str) else list(stop)
    sp["stop_token_ids"] = list(body.get("stop_token_ids") or [])
    for key in _SAMPLING_KEYS:
        if body.get(key) is not None:
            sp[key] = body[key]
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    if max_tokens is not None:
        sp["max_tokens"] = max_tokens
    logprobs = body.get("top_logprobs") if body.get("logprobs") is True else body.get("logprobs")
    if isinstance(logprobs, int) and not isinstance(logprobs, bool):
        sp["logprobs"] = logprobs
    sp.update(
        {"output_kind": 2, "skip_clone": True, "bad_words": [], "skip_reading_prefix_cache": False}
    )
    return sp


def _generate_request(
    state: AppState, rid: str, ids: list[int], body: dict[str, Any]
) -> dict[str, Any]:
    token_ids: list[Any] = ids
    if state.config.has_defect("render-generate-mismatch"):
        token_ids = [str(t) for t in ids]
    return {
        "request_id": rid,
        "token_ids": token_ids,
        "token_offsets": None,
        "features": None,
        "content_parts": None,
        "sampling_params": _sampling_params(body, False),
        "model": body.get("model"),
        "reasoning_ended": None,
        "reasoning_parser_kwargs": None,
        "return_token_ids": None,
        "output_mode": "tokens",
        "stream": bool(body.get("stream")),
        "stream_options": None,
        "cache_salt": body.get("cache_salt"),
        "priority": 0,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
    }


def _prompts(prompt: Any, tok: Tokenizer, has_tok: bool) -> list[list[int]]:
    def one(p: Any) -> list[int]:
        if isinstance(p, str):
            if not has_tok:
                raise bad_request(NO_TOKENIZER)
            return tok.encode(p)
        if isinstance(p, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in p):
            return list(p)
        raise ValidationFailure(
            [validation_item("string_type", "body.prompt", "Input should be a valid string", p)]
        )

    if isinstance(prompt, list) and prompt and all(isinstance(p, list | str) for p in prompt):
        return [one(p) for p in prompt]
    return [one(prompt)]


async def _read(state: AppState, request: Request) -> dict[str, Any]:
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


def _decode_text(tok: Tokenizer, ids: list[int]) -> str:
    return tok.decode([t for t in ids if isinstance(t, int) and 0 <= t < tok.vocab_size])


def _check_tokens_mode(responses: list[Any], loc: str, allow_text: bool) -> None:
    errors = []
    for i, resp in enumerate(responses):
        where = f"{loc}.{i}" if len(responses) > 1 or loc.endswith("responses") else loc
        if not isinstance(resp, dict):
            errors.append(
                validation_item(
                    "model_attributes_type", where, "Input should be a valid dictionary", resp
                )
            )
            continue
        mode = resp.get("output_mode", "tokens")
        if mode != "tokens" and not (allow_text and mode == "text"):
            errors.append(
                validation_item(
                    "literal_error",
                    f"{where}.output_mode",
                    "Input should be 'tokens'",
                    mode,
                    {"expected": "'tokens'"},
                )
            )
        if not isinstance(resp.get("choices"), list):
            errors.append(validation_item("missing", f"{where}.choices", "Field required", resp))
    if errors:
        raise ValidationFailure(errors)


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


def render_routes(state: AppState) -> list[Route]:
    cfg, tok = state.config, state.engine.tokenizer

    def guard(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            if not cfg.scale_out:
                from mock_server.gating import disabled_response

                return disabled_response(cfg)
            try:
                return await handler(request)
            except ValidationFailure as failure:
                return error_response(cfg, failure.to_api_error())
            except ApiError as err:
                return error_response(cfg, err)

        return endpoint

    async def render_completions(request: Request) -> Response:
        body = await _read(state, request)
        prompts = _prompts(body.get("prompt"), tok, cfg.has_tokenizer)
        rid = f"cmpl-{secrets.token_hex(8)}"
        return JSONResponse([_generate_request(state, rid, ids, body) for ids in prompts])

    async def render_chat(request: Request) -> Response:
        body = await _read(state, request)
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValidationFailure(
                [validation_item("missing", "body.messages", "Field required", body)]
            )
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)
        ids = tok.encode(chat_template(messages, body.get("add_generation_prompt", True)))
        return JSONResponse(_generate_request(state, f"chatcmpl-{secrets.token_hex(8)}", ids, body))

    async def derender_completions(request: Request) -> Response:
        body = await _read(state, request)
        if body.get("stream"):
            return await _derender_stream(body, "text_completion")
        responses = body.get("generate_responses")
        if not isinstance(responses, list):
            raise ValidationFailure(
                [validation_item("missing", "body.generate_responses", "Field required", body)]
            )
        if not responses:
            raise bad_request("generate_responses must not be empty")
        _check_tokens_mode(
            responses, "body.generate_responses", cfg.has_defect("derender-accepts-text")
        )
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)
        choices: list[dict[str, Any]] = []
        prompt_total, completion_total = 0, 0
        for resp in responses:
            usage = resp.get("usage") or {}
            prompt_total += int(usage.get("prompt_tokens") or 0)
            for choice in resp["choices"]:
                ids = choice.get("token_ids") or []
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
        body = await _read(state, request)
        if body.get("stream"):
            return await _derender_stream(body, "chat.completion.chunk")
        resp = body.get("generate_response")
        if resp is None:
            raise ValidationFailure(
                [validation_item("missing", "body.generate_response", "Field required", body)]
            )
        _check_tokens_mode(
            [resp], "body.generate_response", cfg.has_defect("derender-accepts-text")
        )
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)
        choices: list[dict[str, Any]] = []
        for choice in resp["choices"]:
            ids = choice.get("token_ids") or []
            choices.append(
                {
                    "index": choice.get("index", len(choices)),
                    "message": {
                        "role": "assistant",
                        "content": _decode_text(tok, ids),
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
        usage = resp.get("usage") or {}
        return JSONResponse(
            {
                "id": resp.get("request_id"),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": resp.get("model") or cfg.model_name,
                "choices": choices,
                "service_tier": None,
                "system_fingerprint": None,
                "usage": usage or None,
                "prompt_logprobs": None,
                "prompt_token_ids": None,
                "prompt_text": None,
                "kv_transfer_params": None,
                "ec_transfer_params": None,
                "metrics": None,
            }
        )

    async def _derender_stream(body: dict[str, Any], obj: str) -> Response:
        chunk = body.get("generate_chunk")
        if not isinstance(chunk, dict):
            raise ValidationFailure(
                [validation_item("missing", "body.generate_chunk", "Field required", body)]
            )
        _check_tokens_mode([chunk], "body.generate_chunk", cfg.has_defect("derender-accepts-text"))
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)
        raw_state = body.get("stream_state")
        st: dict[str, Any] = raw_state if isinstance(raw_state, dict) else {}
        pending = bytes(st.get("pending_bytes") or [])
        offset = int(st.get("logprob_text_offset") or 0)
        role_sent = bool(st.get("role_sent"))
        choices: list[dict[str, Any]] = []
        for choice in chunk["choices"]:
            ids = [t for t in choice.get("token_ids") or [] if 0 <= t < tok.vocab_size]
            data = pending + b"".join(tok.piece(t) for t in ids if not tok.is_special(t))
            final = choice.get("finish_reason") is not None
            text, pending = _split_utf8(data, final)
            logprobs, offset = _completion_logprobs(tok, choice, offset)
            base = {"index": choice.get("index", 0)}
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
        ("/v1/completions/render", render_completions),
        ("/v1/chat/completions/render", render_chat),
        ("/v1/completions/derender", derender_completions),
        ("/v1/chat/completions/derender", derender_chat),
    ]
    return [Route(path, guard(h), methods=["POST"]) for path, h in handlers]


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
