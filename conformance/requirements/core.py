"""Core generate: the request fields, the response fields, request ids."""

from __future__ import annotations

from .model import MUST, SHOULD, Feature, Requirement, Source

F = Feature.CORE

REQUIREMENTS = [
    Requirement(
        "GEN-001",
        MUST,
        F,
        "POST /inference/v1/generate is the token-in/token-out (TITO) HTTP endpoint: it takes "
        "prompt token IDs and returns generated token IDs",
        "a minimal request answers 200 with a body valid against GenerateResponse",
        expected_status=200,
    ),
    Requirement(
        "GEN-002",
        MUST,
        F,
        "and finish_reason/stop_reason, with no detokenization.",
        "a tokens-mode response carries no text",
    ),
    Requirement(
        "GEN-003",
        MUST,
        F,
        "--enable-scale-out registers it, with /render, /derender and "
        "/inference/v1/abort_requests.",
        "a server claimed or detected as scale-out serves generate",
        expected_status=200,
    ),
    Requirement(
        "GEN-REQ-001",
        MUST,
        F,
        "Required `list[int]`: the already-templated prompt.",
        "a request without token_ids, or with non-integer ids, is a 400",
        expected_status=400,
    ),
    Requirement(
        "GEN-REQ-002",
        MUST,
        F,
        "Non-empty, no negative IDs.",
        "an empty token_ids is a 400",
        expected_status=400,
    ),
    Requirement(
        "GEN-REQ-003",
        MUST,
        F,
        "Non-empty, no negative IDs.",
        "a negative token id is a 400",
        expected_status=400,
    ),
    Requirement(
        "GEN-REQ-004",
        MUST,
        F,
        "Required. Any SamplingParams field, e.g. `max_tokens`, `temperature`, `logprobs`, "
        "`stop_token_ids`.",
        "a request without sampling_params is a 400",
        expected_status=400,
    ),
    Requirement(
        "GEN-REQ-005",
        MUST,
        F,
        "Any SamplingParams field, e.g. `max_tokens`",
        "max_tokens bounds the output; reaching it gives finish_reason length",
    ),
    Requirement(
        "GEN-REQ-006",
        MUST,
        F,
        "Any SamplingParams field, e.g. `max_tokens`, `temperature`",
        "temperature 0 samples the most likely token (rank 1) at every step",
    ),
    Requirement(
        "GEN-REQ-007",
        MUST,
        F,
        "Any SamplingParams field",
        "sampling with the same seed gives the same tokens",
    ),
    Requirement(
        "GEN-REQ-008",
        MUST,
        F,
        "Any SamplingParams field",
        "n > 1 returns n choices indexed 0..n-1",
    ),
    Requirement(
        "GEN-REQ-009",
        MUST,
        F,
        "Without `max_tokens`, the server applies its own default (as on the OpenAI endpoints), "
        "not 16.",
        "without max_tokens the output may run past 16 tokens",
    ),
    Requirement(
        "GEN-REQ-010",
        MUST,
        F,
        '`"tokens"` (default) or `"text"`, see Output modes.',
        "a request without output_mode is answered in tokens mode",
    ),
    Requirement(
        "GEN-REQ-011",
        MUST,
        F,
        "Echo the final prompt IDs as `prompt_token_ids`.",
        "return_token_ids echoes the prompt as prompt_token_ids",
    ),
    Requirement(
        "GEN-REQ-012",
        MUST,
        F,
        "`request_id`, `model`, `cache_salt`, `priority`, `kv_transfer_params`, "
        "`ec_transfer_params`\tOptional.",
        "the optional fields are accepted when sent with valid values",
        expected_status=200,
    ),
    Requirement(
        "GEN-RESP-001",
        MUST,
        F,
        "Generated token IDs.",
        "every choice carries token_ids, non-negative integers, no more than max_tokens",
    ),
    Requirement(
        "GEN-RESP-002",
        MUST,
        F,
        "`stop`, `length` or `abort`.",
        "every non-streamed choice has a finish_reason among stop, length, abort",
    ),
    Requirement(
        "GEN-RESP-003",
        MUST,
        F,
        "The top level adds request_id, usage, prompt_token_ids and prompt_logprobs.",
        "usage counts equal the prompt and the tokens returned",
    ),
    Requirement(
        "GEN-RESP-004",
        MUST,
        F,
        "The request ID is the request_id the server returned: the X-Request-Id header or body "
        "request_id you sent, prefixed with generate-tokens-.",
        "a body request_id comes back as generate-tokens-<id>",
    ),
    Requirement(
        "GEN-RESP-005",
        MUST,
        F,
        "the X-Request-Id header or body request_id you sent, prefixed with generate-tokens-.",
        "an X-Request-Id header comes back as generate-tokens-<header>",
    ),
    Requirement(
        "GEN-RESP-006",
        SHOULD,
        F,
        "When both the X-Request-Id header and a body request_id are sent, the header wins.",
        "X-Request-Id takes precedence over the body request_id",
        source=Source.VLLM,
        evidence="vllm-source-notes §3.5 (_base_request_id)",
    ),
    Requirement(
        "GEN-RESP-007",
        MUST,
        F,
        "the last two need `--enable-return-routed-experts` / `--return-sampling-mask`.",
        "without those flags routed_experts and sampling_mask are null or absent",
    ),
    Requirement(
        "SCHEMA-GEN-001",
        MUST,
        F,
        "The top level adds request_id, usage, prompt_token_ids and prompt_logprobs.",
        "every non-streamed generate response is valid against the spec's GenerateResponse",
    ),
]
