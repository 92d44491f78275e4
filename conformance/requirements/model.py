"""What a requirement is: an ID, a level, a feature and the words it comes from.

Requirements are declared with these in the check modules that decide them (each module's
`REQUIREMENTS`; `conformance.requirements` joins them), and the values several of them share
(`ROUTED`, `GATED_OPERATIONS`, `DISABLED_MESSAGE`, ...) are kept here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from conformance.requirements.defects import defects_of


class Proof(StrEnum):
    """What an in-flight FAIL may rest on (`conformance.inflight.proof` says how each is met)."""

    STATEMENT = "statement"  # the server's own finish reason, error or spans
    ENGINE = "engine state"  # the engines' counters, read after the action was answered
    BOUND = "bound"  # could not have ended before the action arrived (fastest completion)


class Level(StrEnum):
    """RFC 2119 level: a MUST failure fails the run, a SHOULD failure is a warning."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


class Source(StrEnum):
    """Where the requirement comes from."""

    DOCUMENT = "document"  # a sentence of tito-api.md, quoted verbatim
    VLLM = "vllm-0.32"  # the document is silent; vLLM 0.32 behaves this way and clients rely on it
    DERIVED = "derived"  # a router's duty that follows from the quoted sentence (issue 20)
    RELEASE = "vllm-release"  # stated by a later release's own code (0.33+), not the document


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
    ROUTER = "router"


@dataclass(frozen=True)
class FuzzRule:
    """A kind of fuzz finding this requirement takes.

    A finding files under the requirements whose rule matches it with the lowest `order` (the
    most specific reading wins: a 401's error body is AUTH-004's before it is ERR-002's). A
    field left empty matches anything; `statuses` is an inclusive range; `profiles` are the
    spec profiles (`scale-out`, `tokens-only`, `disabled`).
    """

    order: int
    checks: frozenset[str] = frozenset()
    operations: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    profiles: frozenset[str] = frozenset()
    statuses: tuple[int, int] | None = None
    stream: bool | None = None

    def matches(
        self, check: str, operation: str, group: str, status: int | None, profile: str, stream: bool
    ) -> bool:
        low, high = self.statuses or (0, 0)
        return (
            (not self.checks or check in self.checks)
            and (not self.operations or operation in self.operations)
            and (not self.groups or group in self.groups)
            and (not self.profiles or profile in self.profiles)
            and (self.statuses is None or (status is not None and low <= status <= high))
            and (self.stream is None or stream is self.stream)
        )


SERVING_PROFILES = ("scale-out", "tokens-only")
"""The spec profiles that serve generate (the third, `disabled`, answers it with a 403)."""
GATED_OPERATIONS = (
    "generate",
    "abortRequests",
    "abortRequestsLegacy",
    "renderCompletions",
    "renderChatCompletions",
    "derenderCompletions",
    "derenderChatCompletions",
)
"""The operations a server without either flag answers with the 403."""
SCHEMA_CHECKS = ("response_schema_conformance", "content_type_conformance")
"""schemathesis's checks of an answer's form (a 4xx's form is ERR-002's)."""
ROUTED = ("router", "generate")
"""What a router's duty needs: a run that knows its topology, and a working generate."""
DISABLED_MESSAGE = (
    "Scale-out endpoints are disabled. Restart vllm serve with --enable-scale-out to enable them."
)
"""The 403's message on a server started with neither flag (DISABLED-002 quotes it)."""


def fuzz(
    order: int,
    *,
    checks: tuple[str, ...] = (),
    operations: tuple[str, ...] = (),
    groups: tuple[str, ...] = (),
    profiles: tuple[str, ...] = (),
    statuses: tuple[int, int] | None = None,
    stream: bool | None = None,
) -> FuzzRule:
    """A `FuzzRule`, spelled with tuples (what the check modules' `REQUIREMENTS` write)."""
    return FuzzRule(
        order,
        frozenset(checks),
        frozenset(operations),
        frozenset(groups),
        frozenset(profiles),
        statuses,
        stream,
    )


@dataclass(frozen=True)
class Requirement:
    """One normative statement, and every way the kit has to decide it.

    `text` is the document's sentence verbatim when `source` is DOCUMENT (a test proves it is a
    substring of the shipped document); for VLLM extras it states the observed behaviour and
    `evidence` names where it was seen. `expected_status` is the HTTP status the requirement
    demands, where it demands one.

    The rest is the requirement's map, kept here so no other module keeps a table of it:
    - `needs`: the detected features its checks need (a check may add its own);
    - `anchor`: the feature whose claim this requirement proves present (a claimed feature
      that is absent fails here, and only here);
    - `fuzz`: the fuzz findings filed under it; `sequences`: the stateful fuzz sequences that
      exercise it;
    - `diff`: the diff corpus cases whose answers it governs;
    - `defects` (read, never declared): the defects that must fail it, as the installed defect
      catalogues name them (`conformance.requirements.defects`: the link lives on the
      defect's side only);
    - `proofs`: for a verdict on an action in flight (an abort, a hang-up, a label change),
      the evidence its FAIL may rest on (`proof.Proof`): never the client's own timing;
    - `fields`: the answer fields whose form it governs beside the SCHEMA-* requirements. A
      check that fails on an answer malformed elsewhere is blocked naming SCHEMA-* (the form
      is that requirement's); malformed in one of these fields, it fails as well.
    """

    id: str
    level: Level
    feature: Feature
    text: str
    title: str
    source: Source = Source.DOCUMENT
    expected_status: int | None = None
    evidence: str = ""
    needs: tuple[str, ...] = ()
    anchor: str | None = None
    fuzz: tuple[FuzzRule, ...] = ()
    sequences: tuple[str, ...] = ()
    diff: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    proofs: tuple[Proof, ...] = ()

    @property
    def defects(self) -> tuple[str, ...]:
        """The defects that must fail this requirement (empty with no catalogue installed)."""
        return defects_of(self.id)


MUST = Level.MUST
SHOULD = Level.SHOULD
MAY = Level.MAY
