"""`tito-conformance load` (judging every answer) beside wrk on the same mock endpoint.

    python benchmarks/bench_load.py [--seconds 8] [--workers 1,2] [--concurrency 32]

One `tito-mock` (no pacing), then, in the same run:
- wrk: non-streamed generate, closed loop (`loadgen.run_wrk`, 1 thread);
- load, non-streamed only (no aborts, no cycles): its request rate, and that rate per CPU
  second the load processes (master and workers) used;
- load, streamed only: tokens/s, and per CPU second;
each with `--workers` 1 and 2 (or the list given). The machine's load average is printed: the
figures are only comparable within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from loadgen import run_wrk  # noqa: E402

BODY = {"token_ids": [10, 11, 12, 13], "sampling_params": {"max_tokens": 16, "temperature": 0}}
ONLY = """[requests]
stream = {stream}
n = [1]
prompt_len = [4, 4]
max_tokens = [16, 16]
long = 0.0
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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load(url: str, stream: bool, workers: int, seconds: float, users: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        workload = Path(tmp, "w.toml")
        workload.write_text(ONLY.format(stream=1.0 if stream else 0.0))
        report = Path(tmp, "r.json")
        before = _children_cpu()
        subprocess.run(
            [sys.executable, "-m", "conformance.load", "--base-url", url]
            + ["--concurrency", str(users), "--duration", str(seconds)]
            + ["--workers", str(workers), "--workload", str(workload)]
            + ["--json-report", str(report)],
            check=False,
            capture_output=True,
        )
        cpu = _children_cpu() - before
        data = json.loads(report.read_text())
    f = data["figures"]
    rate = f["tokens_per_s"] if stream else f["requests_per_s"]
    violations = sum(r["violations"] for r in data["requirements"])
    total = f["tokens"] if stream else f["requests"]
    return {
        "rate": rate,
        "per_cpu_s": round(total / cpu, 1) if cpu else 0.0,
        "cpu_s": round(cpu, 2),
        "violations": violations,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    port = 18600 + os.getpid() % 300
    server = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--port", str(port), "--enable-scale-out"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        time.sleep(4)
        print(f"load average before: {os.getloadavg()} on {os.cpu_count()} cores")
        wrk = run_wrk(
            url + "/inference/v1/generate", BODY, args.concurrency, args.seconds, server.pid
        )
        print(
            f"wrk   non-streamed: {wrk.requests_per_s:8.1f} req/s  (wrk cpu {wrk.wrk_cpu_s:.2f} s, "
            f"server cpu {wrk.server_cpu_s:.2f} s, errors {wrk.errors})"
        )
        for workers in [int(w) for w in args.workers.split(",")]:
            body = load(url, False, workers, args.seconds, args.concurrency)
            streamed = load(url, True, workers, args.seconds, args.concurrency)
            print(
                f"load  workers {workers}: non-streamed {body['rate']:8.1f} req/s "
                f"({body['per_cpu_s']} per load CPU s, {body['cpu_s']} s), streamed "
                f"{streamed['rate']:8.1f} tokens/s ({streamed['per_cpu_s']} per load CPU s, "
                f"{streamed['cpu_s']} s); violations {body['violations'] + streamed['violations']}"
            )
        print(f"load average after: {os.getloadavg()}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
