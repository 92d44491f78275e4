"""The validate stage: the checks vLLM runs after schema validation, serving-level then
engine-side (the rows of `mock_server.validation`'s table in force)."""

from __future__ import annotations

from mock_server import validation
from mock_server.behaviour.config import MockConfig
from mock_server.parsing.request import GenerateRequest
from mock_server.stages.refusals import StreamedRejection
from mock_server.wire.asgi import Scope, header
from mock_server.wire.errors import ApiError, bad_request


def validate(cfg: MockConfig, scope: Scope, req: GenerateRequest) -> None:
    """Every check in vLLM's order; an engine-side error of a streamed request is a stream."""
    serving_checks(req, cfg)
    rank = dp_rank(scope, cfg)
    try:
        engine_checks(req, cfg, rank)
    except ApiError as err:
        streams = "errors.streamed" in cfg.policies.validate.rules
        if req.stream and err.engine_side and streams:
            raise StreamedRejection(err) from None
        raise


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
