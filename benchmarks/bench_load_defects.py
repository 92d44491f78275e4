"""Benchmark: how soon `tito-conformance load` catches each defect that shows only under load.

Each defect of the mock's catalogue with `shows == "load"` (issue 37, point 6) is started in
its profile with its flags, as the blast radius starts it, and `tito-conformance load` runs
against it at its default settings (16 users, the default workload) for `--duration` seconds
(default 60). Printed per defect: each declared requirement's first violation (seconds since
the load began, requests in flight then), the violations outside the declared set, the exit
code, and the machine's load average, since others may be loading it.
`tests/test_load_defects.py` asserts the same over a shorter run.

Run: python -m benchmarks.bench_load_defects [--only NAME ...] [--duration S] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.run.embedded import embedded_mock
from mock_server.behaviour.defects import DEFECTS

UNDER_LOAD = tuple(name for name, d in DEFECTS.items() if d.shows == "load")
SHOULD_ONLY = frozenset({"LOGP-008"})
"""The mock, like vLLM, lists k + 1 alternatives when a sampled token is outside the top k
(tests/test_load.py): a warning of every load run, never a defect's."""


def load_run(
    base_url: str, api_key: str | None, duration: float, *extra: str
) -> tuple[int, dict[str, Any]]:
    """`tito-conformance load` at its defaults for `duration` s; its exit code and report."""
    with tempfile.TemporaryDirectory(prefix="tito-load-") as tmp:
        report = Path(tmp) / "load.json"
        argv = [sys.executable, "-m", "conformance.load", "--base-url", base_url]
        argv += ["--duration", str(duration), "--json-report", str(report), *extra]
        env = dict(os.environ, TITO_API_KEY=api_key or "")
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=duration + 180)
        if not report.exists():
            raise RuntimeError(f"no report (exit {done.returncode}): {done.stderr[-2000:]}")
        return done.returncode, json.loads(report.read_text())


def catch(name: str, duration: float, flags: tuple[str, ...] = ()) -> dict[str, Any]:
    """One defect's load run (the mock started with `flags` too), reduced to what the table
    prints and the tests assert."""
    defect = DEFECTS[name]
    with embedded_mock(defect.profile, (*defect.flags, *flags), (name,)) as (_, config):
        began = time.monotonic()
        code, data = load_run(config.base_url, config.api_key, duration)
        took = time.monotonic() - began
    rows = {r["id"]: r for r in data["requirements"]}
    first = {
        rid: rows[rid]["first_violation"]
        for rid in defect.requirements
        if rid in rows and rows[rid]["violations"]
    }
    others = sorted(
        rid
        for rid, r in rows.items()
        if r["violations"] and rid not in defect.requirements and rid not in SHOULD_ONLY
    )
    return {
        "defect": name,
        "declared": list(defect.requirements),
        "first": first,
        "caught_s": min((f["at_s"] for f in first.values()), default=None),
        "others": others,
        "others_first": {rid: rows[rid]["first_violation"] for rid in others},
        "exit_code": code,
        "requests": data["figures"]["requests"],
        "wall_s": round(took, 1),
        "loadavg": data["machine"],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", default=[], choices=UNDER_LOAD)
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    rows = []
    for name in args.only or UNDER_LOAD:
        row = catch(name, args.duration)
        rows.append(row)
        caught = row["caught_s"]
        firsts = ", ".join(
            f"{rid} at {f['at_s']:.1f} s ({f['in_flight']} in flight)"
            for rid, f in row["first"].items()
        )
        print(
            f"{name:<28} caught {'never' if caught is None else f'{caught:5.1f} s'}  "
            f"[{firsts or '-'}]  others {row['others'] or '-'}  exit {row['exit_code']}  "
            f"{row['requests']} requests  load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["caught_s"] is not None and not r["others"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
