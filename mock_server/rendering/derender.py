"""Derender (GenerateResponse -> OpenAI response), batch and streaming form.

`derender_input` has checked the body as vLLM does, so the code below only ever reads
well-typed values; the defaults vLLM's input models fill in (a random request id,
finish_reason "stop", no usage) are filled in here. Answers are shaped as vLLM 0.32 dumps them
(usage computed from `prompt_tokens`, `metrics` and `kv_transfer_params` echoed). It decodes
with generate's tokenizer, so it turns back exactly what generate produced.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mock_server.endpoints.state import AppState
from mock_server.engine.fields import usage as usage_info
from mock_server.engine.tokenizer import Tokenizer
from mock_server.rendering.derender_input import (
    check_bounds,
    check_model,
    check_prompt_ids,
    stream_state,
    validate,
    with_request_id,
)
from mock_server.rendering.render import NO_TOKENIZER, guard, read_object
from mock_server.wire.errors import bad_request

NEGATIVE_ID = "number too small to fit in target type"
"""What vLLM's tokenizer answers for a negative logprobs token id."""
_METRICS = ("time_to_first_token_ms", "generation_time_ms", "queue_time_ms", "mean_itl_ms")
_SPEC_FLOATS = ("mean_acceptance_length", "draft_acceptance_rate")
_SPEC_INTS = ("acceptance_histogram", "num_spec_steps", "num_accepted_draft_tokens")
_SPEC_REST = ("num_draft_tokens", "num_spec_tokens", "per_step_accepted", "per_step_drafted")


def _floats(raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: None if raw.get(k) is None else float(raw[k]) for k in keys}


def echo_metrics(raw: Any) -> Any:
    """PerRequestMetrics as vLLM dumps it: every field, then the unknown keys."""
    if raw is None:
        return None
    out = _floats(raw, (*_METRICS, "tokens_per_second"))
    spec = raw.get("speculative_decoding")
    if spec is not None:
        spec = _floats(spec, _SPEC_FLOATS) | {k: spec.get(k) for k in (*_SPEC_INTS, *_SPEC_REST)}
        spec |= {k: v for k, v in raw["speculative_decoding"].items() if k not in spec}
    out["speculative_decoding"] = spec
    return out | {k: v for k, v in raw.items() if k not in out}


def echo_prompt_logprobs(raw: Any) -> Any:
    """`list[dict[int, Logprob] | None]` as vLLM dumps it (keys as canonical ints)."""
    if raw is None:
        return None
    return [
        None
        if pos is None
        else {
            str(int(k)): {
                "logprob": float(v["logprob"]),
                "rank": v.get("rank"),
                "decoded_token": v.get("decoded_token"),
            }
            for k, v in pos.items()
        }
        for pos in raw
    ]


def _decode_text(tok: Tokenizer, ids: list[int]) -> str:
    return tok.decode([t for t in ids if 0 <= t < tok.vocab_size])


def chat_logprobs(tok: Tokenizer, raw: Any, failure: str = NEGATIVE_ID) -> Any:
    """Integer-id logprobs resolved to the OpenAI chat shape (token text and its bytes)."""
    if raw is None:
        return None
    content = raw.get("content")
    if content is None:
        return {"content": None}

    def one(entry: dict[str, Any]) -> dict[str, Any]:
        if entry["token_id"] < 0:
            raise bad_request(failure)
        text = tok.token_text(entry["token_id"] % tok.vocab_size)
        return {"token": text, "logprob": float(entry["logprob"]), "bytes": list(text.encode())}

    return {
        "content": [
            one(e) | {"top_logprobs": [one(t) for t in e.get("top_logprobs", [])]} for e in content
        ]
    }


def completion_logprobs(tok: Tokenizer, raw: Any, offset: int) -> tuple[Any, int]:
    """The chat shape turned into the completions one (parallel lists), offsets from `offset`."""
    resolved = chat_logprobs(tok, raw)
    if resolved is None:
        return None, offset
    out: dict[str, list[Any]] = {
        "text_offset": [],
        "token_logprobs": [],
        "tokens": [],
        "top_logprobs": [],
    }
    for entry in resolved["content"] or []:
        out["text_offset"].append(offset)
        out["token_logprobs"].append(entry["logprob"])
        out["tokens"].append(entry["token"])
        top = {t["token"]: t["logprob"] for t in entry["top_logprobs"]}
        out["top_logprobs"].append(top or None)
        offset += len(entry["token"])
    return out, offset


def derender_routes(state: AppState) -> list[Route]:
    cfg, tok = state.config, state.engine.tokenizer
    accept_text = "derender.text_rejected" not in cfg.policies.validate.rules

    def need_tokenizer() -> None:
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)

    async def read(request: Request, kind: str) -> dict[str, Any]:
        raw = cfg.release.derender_input(await read_object(state, request))
        body = validate(raw, kind, accept_text)
        check_model(cfg, body.get("model"))
        return body

    async def derender_completions(request: Request) -> Response:
        body = await read(request, "completions")
        if body.get("stream") is True:
            return _stream(body, "text_completion")
        if not body["generate_responses"]:
            raise bad_request("generate_responses must not be empty")
        responses = [with_request_id(r) for r in body["generate_responses"]]
        check_bounds(cfg, responses)
        check_prompt_ids(cfg, body.get("prompt_token_ids") or [])
        need_tokenizer()
        choices: list[dict[str, Any]] = []
        completion_total = 0
        for resp in responses:
            for choice in resp["choices"]:
                ids = choice.get("token_ids")
                if not ids:
                    where = f"choice {choice['index']} in response {resp['request_id']}"
                    raise bad_request(f"{where} has empty or null token_ids")
                completion_total += len(ids)
                logprobs, _ = completion_logprobs(tok, choice.get("logprobs"), 0)
                choices.append(
                    {
                        "index": len(choices),
                        "text": _decode_text(tok, ids),
                        "logprobs": logprobs,
                        "finish_reason": "stop"
                        if cfg.policies.build.derender_finish_stop
                        else choice.get("finish_reason", "stop"),
                        "stop_reason": choice.get("stop_reason"),
                        "token_ids": None,
                        "prompt_logprobs": None,
                        "prompt_token_ids": None,
                        "routed_experts": None,
                        **dict.fromkeys(cfg.release.choice_nulls),
                    }
                )
        first = responses[0]
        kv = first.get("kv_transfer_params")
        if any(r.get("kv_transfer_params") != kv for r in responses[1:]):
            kv = None
        prompt_total = sum(body.get("prompt_tokens") or [])
        return JSONResponse(
            {
                "id": first["request_id"],
                "object": "text_completion",
                "created": int(time.time()),
                "model": body.get("model") or cfg.model_name,
                "choices": choices,
                "service_tier": None,
                "system_fingerprint": None,
                "usage": usage_info(prompt_total, completion_total, cfg.release.usage_details),
                "kv_transfer_params": kv,
                "ec_transfer_params": None,
                "metrics": echo_metrics(first.get("metrics")) if len(responses) == 1 else None,
            }
        )

    def message(content: str) -> dict[str, Any]:
        """ChatMessage as the release dumps it (0.34 leaves out a null `annotations`)."""
        whole = {"role": "assistant", "content": content}
        return {key: whole.get(key) for key in cfg.release.message_keys}

    async def derender_chat(request: Request) -> Response:
        body = await read(request, "chat")
        if body.get("stream") is True:
            return _stream(body, "chat.completion.chunk")
        resp = with_request_id(body["generate_response"])
        check_bounds(cfg, [resp])
        check_prompt_ids(cfg, [body.get("prompt_token_ids")])
        need_tokenizer()
        echo_ids = bool((body.get("chat_request") or {}).get("return_token_ids"))
        choices: list[dict[str, Any]] = []
        for choice in resp["choices"]:
            ids = choice.get("token_ids")
            if not ids:
                raise bad_request(f"choice {choice['index']} has empty or null token_ids")
            choices.append(
                {
                    "index": choice["index"],
                    "message": message(_decode_text(tok, ids)),
                    "logprobs": chat_logprobs(tok, choice.get("logprobs")),
                    "finish_reason": choice.get("finish_reason", "stop"),
                    "stop_reason": choice.get("stop_reason"),
                    "token_ids": ids if echo_ids else None,
                    "routed_experts": None,
                    **dict.fromkeys(cfg.release.choice_nulls),
                }
            )
        completion = sum(len(ch.get("token_ids") or []) for ch in resp["choices"])
        return JSONResponse(
            {
                "id": resp["request_id"],
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or cfg.model_name,
                "choices": choices,
                "service_tier": None,
                "system_fingerprint": None,
                "usage": usage_info(
                    body.get("prompt_tokens") or 0, completion, cfg.release.usage_details
                ),
                "prompt_logprobs": echo_prompt_logprobs(resp.get("prompt_logprobs")),
                "prompt_token_ids": None,
                "prompt_text": None,
                "kv_transfer_params": resp.get("kv_transfer_params"),
                "ec_transfer_params": None,
                "metrics": echo_metrics(resp.get("metrics")),
            }
        )

    def _stream(body: dict[str, Any], obj: str) -> Response:
        chat = obj != "text_completion"
        chunk = with_request_id(body["generate_chunk"])
        count = len(chunk["choices"])
        if chat and count > 1:
            msg = "derender_chat_stream expects at most one choice per chunk"
            raise bad_request(f"{msg} (got {count}).")
        prompt_ids = body.get("prompt_token_ids")
        if chat:
            prior = len((body.get("stream_state") or {}).get("output_token_ids", []))
            delta = sum(len(ch.get("token_ids") or []) for ch in chunk["choices"])
            if len(prompt_ids or []) + prior + delta > cfg.max_model_len:
                raise bad_request(
                    f"prompt_token_ids length ({len(prompt_ids or [])}) plus output_token_ids "
                    f"length ({prior}) plus delta ({delta}) exceeds max_model_len "
                    f"({cfg.max_model_len})."
                )
        else:
            check_prompt_ids(cfg, [prompt_ids])
            if count > 1:
                raise bad_request("derender_completion_stream expects at most one choice per chunk")
        need_tokenizer()
        pending, offset, role_sent = stream_state(body.get("stream_state"))
        echo_ids = bool((body.get("chat_request") or {}).get("return_token_ids"))
        choices: list[dict[str, Any]] = []
        for choice in chunk["choices"]:
            ids = [t for t in choice.get("token_ids") or [] if 0 <= t < tok.vocab_size]
            data = pending + b"".join(tok.piece(t) for t in ids if not tok.is_special(t))
            text, pending = _split_utf8(data, choice.get("finish_reason") is not None)
            base: dict[str, Any] = {"index": choice["index"]}
            if chat:
                delta_msg = {"role": None if role_sent else "assistant", "content": text or None}
                role_sent = True
                failure = "invalid stream_state: derender failed"
                logprobs = chat_logprobs(tok, choice.get("logprobs"), failure)
                base.update({"delta": delta_msg | {"reasoning": None}, "logprobs": logprobs})
            else:
                logprobs, _ = completion_logprobs(tok, choice.get("logprobs"), offset)
                base.update({"text": text, "logprobs": logprobs})
                offset += len(text)
            base.update(
                {
                    "finish_reason": choice.get("finish_reason"),
                    "stop_reason": choice.get("stop_reason"),
                }
            )
            if not chat:
                base["prompt_token_ids"] = None
            base["token_ids"] = choice.get("token_ids") if echo_ids else None
            base.update(dict.fromkeys(cfg.release.choice_nulls))
            choices.append(base)
        usage = chunk.get("usage")
        if usage is not None:
            given = body.get("prompt_tokens")
            prompt = given if given is not None else usage.get("prompt_tokens", 0)
            done = usage.get("completion_tokens") or 0
            usage = usage_info(prompt, done, cfg.release.usage_details)
        out: dict[str, Any] = {
            "id": chunk["request_id"],
            "object": obj,
            "created": int(time.time()),
            "model": body.get("model") or cfg.model_name,
            "choices": choices,
            "usage": usage,
            "system_fingerprint": None,
        }
        if chat:
            out.update({"prompt_token_ids": None, "prompt_text": None})
        out["metrics"] = echo_metrics(chunk.get("metrics"))
        out.update(dict.fromkeys(cfg.release.chunk_nulls))
        new_state = {
            "pending_bytes": list(pending),
            "role_sent": role_sent,
            "logprob_text_offset": offset,
        }
        return JSONResponse({"chunk": out, "stream_state": new_state})

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
