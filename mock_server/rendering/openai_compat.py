"""POST /v1/completions and /v1/chat/completions, as render -> generate -> derender in one call.

Rollout code mixes these with TITO (and vLLM's `test_same_response_as_chat_completions`
checks it): the same templated prompt and seed must give the same tokens here as through
render -> generate. So a request is rendered by render's own code, run as that
GenerateRequest by the one engine (text mode when a tokenizer is loaded, which changes only
what is decoded, never the tokens), and answered with vLLM 0.32's OpenAI shapes (captures
`noflag_completions_ok`, `tokonly_completions`, `tests/fixtures/vllm-0.32-issue11/{chat,
completions}_*`). Served in every profile, like vLLM; no multimodal, tools or echo.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mock_server.behaviour.releases import DEFAULT
from mock_server.endpoints.gating import answered
from mock_server.endpoints.state import AppState
from mock_server.engine.core import Engine, Job
from mock_server.parsing import coerce as c
from mock_server.parsing.request import GenerateRequest, parse_generate
from mock_server.rendering.openai_bodies import Answer, chat_chunks, completion_chunks
from mock_server.rendering.render import EMPTY_PROMPT, read_object, render_chat, render_completion
from mock_server.stages.admit import effective_max_tokens
from mock_server.stages.refusals import ENGINE_DEAD
from mock_server.stages.validate import engine_checks, serving_checks
from mock_server.wire.errors import ApiError, ValidationFailure

Handler = Callable[[Request], Awaitable[Response]]
TOO_LONG = (
    "This model's maximum context length is {0} tokens. However, your prompt contains {1} "
    "input tokens, which exceeds this limit even without any output tokens. Please reduce the "
    "length of the input prompt. (parameter=input_tokens, value={1})"
)


@dataclass
class Call:
    """One OpenAI request: its id, the GenerateRequest per prompt, and what it echoes."""

    rid: str
    model: str
    requests: list[GenerateRequest]
    return_token_ids: bool
    logprobs: int | None
    jobs: list[Job] = field(default_factory=list)


def fingerprint(model: str, version: str = DEFAULT.version) -> str:
    """vLLM's `vllm-<version>-<8 hex>`, fixed per served model here."""
    return f"vllm-{version}-" + hashlib.sha256(model.encode()).hexdigest()[:8]


def _prepare(
    state: AppState, rendered: list[dict[str, Any]], body: dict[str, Any], chat: bool
) -> Call:
    cfg = state.config
    errors: c.Errors = []
    echo = bool(c.field(body, "return_token_ids", c.to_bool, "body", errors, False))
    if errors:
        raise ValidationFailure(errors)
    requests = []
    for gen in rendered:
        count = len(gen["token_ids"])
        if count > cfg.max_model_len:  # the OpenAI servers' own check, before the engine's
            raise ApiError(400, TOO_LONG.format(cfg.max_model_len, count), param="input_tokens")
        gen["output_mode"] = "text" if cfg.has_tokenizer else "tokens"
        req = parse_generate(gen, cfg)
        serving_checks(req, cfg)
        engine_checks(req, cfg, None)
        requests.append(req)
    first = requests[0] if requests else None
    logprobs = first.sampling.logprobs if first is not None else None
    if logprobs is not None and not chat:
        for req in requests:  # the sampled token plus the top k: completions' top_logprobs
            req.sampling.logprobs = logprobs + 1
    model = rendered[0].get("model") if rendered else None
    return Call(
        rendered[0]["request_id"] if rendered else "",
        model or cfg.model_name,
        requests,
        echo,
        logprobs,
    )


def _jobs(engine: Engine, call: Call) -> list[Job]:
    cfg = engine.cfg
    call.jobs = [
        Job(
            request_id=f"{call.rid}-{i}",
            req=req,
            max_tokens=effective_max_tokens(req, cfg),
        )
        for i, req in enumerate(call.requests)
    ]
    return call.jobs


async def _run(engine: Engine, call: Call) -> None:
    for job in _jobs(engine, call):
        async for _ in engine.run(job):
            pass


def openai_routes(state: AppState) -> list[Route]:
    cfg, engine = state.config, state.engine

    def alive(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            if engine.dead:
                raise ApiError(500, ENGINE_DEAD, "InternalServerError")
            return await handler(request)

        return answered(cfg, endpoint)

    async def serve(request: Request, chat: bool) -> Response:
        body = await read_object(state, request)
        tok = engine.tokenizer
        if not chat and body.get("prompt") in (None, "", []):
            raise ApiError(400, f"{EMPTY_PROMPT} (parameter=prompt)", param="prompt")
        rendered = [render_chat(cfg, tok, body)] if chat else render_completion(cfg, tok, body)
        call = _prepare(state, rendered, body, chat)
        engine.received += 1
        if state.paused.mode is not None:  # 0.33+: a paused engine refuses the request
            refused = state.paused.error()
            if refused is not None and call.requests and call.requests[0].stream:
                # as vLLM words the one event: the chat stream's compact, "InternalServerError"
                kind = "InternalServerError" if chat else refused.err_type
                event = ApiError(503, refused.message, kind).body()
                stream = _sse(_one(event, compact=chat))
                return StreamingResponse(stream, media_type="text/event-stream")
            await state.paused.admit()
        mark = fingerprint(call.model, cfg.release.version)
        answer = Answer(tok, call.rid, call.model, mark, call.logprobs, cfg.release)
        if call.requests and call.requests[0].stream:
            jobs = _jobs(engine, call)
            chunks = chat_chunks if chat else completion_chunks
            stream = _sse(chunks(answer, engine, jobs, call.return_token_ids))
            return StreamingResponse(stream, media_type="text/event-stream")
        await _run(engine, call)
        if chat:
            return JSONResponse(answer.chat(call.jobs[0], call.return_token_ids))
        return JSONResponse(answer.completion(call.jobs, call.return_token_ids))

    async def completions(request: Request) -> Response:
        return await serve(request, chat=False)

    async def chat_completions(request: Request) -> Response:
        return await serve(request, chat=True)

    return [
        Route("/v1/completions", alive(completions), methods=["POST"]),
        Route("/v1/chat/completions", alive(chat_completions), methods=["POST"]),
    ]


async def _sse(events: AsyncIterator[str]) -> AsyncIterator[bytes]:
    async for data in events:
        yield f"data: {data}\n\n".encode()
    yield b"data: [DONE]\n\n"


async def _one(event: dict[str, Any], compact: bool) -> AsyncIterator[str]:
    yield json.dumps(event, separators=(",", ":")) if compact else json.dumps(event)
