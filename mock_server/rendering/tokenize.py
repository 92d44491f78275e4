"""POST /tokenize and /detokenize: vLLM's tokenizer endpoints, with generate's own tokenizer.

Clients call them around TITO (SkyRL detokenizes after every generation), so they use the
same tokenizer and chat template as render and generate: what /tokenize gives is what render
puts in `token_ids`, and /detokenize turns generate's ids back into the text derender gives.
Served in every profile, like vLLM (not a scale-out route, not under a key-guarded prefix);
without a tokenizer both are vLLM's 400. Shapes and messages: vLLM 0.32's answers in
`tests/fixtures/vllm-0.32/{tokenize,detokenize}.json` and `tests/fixtures/vllm-0.32-issue11/`.
"""

from __future__ import annotations

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
from mock_server.rendering.render import NO_TOKENIZER, chat_template, read_object
from mock_server.wire.errors import ApiError, ValidationFailure, bad_request, validation_item

Handler = Callable[[Request], Awaitable[Response]]


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's bytes_to_unicode: how byte-level BPE vocabularies spell a token's bytes."""
    shown = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in shown}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_ALPHABET = _byte_alphabet()


def token_str(tok: Tokenizer, token_id: int) -> str:
    """A token as the vocabulary spells it (`convert_ids_to_tokens`: "\\n" is "Ċ")."""
    if tok.is_special(token_id):
        return tok.special_text(token_id)
    return "".join(_ALPHABET[b] for b in tok.piece(token_id))


def check_model(cfg: MockConfig, model: Any) -> None:
    if model and model not in cfg.served_model_name:
        aliases = ", ".join(cfg.served_model_name)
        message = f"The model `{model}` does not exist. Valid aliases: {aliases}."
        raise ApiError(404, message, "NotFoundError", "model")


def _tokenize_ids(body: dict[str, Any], tok: Tokenizer) -> tuple[list[int], bool]:
    """(ids, return_token_strs) of a TokenizeCompletionRequest or TokenizeChatRequest."""
    errors: c.Errors = []
    prompt_ok = isinstance(body.get("prompt"), str)
    if not prompt_ok and "messages" in body:
        messages = c.field(body, "messages", _list, "body", errors, None)
        add_gen = c.field(body, "add_generation_prompt", c.to_bool, "body", errors, True)
    else:
        # pydantic tries both union members and reports both when neither fits
        if "prompt" not in body:
            errors.append(validation_item("missing", "body.prompt", "Field required", body))
        else:
            c.to_str(body["prompt"], "body.prompt", errors)
        if not prompt_ok:
            errors.append(validation_item("missing", "body.messages", "Field required", body))
        messages, add_gen = None, True
    strs = c.field(body, "return_token_strs", c.to_bool, "body", errors, False)
    c.field(body, "add_special_tokens", c.to_bool, "body", errors, True)
    c.field(body, "model", c.to_str, "body", errors, None)
    if errors:
        raise ValidationFailure(errors)
    text = body["prompt"] if messages is None else chat_template(messages, add_gen)
    return tok.encode(text), bool(strs)


def _list(value: Any, loc: str, errors: c.Errors) -> list[Any] | None:
    if isinstance(value, list):
        return value
    errors.append(validation_item("list_type", loc, "Input should be a valid list", value))
    return None


def _token_list(body: dict[str, Any]) -> list[int]:
    """DetokenizeRequest.tokens: list[int >= 0], required."""
    errors: c.Errors = []
    if "tokens" not in body:
        errors.append(validation_item("missing", "body.tokens", "Field required", body))
        raise ValidationFailure(errors)
    ids = c.to_int_list(body["tokens"], "body.tokens", errors) or []
    for i, token_id in enumerate(ids):
        if token_id < 0:
            msg = "Input should be greater than or equal to 0"
            loc = f"body.tokens.{i}"
            errors.append(validation_item("greater_than_equal", loc, msg, token_id, {"ge": 0}))
    c.field(body, "model", c.to_str, "body", errors, None)
    if errors:
        raise ValidationFailure(errors)
    return ids


def tokenize_routes(state: AppState) -> list[Route]:
    cfg, tok = state.config, state.engine.tokenizer

    async def tokenize(request: Request) -> Response:
        body = await read_object(state, request)
        ids, strs = _tokenize_ids(body, tok)
        check_model(cfg, body.get("model"))
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)
        return JSONResponse(
            {
                "count": len(ids),
                "max_model_len": cfg.max_model_len,
                "tokens": ids,
                "token_strs": [token_str(tok, t) for t in ids] if strs else None,
            }
        )

    async def detokenize(request: Request) -> Response:
        body = await read_object(state, request)
        ids = _token_list(body)
        check_model(cfg, body.get("model"))
        if not cfg.has_tokenizer:
            raise bad_request(NO_TOKENIZER)
        # vLLM's tokenizer skips ids it does not know and keeps special tokens' text
        known = [t for t in ids if t < tok.vocab_size]
        return JSONResponse({"prompt": tok.decode(known, skip_special_tokens=False)})

    return [
        Route("/tokenize", answered(cfg, tokenize), methods=["POST"]),
        Route("/detokenize", answered(cfg, detokenize), methods=["POST"]),
    ]
