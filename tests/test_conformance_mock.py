"""The suite against the correct mock: everything applicable passes, in every profile."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_conformance_helpers import run_against_mock

from conformance.profiles import MAIN_PROFILES, PROFILES
from conformance.reporting import json_report
from conformance.verdicts.results import Status


@pytest.mark.parametrize("profile", [*MAIN_PROFILES, "tokens-only-api-key"])
def test_correct_mock_passes(profile: str) -> None:
    report = run_against_mock(profile)
    bad = [
        f"{r.requirement.id} {r.status.value}: {r.reason[:300]}"
        for r in report.requirements
        if r.status in (Status.FAIL, Status.ERROR)
    ]
    assert not bad, "\n".join(bad)
    assert not report.harness_error
    assert report.summary.passed > 0
    for claim in PROFILES[profile].claims:
        assert claim in report.server.detected_features
    json_report.validate(json_report.to_dict(report))
    for result in report.requirements:
        if result.status is Status.SKIP:
            assert result.reason, f"{result.requirement.id} skipped without a reason"


def test_main_command_exits_zero(tmp_path: object) -> None:
    """The README's main command: every profile of the embedded mock, exit 0, valid JSON."""
    from pathlib import Path

    out = Path(str(tmp_path))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "run",
            "--json-report",
            str(out / "r.json"),
            "--junit-xml",
            str(out / "r.xml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "r.json").read_text())
    json_report.validate(data)
    assert set(data["profiles"]) == set(MAIN_PROFILES)
    assert "<testsuites" in (out / "r.xml").read_text()
    for profile in MAIN_PROFILES:
        assert f"profile {profile}" in proc.stdout
