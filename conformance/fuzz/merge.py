"""Fold a fuzz run's results into the suite's report of the same server (`tito-conformance run`).

A requirement both touch is decided again over both sets of checks, so a fuzz failure fails
it and a fuzz pass cannot hide a check's failure; a requirement only the fuzzer touched is
added, unless the run was restricted to other requirements.

A fuzz failure is held to the suite's grounds, as the suite's own checks are (`grounds`):
where a requirement it stands on fails in the suite's own checks (a ground its checks build
on, one they were blocked on in this run, or behind a router the duty its evidence passes
through), the finding is that requirement's doing. It is shown, blocked naming the ground,
not failed: one defect, one failure, whichever of the two found it.
"""

from __future__ import annotations

from collections.abc import Collection

from conformance.grounds.verdict import failing_ground, held
from conformance.verdicts.results import Report, RequirementResult, decide

__all__ = ["failing_ground", "merge"]


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
        own = [held(c, failing_ground(suite, rid, behind_router, c)) for c in result.checks]
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
