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
    ("tokens-mode-text", "tokens-mode choices also carry the decoded text", "output_mode"),
    (
        "token-ids-missing-accepted",
        "a body without token_ids generates from an empty prompt (200)",
        "token_ids",
    ),
    (
        "sampling-params-optional",
        "a body without sampling_params is answered with the defaults (200)",
        "sampling_params",
    ),
    (
        "default-output-mode-text",
        "a request without output_mode is answered in text mode",
        "output_mode",
    ),
    ("optional-fields-rejected", "a valid cache_salt answers 400", "optional fields"),
    ("token-ids-as-strings", 'choices carry token_ids as decimal strings ("17")', "token_ids"),
    (
        "request-id-header-ignored",
        "X-Request-Id is ignored (body id or a random one is used)",
        "request_id",
    ),
    (
        "routed-experts-always",
        'choices carry routed_experts "AAAA" without the flag',
        "routed_experts",
    ),
    ("scale-out-generate-404", "with --enable-scale-out generate answers 404", "registration"),
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
    ("length-stop-reason-set", "finish_reason length comes with stop_reason 0", "stop_reason"),
    ("abort-stop-reason-set", 'aborted choices carry stop_reason "abort"', "stop_reason"),
    (
        "include-stop-str-ignored",
        "include_stop_str_in_output: true still cuts the stop string",
        "stop",
    ),
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
    (
        "logprobs-always",
        "logprobs (the k=0 shape) are returned without sampling_params.logprobs",
        "logprobs",
    ),
    (
        "tokens-logprobs-with-token",
        'tokens-mode entries also carry "token" and "bytes": null',
        "logprobs",
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
    (
        "stream-empty-chunk",
        "one extra chunk per choice with no tokens, no text, no finish_reason",
        "stream",
    ),
    (
        "stream-schema-error-200",
        "schema errors of a streamed request are a 200 with an error event",
        "stream errors",
    ),
    ("stream-chunk-no-output-mode", "stream chunks omit output_mode", "output_mode"),
    ("stream-held-text-lost", "text held back for stop matching is never streamed", "stop"),
    (
        "stream-no-final-weight-versions",
        "the last chunk of a choice carries weight_versions: null",
        "weight_versions",
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
    (
        "text-mode-other-tokens",
        "text mode samples with seed + 1 (other token_ids than tokens mode)",
        "text",
    ),
    (
        "stream-text-cumulative",
        "text-mode chunks carry the whole text so far, not the delta",
        "text",
    ),
    (
        "text-detokenize-false-accepted",
        "output_mode text with detokenize false answers 200",
        "text",
    ),
    (
        "placeholder-wrong-id",
        "--return-tokens-as-token-ids placeholders name token id + 1",
        "text logprobs",
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
    (
        "weight-label-not-default",
        'the initial label is "v0" (while /weight_info says "default")',
        "weight_versions",
    ),
    (
        "weight-update-no-split",
        "a label change mid-request relabels the whole output (one span)",
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
    (
        "abort-route-missing",
        "/inference/v1/abort_requests answers 404 (generate still served)",
        "registration",
    ),
    (
        "abort-json-body",
        'abort answers 200 with {"status": "ok"} instead of an empty body',
        "abort",
    ),
    (
        "legacy-abort-ignored",
        "/abort_requests (tokens-only) answers 200 but aborts nothing",
        "abort",
    ),
    # DP rank
    ("dp-rank-unchecked", "an out-of-range X-data-parallel-rank is accepted", "dp rank"),
    ("dp-rank-non-int-400", "a non-integer X-data-parallel-rank gets a 400", "dp rank"),
    ("dp-rank-zero-rejected", "X-data-parallel-rank: 0 answers 400", "dp rank"),
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
    ("disabled-abort-open", "with neither flag /inference/v1/abort_requests answers 200", "gating"),
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
    (
        "tokens-only-generate-403",
        "--tokens-only without --enable-scale-out answers generate 403",
        "tokens-only",
    ),
    (
        "tokens-only-detokenize-text",
        "on --tokens-only an explicit detokenize: true answers 400",
        "tokens-only",
    ),
    (
        "tokens-only-stop-token-ids-ignored",
        "stop_token_ids never stop generation on --tokens-only",
        "tokens-only",
    ),
    # render / derender
    ("derender-accepts-text", "derender accepts output_mode: text responses", "derender"),
    ("render-generate-mismatch", "render emits token_ids as strings", "render"),
    ("render-missing", "render and derender answer 404 on a scale-out server", "render"),
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
    (
        "output-mode-any-accepted",
        "an unknown or null output_mode is treated as tokens (200)",
        "output_mode",
    ),
    ("type-error-500", 'a wrongly typed temperature ("x") answers 500', "errors"),
    ("null-rejected", "an explicit stop: null answers 400", "null fields"),
    ("max-tokens-zero-accepted", "max_tokens: 0 is accepted (200, one token)", "max_tokens"),
)

DEFECTS: dict[str, Defect] = {
    name: Defect(name=name, description=description, breaks=(breaks,))
    for name, description, breaks in _RAW
}


def catalogue_text() -> str:
    """The catalogue as `--mock-defect list` prints it."""
    width = max(len(name) for name in DEFECTS)
    return "\n".join(f"{d.name:<{width}}  {d.description}" for d in DEFECTS.values())
