"""What runs beside what (issue 19): the folded-in fuzz beside the check workers when the server
has room for it, never changing the weight label while its module runs, and always ended
before the checks that read the whole server."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from conformance import cli
from conformance.cli import main
from conformance.fuzz import FuzzConfig
from conformance.fuzz import campaign as run
from conformance.fuzz.expectations import operations
from conformance.fuzz.settings import ServerFacts
from conformance.run import parallel, runner
from conformance.server.limits import Limits


@pytest.mark.parametrize(
    ("workers", "limits", "beside"),
    [
        (1, Limits(), False),  # no workers: the fuzz runs after the checks, as it always did
        (6, Limits(), True),  # n = 64 was accepted: room for far more than 7 checks
        (2, Limits(max_n=16), False),  # the workers fill it: the fuzz would queue
        (2, Limits(max_n=24), True),
    ],
)
def test_the_fuzz_runs_beside_only_where_the_server_has_room(
    workers: int, limits: Limits, beside: bool
) -> None:
    assert parallel.room_beside(workers, limits) is beside


def test_the_gate_opens_when_the_weight_module_ends() -> None:
    gate = threading.Event()
    on_done = runner._opens(gate)
    on_done(["/x/checks/test_core.py::test_a", "-q"])
    assert not gate.is_set()
    on_done([f"/x/checks/{parallel.GATED}", "-q"])
    assert gate.is_set()


class _Gate:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def wait(self) -> None:
        self.log.append("wait")


class _Fuzzer:
    """Records what the fuzz does, in order, without a server."""

    def __init__(self, log: list[str], facts: ServerFacts) -> None:
        self.log, self.facts = log, facts
        self.server_gone, self.findings, self.stats, self.unsendable = "", {}, [], 0

    def served(self, op_id: str) -> str:
        return "served"

    def fuzz_operation(self, op_id: str, mode: Any) -> None:
        if not self.log or self.log[-1] != op_id:
            self.log.append(op_id)

    def close(self) -> None:
        pass


def _fuzzed(monkeypatch: pytest.MonkeyPatch, gated: bool) -> list[str]:
    log: list[str] = []
    monkeypatch.setattr(run, "Fuzzer", lambda config, facts: _Fuzzer(log, facts))
    monkeypatch.setattr(run, "fuzz_media", lambda fz, wanted: log.append("media"))
    monkeypatch.setattr(run, "label_then_generate", lambda fz, n: log.append("label_then_generate"))

    def sequences(fz: Any, n: int, labels: bool = True) -> None:  # stateful.run_sequences
        log.extend(["generate_then_abort", *(["label_then_generate"] if labels else [])])
        log.append("render_generate_derender")

    monkeypatch.setattr(run, "run_sequences", sequences)
    facts = ServerFacts(profile="scale-out", dev_mode=True, tokenizer=True, limits=Limits())
    config = FuzzConfig(base_url="http://127.0.0.1:1", facts=facts, oov_group=False)
    run.fuzz(config, _Gate(log) if gated else None)  # type: ignore[arg-type]
    return log


def test_the_fuzz_changes_the_label_only_once_the_gate_is_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone, beside = _fuzzed(monkeypatch, False), _fuzzed(monkeypatch, True)
    assert sorted(step for step in beside if step != "wait") == sorted(alone)  # the same work
    assert beside.count("wait") == 1
    labelling = {*run.LABELLING, "label_then_generate"}
    assert labelling <= set(beside[beside.index("wait") :])
    assert set(run.LABELLING) <= set(operations())


def test_a_run_with_workers_folds_in_the_fuzz_it_ran_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--workers on the embedded mock: the fuzz runs beside them; the verdict is clean and the
    fuzz's own checks are in the report."""
    gates: list[object] = []
    fuzz = cli._Fuzzing.__call__

    def recorded(self: Any, features: Any, limits: Any, gate: Any) -> None:
        gates.append(gate)
        fuzz(self, features, limits, gate)

    monkeypatch.setattr(cli._Fuzzing, "__call__", recorded)
    path = tmp_path / "report.json"
    argv = ["run", "--profile", "scale-out", "--workers", "3", "--json-report", str(path)]
    assert main(argv) == 0
    report = json.loads(path.read_text())
    names = [c["name"] for r in report["requirements"] for c in r.get("checks", [])]
    assert any(name.startswith("fuzz") for name in names)
    assert len(gates) == 1 and isinstance(gates[0], threading.Event)  # it ran beside
