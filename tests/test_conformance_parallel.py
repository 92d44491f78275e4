"""Check modules side by side (`conformance.run.parallel`): the same verdicts as one session.

Against a slow server the runner runs the independent check modules in worker processes and
the rest after them. The verdict must not depend on it: a correct mock is clean either way,
and a defect fails its own requirement either way, whether its check runs in a worker or in
the runner's own session afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.registry import all_checks
from conformance.run import parallel
from conformance.run.embedded import embedded_mock
from conformance.run.runner import CHECKS_DIR, run
from conformance.server.limits import Limits
from conformance.session import SuiteConfig
from conformance.verdicts.results import Status

CONFIG = SuiteConfig("http://127.0.0.1:1")


@pytest.mark.parametrize(
    ("limits", "config", "workers"),
    [
        (Limits(ttft_s=0.001), CONFIG, 1),  # a fast server: nothing to gain
        (Limits(ttft_s=3.0), CONFIG, parallel.MAX_WORKERS),  # slow, no n limit found
        (Limits(ttft_s=3.0, max_n=16), CONFIG, 2),  # 8 choices a check, 16 side by side
        (Limits(ttft_s=3.0, max_n=1), CONFIG, 1),  # --max-num-seqs 1: one at a time
        (Limits(ttft_s=3.0), SuiteConfig("http://x", keyword="stream"), 1),  # -k: one session
        (Limits(ttft_s=3.0), SuiteConfig("http://x", requirement_ids=frozenset({"GEN-001"})), 1),
        (Limits(ttft_s=0.001), SuiteConfig("http://x", workers=3), 3),  # --workers wins
    ],
)
def test_workers_follow_the_servers_pace_and_capacity(
    limits: Limits, config: SuiteConfig, workers: int
) -> None:
    assert parallel.workers_for(config, limits) == workers


def test_every_module_runs_once_and_the_server_wide_ones_alone() -> None:
    shared, alone = parallel.modules(CHECKS_DIR)
    names = [p.name for p in shared + alone]
    assert sorted(names) == sorted(p.name for p in CHECKS_DIR.glob("test_*.py"))
    assert {p.name for p in alone} == set(parallel.SERIAL)
    assert [p.name for p in shared[: len(parallel.FIRST)]] == list(parallel.FIRST)
    split = [job for job in parallel.jobs(shared) if "::" in job[0]]
    assert len(split) == 2 * len(parallel.SPLIT)
    # every check once: in a worker, or in the runner's session after them
    every = sorted(tuple(n.split(".")[-2:]) for n in all_checks())
    assert sorted(_placed([*parallel.jobs(shared, alone), parallel.afterwards(alone)])) == every
    # the checks that may end the server run last, alone; their modules' others in a worker
    ending = [arg for arg in parallel.afterwards(alone) if "::" in arg]
    assert [arg.rsplit("::", 1)[1] for arg in ending] == ["test_out_of_vocabulary"]
    for name in parallel.SPLIT:  # both halves together: every check of the module, once
        halves = [set(job) for job in split if name in job[0]]
        assert len(halves) == 2 and not halves[0] & halves[1]
        found = {n.rsplit(".", 1)[1] for n in all_checks() if n.split(".")[-2] == name[:-3]}
        assert {node.rsplit("::", 1)[1] for node in halves[0] | halves[1]} == found
    # they abort every request (dev mode) or read the server's counters: never beside others
    for rid in ("ABORT-007", "ABORT-008", "ABORT-009", "AUTH-003"):
        where = {name.rsplit(".", 2)[-2] for name, ids in all_checks().items() if rid in ids}
        assert where == {"test_server_wide"}, rid


def _placed(jobs: list[list[str]]) -> list[tuple[str, str]]:
    """(module, check) of each check the jobs' pytest arguments run."""
    names = [tuple(n.split(".")[-2:]) for n in all_checks()]
    out: list[tuple[str, str]] = []
    for arg in (arg for job in jobs for arg in job):
        path, _, test = arg.partition("::")
        out += [(m, t) for m, t in names if m == Path(path).stem and test in ("", t)]
    return out


def _verdicts(workers: int, defects: tuple[str, ...] = ()) -> dict[str, Status]:
    with embedded_mock("scale-out", defects=defects, workers=workers) as (_, config):
        report = run(config)
    assert not report.harness_error, report.harness_error
    return {r.requirement.id: r.status for r in report.requirements}


BROKEN = {"usage-miscount": "GEN-RESP-003", "disconnect-no-abort": "ABORT-009"}


@pytest.mark.parametrize(
    "defects",
    [(), ("usage-miscount",), ("disconnect-no-abort",)],
    ids=["correct", "defect-in-a-worker", "defect-checked-alone"],
)
def test_side_by_side_gives_the_verdicts_of_one_session(defects: tuple[str, ...]) -> None:
    alone, side_by_side = _verdicts(1, defects), _verdicts(3, defects)
    assert side_by_side == alone
    for defect in defects:
        assert side_by_side[BROKEN[defect]] is Status.FAIL
    if not defects:
        assert {Status.FAIL, Status.ERROR}.isdisjoint(side_by_side.values())
