"""The suite must be able to fail: the catalogue covers every requirement.

Each defect declares the requirements it breaks, its profile and its extra flags in the
catalogue itself (`mock_server.behaviour.defects`). That each declared requirement fails, with the
exchange that shows it, and nothing else does, is test_conformance_blast_radius.py's (the
whole suite per defect); these check the catalogue itself and the per-token outputs of serve
flags.
"""

from __future__ import annotations

import pytest
from test_conformance_helpers import run_against_mock

from conformance.profiles import PROFILES
from conformance.requirements import all_requirements, by_id
from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.verdicts.results import Report, Status
from mock_server.behaviour.defects import DEFECTS


def test_every_defect_has_a_target() -> None:
    for name, defect in DEFECTS.items():
        assert defect.requirements, f"{name} targets no requirement"
        assert len(set(defect.requirements)) == len(defect.requirements), f"{name}: duplicate IDs"
        unknown = set(defect.requirements) - set(by_id())
        assert not unknown, f"{name} targets unknown requirements {sorted(unknown)}"
        assert defect.profile in PROFILES, f"{name}: unknown profile {defect.profile!r}"


def test_every_requirement_is_targeted() -> None:
    """Coverage cannot regress: each requirement has a defect that must make its check fail."""
    # a router's duties fail against the kit's router defects (test_conformance_router.py),
    # which the installed catalogue names beside the mock's
    untargeted = [r.id for r in all_requirements() if not r.defects]
    assert not untargeted, f"requirements no defect proves the suite can fail: {untargeted}"


def run_mock(
    profile: str,
    defects: tuple[str, ...],
    targets: tuple[str, ...],
    extra_flags: tuple[str, ...] = (),
    extra_claims: frozenset[str] = frozenset(),
) -> Report:
    """The suite, limited to `targets`, against the mock of `profile` plus extra flags/claims."""
    if not extra_flags and not extra_claims:
        return run_against_mock(profile, defects, requirement_ids=targets)
    config = QUICK | {"expect": extra_claims, "requirement_ids": frozenset(targets)}
    with embedded_mock(profile, extra_flags, defects, **config) as (_, suite):
        return run(suite)


OPTIONAL_OUTPUT_FLAGS = ("--enable-return-routed-experts", "--return-sampling-mask")
OPTIONAL_OUTPUT_CLAIMS = frozenset({"routed-experts", "sampling-mask"})


@pytest.mark.parametrize(
    ("flags", "claims", "status"),
    [
        ((), OPTIONAL_OUTPUT_CLAIMS, Status.FAIL),  # claimed, but the fields are null
        (OPTIONAL_OUTPUT_FLAGS, frozenset(), Status.PASS),  # sent in their form: detected
        (OPTIONAL_OUTPUT_FLAGS, OPTIONAL_OUTPUT_CLAIMS, Status.PASS),
        ((), frozenset(), Status.PASS),
    ],
)
def test_optional_outputs_follow_the_flags(
    flags: tuple[str, ...], claims: frozenset[str], status: Status
) -> None:
    """GEN-RESP-007 judges routed_experts / sampling_mask by the flags the server runs with:
    detected from the fields' form (a documented flag never fails a correct server), or
    claimed. A field in another form is no flag's output (the `routed-experts-always`
    defect's "AAAA" fails it: tests/test_conformance_blast_radius.py)."""
    report = run_mock("scale-out", (), ("GEN-RESP-007",), flags, claims)
    assert report.result("GEN-RESP-007").status is status, report.result("GEN-RESP-007").reason
