"""Benchmark: the suite against the correct mock in every server setting (the settings matrix).

"A correct server passes at any speed and configuration": each setting starts `tito-mock` with
other flags (latency, capacity, logprob and context limits, vocabulary, DP, API key,
tokens-only, every core busy) and runs the whole suite against it; every one must end with
0 fail, 0 warn, 0 error. `tests/test_conformance_settings.py` asserts exactly that over the same
`SETTINGS`; this script prints the table.

Run: python benchmarks/bench_settings.py [--only NAME ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.profiles import API_KEY, MOCK_KNOBS
from conformance.results import Report, Status
from conformance.runner import run
from conformance.server_process import ServerProcess, free_port, mock_argv
from conformance.session import SuiteConfig

SCALE_OUT = ("--enable-scale-out",)
DEV_MODE = {"VLLM_SERVER_DEV_MODE": "1"}
# What --enable-scale-out with dev mode really implies: conformance.profiles' scale-out claims,
# plus the weight-label endpoints dev mode adds.
SCALE_OUT_CLAIMS = frozenset({"scale-out", "abort", "text-mode", "render", "weight-labels"})
TOKENS_ONLY_CLAIMS = frozenset({"tokens-only", "abort", "legacy-abort"})
BUSY_MARGIN_S = 60.0  # the busy loop ends by itself at the run's deadline plus this, at the latest
# Pinned, so a VLLM_* variable in the caller's environment cannot change a setting.
BASE_ENV = {"VLLM_SERVER_DEV_MODE": "0", "VLLM_API_KEY": ""}


@dataclass(frozen=True)
class Setting:
    """One way to start a correct mock, and what the suite should be told about it."""

    name: str
    flags: tuple[str, ...]
    expect: frozenset[str]
    env: dict[str, str] = field(default_factory=dict)
    api_key: str | None = None
    busy: bool = False  # every core spins (bounded) while the suite runs
    requirement_ids: frozenset[str] | None = None  # None: every check
    min_passed: int = 60  # a run that passes fewer requirements is hollow


def _scale_out(name: str, *flags: str, min_passed: int = 60, busy: bool = False) -> Setting:
    """--enable-scale-out in dev mode with the profile's 1 ms inter-token latency, plus `flags`
    (a later --mock-itl-ms overrides the knob: argparse keeps the last)."""
    argv = (*SCALE_OUT, *MOCK_KNOBS, *flags)
    return Setting(name, argv, SCALE_OUT_CLAIMS, dict(DEV_MODE), busy=busy, min_passed=min_passed)


SETTINGS: tuple[Setting, ...] = (
    # The README's own example: no latency at all.
    Setting("fast", SCALE_OUT, SCALE_OUT_CLAIMS, dict(DEV_MODE)),
    # Every check, not a subset: the whole suite took 120 s at a 2 s time to first token.
    _scale_out("slow-first-token", "--mock-ttft-ms", "2000"),
    _scale_out("slow-tokens", "--mock-itl-ms", "25"),
    # A limit may rightly make the suite skip what it cannot exercise (n = 2, 5 logprobs).
    _scale_out("max-num-seqs-1", "--max-num-seqs", "1", min_passed=40),
    _scale_out("max-num-seqs-2", "--max-num-seqs", "2"),
    _scale_out("max-num-seqs-4", "--max-num-seqs", "4"),
    _scale_out("max-logprobs-1", "--max-logprobs", "1", min_passed=40),
    _scale_out("max-logprobs-5", "--max-logprobs", "5"),
    _scale_out("max-model-len-128", "--max-model-len", "128", min_passed=40),
    _scale_out("vocab-2048", "--mock-vocab-size", "2048"),
    _scale_out("vocab-151936", "--mock-vocab-size", "151936"),
    Setting(
        "dp-2",
        (*SCALE_OUT, *MOCK_KNOBS, "--data-parallel-size", "2"),
        SCALE_OUT_CLAIMS | {"data-parallel"},
        dict(DEV_MODE),
    ),
    Setting(
        "api-key",
        (*SCALE_OUT, *MOCK_KNOBS, "--api-key", API_KEY),
        frozenset({"scale-out", "abort", "text-mode", "render", "api-key"}),
        api_key=API_KEY,
    ),
    Setting("tokens-only", ("--tokens-only", *MOCK_KNOBS), TOKENS_ONLY_CLAIMS, min_passed=50),
    _scale_out("busy", busy=True),
)
BY_NAME = {s.name: s for s in SETTINGS}


@contextmanager
def busy_cores(seconds: float) -> Iterator[list[int]]:
    """One spinning child per core, each ending by itself after `seconds`; all are killed (by
    pid) on the way out."""
    code = f"import time\nend = time.monotonic() + {seconds!r}\nwhile time.monotonic() < end: pass"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def server_env(setting: Setting) -> dict[str, str]:
    return {**BASE_ENV, **setting.env}


def run_setting(setting: Setting) -> Report:
    """Start the mock as `setting` says, run the suite against it, stop everything."""
    port = free_port()
    argv = mock_argv(port, list(setting.flags))
    with ServerProcess(argv, port, env=server_env(setting)) as server:
        config = SuiteConfig(
            base_url=server.base_url,
            api_key=setting.api_key,
            expect=setting.expect,
            profile=setting.name,
            requirement_ids=setting.requirement_ids,
            # Generous for the slow settings: 2 s to a first token, 25 ms a token, no spare core.
            timeout=10.0,
            warmup_timeout=10.0,
            stream_deadline=60.0,
            deadline_s=600.0,
        )
        if not setting.busy:
            return run(config)
        with busy_cores(config.deadline_s + BUSY_MARGIN_S):
            return run(config)


def problems(report: Report, width: int = 300) -> list[str]:
    """Each failing, warning or broken requirement with its reason, one line each."""
    lines = [f"harness error: {report.harness_error[:width]}"] if report.harness_error else []
    for r in report.requirements:
        if r.status in (Status.FAIL, Status.ERROR):
            kind = "warn" if r.is_warning else r.status.value
            reason = " ".join(r.reason.split())
            lines.append(f"{r.requirement.id} [{kind}] {reason[:width]}")
    return lines


def row(setting: Setting, report: Report) -> dict[str, Any]:
    s = report.summary
    return {
        "setting": setting.name,
        "passed": s.passed,
        "failed": s.failed,
        "warn": s.warnings,
        "skip": s.skipped,
        "error": s.errors,
        "skipped_for_limits": s.skipped_for_limits,
        "duration_s": round(report.duration_s, 1),
        "problems": problems(report),
    }


COLUMNS = ("setting", "passed", "failed", "warn", "skip", "error", "skipped_for_limits")


def print_row(r: dict[str, Any]) -> None:
    cells = [f"{r['setting']:<18}"] + [f"{r[c]!s:>6}" for c in COLUMNS[1:-1]]
    cells += [f"{r['skipped_for_limits']!s:>18}", f"{r['duration_s']!s:>10}"]
    print(" | ".join(cells), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), metavar="NAME")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the rows as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="list each problem")
    args = parser.parse_args()
    chosen = [BY_NAME[n] for n in args.only] if args.only else list(SETTINGS)
    header = [f"{'setting':<18}"] + [f"{c:>6}" for c in COLUMNS[1:-1]]
    print(" | ".join([*header, f"{'skipped-for-limits':>18}", f"{'duration s':>10}"]))
    rows, t0 = [], time.monotonic()
    for setting in chosen:
        rows.append(row(setting, run_setting(setting)))
        print_row(rows[-1])
        if args.verbose:
            for line in rows[-1]["problems"]:
                print(f"    {line}")
    clean = [r for r in rows if not (r["failed"] or r["warn"] or r["error"])]
    print(
        f"overall: {len(clean)}/{len(rows)} settings clean (0 fail, 0 warn, 0 error) "
        f"in {time.monotonic() - t0:.1f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if len(clean) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
