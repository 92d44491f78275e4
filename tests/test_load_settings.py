"""`tito-conformance load` in the settings matrix (issue 37, point 6): a correct mock gives no
violation behind the kit's router, behind vllm-router over two engines (whatever it violates is
the router's listed deviations), with `--max-num-seqs` 1, 8 and 256, and with the client
machine busy (two CPU burners beside the load). `tox -e settings` runs them
(tests/selection.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conformance.load import outcome
from live import deviations, load_phase
from loopback.vllm_router import DEFAULT_VERSION, PACKAGE
from mock_server.harness.fleet import RouterNotFound, start_fleet
from tests.test_load import SHOULD_ONLY, _load, mock_url  # noqa: F401  (the fixture)

DEV = {"VLLM_SERVER_DEV_MODE": "1"}
FLAGS = ["--mock-vllm-version", "0.34", "--mock-itl-ms", "3"]
CYCLES = "[cycles]\nevery_s = 1.0\n"


def _passes(code: int, data: dict) -> None:
    outcome.validate(data)
    bad = {r["id"]: r["first_violation"] for r in data["requirements"] if r["violations"]}
    assert set(bad) <= SHOULD_ONLY, bad
    assert code == 0 and data["verdict"] == "PASSED", data["harness_errors"]
    assert data["figures"]["requests"] > 20 and data["figures"]["lost"] == 0


def _workload(tmp_path: Path) -> str:
    path = tmp_path / "w.toml"
    path.write_text(CYCLES)
    return str(path)


@pytest.mark.parametrize("router", ["kit", "vllm-router"])
def test_a_correct_fleet_under_load_violates_only_what_its_router_is_listed_for(
    router: str, tmp_path: Path
) -> None:
    """Two mocks behind a router, the engines named (`--engine`: their state proves aborts):
    the kit's router violates nothing; vllm-router only its listed deviations (an abort it
    sends to the other engine leaves the request running: ABORT-002)."""
    try:
        fleet = start_fleet(2, FLAGS, router=router, env=DEV)
    except RouterNotFound as exc:
        pytest.skip(str(exc))
    with fleet:
        engines = [arg for url in fleet.engines for arg in ("--engine", url)]
        code, data = _load(
            fleet.url, tmp_path, "--duration", "5", "--workload", _workload(tmp_path), *engines
        )
    outcome.validate(data)
    assert data["figures"]["requests"] > 20 and data["figures"]["lost"] == 0
    if router == "kit":
        _passes(code, data)
        return
    table = deviations.load()
    listed = deviations.for_router(table, f"{PACKAGE} {DEFAULT_VERSION}")
    verdict = load_phase.judge(data, listed, "scale-out")
    assert verdict.ok, load_phase.render([verdict])


@pytest.mark.parametrize(
    "mock_url", [["--max-num-seqs", "1"], ["--max-num-seqs", "8"], ["--max-num-seqs", "256"]],
    indirect=True, ids=["max-num-seqs-1", "max-num-seqs-8", "max-num-seqs-256"],
)  # fmt: skip
def test_a_correct_mock_under_load_violates_nothing_at_any_max_num_seqs(
    mock_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    code, data = _load(mock_url, tmp_path, "--duration", "4", "--workload", _workload(tmp_path))
    _passes(code, data)


@contextmanager
def burning(processes: int) -> Iterator[None]:
    """`processes` busy loops beside the load: the client machine busy."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)
    ]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(timeout=10)


def test_a_correct_mock_under_load_violates_nothing_on_a_busy_client(
    mock_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    with burning(os.cpu_count() or 2):
        code, data = _load(mock_url, tmp_path, "--duration", "5", "--workload", _workload(tmp_path))
    _passes(code, data)
    assert data["machine"]["after"]["loadavg"][0] > 1.0  # the burners were there
