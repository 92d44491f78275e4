"""The suite must be able to fail: every defect of the mock's catalogue is detected.

For each defect the suite runs (limited to the requirements the defect targets, for speed)
against the mock started with it, and the targeted requirement must be among the failures.
"""

from __future__ import annotations

import pytest
from test_conformance_helpers import run_against_mock

from conformance.requirements import Level, by_id
from conformance.results import Status
from mock_server.defects import DEFECTS

# defect -> (profile, requirement IDs it breaks). Profile "scale-out" unless the defect needs
# another: the behaviour it breaks only exists there.
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
}


def test_every_defect_has_a_target() -> None:
    assert set(TARGETS) == set(DEFECTS), (
        f"untargeted defects: {sorted(set(DEFECTS) - set(TARGETS))}; "
        f"unknown: {sorted(set(TARGETS) - set(DEFECTS))}"
    )
    for _, ids in TARGETS.values():
        assert set(ids) <= set(by_id())


NOT_YET = {"skip-special-ignored": "the mock ignores allowed_token_ids (WANTED_DEFECTS.md)"}


@pytest.mark.parametrize(
    "defect",
    [
        pytest.param(d, marks=pytest.mark.xfail(reason=NOT_YET[d], strict=True))
        if d in NOT_YET
        else d
        for d in sorted(TARGETS)
    ],
)
def test_defect_is_detected(defect: str) -> None:
    profile, targets = TARGETS[defect]
    report = run_against_mock(profile, [defect], requirement_ids=targets)
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
