"""Judging a deployment: the router's duties fail against their router defect and nothing else,
and a correct router over correct engines is clean in every profile.

The router is the kit's own instrument (`mock_server.router`: round-robin over mock engines,
one named defect at a time), the engines are mocks, and the suite runs through the router
with every engine named (`--engine`), as `tito-conformance run` does it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest

from conformance.profiles import MAIN_PROFILES, MOCK_KNOBS, PROFILES
from conformance.requirements import Feature, Level, all_requirements
from conformance.run.embedded import QUICK
from conformance.run.runner import run
from conformance.session import SuiteConfig
from conformance.verdicts.results import Report, Status
from mock_server.harness.fleet import start_fleet
from mock_server.router.policy import ROUTER_DEFECTS

DECLARED = {
    name: tuple(r.id for r in all_requirements() if name in r.defects) for name in ROUTER_DEFECTS
}
PROFILE_OF = {
    "legacy-abort-one-engine": "tokens-only",
    "key-bypassed": "api-key",
    "key-dropped": "api-key",
}
"""Where each router defect can show: the profile whose features its duty needs."""


@contextmanager
def deployment(profile: str, defect: str | None = None) -> Iterator[SuiteConfig]:
    """Two mock engines of `profile` behind the kit's router, and the run's configuration."""
    p = PROFILES[profile]
    own = () if "--enable-scale-out" in p.flags else ("--no-enable-scale-out",)  # as profiled
    flags = (*own, *p.flags, *MOCK_KNOBS)
    with start_fleet(2, flags, env=p.env, router="kit", router_defect=defect) as fleet:
        yield SuiteConfig(
            fleet.url,
            api_key=p.api_key,
            expect=p.claims,
            profile=profile,
            engines=tuple(fleet.engines),
            **QUICK,  # type: ignore[arg-type]
        )


def failing(report: Report) -> dict[str, str]:
    """MUST/SHOULD requirements that failed or broke, with their reasons."""
    return {
        r.requirement.id: f"{r.status.value} [{r.attribution}]: {r.reason[:300]}"
        for r in report.requirements
        if r.status in (Status.FAIL, Status.ERROR) and r.requirement.level is not Level.MAY
    }


def test_every_router_defect_targets_a_duty() -> None:
    for name, ids in DECLARED.items():
        assert ids, f"router defect {name} is declared by no requirement"
    duties = [r for r in all_requirements() if r.feature is Feature.ROUTER]
    for req in duties:
        assert set(req.defects) <= set(ROUTER_DEFECTS), req.id


@pytest.mark.parametrize("profile", MAIN_PROFILES)
def test_a_correct_deployment_is_clean(profile: str) -> None:
    with deployment(profile) as config:
        report = run(config)
    assert not report.harness_error, report.harness_error
    assert not failing(report), failing(report)
    if profile != "disabled":
        ran = {r.requirement.id for r in report.requirements if r.status is Status.PASS}
        assert {"ROUTER-001", "ROUTER-005", "ROUTER-009"} <= ran, sorted(ran)


@pytest.mark.parametrize("defect", sorted(ROUTER_DEFECTS))
def test_a_router_defect_fails_its_duty_and_is_the_routers(defect: str) -> None:
    with deployment(PROFILE_OF.get(defect, "scale-out"), defect) as config:
        report = run(config)
    found = failing(report)
    declared = set(DECLARED[defect])
    assert declared <= set(found), f"{defect}: declared {sorted(declared)}, failed {found}"
    duties = {rid for rid in found if rid.startswith("ROUTER-")}
    assert duties <= declared, f"{defect} broke other duties too: {found}"
    assert len(found) <= 3, f"{defect}: blast {len(found)}: {found}"
    misattributed = {rid: why for rid, why in found.items() if "[router]" not in why}
    assert not misattributed, f"{defect}: not attributed to the router: {misattributed}"


def test_without_engines_the_duties_are_not_judged() -> None:
    with deployment("scale-out") as config:
        report = run(replace(config, engines=(), requirement_ids=frozenset({"ROUTER-001"})))
    result = report.result("ROUTER-001")
    assert result.status is Status.SKIP and "--engine" in result.reason, result
