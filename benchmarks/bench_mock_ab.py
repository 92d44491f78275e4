"""Same-session A/B of the mock's non-streamed generate: source trees side by side, with the
bare endpoint as the yardstick (issue 11).

Run: `python benchmarks/bench_mock_ab.py [--tree base=/path/to/old/checkout] [--rounds 4]`.

`bench_mock.py` measures the mock and the bare endpoint one after the other, five seconds
each; on a shared machine the bare figure alone moves by 30% between runs. Here every round
drives each server in turn (wrk, 32 connections, 16-token answers) and reports both req/s
and the server's CPU microseconds per request, which another job's load moves far less than
a rate. The current tree is always measured, as `this`; each `--tree NAME=PATH` adds a
checkout of the kit whose mock is run with that `PYTHONPATH`. Every server gets the same
request (the 16-token body); `--bodiless-bare` adds the bare endpoint driven with bodiless
POSTs, the baseline `bench_mock.py` used before, to show what that left out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from bench_mock import GEN16, HERE, bare_argv, mock_argv, record, server
from loadgen import ensure_wrk, run_wrk

GENERATE = "/inference/v1/generate"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument(
        "--bodiless-bare",
        action="store_true",
        help="also drive the bare endpoint with bodiless POSTs (bench_mock.py's old baseline)",
    )
    args = parser.parse_args()
    trees: dict[str, Path | None] = {"this": None}
    for spec in args.tree:
        name, _, path = spec.partition("=")
        trees[name] = Path(path).resolve()
    ensure_wrk()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        # name -> (url, pid, request body); every server but the bodiless bare gets GEN16
        targets: dict[str, tuple[str, int, dict[str, Any] | None]] = {}
        for name, tree in trees.items():
            # the server imports the mock from that tree (None: this checkout)
            path = {"PYTHONPATH": str(tree or HERE.parent)}
            with mock.patch.dict(os.environ, path):
                argv = mock_argv("--max-num-seqs", "1100")
                url, proc = stack.enter_context(server(argv))
            targets[name] = (url + GENERATE, proc.pid, GEN16)
        json_file, sse_file = record(targets["this"][0].removesuffix(GENERATE), Path(tmp))
        url, proc = stack.enter_context(server(bare_argv(json_file, sse_file)))
        targets["bare"] = (url + "/json", proc.pid, GEN16)
        if args.bodiless_bare:
            targets["bare-nobody"] = (url + "/json", proc.pid, None)
        for url, pid, body in targets.values():  # warm-up
            run_wrk(url, body, 32, 1, pid)
        mocks = list(trees)
        print(f"{'round':<7}" + "".join(f"{n + ' req/s (CPU/req)':>30}" for n in targets), end="")
        print("".join(f"{n + '/bare':>{len(n) + 6}}" for n in mocks))  # as wide as its ratios
        for i in range(args.rounds):
            rates, cells = {}, []
            for name, (url, pid, body) in targets.items():
                load = run_wrk(url, body, 32, args.seconds, pid)
                rates[name] = load.requests_per_s
                cpu_us = load.server_cpu_s / (load.requests_per_s * load.seconds) * 1e6
                cells.append(f"{load.requests_per_s:,.0f} ({cpu_us:,.0f} us)")
            print(f"{i + 1:<7}" + "".join(f"{c:>30}" for c in cells), end="")
            print("".join(f"{rates[n] / rates['bare']:>{len(n) + 6}.2f}" for n in mocks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
