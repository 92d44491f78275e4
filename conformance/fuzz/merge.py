"""Fold a fuzz run's results into the suite's report of the same server (`tito-conformance run`).

A requirement both touch is decided again over both sets of checks, so a fuzz failure fails
it and a fuzz pass cannot hide a check's failure; a requirement only the fuzzer touched is
added, unless the run was restricted to other requirements.

A fuzz failure is held to the suite's grounds, as the suite's own checks are (`foundations`):
where a requirement it stands on fails in the suite's own checks (a ground its checks build
on, one they were blocked on in this run, or behind a router the duty its evidence passes
through), the finding is that requirement's doing. It is shown, blocked naming the ground,
not failed: one defect, one failure, whichever of the two found it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from conformance.foundations import routed_grounds
from conformance.fuzz.findings import STREAMED
from conformance.registry import grounds_of
from conformance.run.collector import STREAM_GROUND
from conformance.session import BLOCKED_PREFIX
from conformance.verdicts.results import (
    CheckResult,
    Report,
    RequirementResult,
    SkipKind,
    Status,
    decide,
)

ANSWERED = re.compile(r" \(HTTP (\d{3})\)$")
"""How a fuzz check's name ends with the status of the answer it judged (`fuzz.run.to_report`)."""
ERRORS_GROUND = "ROUTER-009"
"""Behind a router, what a finding on an error answer stands on: the router shown to answer
errors its own way (a 502 for an engine's 400, its own 422 in plain text) made that answer."""
NAMED = re.compile(r"\(([A-Z]+(?:-[A-Z]+)*-\d{3})\)")
"""A requirement a blocked check's message names: `blocked: ... (STREAM-001)`."""


def merge(report: Report, fuzzed: Report, only: Collection[str] | None = None) -> Report:
    """`report` with `fuzzed`'s requirement results folded in (in place; also returned)."""
    by_id: dict[str, RequirementResult] = {r.requirement.id: r for r in report.requirements}
    suite = dict(by_id)  # the suite's own verdicts: grounds are read from these alone
    behind_router = bool(report.server.engines)
    for result in fuzzed.requirements:
        rid = result.requirement.id
        if only is not None and rid not in only:
            continue
        known = by_id.get(rid)
        own = [_held(c, failing_ground(suite, rid, behind_router, c)) for c in result.checks]
        checks = [*(known.checks if known is not None else []), *own]
        merged = decide(result.requirement, checks)
        if known is None:
            report.requirements.append(merged)
        else:
            report.requirements[report.requirements.index(known)] = merged
        by_id[rid] = merged
    report.duration_s = round(report.duration_s + fuzzed.duration_s, 3)
    if fuzzed.harness_error and not report.harness_error:
        report.harness_error = f"fuzz: {fuzzed.harness_error}"
    return report


def failing_ground(
    suite: Mapping[str, RequirementResult],
    rid: str,
    behind_router: bool,
    check: CheckResult | None = None,
) -> RequirementResult | None:
    """The first requirement `rid` (and the fuzz `check` of it) stands on that failed in the
    suite's own checks, if any. A finding on a stream stands on a readable stream, as the
    suite's checks that read one do (`collector.EXCHANGE_GROUNDS`); one on an error answer
    behind a router, on the router's passing errors through (`ERRORS_GROUND`)."""
    own = suite.get(rid)
    named = [
        _named(c.message)
        for c in (own.checks if own is not None else [])
        if c.skip_kind is SkipKind.BLOCKED and NAMED.search(c.message)
    ]
    routes = routed_grounds((rid,)) if behind_router else ()
    streamed = (STREAM_GROUND,) if check is not None and STREAMED in check.name else ()
    answered = ANSWERED.search(check.name) if check is not None else None
    error = (ERRORS_GROUND,) if behind_router and answered and int(answered[1]) >= 400 else ()
    for ground in dict.fromkeys((*named, *grounds_of(rid), *routes, *streamed, *error)):
        found = suite.get(ground)
        if ground != rid and found is not None and found.status is Status.FAIL:
            return found
    return None


def _named(message: str) -> str:
    """The ground a blocked message names: the one it ends with, else its first."""
    found = NAMED.findall(message)
    return str(found[-1] if message.rstrip().endswith(")") else found[0])


def _held(check: CheckResult, ground: RequirementResult | None) -> CheckResult:
    """A fuzz failure that stands on a failing `ground`: shown, blocked naming it."""
    if check.status is not Status.FAIL or ground is None:
        return check
    why = ground.reason.strip().splitlines()[0][:200] if ground.reason else "it fails"
    return CheckResult(
        check.name,
        Status.SKIP,
        f"{BLOCKED_PREFIX} {why} ({ground.requirement.id}); the fuzzer found: {check.message}",
        check.reproducer,
        check.duration_s,
        skip_kind=SkipKind.BLOCKED,
    )
