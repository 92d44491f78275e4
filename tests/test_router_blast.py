"""Blame stays narrow behind a router (issue 28, item 5): a run as `tito-conformance run` makes
it (the suite with the fuzz folded in, `--engine` per engine) fails the router's duty, not
every requirement whose evidence passes through it.

The kit's router with one named defect, and vllm-router 0.1.17 as it is (its deviations are in
/work/shared/reference/routers.md), each in front of two correct mocks. What each fails is
pinned exactly, beside the in-flight verdicts (ABORT-*, STOP-005, WV-003/004: issue 28's items
1-4 decide those, and a busy machine still makes the fuzz's abort sequence time out).
"""

from __future__ import annotations

import pytest

from conformance.cli import run_fuzzed
from conformance.profiles import MOCK_KNOBS, PROFILES
from conformance.requirements import Level
from conformance.run.embedded import QUICK
from conformance.session import SuiteConfig
from conformance.verdicts.results import CheckResult, Report, Status
from loopback.vllm_router import HOW_TO_GET, find_binary
from mock_server.harness.fleet import start_fleet

FUZZ = 5  # cases per operation: enough that every fuzz group finds what it finds here
IN_FLIGHT = ("ABORT-", "STOP-005", "WV-003", "WV-004")
"""The abort family, whose verdicts issue 28's items 1-4 are reworking: reported, not pinned."""

CASES = {
    # the kit's router, by defect: what fails beside the in-flight verdicts, exactly
    "abort-one-engine": {"ROUTER-001"},  # before: ABORT-002 from the fuzz's abort too
    "error-502": {"ROUTER-009"},  # before: ERR-002, -003, -005, -006, RENDER-001 (fuzz's 502s)
    "dp-rank-dropped": {"ROUTER-005"},  # before: DP-003 too
    "request-id-rewritten": {"ROUTER-006"},  # before: GEN-RESP-004, -005 too
}
VLLM_ROUTER = {"ROUTER-001", "ROUTER-009", "ROUTER-011"}
"""vllm-router 0.1.17 over correct mocks: aborts and label updates reach one engine, and it
answers requests the engines reject with its own 422 or 415 in plain text. (Before: WV-007,
ERR-002, -003 and -006 failed or warned beside them.)"""
OWN_REJECTIONS = {"GEN-001", "GEN-REQ-012", "ERR-004"}
"""vllm-router also rejects with a 422 bodies the engines accept (`"stream": null`): the fuzz's
findings on those 422s are blocked on ROUTER-009 (the router answers errors its own way); the
suite's own checks of these pass, so none is expected to fail (allowed: no duty states a
router's own rejections of what the engines accept)."""


def failing(report: Report) -> dict[str, str]:
    return {
        r.requirement.id: r.reason[:300]
        for r in report.requirements
        if r.status in (Status.FAIL, Status.ERROR)
        and r.requirement.level is not Level.MAY
        and not _unanswered(r.checks)
    }


def _unanswered(checks: list[CheckResult]) -> bool:
    bad = [c for c in checks if c.status in (Status.FAIL, Status.ERROR)]
    return bool(bad) and all(c.message.startswith(UNANSWERED) for c in bad)


UNANSWERED = ("no answer within", "ServerBroke:")
"""The fuzz's answer budget (6 s here) spent on a machine whose cores are busy: a verdict of
pace, not of whose fault a defect is (issue 28's items 1-4); left out of the sets pinned here."""


def judged(found: dict[str, str]) -> set[str]:
    return {rid for rid in found if not rid.startswith(IN_FLIGHT)}


def routed_run(router: str, defect: str | None) -> Report:
    p = PROFILES["scale-out"]
    flags = (*p.flags, *MOCK_KNOBS)
    with start_fleet(2, flags, env=p.env, router=router, router_defect=defect) as fleet:
        config = SuiteConfig(
            fleet.url,
            api_key=p.api_key,
            expect=p.claims,
            profile="scale-out",
            engines=tuple(fleet.engines),
            **QUICK,  # type: ignore[arg-type]
        )
        return run_fuzzed(config, FUZZ)


@pytest.mark.parametrize("defect", sorted(CASES))
def test_a_router_defect_fails_its_duty_with_the_fuzz_folded_in(defect: str) -> None:
    report = routed_run("kit", defect)
    assert not report.harness_error, report.harness_error
    found = failing(report)
    assert judged(found) == CASES[defect], found
    assert len(found) <= 3, found


def test_vllm_router_fails_its_deviations_only() -> None:
    if find_binary() is None:
        pytest.skip(HOW_TO_GET)
    report = routed_run("vllm-router", None)
    assert not report.harness_error, report.harness_error
    found = failing(report)
    assert VLLM_ROUTER <= judged(found) <= VLLM_ROUTER | OWN_REJECTIONS, found
