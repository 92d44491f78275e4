"""The build stage: the answer's builder, and a non-streamed answer's body."""

from __future__ import annotations

import json

from mock_server.answers.derender_mode import DerenderBuilder, DerenderLogprobs
from mock_server.answers.payloads import Builder, plain_full
from mock_server.endpoints.state import AppState
from mock_server.engine.core import Job
from mock_server.engine.logprobs import LogprobsRenderer, prompt_id_scores, prompt_logprobs
from mock_server.parsing.request import GenerateRequest


def builder(state: AppState, job: Job, req: GenerateRequest) -> Builder:
    """The answer's builder: the output mode's (0.33+: "derender", `derender_mode`)."""
    cfg, tok = state.config, state.engine.tokenizer
    model = req.model or cfg.model_name
    if req.output_mode == "derender":
        return DerenderBuilder(cfg, job, DerenderLogprobs(cfg, tok, req), model)
    return Builder(cfg, job, LogprobsRenderer(cfg, tok, req.output_mode), model)


def body(state: AppState, req: GenerateRequest, built: Builder) -> bytes:
    """The finished job's JSON body, prompt logprobs included."""
    cfg, engine = state.config, state.engine
    plp = scores = None
    sampling = req.sampling
    start = (req.parsed or {}).get("prompt_logprob_start") or 0  # 0.34's, else a 400
    if sampling.prompt_logprobs is not None:
        plp = prompt_logprobs(
            cfg, engine.model, engine.tokenizer, req.token_ids, sampling.prompt_logprobs, start
        )
    if sampling.prompt_logprob_token_ids is not None:  # 0.34's, else a 400
        rows = sampling.prompt_logprob_token_ids
        scores = prompt_id_scores(engine.model, req.token_ids, rows, start)
    data = plain_full(built) if cfg.fast.generate and plp is None and scores is None else None
    if data is None:
        text = json.dumps(built.full(plp, scores), separators=(",", ":"), ensure_ascii=False)
        data = text.encode()
    return data
