"""Whose failure it is, behind a router: the router's, an engine's, or not known.

A run that knows its topology (`--engine URL` per engine) decides each requirement through the
router. A failure there may be the router's doing or an engine's. The kit asks the engines:
every requirement that failed through the router (its router duties aside: they are the
router's by definition) is decided again against each engine directly, with the same checks.

- `engine`: an engine fails it too;
- `router`: every engine passes it;
- `unknown`: neither shown (an engine skipped it, could not be reached, or was inconclusive).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from conformance.requirements import Feature
from conformance.session import SuiteConfig
from conformance.verdicts.results import Report, RequirementResult, Status

ROUTER, ENGINE, UNKNOWN = "router", "engine", "unknown"
Decide = Callable[[SuiteConfig], Report]
"""A run of the suite (`runner.run`), handed in: the runner calls this module."""


def attribute(config: SuiteConfig, report: Report, decide: Decide) -> Report:
    """`report` with every failure not yet attributed attributed (in place; returned)."""
    if not config.engines:
        return report
    open_ = [r for r in report.requirements if r.status is Status.FAIL and not r.attribution]
    for result in open_:
        if result.requirement.feature is Feature.ROUTER:
            result.attribution = ROUTER
    asked = frozenset(r.requirement.id for r in open_ if not r.attribution)
    if not asked:
        return report
    verdicts = [_decided(config, engine, asked, decide) for engine in config.engines]
    for result in open_:
        if not result.attribution:
            result.attribution = _whose(result, verdicts)
    return report


def _decided(
    config: SuiteConfig, engine: str, asked: frozenset[str], decide: Decide
) -> dict[str, Status]:
    """What one engine, asked directly, says of the requirements that failed."""
    direct = replace(config, base_url=engine, engines=(), requirement_ids=asked, workers=1)
    report = decide(direct)
    return {r.requirement.id: r.status for r in report.requirements if r.requirement.id in asked}


def _whose(result: RequirementResult, verdicts: list[dict[str, Status]]) -> str:
    statuses = [v.get(result.requirement.id) for v in verdicts]
    if any(s is Status.FAIL for s in statuses):
        return ENGINE
    if statuses and all(s is Status.PASS for s in statuses):
        return ROUTER
    return UNKNOWN
