"""A fuzz failure, the requirement it touches, and its reproducer."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache

from conformance.fuzz.settings import ServerFacts
from conformance.requirements import by_id
from conformance.requirements.model import FuzzRule
from conformance.wire.exchange import redact

GROUPS = ("positive", "negative", "wrong-media-type", "out-of-vocabulary", "stateful")


@dataclass
class Finding:
    """One distinct failure (deduplicated by operation, group, check and status)."""

    operation: str  # operationId
    label: str  # "POST /inference/v1/generate"
    group: str
    check: str
    status: int | None
    message: str
    curl: str
    seed: int
    case_index: int
    requirement_ids: tuple[str, ...] = ()
    occurrences: int = 1
    stream: bool = False  # the (first) case it was found on asked for a stream

    def __post_init__(self) -> None:
        """The curl carries the case's headers, the API key among them: `$TITO_API_KEY`
        instead, as in the suite's reproducers (`wire.exchange`)."""
        self.curl = redact(self.curl)
        self.message = redact(self.message)

    @property
    def key(self) -> tuple[str, str, str, int | None]:
        return (self.operation, self.group, self.check, self.status)

    @property
    def reproducer(self) -> str:
        return (
            f"{self.curl}\n# {hash_seed_prefix()}tito-conformance fuzz --seed {self.seed} "
            f"--operation {self.operation}  (group {self.group}, case {self.case_index})"
        )


def hash_seed_prefix() -> str:
    """The draws depend on set/dict order too: the seed reproduces them under this hash seed."""
    value = os.environ.get("PYTHONHASHSEED", "random")
    return f"PYTHONHASHSEED={value} " if value != "random" else "(random hash seed) "


@dataclass
class GroupStats:
    """How many cases one (operation, group) ran, and how long it took."""

    operation: str
    group: str
    cases: int = 0
    duration_s: float = 0.0
    statuses: dict[int, int] = field(default_factory=dict)
    skipped: str = ""
    lax: int = 0  # negative cases only pydantic's lax mode forgives: not held to a 400


def requirements_for(
    check: str, op_id: str, group: str, status: int | None, facts: ServerFacts, stream: bool
) -> tuple[str, ...]:
    """The catalogue IDs a failure files under (the suite's report groups by them): those whose
    fuzz rule matches it first (each requirement declares its rules, `Requirement.fuzz`)."""
    best: int | None = None
    found: list[str] = []
    for rid, rule in _rules():
        if best is not None and rule.order > best:
            break
        if rule.matches(check, op_id, group, status, facts.profile, stream):
            best = rule.order
            if rid not in found:
                found.append(rid)
    return tuple(found)


@cache
def _rules() -> tuple[tuple[str, FuzzRule], ...]:
    """Every requirement's fuzz rules, by order (catalogue order within one)."""
    pairs = [(rid, rule) for rid, req in by_id().items() for rule in req.fuzz]
    return tuple(sorted(pairs, key=lambda pair: pair[1].order))
