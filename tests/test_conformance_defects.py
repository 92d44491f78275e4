"""The suite must be able to fail: every defect of the mock's catalogue is detected.

For each defect the suite runs (limited to the requirements the defect targets, for speed)
against the mock started with it, and the targeted requirement must be among the failures.
"""

from __future__ import annotations

import pytest
from test_conformance_helpers import run_against_mock

from conformance.profiles import MOCK_KNOBS, PROFILES
from conformance.requirements import Level, by_id
from conformance.results import Report, Status
from conformance.runner import run
from conformance.server_process import ServerProcess, free_port, mock_argv
from conformance.session import SuiteConfig
from mock_server.defects import DEFECTS

# defect -> (profile, requirement IDs it breaks): the one place the defect -> requirement mapping
# lives (the catalogue's `breaks` names the behaviour in words). Profile "scale-out" unless the
# defect needs another: the behaviour it breaks only exists there.
TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "request-id-no-prefix": ("scale-out", ("GEN-RESP-004",)),
    "request-id-body-wins": ("scale-out", ("GEN-RESP-006",)),
    "usage-miscount": ("scale-out", ("GEN-RESP-003",)),
    "finish-reason-null": ("scale-out", ("GEN-RESP-002",)),
    "max-tokens-default-16": ("scale-out", ("GEN-REQ-009",)),
    "max-tokens-overrun": ("scale-out", ("GEN-REQ-005",)),
    "seed-ignored": ("scale-out", ("GEN-REQ-007",)),
    "greedy-not-greedy": ("scale-out", ("GEN-REQ-006",)),
    "n-ignored": ("scale-out", ("GEN-REQ-008",)),
    "prompt-token-ids-missing": ("scale-out", ("GEN-REQ-011",)),
    "output-mode-not-echoed": ("scale-out", ("TEXT-005",)),
    "output-mode-wrong-echo": ("scale-out", ("TEXT-007",)),
    "unknown-field-rejected": ("scale-out", ("ERR-004",)),
    "stop-token-dropped": ("scale-out", ("STOP-002",)),
    "stop-reason-null": ("scale-out", ("STOP-001", "STOP-009")),
    "stop-token-ids-ignored": ("scale-out", ("STOP-001",)),
    "stop-string-not-cut": ("scale-out", ("STOP-006",)),
    "stop-string-trims-tokens": ("scale-out", ("STOP-008",)),
    "eos-stop-reason-set": ("scale-out", ("STOP-003",)),
    "logprobs-legacy-token-id": ("scale-out", ("LOGP-001",)),
    "logprobs-positive": ("scale-out", ("LOGP-007",)),
    "logprobs-count-mismatch": ("scale-out", ("LOGP-002",)),
    "top-logprobs-sampled-not-first": ("scale-out", ("LOGP-003",)),
    "top-logprobs-wrong-count": ("scale-out", ("LOGP-008",)),
    "rank-wrong": ("scale-out", ("LOGP-006",)),
    "logprobs-over-max-accepted": ("scale-out", ("LOGP-009",)),
    "prompt-logprobs-no-leading-null": ("scale-out", ("LOGP-010",)),
    "stream-no-done": ("scale-out", ("STREAM-002",)),
    "stream-bad-framing": ("scale-out", ("STREAM-001",)),
    "stream-cumulative-deltas": ("scale-out", ("STREAM-003",)),
    "stream-weight-versions-every-chunk": ("scale-out", ("WV-005",)),
    "stream-finish-reason-early": ("scale-out", ("STREAM-005",)),
    "stream-no-usage-chunk": ("scale-out", ("STREAM-007",)),
    "stream-multi-choice-chunk": ("scale-out", ("STREAM-006",)),
    "stream-error-as-http": ("scale-out", ("STREAM-008",)),
    "text-no-bytes": ("scale-out", ("TEXT-002",)),
    "text-logprobs-tokens-shape": ("scale-out", ("TEXT-003",)),
    "text-missing": ("scale-out", ("TEXT-001",)),
    "skip-special-ignored": ("scale-out", ("TEXT-008",)),
    "weight-versions-missing": ("scale-out", ("WV-001",)),
    "weight-versions-gap": ("scale-out", ("WV-002",)),
    "weight-versions-not-reset": ("scale-out", ("WV-007",)),
    "weight-versions-empty-nonempty": ("scale-out", ("WV-006",)),
    "abort-ignored": ("scale-out", ("ABORT-002", "ABORT-003")),
    "abort-missing-ids-200": ("scale-out", ("ABORT-005",)),
    "abort-finish-reason-length": ("scale-out", ("ABORT-003",)),
    "abort-no-partial-output": ("scale-out", ("ABORT-004",)),
    "abort-no-auth": ("api-key", ("AUTH-002",)),
    "legacy-abort-requires-key": ("tokens-only-api-key", ("AUTH-003",)),
    "legacy-abort-everywhere": ("api-key", ("ABORT-008",)),
    "disconnect-no-abort": ("scale-out", ("ABORT-009",)),
    "dp-rank-unchecked": ("scale-out", ("DP-003",)),
    "dp-rank-non-int-400": ("scale-out", ("DP-002",)),
    "api-key-unchecked": ("api-key", ("AUTH-001",)),
    "unauthorized-body-wrong": ("api-key", ("AUTH-004",)),
    "health-guarded": ("api-key", ("AUTH-005",)),
    "disabled-404": ("disabled", ("DISABLED-001",)),
    "disabled-message-wrong": ("disabled", ("DISABLED-002",)),
    "disabled-validates-first": ("disabled", ("DISABLED-003",)),
    "tokens-only-stop-accepted": ("tokens-only", ("TOKONLY-004",)),
    "tokens-only-text-accepted": ("tokens-only", ("TOKONLY-002",)),
    "derender-accepts-text": ("scale-out", ("RENDER-003",)),
    "render-generate-mismatch": ("scale-out", ("RENDER-002",)),
    "features-content-parts-accepted": ("scale-out", ("MM-001",)),
    "validation-422": ("scale-out", ("ERR-003",)),
    "error-body-flat": ("scale-out", ("ERR-002",)),
    "empty-token-ids-accepted": ("scale-out", ("GEN-REQ-002",)),
    "negative-token-ids-accepted": ("scale-out", ("GEN-REQ-003",)),
    "oov-token-500": ("tokens-only", ("ERR-007",)),
    "invalid-json-500": ("scale-out", ("ERR-005",)),
    "wrong-content-type-accepted": ("scale-out", ("ERR-006",)),
    "hang-generate": ("scale-out", ("GEN-001",)),
    "garbage-json": ("scale-out", ("GEN-001",)),
    "schema-index-string": ("scale-out", ("GEN-001",)),
    "tokens-mode-text": ("scale-out", ("GEN-002",)),
    "token-ids-missing-accepted": ("scale-out", ("GEN-REQ-001",)),
    "sampling-params-optional": ("scale-out", ("GEN-REQ-004",)),
    "default-output-mode-text": ("scale-out", ("GEN-REQ-010",)),
    "optional-fields-rejected": ("scale-out", ("GEN-REQ-012",)),
    "token-ids-as-strings": ("scale-out", ("GEN-RESP-001",)),
    "request-id-header-ignored": ("scale-out", ("GEN-RESP-005",)),
    "routed-experts-always": ("scale-out", ("GEN-RESP-007",)),
    "scale-out-generate-404": ("scale-out", ("GEN-003",)),
    "length-stop-reason-set": ("scale-out", ("STOP-004",)),
    "abort-stop-reason-set": ("scale-out", ("STOP-005",)),
    "include-stop-str-ignored": ("scale-out", ("STOP-007",)),
    "logprobs-always": ("scale-out", ("LOGP-004",)),
    "tokens-logprobs-with-token": ("scale-out", ("LOGP-005",)),
    "stream-empty-chunk": ("scale-out", ("STREAM-004",)),
    "stream-schema-error-200": ("scale-out", ("STREAM-009",)),
    "stream-chunk-no-output-mode": ("scale-out", ("TEXT-006",)),
    "stream-held-text-lost": ("scale-out", ("STOP-010",)),
    "stream-no-final-weight-versions": ("scale-out", ("WV-003", "WV-004")),
    "text-mode-other-tokens": ("scale-out", ("TEXT-004",)),
    "stream-text-cumulative": ("scale-out", ("TEXT-009",)),
    "text-detokenize-false-accepted": ("scale-out", ("TEXT-010",)),
    "placeholder-wrong-id": ("scale-out", ("TEXT-011",)),
    "weight-label-not-default": ("scale-out", ("WV-008",)),
    "weight-update-no-split": ("scale-out", ("WV-009",)),
    "abort-route-missing": ("scale-out", ("ABORT-001",)),
    "abort-json-body": ("scale-out", ("ABORT-006",)),
    "legacy-abort-ignored": ("tokens-only", ("ABORT-007",)),
    "dp-rank-zero-rejected": ("scale-out", ("DP-001",)),
    "disabled-abort-open": ("disabled", ("DISABLED-004",)),
    "tokens-only-generate-403": ("tokens-only", ("TOKONLY-001",)),
    "tokens-only-detokenize-text": ("tokens-only", ("TOKONLY-003",)),
    "tokens-only-stop-token-ids-ignored": ("tokens-only", ("TOKONLY-005",)),
    "render-missing": ("scale-out", ("RENDER-001",)),
    "output-mode-any-accepted": ("scale-out", ("ERR-001",)),
    "type-error-500": ("scale-out", ("ERR-008",)),
    "null-rejected": ("scale-out", ("ERR-009",)),
    "max-tokens-zero-accepted": ("scale-out", ("ERR-010",)),
}
# Mock flags a defect needs beyond its profile's: the behaviour only exists with them.
EXTRA_FLAGS: dict[str, tuple[str, ...]] = {
    "placeholder-wrong-id": ("--return-tokens-as-token-ids",),
}


def test_every_defect_has_a_target() -> None:
    assert set(TARGETS) == set(DEFECTS), (
        f"untargeted defects: {sorted(set(DEFECTS) - set(TARGETS))}; "
        f"unknown: {sorted(set(TARGETS) - set(DEFECTS))}"
    )
    for defect, (profile, ids) in TARGETS.items():
        assert ids, f"{defect} targets no requirement"
        unknown = set(ids) - set(by_id())
        assert not unknown, f"{defect} targets unknown requirements {sorted(unknown)}"
        assert profile in PROFILES, f"{defect}: unknown profile {profile!r}"
    assert set(EXTRA_FLAGS) <= set(TARGETS)


def test_every_requirement_is_targeted() -> None:
    """Coverage cannot regress: each requirement has a defect that must make its check fail."""
    targeted = {t for _, ids in TARGETS.values() for t in ids}
    untargeted = sorted(set(by_id()) - targeted)
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
    p = PROFILES[profile]
    port = free_port()
    argv = mock_argv(port, [*p.flags, *MOCK_KNOBS, *extra_flags], defects)
    with ServerProcess(argv, port, env=dict(p.env)) as server:
        config = SuiteConfig(
            base_url=server.base_url,
            api_key=p.api_key,
            expect=p.claims | extra_claims,
            profile=profile,
            timeout=3.0,
            warmup_timeout=3.0,
            deadline_s=120.0,
            requirement_ids=frozenset(targets),
        )
        return run(config)


def run_defect(defect: str) -> Report:
    profile, targets = TARGETS[defect]
    return run_mock(profile, (defect,), targets, EXTRA_FLAGS.get(defect, ()))


OPTIONAL_OUTPUT_FLAGS = ("--enable-return-routed-experts", "--return-sampling-mask")
OPTIONAL_OUTPUT_CLAIMS = frozenset({"routed-experts", "sampling-mask"})


@pytest.mark.parametrize(
    ("flags", "claims", "status"),
    [
        ((), OPTIONAL_OUTPUT_CLAIMS, Status.FAIL),  # claimed, but the fields are null
        (OPTIONAL_OUTPUT_FLAGS, frozenset(), Status.FAIL),  # sent, but not claimed
        (OPTIONAL_OUTPUT_FLAGS, OPTIONAL_OUTPUT_CLAIMS, Status.PASS),
    ],
)
def test_optional_outputs_follow_the_claim(
    flags: tuple[str, ...], claims: frozenset[str], status: Status
) -> None:
    """GEN-RESP-007 judges routed_experts / sampling_mask by what the server claims to run with."""
    report = run_mock("scale-out", (), ("GEN-RESP-007",), flags, claims)
    assert report.result("GEN-RESP-007").status is status, report.result("GEN-RESP-007").reason


@pytest.mark.parametrize("defect", sorted(TARGETS))
def test_defect_is_detected(defect: str) -> None:
    _, targets = TARGETS[defect]
    report = run_defect(defect)
    assert not report.harness_error, report.harness_error
    failed = report.failed_ids()
    missed = [t for t in targets if t not in failed]
    detail = {t: (report.result(t).status.value, report.result(t).reason[:300]) for t in targets}
    assert not missed, f"{defect} was not detected: {detail}"
    for target in targets:
        result = report.result(target)
        assert result.status is Status.FAIL
        for check in result.checks:
            if check.status is Status.FAIL:
                # what was sent and received, or why nothing could be sent
                assert (
                    check.reproducer.startswith("curl ")
                    or "claimed feature" in (check.message)
                    or "does not work" in check.message
                ), check
    if any(by_id()[t].level is Level.MUST for t in targets):
        assert report.summary.failed > 0, "a MUST failure must fail the run"
    else:
        assert report.summary.warnings > 0, "a SHOULD failure is reported as a warning"
