"""`tito-conformance load` (judging every answer) beside wrk, on the same mock endpoint, in one
run (issue 37, point 5): is the load generator faster than what it measures?

    python benchmarks/bench_load.py [--seconds 8] [--workers 1,2] [--concurrency 32] \
        [--mocks 2] [--json out.json]

The endpoint is `--mocks` unpaced `tito-mock` processes sharing one port (SO_REUSEPORT,
`reuseport_mock.py`), so that no one mock process is the ceiling. On it, one after the other:

- wrk (C, one thread, `loadgen.run_wrk`): non-streamed generate, then the same request
  streamed. wrk reads a stream without parsing it; its tokens/s is its answers/s times the
  tokens of one answer (the same greedy request each time: the same answer, counted once).
- `load` with `--workers` 1 and 2 (or the list given), judging every answer, with a workload
  all non-streamed, then one all streamed (n 1, max_tokens 16; no aborts, cycles or repeats:
  each mock process has its own engine).

Each row gives the rate in the steady seconds (load: its own per-second timeline less the
first and the last second; wrk: its whole run), the cores the generator and the mocks used
meanwhile (their CPU seconds over the window, sampled from /proc), the rate per generator
core and per mock core, and the load averages (`uptime`) at the end of the row. The machine
is shared: rows are comparable within one run, and the per-core figures more than the rates.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).parent))

from loadgen import run_wrk  # noqa: E402

from conformance.tito.streamed import tokens_in  # noqa: E402
from conformance.wire import sse_data  # noqa: E402
from loopback.ports import free_port  # noqa: E402

HERE = Path(__file__).parent
GENERATE = "/inference/v1/generate"
BODY = {"token_ids": [10, 11, 12, 13], "sampling_params": {"max_tokens": 16, "temperature": 0}}
ONLY = """[requests]
stream = {stream}
n = [1]
prompt_len = [4, 4]
max_tokens = [16, 16]
long = 0.0
temperature = [0.0]
logprobs = 0.0
prompt_logprobs = 0.0
stop_token_ids = 0.0
seed = 0.0
repeat = 0.0
include_usage = 0.0
[aborts]
share = 0.0
hang_up = 0.0
[cycles]
every_s = 0.0
"""


class CpuSampler:
    """CPU seconds of process trees, sampled every 0.2 s: (wall time, {pid: seconds})."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.samples: list[tuple[float, dict[int, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree(self) -> dict[int, float]:
        found: dict[int, float] = {}
        for root in self.roots:
            try:
                top = psutil.Process(root)
                for proc in [top, *top.children(recursive=True)]:
                    times = proc.cpu_times()
                    found[proc.pid] = times.user + times.system
            except psutil.Error:
                continue
        return found

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.time(), self._tree()))
            self._stop.wait(0.2)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((time.time(), self._tree()))

    def cores(self, start: float, end: float) -> float:
        """Cores used over [start, end]: the CPU seconds between the samples nearest to its
        ends (a process seen only at the end counts from zero), per wall second."""
        first = min(self.samples, key=lambda s: abs(s[0] - start))
        last = min(self.samples, key=lambda s: abs(s[0] - end))
        spent = sum(cpu - first[1].get(pid, 0.0) for pid, cpu in last[1].items())
        return spent / max(last[0] - first[0], 1e-9)


@contextmanager
def mocks(count: int) -> Iterator[tuple[str, list[int]]]:
    port = free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "reuseport_mock.py"), str(port), "--enable-scale-out"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit("the mocks did not start")
            time.sleep(0.2)
        time.sleep(1.0)  # every process up, not just the first that answered
        yield url, [p.pid for p in procs]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def tokens_per_stream(url: str) -> int:
    """The tokens of BODY's streamed answer (greedy: the same answer each time)."""
    raw = httpx.post(url + GENERATE, json={**BODY, "stream": True}, timeout=30).content
    return sum(tokens_in(json.loads(d)) for d in sse_data(raw) if d != "[DONE]")


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def wrk_row(url: str, mock_pids: list[int], stream: bool, args: argparse.Namespace) -> dict:
    body = {**BODY, "stream": True} if stream else BODY
    with CpuSampler(mock_pids) as mock_cpu:
        began = time.time()
        load = run_wrk(url + GENERATE, body, args.concurrency, args.seconds, mock_pids[0])
        ended = time.time()
    per_answer = tokens_per_stream(url) if stream else 1
    rate = load.requests_per_s * per_answer
    gen_cores = load.wrk_cpu_s / (ended - began)
    return _row("wrk", 1, stream, rate, gen_cores, mock_cpu.cores(began, ended), 0)


def load_row(
    url: str, mock_pids: list[int], stream: bool, workers: int, args: argparse.Namespace
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        workload = Path(tmp, "w.toml")
        workload.write_text(ONLY.format(stream=1.0 if stream else 0.0))
        report = Path(tmp, "r.json")
        argv = [sys.executable, "-m", "conformance.load", "--base-url", url]
        argv += ["--concurrency", str(args.concurrency), "--duration", str(args.seconds)]
        argv += ["--workers", str(workers), "--workload", str(workload)]
        argv += ["--json-report", str(report)]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with CpuSampler([proc.pid]) as gen_cpu, CpuSampler(mock_pids) as mock_cpu:
            _, err = proc.communicate(timeout=args.seconds + 180)
        if not report.exists():
            raise SystemExit(f"load wrote no report:\n{err.decode()[-2000:]}")
        data = json.loads(report.read_text())
    steady = [s for s in data["timeline"] if 1 <= s["second"] <= int(args.seconds) - 2]
    if not steady:
        raise SystemExit("the run had no steady second: give --seconds 4 or more")
    start = data["started_at"] + steady[0]["second"]
    end = data["started_at"] + steady[-1]["second"] + 1
    count = sum(s["tokens" if stream else "requests"] for s in steady)
    rate = count / (end - start)
    violations = sum(r["violations"] for r in data["requirements"])
    gen = gen_cpu.cores(start, end)
    return _row("load", workers, stream, rate, gen, mock_cpu.cores(start, end), violations)


def _row(
    tool: str, workers: int, stream: bool, rate: float, gen: float, mock: float, bad: int
) -> dict[str, Any]:
    return {
        "tool": tool,
        "workers": workers,
        "answers": "streamed" if stream else "non-streamed",
        "unit": "tokens/s" if stream else "req/s",
        "rate": round(rate, 1),
        "generator_cores": round(gen, 2),
        "rate_per_generator_core": round(rate / gen, 1) if gen else None,
        "mock_cores": round(mock, 2),
        "rate_per_mock_core": round(rate / mock, 1) if mock else None,
        "violations": bad,
        "loadavg": loadavg(),
    }


def show(row: dict[str, Any]) -> None:
    print(
        f"| {row['tool']:<4} | {row['workers']} | {row['answers']:<12} | {row['rate']:>9.1f} "
        f"{row['unit']:<8} | {row['generator_cores']:>4.2f} | "
        f"{row['rate_per_generator_core'] or 0:>9.1f} | {row['mock_cores']:>4.2f} | "
        f"{row['rate_per_mock_core'] or 0:>9.1f} | {row['violations']} | {row['loadavg']} |",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--mocks", type=int, default=2, help="mock processes on the one port")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    rows = []
    with mocks(args.mocks) as (url, pids):
        print(f"{args.mocks} mock processes on {url}, {os.cpu_count()} cores, load {loadavg()}")
        print(
            "| tool | workers | answers | rate | gen cores | per gen core | mock cores "
            "| per mock core | violations | load average |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for stream in (False, True):
            rows.append(wrk_row(url, pids, stream, args))
            show(rows[-1])
            for workers in [int(w) for w in args.workers.split(",")]:
                rows.append(load_row(url, pids, stream, workers, args))
                show(rows[-1])
    if args.json:
        args.json.write_text(json.dumps({"host": socket.gethostname(), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
