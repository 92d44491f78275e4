"""Output modes: the output_mode echo and text mode."""

from __future__ import annotations

from conformance.requirements.model import MAY, MUST, Feature, Requirement

F = Feature.TEXT

REQUIREMENTS = [
    Requirement(
        "TEXT-001",
        MUST,
        F,
        "`text` on every choice and decoded tokens with `bytes` in `logprobs`",
        "text mode puts text on every choice",
        needs=("text-mode",),
        anchor="text-mode",
        ground="text-present",
        diff=("text",),
        fields=("text",),
    ),
    Requirement(
        "TEXT-002",
        MUST,
        F,
        "decoded tokens with `bytes` in `logprobs`",
        "text-mode logprob entries carry bytes",
        needs=("text-mode",),
        diff=("text-logprobs-2",),
        fields=("bytes",),
    ),
    Requirement(
        "TEXT-003",
        MUST,
        F,
        'With output_mode: "text", they are ChatCompletionLogProbs carrying the decoded token '
        "strings and their UTF-8 bytes for the sampled token and every entry in top_logprobs",
        "text-mode logprobs are ChatCompletionLogProbs: token and its UTF-8 bytes everywhere",
        needs=("text-mode",),
        diff=("text-logprobs-2",),
        fields=("logprobs",),
    ),
    Requirement(
        "TEXT-004",
        MUST,
        F,
        "text returns text and token IDs in a single call",
        "text mode returns the same token_ids as tokens mode for a seeded request",
        needs=("text-mode",),
    ),
    Requirement(
        "TEXT-005",
        MUST,
        F,
        "Every response and every stream chunk echoes output_mode.",
        "every non-streamed response carries output_mode",
        needs=("generate",),
        anchor="output-mode-echo",
        fields=("output_mode",),
    ),
    Requirement(
        "TEXT-006",
        MUST,
        F,
        "Every response and every stream chunk echoes output_mode.",
        "every stream chunk carries output_mode",
        needs=("generate",),
        fields=("output_mode", "text"),
    ),
    Requirement(
        "TEXT-007",
        MUST,
        F,
        "check that the output_mode in the response matches the one you sent.",
        "the echoed output_mode is the one sent",
        needs=("text-mode",),
        diff=("output-mode-tokens",),
        fields=("output_mode", "text"),
    ),
    Requirement(
        "TEXT-008",
        MUST,
        F,
        "so skip_special_tokens, spaces_between_special_tokens, stop and "
        "include_stop_str_in_output behave as they do on /v1/completions.",
        "skip_special_tokens removes special tokens from text",
        needs=("text-mode",),
        diff=("text-skip-special-false",),
    ),
    Requirement(
        "TEXT-009",
        MUST,
        F,
        "With stream: true, each choice's text is the delta since the previous chunk.",
        "streamed text deltas concatenate to the non-streamed text",
        needs=("text-mode",),
        ground="text-deltas",
        diff=("text-stream-n2-usage-logprobs",),
    ),
    Requirement(
        "TEXT-010",
        MUST,
        F,
        'output_mode: "text" with sampling_params.detokenize: false.',
        "text mode with detokenize false is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("text-detokenize-false",),
    ),
    Requirement(
        "TEXT-011",
        MAY,
        F,
        "a server started with --return-tokens-as-token-ids returns token_id:N placeholders "
        "there instead, as /v1/completions does.",
        "token_id:N placeholders, when sent, name the sampled token ids",
        needs=("text-mode",),
    ),
]
