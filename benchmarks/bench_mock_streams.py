"""Benchmark: the mock holds the load it is used for (issue 37, point 7).

`tito-mock` runs pinned to one core (`taskset -c 0`) with room for every stream
(`--max-num-seqs`), paced (`--mock-itl-ms`) so each stream stays open for seconds; wrk, pinned
to the other core, keeps `--streams` streams open at once (one per connection, each sent
again as soon as it ends). While they run, the script reads:

- the mock's RSS before and at the peak: memory per in-flight stream (RSS delta / streams);
- `/mock/stats` and `/metrics`, timed from here (p50 and max of the reads made while at
  least 90 % of the streams were open; `/health` beside them: the event loop's own delay), and
  whether they are right: in flight = the streams open, `held` names that many, `hung_up`
  none, the Prometheus gauges say the same running and waiting;
- after wrk hangs up on everything still open: held, hung_up and in flight back to 0;
- the CPU seconds wrk and the mock spent (wrk must be measurably below the mock: the mock is
  what is measured), and the tokens the streams carried.

Run: python -m benchmarks.bench_mock_streams [--streams 2000] [--seconds 20] [--itl-ms 100]
[--json PATH]. Note `uptime`: others may be loading the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.loadgen import cpu_seconds, ensure_wrk
from conformance.server.engine_state import from_metrics
from loopback.ports import free_port
from mock_server.endpoints import mock_stats

PROMPT = [11, 12, 13, 14, 15, 16, 17, 18]
RSS_KB_PER_STREAM = 100
"""The bound on memory per in-flight stream (measured: 35-42 KB, RSS delta over 2,000)."""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _timed(client: httpx.Client, path: str) -> tuple[float, httpx.Response]:
    began = time.perf_counter()
    reply = client.get(path)
    return time.perf_counter() - began, reply


def _lua(body: dict[str, Any]) -> Path:
    lua = 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
    lua += f"wrk.body = [==[{json.dumps(body)}]==]\n"
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(lua)
    return Path(handle.name)


def measure(streams: int, seconds: float, itl_ms: float, samples: int) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    mock = subprocess.Popen(
        ["taskset", "-c", "0", sys.executable, "-m", "mock_server", "--port", str(port)]
        + ["--enable-scale-out", "--mock-itl-ms", str(itl_ms)]
        + ["--max-num-seqs", str(streams + 64)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    out: dict[str, Any] = {"streams": streams, "itl_ms": itl_ms, "loadavg_before": os.getloadavg()}
    script = None
    wrk = None
    try:
        with httpx.Client(base_url=base, timeout=30) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the mock did not start")
                time.sleep(0.1)
            for _ in range(20):  # warm: the first requests build the caches
                client.post("/inference/v1/generate", json=_body(4, stream=False))
            idle = rss_mb(mock.pid)
            tokens = max(10, round(1000 * seconds / itl_ms))  # each stream outlasts the run
            script = _lua(_body(tokens, stream=True))
            mock_cpu = cpu_seconds(mock.pid)
            wrk = subprocess.Popen(
                ["taskset", "-c", "1", ensure_wrk(), "-t1", f"-c{streams}"]
                + [f"-d{round(seconds)}s", "--timeout", f"{round(seconds) + 30}s"]
                + ["-s", str(script), base + "/inference/v1/generate"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            peak, stats_s, metrics_s, health_s, wrong = 0, [], [], [], []
            began = time.monotonic()
            rss_peak = idle
            while wrk.poll() is None and time.monotonic() - began < seconds - 1:
                took, reply = _timed(client, mock_stats.PATH)
                stats = reply.json()
                metrics_took, metrics = _timed(client, "/metrics")
                health_took, _ = _timed(client, "/health")  # the event loop's own delay
                counts = from_metrics(metrics.text)
                flying = stats["in_flight"]
                if flying >= peak:
                    peak = flying
                    rss_peak = max(rss_peak, rss_mb(mock.pid))
                if flying >= 0.9 * streams:  # under the full load: time and check them
                    stats_s.append(took)
                    metrics_s.append(metrics_took)
                    health_s.append(health_took)
                    # a stream whose tokens are all made, its last events still being
                    # written, is in flight and no longer held: a few, never more
                    if not 0.9 * flying <= len(stats["held"]) <= flying:
                        wrong.append(f"held {len(stats['held'])} of {flying} in flight")
                    if stats["hung_up"]:
                        wrong.append(f"hung_up names {len(stats['hung_up'])} under load")
                    if counts is None or counts.in_flight != flying:
                        wrong.append(f"/metrics says {counts} while /mock/stats says {flying}")
                time.sleep(max(0.0, seconds / max(samples, 1) / 2))
            text, _ = wrk.communicate(timeout=seconds + 60)
            wrk_cpu = _children_cpu()
            out["mock_cpu_s"] = round(cpu_seconds(mock.pid) - mock_cpu, 2)
            settle = time.monotonic() + 10
            while time.monotonic() < settle:
                after = client.get(mock_stats.PATH).json()
                if not after["in_flight"]:
                    break
                time.sleep(0.1)
            out.update(
                idle_rss_mb=round(idle, 1),
                peak_rss_mb=round(rss_peak, 1),
                peak_in_flight=peak,
                rss_kb_per_stream=round((rss_peak - idle) * 1024 / max(peak, 1), 1),
                stats_ms=_spread(stats_s),
                metrics_ms=_spread(metrics_s),
                health_ms=_spread(health_s),
                wrong=wrong[:10],
                after={k: after[k] for k in ("in_flight", "queued")}
                | {"held": len(after["held"]), "hung_up": len(after["hung_up"])},
                wrk_cpu_s=round(wrk_cpu, 2),
                wrk_tail=text.strip().splitlines()[-6:],
                tokens_per_s_needed=round(peak * 1000 / itl_ms),
                loadavg_after=os.getloadavg(),
            )
    finally:
        if script is not None:
            script.unlink()
        if wrk is not None and wrk.poll() is None:
            wrk.kill()
        mock.terminate()
        mock.wait(timeout=30)
    return out


_cpu_seen = [0.0]


def _children_cpu() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = used.ru_utime + used.ru_stime
    delta, _cpu_seen[0] = total - _cpu_seen[0], total
    return delta


def _body(tokens: int, stream: bool) -> dict[str, Any]:
    return {
        "token_ids": PROMPT,
        "sampling_params": {"max_tokens": tokens, "ignore_eos": True, "temperature": 0},
        "stream": stream,
    }


def _spread(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    ms = sorted(v * 1000 for v in values)
    return {"count": len(ms), "p50": round(statistics.median(ms), 2), "max": round(ms[-1], 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", type=int, default=2000)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--itl-ms", type=float, default=100.0)
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    found = measure(args.streams, args.seconds, args.itl_ms, args.samples)
    print(json.dumps(found, indent=1))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    held = found["peak_in_flight"] >= 0.95 * args.streams
    clean = not found["wrong"] and found["after"] == {
        "in_flight": 0,
        "queued": 0,
        "held": 0,
        "hung_up": 0,
    }
    bounded = found["rss_kb_per_stream"] < RSS_KB_PER_STREAM
    return 0 if held and clean and bounded and found["wrk_cpu_s"] < found["mock_cpu_s"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
