"""The admit stage, all of admission in one place: a paused engine's refusal, the vocabulary,
the request's id and token budget, and what a client's hang-up does to it."""

from __future__ import annotations

import asyncio

from mock_server.answers.derender_mode import engine_request
from mock_server.behaviour.config import MockConfig
from mock_server.endpoints.state import AppState
from mock_server.engine.core import Job
from mock_server.parsing.request import GenerateRequest
from mock_server.stages.refusals import ENGINE_DEAD, Fatal, StreamedRejection
from mock_server.stages.validate import dp_rank
from mock_server.wire.asgi import Receive, Scope, header, wait_disconnect
from mock_server.wire.errors import ApiError


async def admit(state: AppState, scope: Scope, req: GenerateRequest) -> Job:
    """The job a validated request becomes, unless the engine refuses it."""
    if state.paused.mode is not None:  # 0.33+: a paused engine refuses what passed the checks
        try:
            await state.paused.admit()
        except ApiError as err:
            if req.stream:
                raise StreamedRejection(err) from None
            raise
    cfg = state.config
    if max(req.token_ids, default=0) >= cfg.mock_vocab_size:  # oov-token-500
        raise Fatal(ApiError(500, ENGINE_DEAD, "InternalServerError"))
    job = new_job(state, scope, req)
    if cfg.data_parallel_size > 1:  # validated already: in range, or not an integer (None)
        state.engine.place(job, dp_rank(scope, cfg))
    return job


def new_job(state: AppState, scope: Scope, req: GenerateRequest) -> Job:
    cfg, engine = state.config, state.engine
    hdr = header(scope, "x-request-id")
    admit = cfg.policies.admit
    if not admit.request_id_header:
        hdr = None
    if admit.request_id_body_first:
        base = req.request_id or hdr
    else:
        base = hdr if hdr is not None else req.request_id
    if base is None:
        base = engine.new_request_id()
    abort_after = None
    raw = header(scope, "x-mock-abort-after-tokens")
    if raw is not None and raw.strip().isdigit():
        abort_after = int(raw.strip())
    return Job(
        request_id="generate-tokens-" + base,
        req=engine_request(req),  # derender runs as the text level
        max_tokens=effective_max_tokens(req, cfg),
        abort_after=abort_after,
    )


def effective_max_tokens(req: GenerateRequest, cfg: MockConfig) -> int:
    """Server default = remaining context (never 16); a larger client value is clamped."""
    remaining = cfg.max_model_len - len(req.token_ids)
    asked = req.sampling.max_tokens
    admit = cfg.policies.admit
    if asked is None:
        value = remaining if admit.default_max_tokens is None else admit.default_max_tokens
    else:
        value = min(asked, remaining)
    return max(value + admit.max_tokens_extra, 1)


async def watch_hang_up(state: AppState, receive: Receive, job: Job, gone: asyncio.Event) -> None:
    """Wait for the client to go away: then `gone` is set, the engine records it, and the
    job is aborted unless the admit slot keeps such a job running."""
    await wait_disconnect(receive)
    gone.set()
    state.engine.client_gone(job.request_id)
    admit = state.config.policies.admit
    if admit.abort_on_whole_disconnect if not job.req.stream else admit.abort_on_disconnect:
        job.abort()
