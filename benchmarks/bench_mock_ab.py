"""Same-session A/B of the mock's non-streamed generate: source trees side by side, with the
bare endpoint as the yardstick (issue 11).

Run: `python benchmarks/bench_mock_ab.py [--tree base=/path/to/old/checkout] [--rounds 4]`.

`bench_mock.py` measures the mock and the bare endpoint one after the other, five seconds
each; on a shared machine the bare figure alone moves by 30% between runs. Here every round
drives each server in turn (wrk, 32 connections, 16-token answers) and reports both req/s
and the server's CPU microseconds per request, which another job's load moves far less than
a rate. The current tree is always measured, as `this`; each `--tree NAME=PATH` adds a
checkout of the kit whose mock is run with that `PYTHONPATH`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench_mock import GEN16, HERE, record, server
from loadgen import ensure_wrk, run_wrk

GENERATE = "/inference/v1/generate"


def mock_argv() -> list[str]:
    return [sys.executable, "-m", "mock_server", "--enable-scale-out", "--max-num-seqs", "1100"]


@contextlib.contextmanager
def pythonpath(tree: Path | None) -> Iterator[None]:
    """Servers started inside import the mock from `tree` (None: this checkout)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree or HERE.parent)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    trees: dict[str, Path | None] = {"this": None}
    for spec in args.tree:
        name, _, path = spec.partition("=")
        trees[name] = Path(path).resolve()
    ensure_wrk()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        targets: dict[str, tuple[str, int, str]] = {}
        for name, tree in trees.items():
            with pythonpath(tree):
                url, proc = stack.enter_context(server(mock_argv()))
            targets[name] = (url, proc.pid, GENERATE)
        json_file, sse_file = record(targets["this"][0], Path(tmp))
        bare_argv = [sys.executable, str(HERE / "bare_app.py"), "--json-file", str(json_file)]
        bare_argv += ["--sse-file", str(sse_file)]
        url, proc = stack.enter_context(server(bare_argv))
        targets["bare"] = (url, proc.pid, "/json")
        for url, pid, path in targets.values():  # warm-up
            run_wrk(url + path, GEN16 if path == GENERATE else None, 32, 1, pid)
        names = list(targets)
        print("round  " + "".join(f"{n + ' req/s (CPU/req)':>28}" for n in names), end="")
        print("".join(f"{n + '/bare':>12}" for n in names[:-1]))
        for i in range(args.rounds):
            rates, cells = {}, []
            for name in names:
                url, pid, path = targets[name]
                load = run_wrk(
                    url + path, GEN16 if path == GENERATE else None, 32, args.seconds, pid
                )
                rates[name] = load.requests_per_s
                cpu_us = load.server_cpu_s / (load.requests_per_s * load.seconds) * 1e6
                cells.append(f"{load.requests_per_s:,.0f} ({cpu_us:,.0f} us)")
            ratios = [rates[n] / rates["bare"] for n in names[:-1]]
            print(f"{i + 1:<7}" + "".join(f"{c:>28}" for c in cells), end="")
            print("".join(f"{r:>12.2f}" for r in ratios))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
