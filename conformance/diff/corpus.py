"""The diff corpus: requests sent to both servers, each tagged with the profiles it fits.

Most are combinations the vLLM captures do not have (n > 1 with logprobs, text streams with
stop strings, continuous usage with n = 2, DP headers on streams, ...), plus one request per
bad-input class. Sized for the tiny real model: token ids below 2048, prompts of 5 tokens,
at most a few tokens out (the abort flows generate long enough to be aborted). Servers must
run with the same `--max-model-len` and `--max-num-seqs` (512 and 4 in the live profiles).
"""

from __future__ import annotations

from conformance.diff.case import EVERY, SCALE_OUT, SERVED, TOKENS_ONLY, Case, gen
from conformance.diff.corpus_access import ABORT_CASES, ACCESS_CASES
from conformance.diff.corpus_render import RENDER_CASES

GENERATE_CASES: tuple[Case, ...] = (
    gen("basic", SERVED, "generate"),
    gen("ignore-eos-length", SERVED, "max_tokens", {"max_tokens": 6, "ignore_eos": True}),
    gen("logprobs-0", SERVED, "logprobs", {"max_tokens": 3, "logprobs": 0}),
    gen(
        "logprobs-3-greedy", SERVED, "logprobs", {"max_tokens": 3, "logprobs": 3, "temperature": 0}
    ),
    gen("n2-logprobs-2", SERVED, "n+logprobs", {"max_tokens": 3, "n": 2, "logprobs": 2}),
    gen("n3-ignore-eos", SERVED, "n", {"max_tokens": 3, "n": 3, "ignore_eos": True}),
    gen(
        "n2-return-token-ids-prompt-logprobs",
        SERVED,
        "n+return_token_ids+prompt_logprobs",
        {"max_tokens": 2, "n": 2, "prompt_logprobs": 2, "logprobs": 1},
        return_token_ids=True,
    ),
    gen("prompt-logprobs-0", SERVED, "prompt_logprobs", {"max_tokens": 2, "prompt_logprobs": 0}),
    gen("return-token-ids", SERVED, "return_token_ids", {"max_tokens": 2}, return_token_ids=True),
    gen("seeded", SERVED, "seed", {"max_tokens": 5, "temperature": 1, "seed": 7}),
    gen("greedy", SERVED, "temperature", {"max_tokens": 5, "temperature": 0}),
    gen(
        "sampling-knobs",
        SERVED,
        "top_k/top_p/min_p/min_tokens",
        {"max_tokens": 4, "top_k": 5, "top_p": 0.9, "min_p": 0.01, "min_tokens": 2},
    ),
    gen(
        "stop-token-ids-include",
        SERVED,
        "stop_token_ids",
        {"max_tokens": 6, "stop_token_ids": [11, 993], "include_stop_str_in_output": True},
    ),
    gen(
        "max-tokens-over-context",
        SERVED,
        "max_tokens clamp",
        {"max_tokens": 100000, "ignore_eos": True},
    ),
    gen("default-max-tokens", SERVED, "max_tokens default", {"ignore_eos": True}),
    gen("request-id-body", SERVED, "request_id", request_id="diff-body-1"),
    gen(
        "request-id-header",
        SERVED,
        "request_id",
        headers={"X-Request-Id": "diff-hdr-1"},
    ),
    gen(
        "request-id-both",
        SERVED,
        "request_id",
        request_id="diff-body-2",
        headers={"X-Request-Id": "diff-hdr-2"},
    ),
    gen("dp-rank-0", SERVED, "dp rank", headers={"X-data-parallel-rank": "0"}),
    gen("dp-rank-1", SERVED, "dp rank", headers={"X-data-parallel-rank": "1"}),
    gen("dp-rank-minus-1", SERVED, "dp rank", headers={"X-data-parallel-rank": "-1"}),
    gen("dp-rank-abc", SERVED, "dp rank", headers={"X-data-parallel-rank": "abc"}),
    gen("priority", SERVED, "priority", priority=1),
    gen("cache-salt", SERVED, "cache_salt", cache_salt="salt"),
    gen("unknown-top-level", SERVED, "unknown keys", not_a_field=1),
    gen("unknown-sampling", SERVED, "unknown keys", {"max_tokens": 2, "not_a_param": True}),
    gen(
        "nulls-accepted",
        SERVED,
        "nulls",
        {"max_tokens": 2, "prompt_logprobs": None, "stop": None, "seed": None},
        features=None,
        cache_salt=None,
        kv_transfer_params=None,
    ),
    gen("null-temperature", SERVED, "nulls (400)", {"max_tokens": 2, "temperature": None}),
    gen("null-n", SERVED, "nulls (400)", {"max_tokens": 2, "n": None}),
    gen("null-request-id", SERVED, "nulls (400)", request_id=None),
    gen("output-mode-tokens", SERVED, "output_mode", output_mode="tokens"),
)

STREAM_CASES: tuple[Case, ...] = (
    gen("stream", SERVED, "stream", stream=True),
    gen(
        "stream-include-usage",
        SERVED,
        "stream usage",
        {"max_tokens": 5, "ignore_eos": True},
        stream=True,
        stream_options={"include_usage": True},
    ),
    gen(
        "stream-continuous-usage-n2",
        SERVED,
        "stream usage+n",
        {"max_tokens": 3, "n": 2, "ignore_eos": True},
        stream=True,
        stream_options={"include_usage": True, "continuous_usage_stats": True},
    ),
    gen(
        "stream-n2-logprobs-return-ids",
        SERVED,
        "stream+n+logprobs+return_token_ids",
        {"max_tokens": 3, "n": 2, "logprobs": 1},
        stream=True,
        return_token_ids=True,
    ),
    gen(
        "stream-prompt-logprobs",
        SERVED,
        "stream+prompt_logprobs",
        {"max_tokens": 2, "prompt_logprobs": 1},
        stream=True,
    ),
    gen(
        "stream-stop-token-ids-seeded",
        SERVED,
        "stream+stop_token_ids",
        {"max_tokens": 8, "stop_token_ids": [993, 11], "seed": 3, "temperature": 1},
        stream=True,
    ),
    gen(
        "stream-logprobs-21",
        SERVED,
        "stream engine error event",
        {"max_tokens": 2, "logprobs": 21},
        stream=True,
    ),
    gen(
        "stream-dp-rank-5",
        SERVED,
        "stream engine error event",
        stream=True,
        headers={"X-data-parallel-rank": "5"},
    ),
    gen("stream-empty-token-ids", SERVED, "stream schema error", tokens=[], stream=True),
    gen(
        "stream-options-without-stream",
        SERVED,
        "stream_options",
        stream_options={"include_usage": True},
    ),
    gen(
        "stream-request-id-header",
        SERVED,
        "stream+request_id",
        stream=True,
        headers={"X-Request-Id": "diff-stream-hdr"},
    ),
)

TEXT_CASES: tuple[Case, ...] = (
    gen("text", SCALE_OUT, "text mode", output_mode="text"),
    gen(
        "text-logprobs-2",
        SCALE_OUT,
        "text+logprobs",
        {"max_tokens": 3, "logprobs": 2},
        output_mode="text",
    ),
    gen(
        "text-stream-stop",
        SCALE_OUT,
        "text+stream+stop",
        {"max_tokens": 12, "stop": ["e", "a"], "temperature": 1, "seed": 5},
        stream=True,
        output_mode="text",
    ),
    gen(
        "text-stop-include",
        SCALE_OUT,
        "text+stop+include_stop_str_in_output",
        {"max_tokens": 12, "stop": ["e"], "include_stop_str_in_output": True, "seed": 1},
        output_mode="text",
    ),
    gen(
        "text-skip-special-false",
        SCALE_OUT,
        "text+skip_special_tokens",
        {"max_tokens": 3, "skip_special_tokens": False},
        output_mode="text",
    ),
    gen(
        "text-detokenize-false",
        SCALE_OUT,
        "text (400)",
        {"max_tokens": 3, "detokenize": False},
        output_mode="text",
    ),
    gen(
        "text-stream-n2-usage-logprobs",
        SCALE_OUT,
        "text+stream+n+usage+logprobs",
        {"max_tokens": 3, "n": 2, "logprobs": 1, "ignore_eos": True},
        stream=True,
        output_mode="text",
        stream_options={"include_usage": True, "continuous_usage_stats": True},
    ),
    gen("tokens-only-text", TOKENS_ONLY, "tokens-only (400)", output_mode="text"),
    gen("tokens-only-stop", TOKENS_ONLY, "tokens-only (400)", {"max_tokens": 2, "stop": ["x"]}),
    gen("tokens-only-stop-empty", TOKENS_ONLY, "tokens-only", {"max_tokens": 2, "stop": []}),
)

BAD_INPUT_CASES: tuple[Case, ...] = (
    gen("empty-token-ids", SERVED, "token_ids (400)", tokens=[]),
    gen("negative-token-ids", SERVED, "token_ids (400)", tokens=[1, -2, 3]),
    gen("oov-token-id", SCALE_OUT, "token_ids (400; crashes tokens-only vLLM 0.32)", tokens=[2048]),
    Case(
        "token-ids-not-list",
        SERVED,
        body={"token_ids": "1 2 3", "sampling_params": {"max_tokens": 2}},
        covers="token_ids (400)",
    ),
    Case(
        "token-ids-missing",
        SERVED,
        body={"sampling_params": {"max_tokens": 2}},
        covers="token_ids (400)",
    ),
    Case("sampling-missing", SERVED, body={"token_ids": [321, 608]}, covers="schema (400)"),
    gen("max-tokens-0", SERVED, "max_tokens (400)", {"max_tokens": 0}),
    gen("temperature-negative", SERVED, "sampling (400)", {"max_tokens": 2, "temperature": -1}),
    gen("n5-over-max-num-seqs", SERVED, "n (400)", {"max_tokens": 2, "n": 5}),
    gen("logprobs-21", SERVED, "logprobs (400)", {"max_tokens": 2, "logprobs": 21}),
    gen(
        "prompt-logprobs-21",
        SERVED,
        "prompt_logprobs (400)",
        {"max_tokens": 2, "prompt_logprobs": 21},
    ),
    gen("prompt-over-context", SERVED, "context (400)", tokens=[321] * 600),
    gen("output-mode-invalid", SERVED, "output_mode (400)", output_mode="words"),
    gen("model-wrong", SERVED, "model (404)", model="no-such-model"),
    gen("cache-salt-empty", SERVED, "cache_salt (400)", cache_salt=""),
    gen(
        "features-and-content-parts",
        SERVED,
        "features (400)",
        features={"mm_hashes": {}, "mm_placeholders": {}},
        content_parts=[{"type": "image_url", "url": "x"}],
    ),
    gen(
        "prompt-logprob-token-ids",
        SERVED,
        "prompt_logprob_token_ids (400)",
        {"max_tokens": 1, "prompt_logprob_token_ids": [[5, 6], [5, 6], [5, 6], [5, 6]]},
    ),
    Case("invalid-json", SERVED, raw='{"token_ids": [1,2,', covers="JSON (400)"),
    Case(
        "wrong-content-type",
        SERVED,
        raw='{"token_ids": [1], "sampling_params": {"max_tokens": 1}}',
        content_type="text/plain",
        covers="Content-Type (400)",
    ),
    Case("generate-get", EVERY, method="GET", content_type=None, covers="method (405)"),
    Case("body-not-object", SERVED, body=[1, 2, 3], covers="schema (400)"),
)

CORPUS: tuple[Case, ...] = (
    GENERATE_CASES
    + STREAM_CASES
    + TEXT_CASES
    + BAD_INPUT_CASES
    + ABORT_CASES
    + RENDER_CASES
    + ACCESS_CASES
)


def cases_for(profile: str) -> list[Case]:
    return [case for case in CORPUS if case.applies_to(profile)]
