"""Which vLLM class each spec schema describes (the class names of vLLM 0.32, the spec's base).

A vLLM class may stand behind two schemas: the spec describes what generate *sends* (every key
present, so only field names and enums compare) apart from what derender *reads* back (pydantic
input rules: required fields, defaults, nullability compare too). `Class.field` names the class
a field is typed with (`UsageInfo.prompt_tokens_details` is `PromptTokenUsageInfo`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

View = Literal["input", "output"]


@dataclass(frozen=True)
class Pair:
    vllm: str
    spec: str  # a pointer under components/schemas: `Name`, `Name/oneOf/1`, `Name/properties/x`
    view: View
    subset: bool = False  # the spec describes only some fields (OpenAI bodies): no "added"
    by_hand: bool = False  # a release may read the body by hand (abort before 0.34): said so


PAIRS: tuple[Pair, ...] = (
    # what clients send
    Pair("GenerateRequest", "GenerateRequest", "input"),
    Pair("SamplingParams", "SamplingParams", "input"),
    Pair("StreamOptions", "StreamOptions", "input"),
    Pair("MultiModalFeatures", "MultiModalFeatures", "input"),
    Pair("PlaceholderRangeInfo", "PlaceholderRange", "input"),
    Pair("AbortRequestsRequest", "AbortRequest", "input", by_hand=True),
    Pair("ChatCompletionRequest", "RenderChatRequest", "input", subset=True),
    Pair("CompletionRequest", "RenderCompletionRequest", "input", subset=True),
    Pair("DerenderChatRequest", "DerenderChatRequest/oneOf/0", "input"),
    Pair("DerenderChatStreamRequest", "DerenderChatRequest/oneOf/1", "input"),
    Pair("DerenderCompletionRequest", "DerenderCompletionRequest/oneOf/0", "input"),
    Pair("DerenderCompletionStreamRequest", "DerenderCompletionRequest/oneOf/1", "input"),
    Pair("DerenderStreamState", "DerenderStreamState", "input"),
    # generate's answers as derender reads them back
    Pair("GenerateTokensResponse", "DerenderableGenerateResponse", "input"),
    Pair("GenerateTokensChoice", "DerenderableChoice", "input"),
    Pair("GenerateTokensStreamResponse", "DerenderableStreamChunk", "input"),
    Pair("GenerateTokensStreamChoice", "DerenderableStreamChoice", "input"),
    Pair("GenerateLogProbs", "DerenderableLogProbs", "input"),
    Pair("GenerateLogProbsContent", "DerenderableLogProbsContent", "input"),
    Pair("GenerateLogProb", "DerenderableTopLogProb", "input"),
    Pair("UsageInfo", "DerenderableUsage", "input"),
    Pair(
        "UsageInfo.prompt_tokens_details",
        "DerenderableUsage/properties/prompt_tokens_details",
        "input",
    ),
    Pair("WeightVersionSpan", "DerenderableWeightVersionSpan", "input"),
    Pair("PerRequestMetrics", "DerenderableMetrics", "input"),
    Pair(
        "PerRequestMetrics.speculative_decoding",
        "DerenderableMetrics/properties/speculative_decoding",
        "input",
    ),
    # what generate and derender send
    Pair("GenerateTokensResponse", "GenerateTokensResponse", "output"),
    Pair("GenerateTextResponse", "GenerateTextResponse", "output"),
    Pair("GenerateTokensChoice", "GenerateTokensChoice", "output"),
    Pair("GenerateTextChoice", "GenerateTextChoice", "output"),
    Pair("GenerateTokensStreamResponse", "GenerateTokensStreamChunk", "output"),
    Pair("GenerateTextStreamResponse", "GenerateTextStreamChunk", "output"),
    Pair("GenerateTokensStreamChoice", "GenerateTokensStreamChoice", "output"),
    Pair("GenerateTextStreamChoice", "GenerateTextStreamChoice", "output"),
    Pair("GenerateLogProbs", "GenerateLogProbs", "output"),
    Pair("GenerateLogProbsContent", "GenerateLogProbsContent", "output"),
    Pair("GenerateLogProb", "GenerateTopLogProb", "output"),
    Pair("UsageInfo", "Usage", "output"),
    Pair("WeightVersionSpan", "WeightVersionSpan", "output"),
    Pair("DerenderChatStreamResponse", "DerenderStreamResponse", "output"),
    Pair("DerenderCompletionStreamResponse", "DerenderStreamResponse", "output"),
)


@dataclass(frozen=True)
class UnionPair:
    """A discriminated union alias whose tags are the values of a spec property."""

    vllm: str
    spec: str
    prop: str


UNIONS: tuple[UnionPair, ...] = (
    UnionPair("GenerateResponse", "GenerateResponse", "output_mode"),
    UnionPair("GenerateStreamResponse", "GenerateStreamChunk", "output_mode"),
)

# Classes of the TITO protocol module the spec has no schema for, on purpose. Base classes
# (a class another class of the module derives from) are skipped without being listed.
NOT_IN_SPEC: dict[str, str] = {
    "ReasoningParserKwargs": "an object without properties in GenerateRequest",
}
