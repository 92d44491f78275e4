"""A reproducer reproduces (issue 36, point 7).

For each defect sampled here the suite runs against the defect's mock (a real process on a
loopback port); every failure's reproducer is run in a real shell, against that mock, and its
evidence (`verdicts.reproducer.Evidence`: the finish_reason, the span count, the engines'
abort count, the status) is read from what the replay printed: the same value again. Against
a correct mock of the same profile the same script shows another value: no violation.

Every in-flight defect is here; the ordinary ones are a sample of those whose failure names
its exchange and status (`api.StatusMismatch`).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace

import pytest

from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.verdicts.reproducer import Evidence
from conformance.verdicts.results import Status
from mock_server.behaviour.defects import DEFECTS

IN_FLIGHT = (
    "abort-ignored",
    "abort-finish-reason-length",
    "legacy-abort-ignored",
    "disconnect-no-abort",
    "disconnect-whole-no-abort",
    "weight-update-no-split",
)
ORDINARY = (
    "abort-missing-ids-200",
    "abort-route-missing",
    "dp-rank-zero-rejected",
    "health-guarded",
)
REPLAY_S = 60.0


def _sh(script: str, api_key: str | None) -> str:
    env = {**os.environ, "TITO_API_KEY": api_key or ""}
    done = subprocess.run(
        ["sh", "-s"], input=script, capture_output=True, text=True, env=env, timeout=REPLAY_S
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize("name", IN_FLIGHT + ORDINARY)
def test_a_reproducer_reproduces(name: str) -> None:
    defect = DEFECTS[name]
    wanted = frozenset(defect.requirements)
    with embedded_mock(defect.profile, defect.flags, (name,), **QUICK) as (server, config):
        report = run(replace(config, requirement_ids=wanted))
        failed = [
            (r.requirement.id, c)
            for r in report.requirements
            for c in r.checks
            if c.status is Status.FAIL and not c.name.startswith("fuzz")
        ]
        assert {rid for rid, _ in failed} >= wanted, [(r, c.message[:200]) for r, c in failed]
        seen: list[tuple[str, str, Evidence]] = []
        for rid, check in failed:
            evidence = Evidence.of(check.reproducer)
            assert evidence is not None, f"{rid}: no evidence in {check.reproducer[:400]}"
            if config.api_key:
                assert config.api_key not in check.reproducer
            again = evidence.read(_sh(check.reproducer, config.api_key))
            assert again == (True, evidence.seen), f"{rid}: {evidence} replayed as {again}"
            seen.append((rid, check.reproducer, evidence))
    with embedded_mock(defect.profile, defect.flags) as (correct, _):
        for rid, script, evidence in seen:
            replayed = script.replace(server.base_url, correct.base_url)
            found, value = evidence.read(_sh(replayed, config.api_key))
            assert found and value != evidence.seen, f"{rid}: {evidence} on a correct mock too"
