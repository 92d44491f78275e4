"""The checks vLLM runs after schema validation: serving-level, then engine-side."""

from __future__ import annotations

from mock_server.asgi import Scope, header
from mock_server.config import MockConfig
from mock_server.errors import ApiError, bad_request
from mock_server.request import GenerateRequest

TEXT_NEEDS_TOKENIZER = (
    "output_mode='text' requires a tokenizer, but this server does not load one (--tokens-only "
    "or --skip-tokenizer-init). Send the request to a server that loads a tokenizer, or use "
    "output_mode='tokens'."
)


def serving_checks(req: GenerateRequest, cfg: MockConfig) -> None:
    """serve_tokens' own checks, in its order; always an HTTP 400/404."""
    if req.model and req.model not in cfg.served_model_name:
        aliases = ", ".join(cfg.served_model_name)
        raise ApiError(
            404,
            f"The model `{req.model}` does not exist. Valid aliases: {aliases}",
            "NotFoundError",
            "model",
        )
    n = req.sampling.n
    if n > cfg.max_num_seqs:
        raise bad_request(
            f"sampling_params.n must be at most the server's max_num_seqs ({cfg.max_num_seqs}), "
            f"got {n}."
        )
    if req.stream and req.sampling.prompt_logprob_token_ids is not None:
        raise bad_request("prompt_logprob_token_ids are not available when stream=true.")
    if cfg.tokens_only and req.sampling.stop and not cfg.has_defect("tokens-only-stop-accepted"):
        raise cfg.release.stop_error()
    if (
        cfg.tokens_only
        and req.sampling.detokenize_sent
        and req.sampling.detokenize
        and cfg.has_defect("tokens-only-detokenize-text")
    ):
        raise bad_request("detokenize is not supported on a --tokens-only server.")
    if (
        req.output_mode == "text"
        and not cfg.has_tokenizer
        and not cfg.has_defect("tokens-only-text-accepted")
        and not cfg.has_defect("output-mode-not-echoed")
    ):
        raise bad_request(TEXT_NEEDS_TOKENIZER)


def dp_rank(scope: Scope, cfg: MockConfig) -> int | None:
    raw = header(scope, "x-data-parallel-rank")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        if cfg.has_defect("dp-rank-non-int-400"):
            raise bad_request(f"Invalid X-data-parallel-rank header: {raw!r}") from None
        return None


def engine_checks(req: GenerateRequest, cfg: MockConfig, rank: int | None) -> None:
    """What vLLM's input processor rejects when the engine admits the request."""
    vocab = cfg.mock_vocab_size
    top = max(req.token_ids) if req.token_ids else 0
    if top >= vocab and not cfg.has_defect("oov-token-500"):
        raise _engine(f"Token id {top} is out of vocabulary")
    if len(req.token_ids) >= cfg.max_model_len:
        raise _engine(
            f"The decoder prompt (length {len(req.token_ids)}) is longer than the maximum model "
            f"length of {cfg.max_model_len}. Make sure that `max_model_len` is no smaller than "
            "the number of text tokens."
        )
    if req.sampling.prompt_logprob_token_ids is not None:
        raise _engine(
            "prompt_logprob_token_ids requires the V2 model runner (VLLM_USE_V2_MODEL_RUNNER=1). "
            "(parameter=prompt_logprob_token_ids)",
            "prompt_logprob_token_ids",
        )
    allowed = req.sampling.allowed_token_ids
    if allowed is not None and not allowed:
        raise _engine("allowed_token_ids is not None and empty list", "allowed_token_ids")
    if allowed and (min(allowed) < 0 or max(allowed) >= vocab):
        raise _engine("allowed_token_ids contains out-of-vocab token id!", "allowed_token_ids")
    limit = cfg.max_logprobs
    for kind, key, value in (
        ("sample", "logprobs", req.sampling.logprobs),
        ("prompt", "prompt_logprobs", req.sampling.prompt_logprobs),
    ):
        if value is None or limit == -1:
            continue
        wanted = vocab if value == -1 else value
        if wanted > limit and not cfg.has_defect("logprobs-over-max-accepted"):
            raise _engine(
                f"Requested {kind} logprobs of {wanted}, which is greater than max allowed: "
                f"{limit} (parameter={key}, value={wanted})",
                key,
            )
    lowest = 1 if cfg.has_defect("dp-rank-zero-rejected") else 0
    in_range = rank is None or lowest <= rank < cfg.data_parallel_size
    if not in_range and not cfg.has_defect("dp-rank-unchecked"):
        size = cfg.data_parallel_size
        raise _engine(f"data_parallel_rank {rank} is out of range [0, {size}).")


def _engine(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, "BadRequestError", param, engine_side=True)


def effective_max_tokens(req: GenerateRequest, cfg: MockConfig) -> int:
    """Server default = remaining context (never 16); a larger client value is clamped."""
    remaining = cfg.max_model_len - len(req.token_ids)
    asked = req.sampling.max_tokens
    if asked is None:
        value = 16 if cfg.has_defect("max-tokens-default-16") else remaining
    else:
        value = min(asked, remaining)
    if cfg.has_defect("max-tokens-overrun"):
        value += 1
    return max(value, 1)
