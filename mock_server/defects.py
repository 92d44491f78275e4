"""The defect catalogue: each entry makes the mock wrong in exactly one way.

The conformance suite proves itself by failing against each defect. Names are a contract with
the suite (never rename); the code asks `config.has_defect(name)` where the behaviour changes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Defect:
    name: str
    description: str
    breaks: tuple[str, ...]


_RAW: tuple[tuple[str, str, str], ...] = (
    # core generate
    (
        "request-id-no-prefix",
        "request_id returned without the generate-tokens- prefix",
        "request_id",
    ),
    ("request-id-body-wins", "body request_id wins over the X-Request-Id header", "request_id"),
    ("usage-miscount", "usage.completion_tokens is one more than the tokens returned", "usage"),
    ("finish-reason-null", "non-streamed choices carry finish_reason: null", "finish_reason"),
    ("max-tokens-default-16", "without max_tokens the server generates 16 tokens", "max_tokens"),
    (
        "max-tokens-overrun",
        "generates max_tokens + 1 tokens (finish_reason still length)",
        "max_tokens",
    ),
    ("seed-ignored", "sampling with a seed is not reproducible across requests", "seed"),
    ("greedy-not-greedy", "temperature 0 picks the 2nd most likely token", "temperature"),
    ("n-ignored", "n > 1 returns a single choice", "n"),
    (
        "prompt-token-ids-missing",
        "return_token_ids: true does not echo prompt_token_ids",
        "return_token_ids",
    ),
    (
        "output-mode-not-echoed",
        "responses and chunks omit output_mode and text mode is ignored (tokens only, 200)",
        "output_mode",
    ),
    (
        "output-mode-wrong-echo",
        "echoes tokens even when text was requested (text still sent)",
        "output_mode",
    ),
    (
        "unknown-field-rejected",
        "unknown top-level or sampling_params keys get a 400",
        "unknown fields",
    ),
    # stop handling
    ("stop-token-dropped", "a matched stop token id is removed from token_ids", "stop_token_ids"),
    (
        "stop-reason-null",
        "stop_reason is null when a stop token / stop string matched",
        "stop_reason",
    ),
    ("stop-token-ids-ignored", "stop_token_ids never stop generation", "stop_token_ids"),
    ("stop-string-not-cut", "the matched stop string stays in text", "stop"),
    ("stop-string-trims-tokens", "a stop string match also trims token_ids", "stop"),
    ("eos-stop-reason-set", "EOS sets stop_reason to the EOS id instead of null", "stop_reason"),
    # logprobs
    ("logprobs-legacy-token-id", "tokens-mode logprobs use token_id:N strings", "logprobs"),
    ("logprobs-positive", "logprob values are positive", "logprobs"),
    ("logprobs-count-mismatch", "logprobs.content has one entry fewer than token_ids", "logprobs"),
    ("top-logprobs-sampled-not-first", "top_logprobs sorted by rank only", "top_logprobs"),
    ("top-logprobs-wrong-count", "top_logprobs has k+1 entries (0 for k=0)", "top_logprobs"),
    ("rank-wrong", "rank is always 1", "rank"),
    ("logprobs-over-max-accepted", "logprobs: 21 is accepted instead of 400", "max_logprobs"),
    (
        "prompt-logprobs-no-leading-null",
        "prompt_logprobs first entry is not null",
        "prompt_logprobs",
    ),
    # streaming
    ("stream-no-done", "the stream ends without data: [DONE]", "stream"),
    ("stream-bad-framing", "events separated by a single newline", "stream"),
    ("stream-cumulative-deltas", "each chunk carries all tokens so far", "stream"),
    (
        "stream-weight-versions-every-chunk",
        "non-final chunks carry weight_versions",
        "weight_versions",
    ),
    ("stream-finish-reason-early", "a non-final chunk carries a finish_reason", "stream"),
    ("stream-no-usage-chunk", "include_usage produces no usage chunk", "stream_options"),
    ("stream-multi-choice-chunk", "with n > 1 one chunk carries several choices", "stream"),
    (
        "stream-error-as-http",
        "engine-side rejections of a stream come back as HTTP 400",
        "stream errors",
    ),
    # text mode
    ("text-no-bytes", "text-mode logprobs lack bytes", "text logprobs"),
    (
        "text-logprobs-tokens-shape",
        "text mode returns the tokens-mode logprobs shape",
        "text logprobs",
    ),
    ("text-missing", "text mode omits text on choices", "text"),
    (
        "skip-special-ignored",
        "skip_special_tokens: true still shows special tokens",
        "skip_special_tokens",
    ),
    # weight versions
    ("weight-versions-missing", "the final output has no weight_versions", "weight_versions"),
    ("weight-versions-gap", "spans do not cover the output (end = n - 1)", "weight_versions"),
    (
        "weight-versions-not-reset",
        "label changes are not reflected in new requests",
        "weight_versions",
    ),
    (
        "weight-versions-empty-nonempty",
        'an output with no tokens gets [{"version": .., "start": 0, "end": 0}]',
        "weight_versions",
    ),
    # abort
    ("abort-ignored", "abort requests are accepted (200) but do nothing", "abort"),
    ("abort-missing-ids-200", "a missing request_ids answers 200", "abort"),
    ("abort-finish-reason-length", "an aborted request reports finish_reason: length", "abort"),
    ("abort-no-partial-output", "an aborted non-streamed request returns no tokens", "abort"),
    ("abort-no-auth", "/inference/v1/abort_requests does not require the API key", "abort auth"),
    (
        "legacy-abort-requires-key",
        "/abort_requests (tokens-only) requires the API key",
        "abort auth",
    ),
    ("legacy-abort-everywhere", "/abort_requests is served without --tokens-only", "registration"),
    (
        "disconnect-no-abort",
        "a client that disconnects mid-stream leaves its request running",
        "abort",
    ),
    # DP rank
    ("dp-rank-unchecked", "an out-of-range X-data-parallel-rank is accepted", "dp rank"),
    ("dp-rank-non-int-400", "a non-integer X-data-parallel-rank gets a 400", "dp rank"),
    # API key
    ("api-key-unchecked", "--api-key is not enforced", "api key"),
    ("unauthorized-body-wrong", 'the 401 body is {"detail": "Not authenticated"}', "api key"),
    ("health-guarded", "/health requires the key", "api key"),
    # disabled gating
    (
        "disabled-404",
        'with neither flag the scale-out routes answer 404 {"detail":"Not Found"}',
        "gating",
    ),
    ("disabled-message-wrong", "the 403 message differs from the document's", "gating"),
    (
        "disabled-validates-first",
        "with neither flag an invalid body gets 400 before the 403",
        "gating",
    ),
    # tokens-only
    (
        "tokens-only-stop-accepted",
        "stop strings are accepted (and ignored) on --tokens-only",
        "tokens-only",
    ),
    (
        "tokens-only-text-accepted",
        "output_mode: text is accepted without a tokenizer",
        "tokens-only",
    ),
    # render / derender
    ("derender-accepts-text", "derender accepts output_mode: text responses", "derender"),
    ("render-generate-mismatch", "render emits token_ids as strings", "render"),
    # multimodal
    (
        "features-content-parts-accepted",
        "features together with content_parts is accepted",
        "features",
    ),
    # errors / robustness
    ("validation-422", "validation errors answer 422 instead of 400", "errors"),
    ("error-body-flat", '400 bodies are {"message": .., "code": 400}', "errors"),
    ("empty-token-ids-accepted", "token_ids: [] is accepted", "token_ids"),
    ("negative-token-ids-accepted", "negative token ids are accepted", "token_ids"),
    ("oov-token-500", "a token id >= vocab size answers 500 and the server exits", "token_ids"),
    ("invalid-json-500", "malformed JSON answers 500", "errors"),
    ("wrong-content-type-accepted", "a non-JSON Content-Type is accepted", "errors"),
    ("hang-generate", "generate never answers (holds the connection open)", "robustness"),
    ("garbage-json", "generate answers 200 with a body that is not JSON", "robustness"),
    ("schema-index-string", "choices[].index is a string", "schema"),
)

DEFECTS: dict[str, Defect] = {
    name: Defect(name=name, description=description, breaks=(breaks,))
    for name, description, breaks in _RAW
}


def catalogue_text() -> str:
    """The catalogue as `--mock-defect list` prints it."""
    width = max(len(name) for name in DEFECTS)
    return "\n".join(f"{d.name:<{width}}  {d.description}" for d in DEFECTS.values())
