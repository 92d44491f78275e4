"""`tito-conformance live --load S` (issue 37, point 8): after the suite, a load phase against
the same server, its reports beside the others, its violations gated per requirement ID on the
known deviations as the suite's failures are."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.load import outcome
from live import cli, load_phase
from live.deviations import Deviation, FuzzMatch


def _data(rows: list[dict], **more: object) -> dict:
    base = {
        "server": {"version": "0.32.0"},
        "figures": {"requests": 10, "tokens": 40, "aborts": 1, "errors": 0, "lost": 0},
        "harness_errors": [],
        "requirements": rows,
    }
    return {**base, **more}


def _row(rid: str, status: str, violations: int = 0) -> dict:
    first = {"at_s": 1.5, "in_flight": 3, "message": f"{rid} broke"} if violations else None
    return {"id": rid, "status": status, "judged": 9, "violations": violations,
            "first_violation": first}  # fmt: skip


def test_a_violation_passes_the_gate_only_where_its_deviation_is_listed() -> None:
    rows = [_row("WV-007", "fail", 2), _row("GEN-RESP-003", "fail", 1), _row("LOGP-008", "warn", 4)]
    rows.append(_row("STREAM-003", "pass"))
    listed = [
        Deviation("WV-007", "vllm-bug", "", "", ("scale-out",)),
        Deviation("STREAM-003", "vllm-bug", "", "", ()),  # not violated: not stale here
        Deviation("GEN-RESP-003", "vllm-bug", "", "", (), FuzzMatch()),  # the fuzzer's entry
    ]
    verdict = load_phase.judge(_data(rows), listed, "scale-out")
    assert verdict.expected == ["WV-007"] and list(verdict.unexpected) == ["GEN-RESP-003"]
    assert "first at 1.5 s (3 in flight): GEN-RESP-003 broke" in verdict.unexpected["GEN-RESP-003"]
    assert not verdict.ok and "UNLISTED VIOLATION GEN-RESP-003" in load_phase.render([verdict])
    other_profile = load_phase.judge(_data(rows[:1]), listed, "tokens-only")
    assert list(other_profile.unexpected) == ["WV-007"]


def test_a_load_that_judged_nothing_or_broke_fails_the_gate() -> None:
    empty = _data([], figures={"requests": 0})
    assert "nothing was judged" in load_phase.judge(empty, [], "scale-out").harness_error
    broke = _data([_row("LOAD-001", "pass")], harness_errors=["workers not drained"])
    verdict = load_phase.judge(broke, [], "scale-out")
    assert not verdict.ok and "HARNESS ERROR: workers not drained" in load_phase.render([verdict])


def test_live_load_gates_the_mocks_violation_and_writes_its_reports(tmp_path: Path) -> None:
    """A mock that miscounts usage: the suite's gate and the load's both fail GEN-RESP-003;
    listed for 0.32.0, both pass (the load's 'listed deviation, violated under load')."""
    argv = ["--backend", "mock", "--profile", "scale-out", "--load", "3"]
    argv += ["--server-arg=--mock-defect", "--server-arg=usage-miscount"]
    out = tmp_path / "unlisted"
    assert cli.main([*argv, "--out", str(out)]) == 1
    gate = (out / "gate.txt").read_text()
    assert "load gate:\n  [scale-out] vLLM 0.32.0: FAILED" in gate
    assert "UNLISTED VIOLATION GEN-RESP-003: " in gate
    data = json.loads((out / "load-scale-out.json").read_text())
    outcome.validate(data)
    assert {p.name for p in out.glob("load-scale-out.*")} == {
        f"load-scale-out.{ext}" for ext in ("json", "html", "xml", "log")
    }
    listing = tmp_path / "deviations.yaml"
    listing.write_text(
        'versions:\n  "0.32.0":\n    - id: GEN-RESP-003\n      kind: vllm-bug\n'
        "      symptom: usage off by one\n      evidence: the mock's usage-miscount\n"
    )
    out = tmp_path / "listed"
    assert cli.main([*argv, "--deviations", str(listing), "--out", str(out)]) == 0
    gate = (out / "gate.txt").read_text()
    assert "listed deviation, violated under load: GEN-RESP-003" in gate, gate
    timings = json.loads((out / "timings.json").read_text())
    assert timings["scale-out"]["load_s"] >= 3


def test_the_load_restarts_a_server_the_suites_last_check_killed(tmp_path: Path) -> None:
    """vLLM 0.32's --tokens-only exits on an out-of-vocabulary id, the suite's last check (the
    mock's oov-token-500 does the same): the load restarts it first and judges a live server."""
    listing = tmp_path / "deviations.yaml"
    listing.write_text(
        'versions:\n  "0.32.0":\n    - id: ERR-007\n      profiles: [tokens-only]\n'
        "      kind: vllm-bug\n      symptom: exits\n      evidence: oov-token-500\n"
    )
    out = tmp_path / "out"
    argv = ["--backend", "mock", "--profile", "tokens-only", "--load", "3", "--deviations",
            str(listing), "--server-arg=--mock-defect", "--server-arg=oov-token-500",
            "--out", str(out)]  # fmt: skip
    code = cli.main(argv)
    gate = (out / "gate.txt").read_text()
    assert code == 0, gate
    assert "load gate:\n  [tokens-only] vLLM 0.32.0: ok" in gate
    assert json.loads((out / "timings.json").read_text())["tokens-only"]["restarts"] == 1
