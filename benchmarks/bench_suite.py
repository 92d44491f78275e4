"""Benchmark: the full suite against the embedded mock, all four profiles (target: < 60 s).

Run: python benchmarks/bench_suite.py [--repeat N]. Prints wall time per profile and in total,
including mock start-up, exactly as `tito-conformance run` does it.
"""

from __future__ import annotations

import argparse
import time

from conformance.profiles import MAIN_PROFILES, MOCK_KNOBS, PROFILES
from conformance.run.runner import run
from conformance.server.process import ServerProcess, mock_argv
from conformance.session import SuiteConfig
from loopback.ports import free_port


def once() -> dict[str, float]:
    times: dict[str, float] = {}
    for name in MAIN_PROFILES:
        profile = PROFILES[name]
        started = time.monotonic()
        port = free_port()
        with ServerProcess(
            mock_argv(port, [*profile.flags, *MOCK_KNOBS]), port, env=dict(profile.env)
        ) as server:
            report = run(
                SuiteConfig(
                    base_url=server.base_url,
                    api_key=profile.api_key,
                    expect=profile.claims,
                    profile=name,
                )
            )
        times[name] = time.monotonic() - started
        s = report.summary
        print(
            f"{name:<12} {times[name]:6.2f} s  passed {s.passed} failed {s.failed} "
            f"skipped {s.skipped} errors {s.errors}"
        )
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    totals = []
    for _ in range(args.repeat):
        totals.append(sum(once().values()))
        print(f"total        {totals[-1]:6.2f} s")
    print(f"best total {min(totals):.2f} s over {len(totals)} run(s) (target < 60 s)")


if __name__ == "__main__":
    main()
