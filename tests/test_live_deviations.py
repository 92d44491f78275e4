"""The known-deviations gate: unlisted failures and stale entries both fail the live run."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.run.runner import report_from
from conformance.session import SuiteConfig
from conformance.verdicts.results import CheckResult, Report, Status
from live import deviations
from live.deviations import Deviation


def report(profile: str, outcomes: dict[str, Status], version: str = "0.32.0") -> Report:
    config = SuiteConfig(base_url="http://127.0.0.1:1", profile=profile)
    made = report_from(
        config, None, [((rid,), CheckResult(f"check-{rid}", s)) for rid, s in outcomes.items()]
    )
    made.server.version = version
    return made


OOV = Deviation("ERR-007", "vllm-bug", "500 and exit", "capture", ("tokens-only",))


def test_the_shipped_file_lists_the_tokens_only_oov_crash_for_032() -> None:
    table = deviations.load()
    listed = deviations.for_version(table, "0.32.0+cpu")
    (entry,) = [d for d in listed if d.id == "ERR-007" and d.fuzz is None]
    assert entry.kind == "vllm-bug" and entry.profiles == ("tokens-only",)
    assert "exits" in entry.symptom and entry.evidence
    assert deviations.for_version(table, "0.99.0") == []
    assert deviations.for_version(table, None) == []


def test_listed_failure_is_ok_unlisted_failure_is_not() -> None:
    verdict = deviations.judge(
        report("tokens-only", {"ERR-007": Status.FAIL, "GEN-001": Status.PASS}), [OOV]
    )
    assert verdict.ok and verdict.expected == ["ERR-007"]
    verdict = deviations.judge(report("tokens-only", {"ERR-001": Status.FAIL}), [OOV])
    assert not verdict.ok and "ERR-001" in verdict.unexpected
    assert verdict.not_exercised == ["ERR-007"], "skipped there: reported, not failed"
    assert "UNLISTED FAILURE ERR-001" in deviations.render([verdict])


def test_a_listed_deviation_that_passes_is_stale() -> None:
    verdict = deviations.judge(report("tokens-only", {"ERR-007": Status.PASS}), [OOV])
    assert not verdict.ok and verdict.stale == ["ERR-007"]
    assert "STALE" in deviations.render([verdict])


def test_profiles_scope_an_entry_and_errors_count_as_failures() -> None:
    verdict = deviations.judge(report("scale-out", {"ERR-007": Status.FAIL}), [OOV])
    assert not verdict.ok, "listed for tokens-only only"
    verdict = deviations.judge(report("scale-out", {"GEN-001": Status.ERROR}), [])
    assert not verdict.ok


def test_a_harness_error_fails_the_gate() -> None:
    broken = report("scale-out", {})
    broken.harness_error = "server did not start"
    assert not deviations.judge(broken, []).ok


def test_bad_kind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text('versions:\n  "1.0":\n    - {id: ERR-007, kind: whatever}\n')
    with pytest.raises(ValueError, match="kind"):
        deviations.load(path)


def test_a_listed_race_may_pass_without_going_stale() -> None:
    """vLLM 0.30/0.31's streamed n > 1 race fails a run now and then: listed `intermittent`,
    a pass is reported as such, never as stale, and other failures still fail the gate."""
    race = Deviation("STREAM-004", "vllm-bug", "list index out of range", "runs", (), None, True)
    verdict = deviations.judge(report("scale-out", {"STREAM-004": Status.PASS}), [race])
    assert verdict.ok and verdict.intermittent == ["STREAM-004"] and not verdict.stale
    assert "listed race, did not show this time: STREAM-004" in deviations.render([verdict])
    verdict = deviations.judge(report("scale-out", {"STREAM-004": Status.FAIL}), [race])
    assert verdict.ok and verdict.expected == ["STREAM-004"]
    outcomes = {"STREAM-004": Status.PASS, "GEN-001": Status.FAIL}
    assert not deviations.judge(report("scale-out", outcomes), [race]).ok


def test_releases_that_behave_alike_share_entries(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        'versions:\n  "0.30.0, 0.31.0":\n    - {id: WV-001, kind: predates}\n'
        '  "0.31.0":\n    - {id: LOGP-001, kind: predates}\n'
    )
    table = deviations.load(path)
    assert [d.id for d in deviations.for_version(table, "0.30.0")] == ["WV-001"]
    assert [d.id for d in deviations.for_version(table, "0.31.0")] == ["WV-001", "LOGP-001"]
