"""The checks vLLM runs after schema validation: serving-level, then engine-side."""

from __future__ import annotations

from mock_server import validation
from mock_server.behaviour.config import MockConfig
from mock_server.parsing.request import GenerateRequest
from mock_server.validation import TEXT_NEEDS_TOKENIZER
from mock_server.wire.asgi import Scope, header
from mock_server.wire.errors import bad_request

__all__ = ["TEXT_NEEDS_TOKENIZER", "dp_rank", "effective_max_tokens", "engine_checks"]


def serving_checks(req: GenerateRequest, cfg: MockConfig) -> None:
    """serve_tokens' own checks, in its order (the table's `serving` rows); always HTTP."""
    subject = validation.Subject(req, req.sp, cfg, parsed=req.parsed)
    validation.run(cfg.policies.validate.rules, "serving", subject)


def dp_rank(scope: Scope, cfg: MockConfig) -> int | None:
    raw = header(scope, "x-data-parallel-rank")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        if "dp_rank.non_int_ignored" not in cfg.policies.validate.rules:
            raise bad_request(f"Invalid X-data-parallel-rank header: {raw!r}") from None
        return None


def engine_checks(req: GenerateRequest, cfg: MockConfig, rank: int | None) -> None:
    """What vLLM's input processor rejects when the engine admits the request (`engine`
    rows: a streamed request gets them as a stream)."""
    subject = validation.Subject(req, req.sp, cfg, rank, req.parsed)
    validation.run(cfg.policies.validate.rules, "engine", subject)


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
