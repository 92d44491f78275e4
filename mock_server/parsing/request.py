"""Parsing a generate body the way vLLM 0.32's pydantic models and SamplingParams do.

A newer release (`--mock-vllm-version 0.33|0.34`) adds output modes and fields: its row of
`mock_server.behaviour.releases` says which, read here (`output_modes`, `new_fields`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mock_server import validation
from mock_server.behaviour.config import MockConfig
from mock_server.parsing import coerce as c
from mock_server.parsing import parse_context
from mock_server.parsing.extra_fields import (
    check_ranges,
    check_sampling_types,
    check_top_level_types,
)
from mock_server.parsing.features import feature_errors, prompt_errors
from mock_server.wire.errors import ApiError, ValidationFailure, validation_item

TOP_LEVEL_KEYS = frozenset(
    [
        "request_id",
        "token_ids",
        "token_offsets",
        "features",
        "content_parts",
        "sampling_params",
        "model",
        "reasoning_ended",
        "reasoning_parser_kwargs",
        "return_token_ids",
        "output_mode",
        "stream",
        "stream_options",
        "cache_salt",
        "priority",
        "kv_transfer_params",
        "ec_transfer_params",
    ]
)
SAMPLING_KEYS = frozenset(
    [
        "n",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "seed",
        "stop",
        "stop_token_ids",
        "ignore_eos",
        "max_tokens",
        "min_tokens",
        "logprobs",
        "prompt_logprobs",
        "prompt_logprob_token_ids",
        "prompt_logprob_start",
        "logprob_token_ids",
        "detokenize",
        "skip_special_tokens",
        "spaces_between_special_tokens",
        "include_stop_str_in_output",
        "stream_interval",
        "structured_outputs",
        "logit_bias",
        "allowed_token_ids",
        "bad_words",
        "extra_args",
        "thinking_token_budget",
        "repetition_detection",
        "routed_experts_prompt_start",
        "trace_decode_token_ids",
        "flat_logprobs",
        "skip_reading_prefix_cache",
        "skip_clone",
        "output_kind",
        "truncate_prompt_tokens",
        "logits_processors",
        "guided_decoding",
    ]
)
_SALT_BAD = ("@", "/", "\\", "\x00")


@dataclass
class Sampling:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    max_tokens: int | None = None
    min_tokens: int = 0
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    prompt_logprob_token_ids: Any = None
    detokenize: bool = True
    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    allowed_token_ids: list[int] | None = None
    detokenize_sent: bool = False  # the client set detokenize explicitly

    @property
    def greedy(self) -> bool:
        return self.temperature < 1e-5


@dataclass
class GenerateRequest:
    token_ids: list[int]
    sampling: Sampling
    request_id: str | None = None
    model: str | None = None
    output_mode: str = "tokens"
    stream: bool = False
    include_usage: bool = False
    continuous_usage: bool = False
    return_token_ids: bool = False
    priority: int = 0
    kv_transfer_params: Any = None
    ec_transfer_params: Any = None
    parse_context: dict[str, Any] | None = None  # 0.33+: read in derender mode only
    sp: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # as sent
    parsed: dict[str, Any] | None = field(default=None, compare=False, repr=False)


def stop_list(value: Any, loc: str, errors: c.Errors) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            s = c.to_str(item, f"{loc}.{i}", errors)
            if s is not None:
                out.append(s)
        return out
    errors.append(validation_item("list_type", loc, "Input should be a valid list", value))
    return None


def _parse_sampling(sp: dict[str, Any], errors: c.Errors) -> Sampling:
    loc = "body.sampling_params"
    s = Sampling()
    s.n = c.field(sp, "n", c.to_int, loc, errors, 1, nullable=False)
    s.temperature = c.field(sp, "temperature", c.to_float, loc, errors, 1.0, nullable=False)
    s.top_p = c.field(sp, "top_p", c.to_float, loc, errors, 1.0, nullable=False)
    s.top_k = c.field(sp, "top_k", c.to_int, loc, errors, 0, nullable=False)
    s.min_p = c.field(sp, "min_p", c.to_float, loc, errors, 0.0, nullable=False)
    s.seed = c.field(sp, "seed", c.to_int, loc, errors, None)
    s.stop = c.field(sp, "stop", stop_list, loc, errors, [])
    s.stop_token_ids = c.field(sp, "stop_token_ids", c.to_int_list, loc, errors, [])
    s.ignore_eos = c.field(sp, "ignore_eos", c.to_bool, loc, errors, False, nullable=False)
    s.max_tokens = c.field(sp, "max_tokens", c.to_int, loc, errors, None)
    s.min_tokens = c.field(sp, "min_tokens", c.to_int, loc, errors, 0, nullable=False)
    s.logprobs = c.field(sp, "logprobs", c.to_int, loc, errors, None)
    s.prompt_logprobs = c.field(sp, "prompt_logprobs", c.to_int, loc, errors, None)
    s.prompt_logprob_token_ids = sp.get("prompt_logprob_token_ids")
    s.detokenize = c.field(sp, "detokenize", c.to_bool, loc, errors, True, nullable=False)
    s.detokenize_sent = sp.get("detokenize") is not None
    s.skip_special_tokens = c.field(
        sp, "skip_special_tokens", c.to_bool, loc, errors, True, nullable=False
    )
    s.include_stop_str_in_output = c.field(
        sp, "include_stop_str_in_output", c.to_bool, loc, errors, False, nullable=False
    )
    s.allowed_token_ids = c.field(sp, "allowed_token_ids", c.to_int_list, loc, errors, None)
    for key in ("presence_penalty", "frequency_penalty", "repetition_penalty"):
        # Plain `float` fields of vLLM's SamplingParams, like temperature: null is a 400.
        c.field(sp, key, c.to_float, loc, errors, 0.0, nullable=False)
    return s


def normalise(s: Sampling) -> None:
    """What SamplingParams changes after its checks: greedy resets, low temperature raised."""
    if s.greedy:
        s.top_p, s.top_k, s.min_p = 1.0, 0, 0.0
    elif s.temperature < 0.01:
        s.temperature = 0.01
    if s.top_k == -1:
        s.top_k = 0


def verify_sampling(req: GenerateRequest, sp: dict[str, Any], rules: frozenset[str]) -> None:
    """SamplingParams' own checks (the table's `sampling` rows), then its normalisation."""
    validation.run(rules, "sampling", validation.Subject(req, sp, None))
    normalise(req.sampling)


def check_sampling(sp: dict[str, Any]) -> None:
    """What SamplingParams checks of the values render built (types already coerced)."""
    errors: c.Errors = []
    s = _parse_sampling(sp, errors)
    if errors:
        raise ValidationFailure(errors)
    verify_sampling(GenerateRequest([], s), sp, validation.DEFAULT_RULES)


def parse_generate(body: Any, config: MockConfig) -> GenerateRequest:
    """Schema checks first (all errors together), then the value checks, as vLLM orders them."""
    errors: c.Errors = []
    if not isinstance(body, dict):
        msg = "Input should be a valid dictionary or object to extract fields from"
        raise ValidationFailure([validation_item("model_attributes_type", "body", msg, body)])
    rules = config.policies.validate.rules
    if "unknown_fields.ignored" not in rules:
        sp_raw = body.get("sampling_params")
        known = TOP_LEVEL_KEYS.union(config.release.new_fields)
        extra = [k for k in body if k not in known]
        if isinstance(sp_raw, dict):
            extra += [f"sampling_params.{k}" for k in sp_raw if k not in SAMPLING_KEYS]
        if extra:
            msg = "Extra inputs are not permitted"
            raise ValidationFailure(
                [validation_item("extra_forbidden", f"body.{k}", msg, None) for k in extra]
            )
    token_ids: list[int] | None = None
    if "token_ids" not in body and "token_ids.required" not in rules:
        token_ids = []  # generates from an empty prompt
    elif "token_ids" not in body:
        errors.append(validation_item("missing", "body.token_ids", "Field required", body))
    else:
        token_ids = c.to_int_list(body["token_ids"], "body.token_ids", errors)
        if token_ids is not None and not token_ids and "token_ids.non_empty" in rules:
            msg = "List should have at least 1 item after validation, not 0"
            ctx = {"field_type": "List", "min_length": 1, "actual_length": 0}
            errors.append(validation_item("too_short", "body.token_ids", msg, [], ctx))
            token_ids = None
        elif token_ids and min(token_ids) < 0 and "token_ids.non_negative" in rules:
            text = "token_ids must not contain negative values"
            ctx = {"error": ValueError(text)}
            errors.append(
                validation_item(
                    "value_error", "body.token_ids", f"Value error, {text}", body["token_ids"], ctx
                )
            )
    sampling = Sampling()
    sp: dict[str, Any] = {}
    raw_sp = body.get("sampling_params")
    if "sampling_params" not in body and "sampling_params.required" not in rules:
        pass  # the defaults apply
    elif "sampling_params" not in body:
        errors.append(validation_item("missing", "body.sampling_params", "Field required", body))
        sp = {}
    elif (parsed_sp := c.to_dict(raw_sp, "body.sampling_params", errors)) is not None:
        sp = parsed_sp
        sampling = _parse_sampling(sp, errors)
    req = GenerateRequest(token_ids=token_ids or [], sampling=sampling)
    loc = "body"
    req.request_id = c.field(body, "request_id", c.to_str, loc, errors, None, nullable=False)
    req.model = c.field(body, "model", c.to_str, loc, errors, None)
    modes = config.release.output_modes
    mode = body.get("output_mode", config.policies.validate.default_output_mode)
    if mode not in modes and "output_mode.literal" not in rules:
        mode = "tokens"
    if mode not in modes:
        expected = _literal_choices(modes)
        msg = f"Input should be {expected}"
        ctx = {"expected": expected}
        errors.append(validation_item("literal_error", "body.output_mode", msg, mode, ctx))
    else:
        req.output_mode = mode
    req.stream = c.field(body, "stream", c.to_bool, loc, errors, False)
    opts = body.get("stream_options")
    if opts is not None and c.to_dict(opts, "body.stream_options", errors) is not None:
        oloc = "body.stream_options"
        req.include_usage = c.field(opts, "include_usage", c.to_bool, oloc, errors, False)
        req.continuous_usage = c.field(
            opts, "continuous_usage_stats", c.to_bool, oloc, errors, False
        )
    req.return_token_ids = c.field(body, "return_token_ids", c.to_bool, loc, errors, False)
    req.priority = c.field(body, "priority", c.to_int, loc, errors, 0, nullable=False)
    for key in ("kv_transfer_params", "ec_transfer_params", "features", "reasoning_parser_kwargs"):
        value = body.get(key)
        if value is not None:
            c.to_dict(value, f"body.{key}", errors)
    req.kv_transfer_params = body.get("kv_transfer_params")
    req.ec_transfer_params = body.get("ec_transfer_params")
    if "parse_context" in config.release.new_fields:
        req.parse_context = parse_context.parse(body.get("parse_context"), errors)
    parts = body.get("content_parts")
    if parts is not None and not isinstance(parts, list):
        msg = "Input should be a valid list"
        errors.append(validation_item("list_type", "body.content_parts", msg, parts))
    null_stop = isinstance(raw_sp, dict) and "stop" in raw_sp and raw_sp["stop"] is None
    if null_stop and "stop.nullable" not in rules:
        msg = "Input should be a valid list"
        errors.append(validation_item("list_type", "body.sampling_params.stop", msg, None))
    ignored = check_sampling_types(sp, errors)
    check_top_level_types(body, errors)
    if not errors:
        _model_validators(body, req, config, errors)
    if errors:
        bad_temperature = any(e["loc"] == "body.sampling_params.temperature" for e in errors)
        if bad_temperature and "temperature.type_400" not in rules:
            raise ApiError(500, "Internal Server Error", "InternalServerError")
        raise ValidationFailure(errors)
    salt = body.get("cache_salt")
    if salt is not None and "cache_salt.accepted" not in rules:
        raise ApiError(400, "cache_salt is not supported", "BadRequestError", "cache_salt")
    if salt is not None:
        check_salt(salt)
    check_ranges(body)
    req.sp, req.parsed = sp, ignored
    verify_sampling(req, sp, rules)
    return req


_PLAIN_TOP = frozenset(["token_ids", "sampling_params", "request_id", "model", "stream"])
_PLAIN_TOP_TYPES: dict[str, type] = {"request_id": str, "model": str, "stream": bool}
_PLAIN_SAMPLING: dict[str, tuple[type, ...]] = {
    "max_tokens": (int,),
    "ignore_eos": (bool,),
    "seed": (int,),
    "n": (int,),
    "min_tokens": (int,),
    "top_k": (int,),
    "temperature": (int, float),
    "top_p": (int, float),
    "min_p": (int, float),
}
_PLAIN_FLOATS = frozenset(["temperature", "top_p", "min_p"])


def parse_plain(body: Any, config: MockConfig) -> GenerateRequest | None:
    """`parse_generate` of the bodies most clients send, without its generic walk; None for
    anything else (then `parse_generate` answers, errors included).

    Plain: no defects; only the fields below, each of its own JSON type (no null, no string
    for a number, no bool for an int), token ids non-negative, and the values accepted by
    the value checks. The request is then the one `parse_generate` returns
    (tests/test_mock_fastpath.py compares them).
    """
    if "validate" not in config.policies.plain:
        return None
    if type(body) is not dict or not _PLAIN_TOP.issuperset(body):
        return None
    token_ids = body.get("token_ids")
    sp = body.get("sampling_params")
    if type(token_ids) is not list or not token_ids or type(sp) is not dict:
        return None
    for t in token_ids:
        if type(t) is not int or t < 0:
            return None
    for key, kind in _PLAIN_TOP_TYPES.items():
        if key in body and type(body[key]) is not kind:
            return None
    s = Sampling()
    for key, value in sp.items():
        kinds = _PLAIN_SAMPLING.get(key)
        if kinds is None or type(value) not in kinds:
            return None
        setattr(s, key, float(value) if key in _PLAIN_FLOATS else value)
    req = GenerateRequest(
        token_ids=list(token_ids),
        sampling=s,
        request_id=body.get("request_id"),
        model=body.get("model"),
        stream=body.get("stream", False),
        sp=sp,
    )
    try:
        verify_sampling(req, sp, config.policies.validate.rules)
    except ApiError:
        return None
    return req


def _model_validators(
    body: dict[str, Any], req: GenerateRequest, config: MockConfig, errors: c.Errors
) -> None:
    features, parts = body.get("features"), body.get("content_parts")
    rules = config.policies.validate.rules
    if features is not None and parts and "content_parts.exclusive" in rules:
        text = "content_parts and features are mutually exclusive"
        errors.append(
            validation_item(
                "value_error", "body", f"Value error, {text}", body, {"error": ValueError(text)}
            )
        )
    if isinstance(features, dict):
        errors.extend(feature_errors(features) or prompt_errors(body, features, len(req.token_ids)))
    text_ok = "output_mode.text_needs_detokenize" not in rules
    if req.output_mode != "tokens" and not req.sampling.detokenize and not text_ok:
        text = f"output_mode='{req.output_mode}' requires sampling_params.detokenize to be true"
        errors.append(
            validation_item(
                "value_error", "body", f"Value error, {text}", body, {"error": ValueError(text)}
            )
        )
    if req.output_mode == "derender":
        errors.extend(parse_context.unknown_fields(req.parse_context, config.release, body))


def _literal_choices(values: tuple[str, ...]) -> str:
    """pydantic's wording of a Literal's values: `'a' or 'b'`, `'a', 'b' or 'c'`."""
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def check_salt(salt: Any) -> None:
    if not isinstance(salt, str) or not salt:
        msg = "Parameter 'cache_salt' must be a non-empty string if provided."
        raise ApiError(400, f"{msg} (parameter=cache_salt)", "BadRequestError", "cache_salt")
    if len(salt) > 128 or any(ch in salt for ch in _SALT_BAD):
        msg = (
            "Parameter 'cache_salt' must be at most 128 characters and must not contain "
            "'@', '/', '\\\\', or NUL."
        )
        raise ApiError(400, f"{msg} (parameter=cache_salt)", "BadRequestError", "cache_salt")
