"""What a requirement is: an ID, a level, a feature and the words it comes from."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Level(StrEnum):
    """RFC 2119 level: a MUST failure fails the run, a SHOULD failure is a warning."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


class Source(StrEnum):
    """Where the requirement comes from."""

    DOCUMENT = "document"  # a sentence of tito-api.md, quoted verbatim
    VLLM = "vllm-0.32"  # the document is silent; vLLM 0.32 behaves this way and clients rely on it


class Feature(StrEnum):
    """The feature a requirement belongs to; the report's summary table groups by it."""

    CORE = "core generate"
    STREAMING = "streaming"
    LOGPROBS = "logprobs"
    TEXT = "text mode"
    STOP = "stop handling"
    ABORT = "abort"
    DP_RANK = "DP rank"
    API_KEY = "API key"
    WEIGHT_VERSIONS = "weight versions"
    RENDER = "render/derender"
    TOKENS_ONLY = "tokens-only"
    DISABLED = "disabled gating"
    MULTIMODAL = "multimodal"
    ERRORS = "errors"


@dataclass(frozen=True)
class Requirement:
    """One normative statement.

    `text` is the document's sentence verbatim when `source` is DOCUMENT (a test proves it is a
    substring of the shipped document); for VLLM extras it states the observed behaviour and
    `evidence` names where it was seen. `expected_status` is the HTTP status the requirement
    demands, where it demands one.
    """

    id: str
    level: Level
    feature: Feature
    text: str
    title: str
    source: Source = Source.DOCUMENT
    expected_status: int | None = None
    evidence: str = ""


MUST = Level.MUST
SHOULD = Level.SHOULD
MAY = Level.MAY
