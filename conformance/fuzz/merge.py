"""Fold a fuzz run's results into the suite's report of the same server (`tito-conformance run`).

A requirement both touch is decided again over both sets of checks, so a fuzz failure fails
it and a fuzz pass cannot hide a check's failure; a requirement only the fuzzer touched is
added, unless the run was restricted to other requirements.
"""

from __future__ import annotations

from collections.abc import Collection

from ..results import Report, RequirementResult, decide


def merge(report: Report, fuzzed: Report, only: Collection[str] | None = None) -> Report:
    """`report` with `fuzzed`'s requirement results folded in (in place; also returned)."""
    by_id: dict[str, RequirementResult] = {r.requirement.id: r for r in report.requirements}
    for result in fuzzed.requirements:
        rid = result.requirement.id
        if only is not None and rid not in only:
            continue
        known = by_id.get(rid)
        checks = [*(known.checks if known is not None else []), *result.checks]
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
