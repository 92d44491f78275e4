"""The checks of the validate table's rows, worded as vLLM 0.32 words its errors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mock_server.validation.subject import Check, Subject
from mock_server.validation.subject import engine_error as _engine
from mock_server.wire.errors import ApiError, bad_request, param_error

MAX_N = 16384  # VLLM_MAX_N_SEQUENCES' default
MAX_LOGPROB_TOKEN_IDS = 128
MSGPACK_INT = (-(2**63), 2**64 - 1)
_STRUCTURED = ("json", "regex", "choice", "grammar", "json_object")
_STRUCTURED_FIELDS = (
    *_STRUCTURED,
    "disable_any_whitespace",
    "disable_additional_properties",
    "whitespace_pattern",
    "structural_tag",
)
_STRUCTURED_DEFAULTS = {"disable_any_whitespace": False, "disable_additional_properties": False}


def oov(field: str, ids: list[int] | None, vocab: int) -> ApiError | None:
    bad = [t for t in ids or () if t < 0 or t >= vocab]
    if not bad:
        return None
    return _engine(
        f"token_id(s) {bad} in {field} contain out-of-vocab token ids. Vocabulary size: "
        f"{vocab} (parameter={field}, value={bad})",
        field,
    )


def _num(sp: dict[str, Any], key: str) -> float | None:
    value = sp.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def penalty(key: str) -> Check:
    def check(x: Subject) -> ApiError | None:
        v = _num(x.sp, key)
        return (
            bad_request(f"{key} must be in [-2, 2], got {v}.")
            if v is not None and not -2 <= v <= 2
            else None
        )

    return check


def repetition(x: Subject) -> ApiError | None:
    v = _num(x.sp, "repetition_penalty")
    if v is not None and not math.isfinite(v):
        return bad_request(f"repetition_penalty must be a finite number, got {v}.")
    if v is not None and v <= 0:
        return bad_request(f"repetition_penalty must be greater than zero, got {v}.")
    return None


def temperature(x: Subject) -> ApiError | None:
    t = x.s.temperature
    if not math.isfinite(t):
        return param_error(f"temperature must be a finite number, got {t}.", "temperature", t)
    if t < 0:
        return param_error(f"temperature must be non-negative, got {t}.", "temperature", t)
    if t > 2:
        return param_error(f"temperature must be in [0, 2], got {t}.", "temperature", t)
    return None


def big_int(value: Any) -> bool:
    pending, seen = [value], set()
    while pending:
        v = pending.pop()
        if isinstance(v, int) and not MSGPACK_INT[0] <= v <= MSGPACK_INT[1]:
            return True
        if isinstance(v, dict | list) and id(v) not in seen:
            seen.add(id(v))
            pending.extend([*v.keys(), *v.values()] if isinstance(v, dict) else v)
    return False


def structured(x: Subject) -> ApiError | None:
    so = x.sp.get("structured_outputs")
    if not isinstance(so, dict):
        return None
    count = sum(so.get(k) is not None for k in _STRUCTURED)
    if count == 1:
        return None
    shown = {k: so.get(k, _STRUCTURED_DEFAULTS.get(k)) for k in _STRUCTURED_FIELDS}
    text = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in shown.items())
    text += ", '_backend': None, '_backend_was_auto': False}"
    if count > 1:
        return bad_request(
            "You can only use one kind of structured outputs constraint but multiple are "
            f"specified: {text}"
        )
    return bad_request(
        f"You must use one kind of structured outputs constraint but none are specified: {text}"
    )


def repetition_detection(x: Subject) -> ApiError | None:
    rd = x.sp.get("repetition_detection")
    if not isinstance(rd, dict):
        return None
    size, least, count = (
        rd.get(k, 0) for k in ("max_pattern_size", "min_pattern_size", "min_count")
    )
    if not all(isinstance(v, int) for v in (size, least, count)):
        return None
    if size < 0 or least < 0 or least > size:
        return bad_request(
            "max_pattern_size, min_pattern_size must be >=0, with min_pattern_size <= "
            "max_pattern_size. Set both to 0 to disable repetitive pattern detection."
        )
    if size > 0 and count < 2:
        return bad_request(
            "min_count must be >= 2 to detect repetitive patterns in engine output. If you do "
            "not wish to detect repetitive patterns, set max_pattern_size to 0."
        )
    return None


def thinking_budget(x: Subject) -> ApiError | None:
    v = x.sp.get("thinking_token_budget")
    if isinstance(v, int) and v < -1:
        text = "`thinking_token_budget` must be a non-negative integer or -1 for unlimited."
        return param_error(text, "thinking_token_budget", v)
    return None


def logprobs_range(key: str) -> Check:
    def check(x: Subject) -> ApiError | None:
        v = getattr(x.s, key)
        if v is not None and v < -1:
            return param_error(f"{key} must be non-negative or -1, got {v}.", key, v)
        return None

    return check


def max_logprobs(kind: str, key: str) -> Check:
    def check(x: Subject) -> ApiError | None:
        value, limit = getattr(x.s, key), x.cfg.max_logprobs
        if not value or limit == -1:
            return None
        wanted = x.cfg.mock_vocab_size if value == -1 else value
        if wanted <= limit:
            return None
        return _engine(
            f"Requested {kind} logprobs of {wanted}, which is greater than max allowed: "
            f"{limit} (parameter={key}, value={wanted})",
            key,
        )

    return check


def logprob_ids_length(x: Subject) -> ApiError | None:
    ids = x.ints("logprob_token_ids")
    if ids is None or len(ids) <= MAX_LOGPROB_TOKEN_IDS:
        return None
    n = len(ids)
    return _engine(
        f"Requested logprob_token_ids of length {n}, which is greater than max allowed: "
        f"{MAX_LOGPROB_TOKEN_IDS} (parameter=logprob_token_ids, value={n})",
        "logprob_token_ids",
    )


def logprob_ids_count(x: Subject) -> ApiError | None:
    ids, k = x.ints("logprob_token_ids"), x.s.logprobs
    if ids is None or k is None or k == len(ids):
        return None
    return _engine(
        "When both logprobs and logprob_token_ids are set, logprobs must equal "
        f"len(logprob_token_ids). Got logprobs={k}, len(logprob_token_ids)={len(ids)}. "
        f"(parameter=logprob_token_ids, value={len(ids)})",
        "logprob_token_ids",
    )


def prompt_ids_shape(x: Subject) -> ApiError | None:
    ids = x.s.prompt_logprob_token_ids
    if ids is None:
        return None
    rows = isinstance(ids, list) and all(isinstance(r, list) for r in ids)
    if rows and ids and max(map(len, ids)) > 0:
        return None
    return _engine(
        "prompt_logprob_token_ids must be a non-empty integer array of shape "
        f"[num_rows, num_ids]. (parameter=prompt_logprob_token_ids, value={type(ids).__name__})",
        "prompt_logprob_token_ids",
    )


def prompt_start(x: Subject) -> ApiError | None:
    start = x.sp.get("prompt_logprob_start")
    if start is None or x.s.prompt_logprob_token_ids is not None:
        return None
    return _engine(
        "prompt_logprob_start requires prompt_logprob_token_ids. "
        f"(parameter=prompt_logprob_start, value={start})",
        "prompt_logprob_start",
    )


def allowed_empty(x: Subject) -> ApiError | None:
    allowed = x.s.allowed_token_ids
    if allowed is None or allowed:
        return None
    return _engine(
        "allowed_token_ids is not None and empty! (parameter=allowed_token_ids, value=[])",
        "allowed_token_ids",
    )


def allowed_vocab(x: Subject) -> ApiError | None:
    vocab = x.cfg.mock_vocab_size
    bad = [t for t in x.s.allowed_token_ids or () if t < 0 or t >= vocab]
    if not bad:
        return None
    return _engine(
        f"allowed_token_ids contains out-of-vocab token id! (parameter=allowed_token_ids, "
        f"value={bad})",
        "allowed_token_ids",
    )


def bad_words_empty(x: Subject) -> ApiError | None:
    words = x.sp.get("bad_words")
    if not isinstance(words, list) or all(words):
        return None
    return bad_request(
        f"bad_words cannot contain an empty string. Got bad_words={list(dict.fromkeys(words))!r}"
    )


def bad_words_tokens(x: Subject) -> ApiError | None:
    words = x.sp.get("bad_words")
    if not isinstance(words, list) or not x.cfg.has_tokenizer:
        return None
    if all(w.lstrip() for w in words):
        return None
    shown = list(dict.fromkeys(words))
    return _engine(
        "bad_words entries must tokenize to at least one token. "
        f"(parameter=bad_words, value={shown!r})",
        "bad_words",
    )


def dp_rank(lowest: int) -> Check:
    def check(x: Subject) -> ApiError | None:
        rank, size = x.rank, x.cfg.data_parallel_size
        if rank is None or lowest <= rank < size:
            return None
        return _engine(f"data_parallel_rank {rank} is out of range [0, {size}).")

    return check


def in_vocab(x: Subject) -> ApiError | None:
    top = max(x.req.token_ids, default=0)
    return _engine(f"Token id {top} is out of vocabulary") if top >= x.cfg.mock_vocab_size else None


def too_long(x: Subject) -> ApiError | None:
    n, limit = len(x.req.token_ids), x.cfg.max_model_len
    if n < limit:
        return None
    return _engine(
        f"The decoder prompt (length {n}) is longer than the maximum model length of {limit}. "
        "Make sure that `max_model_len` is no smaller than the number of text tokens."
    )


def when(test: Callable[[Subject], bool], make: Callable[[Subject], ApiError]) -> Check:
    return lambda x: make(x) if test(x) else None


def model(x: Subject) -> ApiError:
    aliases = ", ".join(x.cfg.served_model_name)
    return ApiError(
        404,
        f"The model `{x.req.model}` does not exist. Valid aliases: {aliases}",
        "NotFoundError",
        "model",
    )


def needs_tokenizer(mode: str) -> str:
    """serve_tokens' 400 for an output mode that decodes ("text"; "derender" from 0.33)."""
    return (
        f"output_mode='{mode}' requires a tokenizer, but this server does not load one "
        "(--tokens-only or --skip-tokenizer-init). Send the request to a server that loads a "
        "tokenizer, or use output_mode='tokens'."
    )


TEXT_NEEDS_TOKENIZER = needs_tokenizer("text")


def _prompt_ids_shape(x: Subject) -> tuple[int, int] | None:
    """(rows, ids per row) of a well-formed prompt_logprob_token_ids (the shape row passed)."""
    ids = x.s.prompt_logprob_token_ids
    if not (isinstance(ids, list) and ids and all(isinstance(r, list) for r in ids)):
        return None
    return len(ids), max(map(len, ids))


def prompt_ids_rows(x: Subject) -> ApiError | None:
    """0.34: at most max_model_len - 1 rows, at most max_logprobs ids a row, ids in the
    vocabulary (-1 pads a row); SamplingParams words them (0.32 answers the V2 runner 400
    before any)."""
    shape = _prompt_ids_shape(x)
    if shape is None:
        return None
    rows, num_ids = shape
    key = "prompt_logprob_token_ids"
    max_rows = x.cfg.max_model_len - 1
    if rows > max_rows:
        return _engine(
            f"prompt_logprob_token_ids has {rows} rows, but a prompt has at most {max_rows} "
            f"scored rows (max_model_len - 1). (parameter={key}, value={rows})",
            key,
        )
    limit = x.cfg.max_logprobs
    if num_ids > limit:
        return _engine(
            f"Requested {num_ids} token ids per row in prompt_logprob_token_ids, which is "
            f"greater than max allowed: {limit}. Set max_logprobs (--max-logprobs) to at least "
            f"{num_ids}. (parameter={key}, value={num_ids})",
            key,
        )
    flat = [t for row in x.s.prompt_logprob_token_ids for t in row]
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in flat):
        return _engine(
            f"prompt_logprob_token_ids must contain integer token ids. (parameter={key})", key
        )
    vocab = x.cfg.mock_vocab_size
    lo, hi = min(flat), max(flat)
    if lo < -1 or hi >= vocab:
        return _engine(
            "prompt_logprob_token_ids contain out-of-vocab token ids (-1 pads a row). "
            f"Vocabulary size: {vocab} (parameter={key}, value={[lo, hi]})",
            key,
        )
    return None


def prompt_start_either(x: Subject) -> ApiError | None:
    """0.34: prompt_logprob_start needs prompt_logprobs or prompt_logprob_token_ids, and is
    not negative."""
    start = (x.parsed or {}).get("prompt_logprob_start")
    if start is None:
        return None
    if x.s.prompt_logprob_token_ids is None and x.s.prompt_logprobs is None:
        return _engine(
            "prompt_logprob_start requires prompt_logprobs or prompt_logprob_token_ids. "
            f"(parameter=prompt_logprob_start, value={start})",
            "prompt_logprob_start",
        )
    if start < 0:
        return _engine(
            "prompt_logprob_start must be non-negative. "
            f"(parameter=prompt_logprob_start, value={start})",
            "prompt_logprob_start",
        )
    return None


def prompt_start_in_prompt(x: Subject) -> ApiError | None:
    """0.34's input processor: a start that leaves no prompt row to score, then a row count
    other than prompt_len - 1 - start."""
    start = (x.parsed or {}).get("prompt_logprob_start") or 0
    prompt_len = len(x.req.token_ids)
    if start and start >= prompt_len - 1:
        return _engine(
            f"prompt_logprob_start must be less than prompt_len - 1 ({prompt_len - 1}) so at "
            f"least one prompt row is scored. (parameter=prompt_logprob_start, value={start})",
            "prompt_logprob_start",
        )
    shape = _prompt_ids_shape(x)
    rows = max(prompt_len - 1 - start, 0)
    if shape is not None and shape[0] != rows:
        return _engine(
            f"prompt_logprob_token_ids has {shape[0]} rows, but the prompt has {rows} scored "
            "rows (prompt_len - 1 - prompt_logprob_start). "
            f"(parameter=prompt_logprob_token_ids, value={shape[0]})",
            "prompt_logprob_token_ids",
        )
    return None
