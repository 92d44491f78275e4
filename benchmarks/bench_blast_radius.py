"""Benchmark: the blast radius of every defect in the mock's catalogue.

"Each defect declares the requirements it breaks; the meta-test asserts those fail and that
nothing beyond at most 3 requirement IDs fails (median 1)." For each defect the whole suite
(every requirement, no fuzz) runs against the mock started in the defect's profile with its
flags, and its failures are compared with the same profile without the defect: the newly
failing MUST/SHOULD IDs are its blast radius. A check that judges more than its own fields
shows up here as a defect whose radius spills beyond its declared requirements.
A defect that shows only under load (`Defect.shows == "load"`) must be invisible here: its
radius is held to 0, and `tests/test_load_defects.py` holds `tito-conformance load` to
catching it.
`tests/test_conformance_blast_radius.py` asserts the same, one defect per test.

Run: python benchmarks/bench_blast_radius.py [--only NAME ...] [--worst N] [--json PATH]
[--workers N] (default: TITO_BLAST_WORKERS, else cores + 1, at most 4).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections import defaultdict
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

from conformance.requirements import Level, by_id
from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.verdicts.results import Report, Status
from mock_server.behaviour.defects import DEFECTS

MAX_RADIUS = 3  # newly failing IDs a defect may cause, its declared ones included
MEDIAN_RADIUS = 1  # across the catalogue
JUDGED = (Level.MUST, Level.SHOULD)


def full_run(profile: str, flags: tuple[str, ...] = (), defects: tuple[str, ...] = ()) -> Report:
    """The whole suite against the mock of `profile` (its claims, MOCK_KNOBS, `flags`)."""
    with embedded_mock(profile, flags, defects, **QUICK) as (_, config):
        return run(config)


def failing(report: Report) -> frozenset[str]:
    """The requirements that failed, at any level (a MAY declared by a defect must fail too)."""
    return frozenset(r.requirement.id for r in report.requirements if r.status is Status.FAIL)


def judged(ids: frozenset[str]) -> tuple[str, ...]:
    """The MUST and SHOULD ones: only those count towards a blast radius."""
    levels = by_id()
    return tuple(sorted(i for i in ids if levels[i].level in JUDGED))


@dataclass(frozen=True)
class Outcome:
    """What one run failed (picklable: runs happen in worker processes)."""

    failing: frozenset[str]
    broken: frozenset[str]  # requirements whose checks broke (ERROR: the harness, not the server)
    harness_error: str
    reasons: dict[str, str]  # why each failing ID failed (first 200 characters)
    seconds: float
    unshown: frozenset[str] = frozenset()  # failing IDs with no exchange to show for it
    verdict: str = "passed"  # "failed" (a MUST failed), "warned" (a SHOULD), or "passed"


def _shown(report: Report, rid: str) -> bool:
    """A failure shows what was sent and received (a curl, or an in-flight failure's shell
    script of curls: `conformance.inflight.script`), or why nothing could be sent."""
    return all(
        c.reproducer.startswith("curl ")
        or (c.reproducer.startswith("#!/bin/sh\n") and "\ncurl " in c.reproducer)
        or "claimed feature" in c.message
        or "does not work" in c.message
        for c in report.result(rid).checks
        if c.status is Status.FAIL
    )


def outcome(profile: str, flags: tuple[str, ...] = (), defects: tuple[str, ...] = ()) -> Outcome:
    """One full run, reduced to what the comparison reads."""
    started = time.monotonic()
    report = full_run(profile, flags, defects)
    failed = failing(report)
    return Outcome(
        failing=failed,
        broken=frozenset(r.requirement.id for r in report.requirements if r.status is Status.ERROR),
        harness_error=report.harness_error,
        reasons={i: report.result(i).reason[:200] for i in failed},
        seconds=round(time.monotonic() - started, 2),
        unshown=frozenset(i for i in failed if not _shown(report, i)),
        verdict="failed"
        if report.summary.failed
        else "warned"
        if report.summary.warnings
        else "passed",
    )


@dataclass(frozen=True)
class Radius:
    """What one defect broke beyond its setting's baseline."""

    defect: str
    declared: tuple[str, ...]
    failed: tuple[str, ...]  # newly failing MUST/SHOULD IDs: the blast radius
    failed_may: tuple[str, ...]  # newly failing MAY IDs: shown, never counted
    broken: tuple[str, ...]  # newly ERROR requirements (a check that broke on the defect)
    harness_error: str
    reasons: dict[str, str]  # why each extra ID failed
    seconds: float
    unshown: tuple[str, ...] = ()  # declared failures without an exchange to show
    verdict: str = "passed"
    under_load: bool = False  # shows only under load: `run` must see nothing

    @classmethod
    def compare(cls, name: str, base: Outcome, run: Outcome) -> Radius:
        declared = DEFECTS[name].requirements
        new = run.failing - base.failing
        failed = judged(new)
        return cls(
            defect=name,
            declared=declared,
            failed=failed,
            failed_may=tuple(sorted(new - set(failed))),
            broken=tuple(sorted(run.broken - base.broken)),
            harness_error=run.harness_error,
            reasons={
                i: run.reasons[i]
                for i in failed
                if i not in declared or DEFECTS[name].shows == "load"
            },
            seconds=run.seconds,
            unshown=tuple(i for i in declared if i in run.unshown),
            verdict=run.verdict,
            under_load=DEFECTS[name].shows == "load",
        )

    @property
    def size(self) -> int:
        return len(self.failed)

    @property
    def missed(self) -> tuple[str, ...]:
        if self.under_load:
            return ()
        return tuple(i for i in self.declared if i not in self.failed + self.failed_may)

    @property
    def extra(self) -> tuple[str, ...]:
        if self.under_load:  # a few requests at a time: nothing may show it
            return self.failed
        return tuple(i for i in self.failed if i not in self.declared)

    def problems(self) -> list[str]:
        """Every way this defect's radius breaks the rule; empty when it keeps it."""
        out = []
        if self.harness_error:
            out.append(f"harness error: {self.harness_error[:300]}")
        if self.missed:
            out.append(f"declared but not failing: {', '.join(self.missed)}")
        if self.extra:
            why = "; ".join(f"{i}: {self.reasons.get(i, '')}" for i in self.extra)
            out.append(f"failing beyond the declared set: {why}")
        if self.size > MAX_RADIUS:
            out.append(f"{self.size} requirements fail, more than {MAX_RADIUS}")
        if self.broken:
            out.append(f"checks broke (ERROR): {', '.join(self.broken)}")
        if self.unshown:
            out.append(f"failures with no exchange (curl) to show: {', '.join(self.unshown)}")
        levels = by_id()
        must = any(levels[i].level is Level.MUST for i in self.declared)
        if self.under_load:
            return out  # its verdict is the baseline's: nothing new failed (`extra`)
        if self.verdict != ("failed" if must else "warned") and not self.missed:
            out.append(f"the run {self.verdict}: a {'MUST' if must else 'SHOULD'} broke")
        return out


Setting = tuple[str, tuple[str, ...]]  # profile, extra flags


def setting(name: str) -> Setting:
    return DEFECTS[name].profile, DEFECTS[name].flags


class Runs:
    """Every run a set of defects needs, in worker processes, each started once.

    One baseline per setting (profile + flags), shared by every defect of that setting, and one
    run per defect. A run mostly waits on its server, so a few run side by side; `spawn`, so a
    worker's in-process pytest shares nothing with the caller's (which may be pytest itself).
    """

    def __init__(self, workers: int) -> None:
        self.pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
        self.baselines: dict[Setting, Future[Outcome]] = {}
        self.runs: dict[str, Future[Outcome]] = {}

    def submit(self, names: list[str]) -> None:
        """Start these defects' runs (their baselines first), in this order."""
        for name in names:
            if setting(name) not in self.baselines:
                self.baselines[setting(name)] = self.pool.submit(outcome, *setting(name))
        for name in names:
            if name not in self.runs:
                self.runs[name] = self.pool.submit(outcome, *setting(name), (name,))

    def baseline(self, name: str) -> Outcome:
        self.submit([name])
        return self.baselines[setting(name)].result()

    def radius(self, name: str) -> Radius:
        self.submit([name])
        return Radius.compare(name, self.baseline(name), self.runs[name].result())

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Runs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_workers() -> int:
    """TITO_BLAST_WORKERS, else one more than the cores (runs mostly wait), at most 4."""
    return int(os.environ.get("TITO_BLAST_WORKERS") or min(4, (os.cpu_count() or 1) + 1))


def percentile(values: list[int], q: float) -> float:
    """The q-th percentile (nearest rank), 0 for no values."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = min(len(ordered), max(1, math.ceil(q / 100 * len(ordered))))
    return float(ordered[rank - 1])


def summary(radii: list[Radius], worst: int) -> str:
    """The distribution, the worst defects, and the spill grouped by the extra IDs."""
    sizes = [r.size for r in radii]
    lines = [
        f"defects {len(radii)}  median {statistics.median(sizes) if sizes else 0:g}  "
        f"p90 {percentile(sizes, 90):g}  max {max(sizes, default=0)}  "
        f"within the rule {sum(not r.problems() for r in radii)}",
        f"size histogram: {dict(sorted(_count(sizes).items()))}",
        "",
        f"worst {worst}:",
    ]
    for r in sorted(radii, key=lambda r: (-r.size, r.defect))[:worst]:
        lines.append(f"  {r.size:3d}  {r.defect:<36} declared {','.join(r.declared)}")
        lines.append(f"       extra: {', '.join(r.extra) or '-'}")
    by_extra: dict[str, list[str]] = defaultdict(list)
    for r in radii:
        for rid in r.extra:
            by_extra[rid].append(r.defect)
    lines += ["", "extra failures, by requirement (the checks that judge beyond their fields):"]
    for rid, names in sorted(by_extra.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"  {rid:<18} {len(names):3d}  {', '.join(sorted(names))}")
    other = [r for r in radii if r.missed or r.broken or r.harness_error]
    if other:
        lines += ["", "missed, broken or harness errors:"]
        lines += [f"  {r.defect}: {'; '.join(p for p in r.problems())[:300]}" for r in other]
    return "\n".join(lines)


def _count(values: list[int]) -> dict[int, int]:
    out: dict[int, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="defect names (default: all)")
    parser.add_argument("--worst", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None, help="write every radius here")
    parser.add_argument("--workers", type=int, default=default_workers())
    args = parser.parse_args()
    names = args.only or sorted(DEFECTS)
    started = time.monotonic()
    radii = []
    with Runs(args.workers) as runs:
        runs.submit(names)
        for i, name in enumerate(names, 1):
            r = runs.radius(name)
            radii.append(r)
            print(f"[{i}/{len(names)}] {name:<36} {r.size}  {','.join(r.extra)}", flush=True)
    print(f"\n{time.monotonic() - started:.0f} s with {args.workers} workers\n")
    print(summary(radii, args.worst))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in radii], indent=1))


if __name__ == "__main__":
    main()
