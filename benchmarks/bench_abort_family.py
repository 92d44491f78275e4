"""Benchmark: the in-flight verdicts (the abort family) in the settings that fool a timing rule.

"A correct server never fails, however fast it is or however busy the client": each setting
starts a correct `tito-mock` (no latency with a tiny context, a slow first token with one or
two slots, a client whose cores are all busy, a client that reads slowly) and runs the abort
family again and again, as a user runs it (`tito-conformance run --requirement ...`), with the
fuzzer's stateful abort beside it. Every run must give 0 fail and 0 error. The same setting
with each in-flight defect (`--defect`) must fail the defect's requirements in every run where
a correct server's action lands. `tests/test_conformance_settings.py` holds a few of these.

Run: python -m benchmarks.bench_abort_family [--only NAME ...] [--runs N] [--defects]
[--json PATH] (names without the settings' `in-flight-` prefix: ctx-48, busy, ...)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.bench_settings import (
    IN_FLIGHT,
    IN_FLIGHT_SETTINGS,
    Setting,
    cli_argv,
    client_side,
    server_env,
)
from conformance.server.process import ServerProcess, mock_argv, start_on_a_free_port
from loopback.timeouts import RUN_DEADLINE_S

DEFECTS = {
    "abort-ignored": {"ABORT-002", "ABORT-003"},
    "disconnect-no-abort": {"ABORT-009"},
    "disconnect-whole-no-abort": {"ABORT-010"},
}
"""The in-flight defects, and the requirements each must fail wherever a correct server's
action lands."""
FUZZ_EXAMPLES = 5
BY_NAME = {s.name.removeprefix("in-flight-"): s for s in IN_FLIGHT_SETTINGS}


def suite_run(setting: Setting, url: str, report: Path) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        cli_argv(setting, url, report),
        env={**os.environ, "TITO_PROGRESS": "0"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_S,
        check=False,
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    if not data:
        data = {"output": (done.stdout[-2000:] + done.stderr[-2000:])}
    return done.returncode, data


def fuzz_abort(url: str) -> list[str]:
    """The fuzzer's stateful abort alone: its findings' requirement IDs and messages."""
    from conformance.fuzz.campaign import probe_facts
    from conformance.fuzz.engine import Fuzzer
    from conformance.fuzz.settings import FuzzConfig
    from conformance.fuzz.stateful import generate_then_abort

    config = FuzzConfig(base_url=url, max_examples=FUZZ_EXAMPLES * 10)
    fz = Fuzzer(config, probe_facts(config))
    try:
        generate_then_abort(fz, FUZZ_EXAMPLES)
    finally:
        fz.close()
    return [f"{','.join(f.requirement_ids)}: {f.message[:300]}" for f in fz.findings.values()]


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["status"] for r in report.get("requirements", [])}


def one_setting(setting: Setting, runs: int, defect: str | None) -> dict[str, Any]:
    flags = [*setting.flags] + (["--mock-defect", defect] if defect else [])

    def server_for(port: int) -> ServerProcess:
        return ServerProcess(mock_argv(port, flags), port, env=server_env(setting))

    tally: Counter[str] = Counter()
    problems: list[str] = []
    caught = 0
    started = time.monotonic()
    with (
        start_on_a_free_port(server_for) as server,
        tempfile.TemporaryDirectory() as tmp,
        client_side(setting, server.base_url) as url,
    ):
        for number in range(runs):
            code, report = suite_run(setting, url, Path(tmp) / f"r{number}.json")
            found, fuzz = verdicts(report), fuzz_abort(url)
            for rid, status in found.items():
                if rid in IN_FLIGHT or status in ("fail", "error"):
                    tally[f"{rid}:{status}"] += 1
            failing = {r for r, st in found.items() if st == "fail"}
            failing |= {f.split(":")[0] for f in fuzz}
            if defect is not None:
                missed = DEFECTS[defect] - failing
                caught += not missed
                family = {r: st for r, st in found.items() if r in IN_FLIGHT}
                if missed:
                    problems.append(f"run {number}: {defect} missed {sorted(missed)}: {family}")
                continue
            bad = [f"{r} {st}" for r, st in found.items() if st in ("fail", "error")]
            if bad or fuzz or code != 0:
                problems.append(f"run {number}: exit {code}; {bad}; fuzz {fuzz}")
                problems += [
                    f"   {r['id']}: {' '.join(str(r.get('reason', '')).split())[:400]}"
                    for r in report.get("requirements", [])
                    if r.get("status") in ("fail", "error")
                ]
    return {
        "setting": setting.name,
        "defect": defect,
        "runs": runs,
        "caught": caught if defect else None,
        "verdicts": dict(sorted(tally.items())),
        "problems": problems,
        "duration_s": round(time.monotonic() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), metavar="NAME")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--defects", action="store_true", help="also each in-flight defect")
    parser.add_argument("--json", type=Path, metavar="PATH")
    args = parser.parse_args()
    chosen = [BY_NAME[n] for n in args.only] if args.only else list(IN_FLIGHT_SETTINGS)
    rows = []
    for setting in chosen:
        for defect in [None, *(DEFECTS if args.defects else ())]:
            runs = args.runs if defect is None else max(1, args.runs // 3)
            row = one_setting(setting, runs, defect)
            rows.append(row)
            what = f"{setting.name}{' + ' + defect if defect else ''}"
            caught = f"caught {row['caught']}/{row['runs']}"
            verdict = caught if defect else f"{len(row['problems'])} problems"
            print(f"{what:<48} {verdict:<18} {row['duration_s']:>7} s", flush=True)
            for line in row["problems"][:12]:
                print(f"    {line}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    bad = [r for r in rows if r["problems"]]
    print(f"overall: {len(rows) - len(bad)}/{len(rows)} rows clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
