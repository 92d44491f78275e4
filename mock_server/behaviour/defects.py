"""The defect catalogue: each entry makes the mock wrong in exactly one way.

The conformance suite proves itself by failing against each defect. Names are a contract with
the suite (never rename). A defect that only rewrites a finished answer (body, stream chunk,
SSE frame, error status) is a named transformer in `mock_server/transforms/`; one that changes
what the server does (sampling, validation, aborts, routing) carries its `policy` here: how it
bends the slot of one stage (`mock_server.behaviour.bends`; the code of that stage reads its
slot, never the defect's name).
Each entry also declares what it breaks, as data the suite's own tests read: the requirement IDs
(plain strings: the mock never imports the suite) that must fail, and nothing much beyond them,
against the mock started in `profile` with `flags` and the defect.
"""

from __future__ import annotations

from dataclasses import dataclass

from mock_server.behaviour.bends import Bend, Guard, Rows, Setting


@dataclass(frozen=True)
class Defect:
    """One named way to be wrong, and where it shows.

    `breaks` names the behaviour in words; `requirements` the IDs whose checks must fail;
    `profile` the server profile the behaviour exists in; `flags` the extra mock flags it needs;
    `policy` how it bends its stage's slot, if it changes what the server does (a defect that
    only rewrites an answer has none: its transformer is registered in `mock_server.transforms`).
    `shows` says which run of the suite fails `requirements`: `run`, a few requests at a time
    (tests/test_conformance_blast_radius.py holds it to that), or `load` only: the defect acts
    only past a threshold of concurrency `run` never reaches, or on an event only a load run
    makes (a resume), so `run` must see nothing (the blast radius holds it to 0) and
    `tito-conformance load` must fail `requirements` (tests/test_load_defects.py).
    """

    name: str
    description: str
    breaks: tuple[str, ...]
    requirements: tuple[str, ...]
    profile: str = "scale-out"
    flags: tuple[str, ...] = ()
    policy: Bend | None = None
    shows: str = "run"  # or "load"

    def __post_init__(self) -> None:
        if self.shows not in SHOWS:
            raise ValueError(f"{self.name}: shows {self.shows!r} is none of {SHOWS}")


SHOWS = ("run", "load")
RELEASE_034 = ("--mock-vllm-version", "0.34")
"""The flags of the defects of release extensions: the mock plays the release that has them."""
BUSY = 12
"""Requests in flight past which a load-only defect acts. `tito-conformance load`'s default 16
users keep more than that in flight against the mock paced by `PACED` most of the time (about
60 % of a run's samples on a loaded 2-core machine); `run` never has more than 7 at once
(measured on every main profile and the in-flight settings: the suite's parallel workers and
the fuzz beside them), and its queued in-flight plans, which can send 12 or more, come only
after a request it could not otherwise catch in flight."""
PACED = ("--mock-itl-ms", "3")
"""The pace a load-only defect needs: 3 ms a token keeps requests in flight long enough for
16 users to crowd the engine (unpaced, a request ends in under a millisecond)."""


_CATALOGUE: tuple[Defect, ...] = (
    # core generate
    Defect(
        "request-id-no-prefix",
        "request_id returned without the generate-tokens- prefix",
        breaks=("request_id",),
        requirements=("GEN-RESP-004",),
    ),
    Defect(
        "request-id-body-wins",
        "body request_id wins over the X-Request-Id header",
        breaks=("request_id",),
        requirements=("GEN-RESP-006",),
        policy=Setting("admit", request_id_body_first=True),
    ),
    Defect(
        "usage-miscount",
        "usage.completion_tokens is one more than the tokens returned",
        breaks=("usage",),
        requirements=("GEN-RESP-003",),
    ),
    Defect(
        "finish-reason-null",
        "non-streamed choices carry finish_reason: null",
        breaks=("finish_reason",),
        requirements=("GEN-RESP-002",),
    ),
    Defect(
        "max-tokens-default-16",
        "without max_tokens the server generates 16 tokens",
        breaks=("max_tokens",),
        requirements=("GEN-REQ-009",),
        policy=Setting("admit", default_max_tokens=16),
    ),
    Defect(
        "max-tokens-overrun",
        "generates max_tokens + 1 tokens (finish_reason still length)",
        breaks=("max_tokens",),
        requirements=("GEN-REQ-005", "GEN-RESP-001"),
        policy=Setting("admit", max_tokens_extra=1),
    ),
    Defect(
        "seed-ignored",
        "sampling with a seed is not reproducible across requests",
        breaks=("seed",),
        requirements=("GEN-REQ-007",),
        policy=Setting("generate", seeded=False),
    ),
    Defect(
        "greedy-not-greedy",
        "temperature 0 picks the 2nd most likely token",
        breaks=("temperature",),
        requirements=("GEN-REQ-006",),
        policy=Setting("generate", greedy_rank=2),
    ),
    Defect(
        "choices-out-of-order",
        "a non-streamed answer of n > 1 lists its choices last index first",
        breaks=("n",),
        requirements=("GEN-RESP-008",),
    ),
    Defect(
        "n-ignored",
        "n > 1 returns a single choice",
        breaks=("n",),
        requirements=("GEN-REQ-008",),
        policy=Setting("generate", n_honoured=False),
    ),
    Defect(
        "prompt-token-ids-missing",
        "return_token_ids: true does not echo prompt_token_ids",
        breaks=("return_token_ids",),
        requirements=("GEN-REQ-011",),
    ),
    Defect(
        "output-mode-not-echoed",
        "responses and chunks omit output_mode and text mode is ignored (tokens only, 200)",
        breaks=("output_mode",),
        requirements=("TEXT-005", "TEXT-006"),
        policy=Rows(("output_mode.text_needs_tokenizer",)),
    ),
    Defect(
        "output-mode-wrong-echo",
        "echoes tokens even when text was requested (text still sent)",
        breaks=("output_mode",),
        requirements=("TEXT-007",),
    ),
    Defect(
        "unknown-field-rejected",
        "unknown top-level or sampling_params keys get a 400",
        breaks=("unknown fields",),
        requirements=("ERR-004",),
        policy=Rows(("unknown_fields.ignored",)),
    ),
    Defect(
        "tokens-mode-text",
        "tokens-mode choices also carry the decoded text",
        breaks=("output_mode",),
        requirements=("GEN-002",),
    ),
    Defect(
        "token-ids-missing-accepted",
        "a body without token_ids generates from an empty prompt (200)",
        breaks=("token_ids",),
        requirements=("GEN-REQ-001",),
        policy=Rows(("token_ids.required",)),
    ),
    Defect(
        "sampling-params-optional",
        "a body without sampling_params is answered with the defaults (200)",
        breaks=("sampling_params",),
        requirements=("GEN-REQ-004",),
        policy=Rows(("sampling_params.required",)),
    ),
    Defect(
        "default-output-mode-text",
        "a request without output_mode is answered in text mode",
        breaks=("output_mode",),
        requirements=("GEN-REQ-010",),
        policy=Setting("validate", default_output_mode="text"),
    ),
    Defect(
        "optional-fields-rejected",
        "a valid cache_salt answers 400",
        breaks=("optional fields",),
        requirements=("GEN-REQ-012",),
        policy=Rows(("cache_salt.accepted",)),
    ),
    Defect(
        "token-ids-as-strings",
        'choices carry token_ids as decimal strings ("17")',
        breaks=("token_ids",),
        requirements=("GEN-RESP-001",),
    ),
    # a rule broken in one kind of answer only (the every-answer checks)
    Defect(
        "stream-ranks-shifted",
        "a tokens-mode stream's logprob ranks are one too high (bodies are right)",
        breaks=("logprobs",),
        requirements=("LOGP-006",),
    ),
    Defect(
        "text-logprobs-short",
        "a text-mode answer's logprobs miss their last entry",
        breaks=("logprobs",),
        requirements=("LOGP-002",),
    ),
    Defect(
        "text-sampled-not-first",
        "a text-mode answer lists the sampled token second in top_logprobs",
        breaks=("logprobs",),
        requirements=("LOGP-003",),
    ),
    Defect(
        "text-logprobs-positive",
        "every logprob of a text-mode answer is 0.5",
        breaks=("logprobs",),
        requirements=("LOGP-007",),
    ),
    Defect(
        "text-stream-bytes-wrong",
        "a text-mode stream's logprob bytes carry one byte too many",
        breaks=("text logprobs",),
        requirements=("TEXT-003",),
    ),
    Defect(
        "text-spans-short",
        "a text-mode answer's weight_versions end one token early",
        breaks=("weight_versions",),
        requirements=("WV-002",),
    ),
    Defect(
        "text-stream-spans-short",
        "a text-mode stream's weight_versions end one token early",
        breaks=("weight_versions",),
        requirements=("WV-004",),
    ),
    Defect(
        "text-request-id-other",
        "a text-mode answer names another request id than the one it was sent",
        breaks=("request_id",),
        requirements=("GEN-RESP-004",),
    ),
    Defect(
        "usage-chunk-other-id",
        "a stream's usage chunk names another request id than its other chunks",
        breaks=("request_id",),
        requirements=("GEN-RESP-004",),
    ),
    Defect(
        "text-stream-top-logprobs-short",
        "a text-mode stream lists one alternative too few in each top_logprobs",
        breaks=("logprobs",),
        requirements=("LOGP-008",),
    ),
    Defect(
        "usage-chunk-other-mode",
        "a stream's usage chunk echoes the other output_mode than the one asked for",
        breaks=("output_mode",),
        requirements=("TEXT-006",),
    ),
    Defect(
        "text-stream-ids-shifted",
        "a text-mode stream's token ids are each one too high",
        breaks=("token_ids",),
        requirements=("STREAM-003",),
    ),
    Defect(
        "text-stream-stop-reason-other",
        "a text-mode stream ended by a stop string names another string as its stop_reason",
        breaks=("stop_reason",),
        requirements=("STOP-001",),
    ),
    Defect(
        "stream-error-code-500",
        "an engine-side rejection's error event says code 500, not the unstreamed 400",
        breaks=("stream errors",),
        requirements=("STREAM-008",),
    ),
    Defect(
        "text-label-other",
        "a text-mode answer's spans carry a label the server was never given",
        breaks=("weight_versions",),
        requirements=("WV-008",),
        profile="api-key",  # no dev endpoints: no client can change the label
    ),
    Defect(
        "choices-short-with-logprobs",
        "with n > 1 and logprobs asked, the last choice is missing",
        breaks=("choices",),
        requirements=("GEN-REQ-008",),
    ),
    Defect(
        "token-ids-shifted",
        "non-streamed token_ids name the next id of each generated token",
        breaks=("token_ids",),
        requirements=("GEN-RESP-001",),
    ),
    Defect(
        "request-id-header-ignored",
        "X-Request-Id is ignored (body id or a random one is used)",
        breaks=("request_id",),
        requirements=("GEN-RESP-005",),
        policy=Setting("admit", request_id_header=False),
    ),
    Defect(
        "routed-experts-always",
        'choices carry routed_experts "AAAA" without the flag',
        breaks=("routed_experts",),
        requirements=("GEN-RESP-007",),
    ),
    Defect(
        "scale-out-generate-404",
        "with --enable-scale-out generate answers 404",
        breaks=("registration",),
        requirements=("GEN-003",),
        policy=Setting("gate", generate_404=True),
    ),
    # stop handling
    Defect(
        "stop-token-dropped",
        "a matched stop token id is removed from token_ids",
        breaks=("stop_token_ids",),
        requirements=("STOP-002",),
        policy=Setting("generate", drop_stop_token=True),
    ),
    Defect(
        "stop-reason-null",
        "stop_reason is null when a stop token / stop string matched",
        breaks=("stop_reason",),
        requirements=("STOP-001", "STOP-009"),
        policy=Setting("generate", stop_reason_reported=False),
    ),
    Defect(
        "stop-token-ids-ignored",
        "stop_token_ids never stop generation",
        breaks=("stop_token_ids",),
        requirements=("STOP-001",),
        policy=Setting("generate", stop_token_ids_honoured=False),
    ),
    Defect(
        "stop-string-not-cut",
        "the matched stop string stays in text",
        breaks=("stop",),
        requirements=("STOP-006",),
        policy=Setting("generate", cut_stop_string=False),
    ),
    Defect(
        "stop-string-trims-tokens",
        "a stop string match also trims token_ids",
        breaks=("stop",),
        requirements=("STOP-008",),
        policy=Setting("generate", stop_string_trims=True),
    ),
    Defect(
        "eos-stop-reason-set",
        "EOS sets stop_reason to the EOS id instead of null",
        breaks=("stop_reason",),
        requirements=("STOP-003",),
        policy=Setting("generate", eos_stop_reason=True),
    ),
    Defect(
        "length-stop-reason-set",
        "finish_reason length comes with stop_reason 0",
        breaks=("stop_reason",),
        requirements=("STOP-004",),
        policy=Setting("generate", length_stop_reason=0),
    ),
    Defect(
        "abort-stop-reason-set",
        'aborted choices carry stop_reason "abort"',
        breaks=("stop_reason",),
        requirements=("STOP-005",),
        policy=Setting("generate", abort_stop_reason="abort"),
    ),
    Defect(
        "include-stop-str-ignored",
        "include_stop_str_in_output: true still cuts the stop string",
        breaks=("stop",),
        requirements=("STOP-007",),
        policy=Setting("generate", include_stop_str_honoured=False),
    ),
    # logprobs
    Defect(
        "logprobs-legacy-token-id",
        "tokens-mode logprobs use token_id:N strings",
        breaks=("logprobs",),
        requirements=("LOGP-001",),
        policy=Setting("build", legacy_logprobs=True),
    ),
    Defect(
        "logprobs-null",
        "logprobs is null on every choice although sampling_params.logprobs asked for them",
        breaks=("logprobs",),
        requirements=("LOGP-002",),
    ),
    Defect(
        "logprobs-positive",
        "logprob values are positive",
        breaks=("logprobs",),
        requirements=("LOGP-007",),
    ),
    Defect(
        "logprobs-count-mismatch",
        "logprobs.content has one entry fewer than token_ids",
        breaks=("logprobs",),
        requirements=("LOGP-002",),
    ),
    Defect(
        "top-logprobs-sampled-not-first",
        "top_logprobs sorted by rank only",
        breaks=("top_logprobs",),
        requirements=("LOGP-003",),
    ),
    Defect(
        "top-logprobs-wrong-count",
        "top_logprobs has k+1 entries (0 for k=0)",
        breaks=("top_logprobs",),
        requirements=("LOGP-008",),
        policy=Setting("build", top_logprobs_wrong_count=True),
    ),
    Defect("rank-wrong", "rank is always 1", breaks=("rank",), requirements=("LOGP-006",)),
    Defect(
        "logprobs-over-max-accepted",
        "logprobs: 21 is accepted instead of 400",
        breaks=("max_logprobs",),
        requirements=("LOGP-009",),
        policy=Rows(("logprobs.max", "prompt_logprobs.max")),
    ),
    Defect(
        "prompt-logprobs-ranks-shifted",
        "every rank of the prompt_logprobs is one too high",
        breaks=("prompt_logprobs",),
        requirements=("LOGP-006",),
    ),
    Defect(
        "prompt-logprobs-no-leading-null",
        "prompt_logprobs first entry is not null",
        breaks=("prompt_logprobs",),
        requirements=("LOGP-010",),
        policy=Setting("build", prompt_logprobs_leading_null=False),
    ),
    Defect(
        "logprobs-always",
        "logprobs (the k=0 shape) are returned without sampling_params.logprobs",
        breaks=("logprobs",),
        requirements=("LOGP-004",),
        policy=Setting("build", logprobs_always=True),
    ),
    Defect(
        "tokens-logprobs-with-token",
        'tokens-mode entries also carry "token" and "bytes": null',
        breaks=("logprobs",),
        requirements=("LOGP-005",),
    ),
    # streaming
    Defect(
        "stream-no-done",
        "the stream ends without data: [DONE]",
        breaks=("stream",),
        requirements=("STREAM-002",),
    ),
    Defect(
        "stream-bad-framing",
        "events separated by a single newline",
        breaks=("stream",),
        requirements=("STREAM-001",),
    ),
    Defect(
        "stream-cumulative-deltas",
        "each chunk carries all tokens so far",
        breaks=("stream",),
        requirements=("STREAM-003",),
    ),
    Defect(
        "stream-weight-versions-every-chunk",
        "non-final chunks carry weight_versions",
        breaks=("weight_versions",),
        requirements=("WV-005",),
    ),
    Defect(
        "stream-finish-reason-early",
        "a non-final chunk carries a finish_reason",
        breaks=("stream",),
        requirements=("STREAM-005",),
    ),
    Defect(
        "stream-no-usage-chunk",
        "include_usage produces no usage chunk",
        breaks=("stream_options",),
        requirements=("STREAM-007",),
    ),
    Defect(
        "stream-multi-choice-chunk",
        "with n > 1 one chunk carries several choices",
        breaks=("stream",),
        requirements=("STREAM-006",),
        policy=Setting("frame", multi_choice_chunks=True),
    ),
    Defect(
        "stream-error-as-http",
        "engine-side rejections of a stream come back as HTTP 400",
        breaks=("stream errors",),
        requirements=("STREAM-008",),
        policy=Rows(("errors.streamed",)),
    ),
    Defect(
        "stream-empty-chunk",
        "one extra chunk per choice with no tokens, no text, no finish_reason",
        breaks=("stream",),
        requirements=("STREAM-004",),
        policy=Setting("frame", empty_chunk=True),
    ),
    Defect(
        "stream-schema-error-200",
        "schema errors of a streamed request are a 200 with an error event",
        breaks=("stream errors",),
        requirements=("STREAM-009",),
        policy=Setting("parse", schema_error_streamed=True),
    ),
    Defect(
        "stream-chunk-no-output-mode",
        "stream chunks omit output_mode",
        breaks=("output_mode",),
        requirements=("TEXT-006",),
    ),
    Defect(
        "stream-held-text-lost",
        "text held back for stop matching is never streamed",
        breaks=("stop",),
        requirements=("STOP-010",),
    ),
    Defect(
        "stream-no-final-weight-versions",
        "the last chunk of a choice carries weight_versions: null",
        breaks=("weight_versions",),
        requirements=("WV-003",),
    ),
    Defect(
        "stream-weight-versions-short",
        "a stream's last spans leave out its last token (non-streamed spans are right)",
        breaks=("weight_versions",),
        requirements=("WV-004",),
    ),
    # text mode
    Defect(
        "text-no-bytes",
        "text-mode logprobs lack bytes",
        breaks=("text logprobs",),
        requirements=("TEXT-002",),
    ),
    Defect(
        "text-logprobs-tokens-shape",
        "text mode returns the tokens-mode logprobs shape",
        breaks=("text logprobs",),
        requirements=("TEXT-003",),
        policy=Setting("build", text_logprobs=False),
    ),
    Defect(
        "text-missing",
        "text mode omits text on choices",
        breaks=("text",),
        requirements=("TEXT-001",),
    ),
    Defect(
        "skip-special-ignored",
        "skip_special_tokens: true still shows special tokens",
        breaks=("skip_special_tokens",),
        requirements=("TEXT-008",),
        policy=Setting("generate", skip_special_honoured=False),
    ),
    Defect(
        "text-mode-other-tokens",
        "text mode samples with seed + 1 (other token_ids than tokens mode)",
        breaks=("text",),
        requirements=("TEXT-004",),
        policy=Setting("generate", text_seed_offset=1),
    ),
    Defect(
        "stream-text-cumulative",
        "text-mode chunks carry the whole text so far, not the delta",
        breaks=("text",),
        requirements=("TEXT-009",),
    ),
    Defect(
        "text-detokenize-false-accepted",
        "output_mode text with detokenize false answers 200",
        breaks=("text",),
        requirements=("TEXT-010",),
        policy=Rows(("output_mode.text_needs_detokenize",)),
    ),
    Defect(
        "placeholder-wrong-id",
        "--return-tokens-as-token-ids placeholders name token id + 1",
        breaks=("text logprobs",),
        requirements=("TEXT-011",),
        flags=("--return-tokens-as-token-ids",),
    ),
    # weight versions
    Defect(
        "weight-versions-missing",
        "the final output has no weight_versions",
        breaks=("weight_versions",),
        requirements=("WV-001",),
    ),
    Defect(
        "weight-versions-gap",
        "spans do not cover the output (end = n - 1)",
        breaks=("weight_versions",),
        requirements=("WV-002",),
    ),
    Defect(
        "weight-versions-not-reset",
        "label changes are not reflected in new requests",
        breaks=("weight_versions",),
        requirements=("WV-007",),
        policy=Setting("generate", weight_updates=False),
    ),
    Defect(
        "weight-versions-empty-nonempty",
        'an output with no tokens gets [{"version": .., "start": 0, "end": 0}]',
        breaks=("weight_versions",),
        requirements=("WV-006",),
    ),
    Defect(
        "weight-label-not-default",
        'the initial label is "v0" (while /weight_info says "default")',
        breaks=("weight_versions",),
        requirements=("WV-008",),
        policy=Setting("generate", default_label="v0"),
    ),
    Defect(
        "weight-update-no-split",
        "a label change mid-request relabels the whole output (one span)",
        breaks=("weight_versions",),
        requirements=("WV-009",),
    ),
    # abort
    Defect(
        "abort-ignored",
        "abort requests are accepted (200) but do nothing",
        breaks=("abort",),
        requirements=("ABORT-002", "ABORT-003"),
        policy=Setting("admit", aborts_honoured=False),
    ),
    Defect(
        "abort-missing-ids-200",
        "a missing request_ids answers 200",
        breaks=("abort",),
        requirements=("ABORT-005",),
        policy=Setting("admit", abort_ids_required=False),
    ),
    Defect(
        "abort-finish-reason-length",
        "an aborted request reports finish_reason: length",
        breaks=("abort",),
        requirements=("ABORT-002", "ABORT-003"),
    ),
    Defect(
        "abort-no-partial-output",
        "an aborted non-streamed request returns no tokens",
        breaks=("abort",),
        requirements=("ABORT-004",),
    ),
    Defect(
        "abort-no-auth",
        "/inference/v1/abort_requests does not require the API key",
        breaks=("abort auth",),
        requirements=("AUTH-002",),
        profile="api-key",
        policy=Guard("/inference/v1/abort_requests", False),
    ),
    Defect(
        "legacy-abort-requires-key",
        "/abort_requests (tokens-only) requires the API key",
        breaks=("abort auth",),
        requirements=("AUTH-003",),
        profile="tokens-only-api-key",
        policy=Guard("/abort_requests", True),
    ),
    Defect(
        "legacy-abort-everywhere",
        "/abort_requests is served without --tokens-only",
        breaks=("registration",),
        requirements=("ABORT-008",),
        profile="api-key",
        policy=Setting("gate", legacy_abort_everywhere=True),
    ),
    Defect(
        "disconnect-no-abort",
        "a client that disconnects mid-stream leaves its request running",
        breaks=("abort",),
        requirements=("ABORT-009",),
        policy=Setting("admit", abort_on_disconnect=False),
    ),
    Defect(
        "disconnect-whole-no-abort",
        "a client that hangs up before a non-streamed answer leaves its request running",
        breaks=("abort",),
        requirements=("ABORT-010",),
        policy=Setting("admit", abort_on_whole_disconnect=False),
    ),
    Defect(
        "abort-route-missing",
        "/inference/v1/abort_requests answers 404 (generate still served)",
        breaks=("registration",),
        requirements=("ABORT-001",),
        policy=Setting("gate", abort_route=False),
    ),
    Defect(
        "dev-abort-count-renamed",
        'the dev-mode /abort_requests answers {"status": "aborted", "aborted_count": N}',
        breaks=("abort",),
        requirements=("ABORT-008",),
        policy=Setting("write", dev_abort_count_key="aborted_count"),
    ),
    Defect(
        "abort-json-body",
        'abort answers 200 with {"status": "ok"} instead of an empty body',
        breaks=("abort",),
        requirements=("ABORT-006",),
        policy=Setting("write", abort_json_body=True),
    ),
    Defect(
        "legacy-abort-ignored",
        "/abort_requests (tokens-only) answers 200 but aborts nothing",
        breaks=("abort",),
        requirements=("ABORT-007",),
        profile="tokens-only",
        policy=Setting("admit", legacy_abort_acts=False),
    ),
    # DP rank
    Defect(
        "dp-rank-unchecked",
        "an out-of-range X-data-parallel-rank is accepted",
        breaks=("dp rank",),
        requirements=("DP-003",),
        policy=Rows(("dp_rank.in_range",)),
    ),
    Defect(
        "dp-rank-non-int-400",
        "a non-integer X-data-parallel-rank gets a 400",
        breaks=("dp rank",),
        requirements=("DP-002",),
        policy=Rows(("dp_rank.non_int_ignored",)),
    ),
    Defect(
        "dp-rank-zero-rejected",
        "X-data-parallel-rank: 0 answers 400",
        breaks=("dp rank",),
        requirements=("DP-001",),
        policy=Rows(("dp_rank.in_range",), ("dp_rank.from_1",)),
    ),
    # API key
    Defect(
        "api-key-unchecked",
        "--api-key is not enforced",
        breaks=("api key",),
        requirements=("AUTH-001",),
        profile="api-key",
        policy=Setting("gate", api_key_checked=False),
    ),
    Defect(
        "api-key-generate-open",
        "with --api-key, generate is served without the key while abort and render still demand it",
        breaks=("api key",),
        requirements=("AUTH-001",),
        profile="api-key",
        policy=Guard("/inference/v1/generate", False),
    ),
    Defect(
        "unauthorized-body-wrong",
        'the 401 body is {"detail": "Not authenticated"}',
        breaks=("api key",),
        requirements=("AUTH-004",),
        profile="api-key",
    ),
    Defect(
        "health-guarded",
        "/health requires the key",
        breaks=("api key",),
        requirements=("AUTH-005",),
        profile="api-key",
        policy=Guard("/health", True),
    ),
    # disabled gating
    Defect(
        "disabled-404",
        'with neither flag the scale-out routes answer 404 {"detail":"Not Found"}',
        breaks=("gating",),
        requirements=("DISABLED-001", "DISABLED-004"),
        profile="disabled",
    ),
    Defect(
        "disabled-message-wrong",
        "the 403 message differs from the document's",
        breaks=("gating",),
        requirements=("DISABLED-002",),
        profile="disabled",
    ),
    Defect(
        "disabled-validates-first",
        "with neither flag an invalid body gets 400 before the 403",
        breaks=("gating",),
        requirements=("DISABLED-003",),
        profile="disabled",
        policy=Setting("gate", disabled_validates_first=True),
    ),
    Defect(
        "disabled-abort-open",
        "with neither flag /inference/v1/abort_requests answers 200",
        breaks=("gating",),
        requirements=("DISABLED-004",),
        profile="disabled",
        policy=Setting("gate", disabled_abort_open=True),
    ),
    # tokens-only
    Defect(
        "tokens-only-stop-accepted",
        "stop strings are accepted (and ignored) on --tokens-only",
        breaks=("tokens-only",),
        requirements=("TOKONLY-004",),
        profile="tokens-only",
        policy=Rows(("stop.tokens_only",)),
    ),
    Defect(
        "tokens-only-text-accepted",
        "output_mode: text is accepted without a tokenizer",
        breaks=("tokens-only",),
        requirements=("TOKONLY-002",),
        profile="tokens-only",
        policy=Rows(("output_mode.text_needs_tokenizer",)),
    ),
    Defect(
        "tokens-only-generate-403",
        "--tokens-only without --enable-scale-out answers generate 403",
        breaks=("tokens-only",),
        requirements=("TOKONLY-001",),
        profile="tokens-only",
        policy=Setting("gate", tokens_only_generate_disabled=True),
    ),
    Defect(
        "tokens-only-detokenize-text",
        "on --tokens-only an explicit detokenize: true answers 400",
        breaks=("tokens-only",),
        requirements=("TOKONLY-003",),
        profile="tokens-only",
        policy=Rows((), ("detokenize.tokens_only",)),
    ),
    Defect(
        "tokens-only-stop-token-ids-ignored",
        "stop_token_ids never stop generation on --tokens-only",
        breaks=("tokens-only",),
        requirements=("TOKONLY-005", "STOP-001"),
        profile="tokens-only",
        policy=Setting("generate", stop_token_ids_honoured_tokens_only=False),
    ),
    # render / derender
    Defect(
        "derender-accepts-text",
        "derender accepts output_mode: text responses",
        breaks=("derender",),
        requirements=("RENDER-003",),
        policy=Rows(("derender.text_rejected",)),
    ),
    Defect(
        "render-generate-mismatch",
        "render emits token_ids as strings",
        breaks=("render",),
        requirements=("RENDER-002",),
        policy=Setting("build", render_ids_as_strings=True),
    ),
    Defect(
        "render-params-lost",
        "render answers temperature 1 and max_tokens 16 whatever the request asked",
        breaks=("render",),
        requirements=("RENDER-002",),
        policy=Setting("build", render_params_lost=True),
    ),
    Defect(
        "derender-finish-stop",
        "a derendered completion choice says finish_reason stop whatever the response said",
        breaks=("derender",),
        requirements=("RENDER-002",),
        policy=Setting("build", derender_finish_stop=True),
    ),
    Defect(
        "render-missing",
        "render and derender answer 404 on a scale-out server",
        breaks=("render",),
        requirements=("RENDER-001",),
        policy=Setting("gate", render_routes=False),
    ),
    # multimodal
    Defect(
        "features-content-parts-accepted",
        "features together with content_parts is accepted",
        breaks=("features",),
        requirements=("MM-001",),
        policy=Rows(("content_parts.exclusive",)),
    ),
    # errors / robustness
    Defect(
        "validation-422",
        "validation errors answer 422 instead of 400",
        breaks=("errors",),
        requirements=("ERR-003",),
    ),
    Defect(
        "error-body-flat",
        '400 bodies are {"message": .., "code": 400}',
        breaks=("errors",),
        requirements=("ERR-002",),
    ),
    Defect(
        "errors-as-200",
        "400 errors keep their body but answer HTTP 200",
        breaks=("errors",),
        requirements=("ERR-002",),
    ),
    Defect(
        "empty-token-ids-accepted",
        "token_ids: [] is accepted",
        breaks=("token_ids",),
        requirements=("GEN-REQ-002",),
        policy=Rows(("token_ids.non_empty",)),
    ),
    Defect(
        "negative-token-ids-accepted",
        "negative token ids are accepted",
        breaks=("token_ids",),
        requirements=("GEN-REQ-003",),
        policy=Rows(("token_ids.non_negative",)),
    ),
    Defect(
        "oov-token-500",
        "a token id >= vocab size answers 500 and the server exits",
        breaks=("token_ids",),
        requirements=("ERR-007",),
        profile="tokens-only",
        policy=Rows(("token_ids.oov_400", "token_ids.in_vocab")),
    ),
    Defect(
        "invalid-json-500",
        "malformed JSON answers 500",
        breaks=("errors",),
        requirements=("ERR-005",),
        policy=Setting("parse", bad_json_status=500),
    ),
    Defect(
        "wrong-content-type-accepted",
        "a non-JSON Content-Type is accepted",
        breaks=("errors",),
        requirements=("ERR-006",),
        policy=Setting("parse", media_type_checked=False),
    ),
    Defect(
        "hang-generate",
        "generate never answers (holds the connection open)",
        breaks=("robustness",),
        requirements=("GEN-001", "LOAD-001"),
        policy=Setting("gate", hang_generate=True),
    ),
    Defect(
        "garbage-json",
        "generate answers 200 with a body that is not JSON",
        breaks=("robustness",),
        requirements=("GEN-001",),
    ),
    Defect(
        "generate-json-as-text",
        "the non-streamed generate answer (JSON) is sent as text/plain",
        breaks=("schema",),
        requirements=("SCHEMA-GEN-001",),
        policy=Setting("write", json_media="text/plain; charset=utf-8"),
    ),
    Defect(
        "schema-index-string",
        "choices[].index is a string",
        breaks=("schema",),
        requirements=("SCHEMA-GEN-001", "SCHEMA-STREAM-001"),
    ),
    Defect(
        "output-mode-any-accepted",
        "an unknown or null output_mode is treated as tokens (200)",
        breaks=("output_mode",),
        requirements=("ERR-001",),
        policy=Rows(("output_mode.literal",)),
    ),
    Defect(
        "type-error-500",
        'a wrongly typed temperature ("x") answers 500',
        breaks=("errors",),
        requirements=("ERR-008",),
        policy=Rows(("temperature.type_400",)),
    ),
    Defect(
        "null-rejected",
        "an explicit stop: null answers 400",
        breaks=("null fields",),
        requirements=("ERR-009",),
        policy=Rows(("stop.nullable",)),
    ),
    Defect(
        "max-tokens-zero-accepted",
        "max_tokens: 0 is accepted (200, one token)",
        breaks=("max_tokens",),
        requirements=("ERR-010",),
        policy=Rows(("max_tokens.at_least_1",), ("max_tokens.at_least_0",)),
    ),
    # release extensions (vLLM 0.33+: the derender output mode and parse_context)
    Defect(
        "derender-content-wrong",
        "a derender message's content ends with text the output does not have (streamed too)",
        breaks=("derender",),
        requirements=("EXT-DERENDER-001",),
        flags=RELEASE_034,
    ),
    Defect(
        "derender-stream-no-role",
        "a streamed derender choice's first delta has no role",
        breaks=("derender",),
        requirements=("EXT-DERENDER-002",),
        flags=RELEASE_034,
    ),
    Defect(
        "parse-context-ignored",
        "derender logprob tokens stay decoded with parse_context.return_tokens_as_token_ids true",
        breaks=("parse_context",),
        requirements=("EXT-PARSE-001",),
        flags=RELEASE_034,
    ),
    Defect(
        "parse-context-read-everywhere",
        "text mode too takes parse_context.return_tokens_as_token_ids (placeholder tokens)",
        breaks=("parse_context",),
        requirements=("EXT-PARSE-002",),
        flags=RELEASE_034,
    ),
    # under load only (issue 37): `run` never crowds the engine so; `load` catches each
    Defect(
        "abort-lost-busy",
        f"an abort that comes while more than {BUSY} requests are in flight is answered 200 "
        "and does nothing",
        breaks=("abort",),
        requirements=("ABORT-002", "ABORT-003"),
        flags=PACED,
        policy=Setting("admit", aborts_ignored_above=BUSY),
        shows="load",
    ),
    Defect(
        "weight-span-skew-busy",
        f"a label change that comes while more than {BUSY} requests run ends each one's old "
        "span a token late, over the first token of the new one",
        breaks=("weight_versions",),
        requirements=("WV-002", "WV-004"),
        flags=PACED,  # 0.32: no /pause, so the label changes while requests run
        policy=Setting("generate", label_skew_above=BUSY),
        shows="load",
    ),
    Defect(
        "dp-pin-moved-busy",
        f"a request pinned to a rank that holds more than {BUSY // 2} requests runs on "
        "another rank",
        breaks=("dp rank",),
        requirements=("DP-001",),
        flags=(*PACED, "--data-parallel-size", "2"),
        policy=Setting("admit", pins_ignored_above=BUSY // 2),
        shows="load",
    ),
    Defect(
        "stream-unended-queued",
        "a stream that had to wait behind 8 or more queued requests never ends: no [DONE], "
        "the connection held open",
        breaks=("streaming",),
        requirements=("LOAD-001",),
        flags=(*PACED, "--max-num-seqs", "16"),
        policy=Setting("frame", unended_queue_at=8),
        shows="load",
    ),
    Defect(
        "resume-repeats-token",
        "a request admitted within 1 s of /resume first repeats its prompt's last token (for a "
        "resubmitted rollout: the last token it got before the pause)",
        breaks=("sampling",),
        requirements=("GEN-REQ-006",),
        flags=(*PACED, *RELEASE_034),
        policy=Setting("generate", resume_repeat_s=1.0),
        shows="load",
    ),
    Defect(
        "usage-n-first-choice-busy",
        f"with more than {BUSY} requests in flight, an n > 1 answer's usage counts its first "
        "choice's tokens only",
        breaks=("usage",),
        requirements=("GEN-RESP-003",),
        flags=PACED,
        policy=Setting("build", usage_first_choice_above=BUSY),
        shows="load",
    ),
)

DEFECTS: dict[str, Defect] = {d.name: d for d in _CATALOGUE}


def _where(d: Defect) -> str:
    """The requirement IDs, and the profile and flags when they are not the default."""
    setting = " ".join(
        ([] if d.profile == "scale-out" else [d.profile])
        + list(d.flags)
        + (["under load"] if d.shows == "load" else [])
    )
    return ",".join(d.requirements) + (f" ({setting})" if setting else "")


def catalogue_text() -> str:
    """The catalogue as `--mock-defect list` prints it: name, requirement IDs, description."""
    width = max(len(name) for name in DEFECTS)
    ids = max(len(_where(d)) for d in DEFECTS.values())
    return "\n".join(
        f"{d.name:<{width}}  {_where(d):<{ids}}  {d.description}" for d in DEFECTS.values()
    )


def requirement_pairs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(defect name, requirement IDs) per defect, as plain data: the suite's coverage matrix
    (`tito-conformance requirements --coverage`) reads it through the `tito_conformance.defects`
    entry point, so the suite never imports the mock."""
    return tuple((d.name, d.requirements) for d in _CATALOGUE)
