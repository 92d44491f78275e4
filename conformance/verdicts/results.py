"""The results model: the one structure every report (terminal, JSON, JUnit) is a view of."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.outcomes import SkipKind, Status
from conformance.requirements import Level, Requirement
from conformance.wire.exchange import redact


@dataclass
class CheckResult:
    name: str
    status: Status
    message: str = ""
    reproducer: str = ""
    duration_s: float = 0.0
    skip_kind: SkipKind = SkipKind.NONE
    inconclusive: bool = False  # an error: the check's action could not be made to land
    blocked_by: str = ""  # for a blocked skip: the requirement whose failure blocks it
    measured: dict[str, Any] = field(default_factory=dict)  # for a limit: the numbers seen
    streamed: bool = False  # a fuzz finding: the answer it judged was a stream
    answered: int | None = None  # a fuzz finding: the HTTP status of the answer it judged

    def __post_init__(self) -> None:
        """Every output is a view of these: no API key gets into one (`wire.exchange`)."""
        self.message = redact(self.message)
        self.reproducer = redact(self.reproducer)


@dataclass
class RequirementResult:
    requirement: Requirement
    status: Status
    reason: str
    checks: list[CheckResult] = field(default_factory=list)
    attribution: str = ""  # behind a router, whose failure: "router" | "engine" | "unknown"

    def __post_init__(self) -> None:
        self.reason = redact(self.reason)

    @property
    def skip_kind(self) -> SkipKind:
        if self.status is not Status.SKIP:
            return SkipKind.NONE
        for kind in (SkipKind.BLOCKED, SkipKind.LIMIT, SkipKind.NOT_CLAIMED):
            if any(c.skip_kind is kind for c in self.checks):
                return kind
        return SkipKind.ABSENT

    @property
    def blocked_by(self) -> str:
        """For a blocked requirement, the requirement that blocks it (its first check's)."""
        if self.skip_kind is not SkipKind.BLOCKED:
            return ""
        return next((c.blocked_by for c in self.checks if c.blocked_by), "")

    @property
    def outcome(self) -> Status:
        """The requirement's outcome as the reports name it: a failed SHOULD or MAY warns."""
        return Status.WARN if self.is_warning else self.status

    @property
    def inconclusive(self) -> bool:
        """An error only because no check could make its action land (not a harness fault)."""
        errors = [c for c in self.checks if c.status is Status.ERROR]
        return self.status is Status.ERROR and bool(errors) and all(c.inconclusive for c in errors)

    @property
    def is_warning(self) -> bool:
        """A failed SHOULD or MAY: reported, but it does not fail the run."""
        return self.status is Status.FAIL and self.requirement.level is not Level.MUST


@dataclass
class ServerInfo:
    base_url: str
    version: str | None
    detected_features: list[str]
    claimed_features: list[str]
    profile: str | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    limits_text: str = ""
    engines: list[str] = field(default_factory=list)  # behind base_url (a router), if known
    router: str | None = None  # the router at base_url, by name and version, where known
    build: str | None = None  # how the server was run, where the run knows it (live backends)


@dataclass
class Summary:
    passed: int
    failed: int  # MUST requirements that failed
    skipped: int
    errors: int
    warnings: int  # SHOULD/MAY requirements that failed
    skipped_for_limits: int = 0  # of `skipped`: the configuration could not exercise them
    incomplete: int = 0  # of `errors`: inconclusive, every other verdict stands

    @property
    def verdict(self) -> str:
        if self.failed or self.errors > self.incomplete:
            return "FAILED"
        return "INCOMPLETE" if self.incomplete else "PASSED"


@dataclass
class Report:
    suite_name: str
    suite_version: str
    spec_version: str
    server: ServerInfo
    started_at: str
    duration_s: float
    requirements: list[RequirementResult]
    harness_error: str = ""
    product: dict[str, str] | None = None  # what the vendor calls it (`run --product FILE`)
    learned: Any = field(default=None, repr=False, compare=False)
    """(Features, Limits) the probe learned, so what runs after the checks (the folded-in
    fuzz) judges by the same knowledge instead of probing again; the report shows them as
    `server`."""

    def __post_init__(self) -> None:
        self.harness_error = redact(self.harness_error)

    @property
    def summary(self) -> Summary:
        results = self.requirements
        return Summary(
            passed=sum(r.status is Status.PASS for r in results),
            failed=sum(r.status is Status.FAIL and not r.is_warning for r in results),
            skipped=sum(r.status is Status.SKIP for r in results),
            errors=sum(r.status is Status.ERROR for r in results) + bool(self.harness_error),
            warnings=sum(r.is_warning for r in results),
            skipped_for_limits=sum(r.skip_kind is SkipKind.LIMIT for r in results),
            incomplete=sum(r.inconclusive for r in results),
        )

    def result(self, requirement_id: str) -> RequirementResult:
        for result in self.requirements:
            if result.requirement.id == requirement_id:
                return result
        raise KeyError(requirement_id)

    def differences(self) -> list[Difference]:
        """What this server does differently from the document: one line per failing
        requirement (MUST first), with one piece of field-level evidence. A check judges only
        its own fields, so this is the list of things to fix, not their symptoms. The whole-body
        schema requirements come last: their leaves mostly restate the named fields above."""
        failing = [r for r in self.requirements if r.status is Status.FAIL]
        failing.sort(key=lambda r: (r.is_warning, r.requirement.id.startswith("SCHEMA-")))
        return [
            Difference(r.requirement.id, r.requirement.level.value, r.requirement.title, _gist(r))
            for r in failing
        ]

    def failed_ids(self) -> set[str]:
        """Every requirement that failed, MUST or not."""
        return {r.requirement.id for r in self.requirements if r.status is Status.FAIL}


@dataclass(frozen=True)
class Difference:
    requirement: str
    level: str
    title: str
    evidence: str  # the first failing check's message, first line, cut short


EVIDENCE_CHARS = 240


def _gist(result: RequirementResult) -> str:
    for check in result.checks:
        if check.status is Status.FAIL and check.message:
            line = check.message.strip().splitlines()[0]
            return line if len(line) <= EVIDENCE_CHARS else line[: EVIDENCE_CHARS - 1] + "…"
    return result.reason[:EVIDENCE_CHARS]


def decide(requirement: Requirement, checks: list[CheckResult]) -> RequirementResult:
    """A requirement fails if any of its checks fails; it passes only if one passed and none
    failed or broke; it is skipped when every check was skipped (or none ran)."""
    statuses = {c.status for c in checks}
    if not checks:
        return RequirementResult(requirement, Status.SKIP, "not selected in this run", checks)
    if Status.FAIL in statuses:
        status = Status.FAIL
    elif Status.ERROR in statuses:
        status = Status.ERROR
    elif Status.PASS in statuses:
        status = Status.PASS
    else:
        status = Status.SKIP
    reasons = [c.message for c in checks if c.status is status and c.message]
    return RequirementResult(requirement, status, "; ".join(dict.fromkeys(reasons)), checks)


EXIT_PASSED, EXIT_FAILED, EXIT_ERROR, EXIT_INCOMPLETE = 0, 1, 2, 3


def exit_code(reports: list[Report]) -> int:
    """0 when every applicable MUST passed, 1 when one failed, 2 when the harness broke, 3
    ("incomplete") when nothing failed or broke but some check could not make its action land
    on this server (inconclusive): every other verdict of the run stands."""
    summaries = [r.summary for r in reports]
    if any(s.errors > s.incomplete for s in summaries):
        return EXIT_ERROR
    if any(s.failed for s in summaries):
        return EXIT_FAILED
    if any(s.incomplete for s in summaries):
        return EXIT_INCOMPLETE
    return EXIT_PASSED
