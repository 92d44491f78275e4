"""Logprobs in tokens mode (GenerateLogProbs) and prompt logprobs."""

from __future__ import annotations

from conformance.requirements.model import MUST, SHOULD, Feature, Requirement, Source

F = Feature.LOGPROBS

REQUIREMENTS = [
    Requirement(
        "LOGP-001",
        MUST,
        F,
        '`token_id` is an integer, not the older `"token_id:<id>"` string.',
        "tokens-mode logprob token_id is an integer",
        needs=("generate",),
        fields=("token_id",),
    ),
    Requirement(
        "LOGP-002",
        MUST,
        F,
        "one entry per token",
        "len(logprobs.content) == len(token_ids)",
        needs=("generate",),
        ground="logprob-count",
        diff=("n2-logprobs-2",),
    ),
    Requirement(
        "LOGP-003",
        MUST,
        F,
        "sampled token first",
        "the sampled token is the first entry of top_logprobs",
        needs=("generate",),
        diff=("logprobs-3-greedy",),
    ),
    Requirement(
        "LOGP-004",
        MUST,
        F,
        "Needs `sampling_params.logprobs`.",
        "without sampling_params.logprobs no logprobs are returned",
        needs=("generate",),
    ),
    Requirement(
        "LOGP-005",
        MUST,
        F,
        'With output_mode: "tokens", logprobs are GenerateLogProbs with an integer token_id and '
        "rank per entry and no token or bytes",
        "tokens-mode entries have token_id and rank and no token or bytes",
        needs=("generate",),
        fields=("token_id", "rank", "token", "bytes"),
    ),
    Requirement(
        "LOGP-006",
        MUST,
        F,
        "an integer token_id and rank per entry",
        "ranks are consistent with the logprobs (rank 1 is the most likely)",
        needs=("generate",),
    ),
    Requirement(
        "LOGP-007",
        MUST,
        F,
        "logprobs keyed by integer token ID",
        "every logprob is finite and <= 0",
        needs=("generate",),
    ),
    Requirement(
        "LOGP-008",
        SHOULD,
        F,
        "top_logprobs has exactly max(logprobs, 1) entries.",
        "top_logprobs length is max(k, 1)",
        source=Source.VLLM,
        evidence="vllm-cpu.md; test_generate_logprobs[0,1,5]",
        needs=("generate",),
        diff=("logprobs-0",),
    ),
    Requirement(
        "LOGP-009",
        SHOULD,
        F,
        "sampling_params.logprobs above the server's maximum (20 by default) is a 400.",
        "logprobs 21 is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-source-notes §2.1 (--max-logprobs)",
        needs=("generate",),
        ground="logprobs-limit",
        diff=("logprobs-21",),
    ),
    Requirement(
        "LOGP-010",
        SHOULD,
        F,
        "sampling_params.prompt_logprobs gives prompt_logprobs with one entry per prompt token, "
        "the first null.",
        "prompt_logprobs has one entry per prompt token and starts with null",
        source=Source.VLLM,
        evidence="vllm-cpu.md; vllm-source-notes §3",
        needs=("generate",),
        diff=("n2-return-token-ids-prompt-logprobs", "prompt-logprobs-0", "stream-prompt-logprobs"),
    ),
]
