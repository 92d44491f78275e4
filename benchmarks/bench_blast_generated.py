"""Benchmark: the blast radius of defects nobody picked, one generated fault at a time.

`bench_blast_radius.py` measures the suite over the mock's hand-written defects, which were
written alongside the checks that catch them. Here every fault comes from the spec
(`benchmarks/fault_catalogue.py`: each element of each answer shape dropped, nulled, of the
wrong type or value; each operation's status and content type; a stream's framing), applied by
a proxy (`benchmarks/fault_proxy.py`) in front of a correct mock. Per fault the whole suite runs
through the proxy and its failures are compared with the same setup without a fault: the newly
failing MUST/SHOULD IDs are the fault's blast radius. Target: at most 3 (median 1), and every
fault caught by at least one requirement. The baseline run also records which elements the
suite's answers hold; a fault on an element it never receives cannot fire and is not run
(`--all` runs it anyway).

Run: PYTHONPATH=. python benchmarks/bench_blast_generated.py [--only SUBSTRING ...] [--limit N]
[--profiles scale-out,tokens-only] [--json PATH] [--workers N] [--worst N] [--all] [--fuzz N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from multiprocessing import get_context
from pathlib import Path

from benchmarks.bench_blast_radius import MAX_RADIUS, MEDIAN_RADIUS, failing, judged, percentile
from benchmarks.fault_catalogue import Fault, exercised, free, generate_faults, shape_count
from benchmarks.fault_proxy import proxied
from conformance.cli import run_fuzzed
from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.verdicts.results import Status


@dataclass(frozen=True)
class Run:
    """What one suite run through the proxy failed (picklable: it comes from a worker)."""

    failing: frozenset[str]
    broken: frozenset[str]  # requirements whose checks broke (ERROR)
    harness_error: str
    reasons: dict[str, str]
    seconds: float
    applied: int  # answers or events the fault changed
    seen: dict[str, bool]  # the baseline's record of the elements it received


def proxied_run(profile: str, fault_name: str | None, fuzz: int = 0) -> Run:
    """The whole suite against the mock of `profile` behind the proxy with one fault (or none,
    recording what the answers hold); with `fuzz` cases per operation folded in, as
    `tito-conformance run` folds them (0: the suite alone)."""
    fault = {f.name: f for f in generate_faults()}[fault_name] if fault_name else None
    started = time.monotonic()
    with (
        embedded_mock(profile, (), (), **QUICK) as (_, config),
        proxied(config.base_url, fault, record=fault is None) as (url, app),
    ):
        proxied_config = replace(config, base_url=url)
        report = run_fuzzed(proxied_config, fuzz) if fuzz else run(proxied_config)
    failed = failing(report)
    broken = frozenset(r.requirement.id for r in report.requirements if r.status is Status.ERROR)
    return Run(
        failing=failed,
        broken=broken,
        harness_error=report.harness_error[:300],
        reasons={i: report.result(i).reason[:200] for i in failed | broken},
        seconds=round(time.monotonic() - started, 2),
        applied=app.applied,
        seen=dict(app.seen),
    )


@dataclass(frozen=True)
class Radius:
    """What one fault broke beyond its profile's baseline."""

    fault: str
    profile: str
    failed: tuple[str, ...]  # newly failing MUST/SHOULD IDs: the blast radius
    failed_may: tuple[str, ...]  # newly failing MAY IDs: shown, never counted
    broken: tuple[str, ...]  # newly ERROR requirements
    applied: int
    harness_error: str
    reasons: dict[str, str]  # why each newly failing or broken ID did
    seconds: float

    @classmethod
    def compare(cls, fault: str, profile: str, base: Run, got: Run) -> Radius:
        new = got.failing - base.failing
        failed = judged(new)
        return cls(
            fault=fault,
            profile=profile,
            failed=failed,
            failed_may=tuple(sorted(new - set(failed))),
            broken=tuple(sorted(got.broken - base.broken)),
            applied=got.applied,
            harness_error=got.harness_error,
            reasons={i: got.reasons[i] for i in (*failed, *got.broken) if i not in base.broken},
            seconds=got.seconds,
        )

    @property
    def size(self) -> int:
        return len(self.failed)


def sample(faults: list[Fault], limit: int | None) -> list[Fault]:
    """`limit` faults spread evenly over the list (so a small sample spans the shapes)."""
    if limit is None or limit >= len(faults):
        return faults
    return [faults[i * len(faults) // limit] for i in range(limit)]


def summary(radii: list[Radius], worst: int) -> str:
    """The distribution, the worst faults with their IDs, and the faults nobody catches."""
    sizes = [r.size for r in radii]
    fired = [r for r in radii if r.applied]
    caught = [r for r in fired if r.size]
    median = statistics.median(sizes) if sizes else 0
    lines = [
        f"faults {len(radii)}  caught {len(caught)}  uncaught {len(fired) - len(caught)}  "
        f"never applied {len(radii) - len(fired)}",
        f"radius: median {median:g}  p90 {percentile(sizes, 90):g}  max {max(sizes, default=0)}  "
        f"above {MAX_RADIUS}: {sum(s > MAX_RADIUS for s in sizes)}",
        f"size histogram: {dict(sorted(Counter(sizes).items()))}",
        f"target (max <= {MAX_RADIUS}, median <= {MEDIAN_RADIUS}, every applied fault caught): "
        + (
            "met"
            if max(sizes, default=0) <= MAX_RADIUS
            and median <= MEDIAN_RADIUS
            and len(caught) == len(fired)
            else "NOT met"
        ),
        "",
        f"worst {worst}:",
    ]
    for r in sorted(radii, key=lambda r: (-r.size, r.fault))[:worst]:
        errors = f"  (+{len(r.broken)} ERROR)" if r.broken else ""
        lines.append(f"  {r.size:3d}  {r.profile:<11} {r.fault}{errors}")
        lines.append(f"       {', '.join(r.failed) or '-'}")
    uncaught = [r for r in fired if not r.size]
    if uncaught:
        lines += ["", "applied but caught by no MUST/SHOULD requirement:"]
        for r in uncaught:
            may = f"  (MAY: {', '.join(r.failed_may)})" if r.failed_may else ""
            lines.append(f"  {r.profile:<11} {r.fault}  applied {r.applied}x{may}")
    idle = [r for r in radii if not r.applied]
    if idle:
        lines += ["", "never applied (the element was seen in the baseline, not in this run):"]
        lines += [f"  {r.profile:<11} {r.fault}" for r in idle]
    other = [r for r in radii if r.broken or r.harness_error]
    if other:
        lines += ["", "checks broke (ERROR) or the harness failed:"]
        for r in other:
            why = (r.reasons.get(r.broken[0], "") if r.broken else r.harness_error).split("\n")[0]
            lines.append(f"  {r.fault}: {', '.join(r.broken)}: {why[:200]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", default=None, help="fault name substring")
    parser.add_argument("--limit", type=int, default=None, help="run N faults, spread evenly")
    parser.add_argument("--profiles", default="scale-out", help="comma-separated profiles")
    parser.add_argument("--json", type=Path, default=None, help="write every radius here")
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--worst", type=int, default=15)
    parser.add_argument("--all", action="store_true", help="also faults the baseline cannot fire")
    parser.add_argument(
        "--fuzz",
        type=int,
        default=0,
        metavar="N",
        help="fold in a fuzz of N cases per operation, as `run` does (default 0: suite only)",
    )
    args = parser.parse_args()
    faults = list(generate_faults())
    print(f"generated faults: {len(faults)}")
    for where, count in shape_count(generate_faults()).items():
        print(f"  {where:<22} {count:4d}")
    if args.only:
        faults = [f for f in faults if any(s in f.name for s in args.only)]
    started = time.monotonic()
    radii: list[Radius] = []
    report: dict[str, object] = {}
    with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
        for profile in args.profiles.split(","):
            base = pool.submit(proxied_run, profile, None, args.fuzz).result()
            shown = ", ".join(judged(base.failing)) or "none"
            print(
                f"\n[{profile}] baseline through the clean proxy: {base.seconds:.0f} s, "
                f"failing MUST/SHOULD: {shown}; ERROR: {', '.join(sorted(base.broken)) or 'none'}"
            )
            runnable = [f for f in faults if args.all or exercised(f, base.seen)]
            idle = Counter(f.where for f in faults if f not in runnable)
            print(
                f"[{profile}] faults the suite's answers can carry: {len(runnable)} of "
                f"{len(faults)}; not exercised by shape: {dict(idle)}"
            )
            unfree = [f for f in runnable if not free(f)]
            print(f"[{profile}] free values, no defect (not run): {len(runnable) - len(unfree)}")
            for fault in (f for f in runnable if free(f)):
                print(f"  {fault.name}: {free(fault)}")
            runnable = unfree
            picked = sample(runnable, args.limit)
            futures: list[tuple[Fault, Future[Run]]] = [
                (f, pool.submit(proxied_run, profile, f.name, args.fuzz)) for f in picked
            ]
            for i, (fault, future) in enumerate(futures, 1):
                r = Radius.compare(fault.name, profile, base, future.result())
                radii.append(r)
                print(
                    f"[{i}/{len(futures)}] {r.size}  {fault.name:<60} applied {r.applied:<4} "
                    f"{','.join(r.failed)}",
                    flush=True,
                )
            report[profile] = {"baseline_failing": sorted(base.failing), "seen": base.seen}
    print(f"\n{time.monotonic() - started:.0f} s with {args.workers} worker(s)\n")
    print(summary(radii, args.worst))
    if args.json:
        report["radii"] = [asdict(r) for r in radii]
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
