"""The cost of the router hop (issue 20): TITO engines direct vs behind vllm-router, with wrk.

Run: `python benchmarks/bench_router_hop.py [--engines 1,2] [--duration 10] [--connections 32]
[--rounds 1] [--router-version 0.1.17] [--json out.json]` (wrk at /usr/bin/wrk; the router is
installed by `live.router.router_env` on first use).

Engines are `tito-mock --enable-scale-out` at a fixed pace (`--ttft-ms 20 --itl-ms 2`), so an
engine's answer takes a known time and what the router adds shows on top of it. For each
engine count, in the same run, against the same engines:

- first token: non-streamed generate with `max_tokens: 1` (its latency is the time to the
  first token) at `--latency-connections` connections, p50 and p99;
- tokens/s: non-streamed generate with `max_tokens: 64` and `ignore_eos: true` at
  `--connections`, tokens/s = requests/s x 64 (one answer is checked to carry 64 tokens).
  A closed loop against paced engines gives connections / time per request: while the
  engines have CPU to spare, a second engine does not double it, and router / direct is the
  share of a request's time the hop adds.

"direct" with several engines is one wrk per engine, each with its share of the connections,
run at once; their rates are summed and their latencies pooled. "router" is one wrk with all
the connections against the router. The load generator is wrk, one thread per process
(`wrk_generate.lua` prints its percentiles), never an httpx loop, which saturates near
350 req/s here; a run of wrk against the mock's `GET /health` prints the rate wrk reaches
beside the others, and every row shows the cores wrk used, so the reader sees wrk is not the
bottleneck. The engines, the router and wrk share the machine (2 cores here, other jobs
included): the figures are relative, taken in the same run, not an engine's or a router's
capacity. wrk runs with one thread (at most one core; `--wrk-cpu N` pins it with taskset).
The last column is the CPU per request of what was driven: the engines (direct) or the router
alone (router), a cost of the hop that does not depend on how the cores were shared.
`--rounds N` repeats both paths, direct first then router first, and prints each figure's
median.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import httpx
from loadgen import cpu_seconds, ensure_wrk

from conformance.server.process import ServerProcess, mock_argv
from live.router import RouterProcess, router_env, start_router
from loopback.ports import free_port
from loopback.vllm_router import DEFAULT_VERSION

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "wrk_generate.lua"
GENERATE = "/inference/v1/generate"
PROMPT = [151644, 872, 198]
TOKENS = 64


def body(max_tokens: int) -> dict[str, Any]:
    params = {"max_tokens": max_tokens, "ignore_eos": True, "temperature": 0}
    return {"token_ids": PROMPT, "sampling_params": params}


@dataclass(frozen=True)
class Load:
    """One measurement: one or more wrk processes at once, pooled."""

    requests: int
    seconds: float
    req_per_s: float
    p50_ms: float
    p99_ms: float
    wrk_cores: float  # CPU seconds per second of the busiest wrk process (<= 1: one thread)
    server_cpu_ms_per_req: float  # CPU of the process(es) served, per request


class Wrk:
    """Runs wrk processes at once and pools what they print."""

    def __init__(self, seconds: float, cpu: int | None) -> None:
        self.seconds = max(1, round(seconds))
        self.prefix = ["taskset", "-c", str(cpu)] if cpu is not None else []
        self.binary = ensure_wrk()

    def run(
        self,
        targets: Sequence[tuple[str, int]],
        payload: dict[str, Any] | None,
        served_pids: Sequence[int] = (),
        seconds: float | None = None,
    ) -> Load:
        """`targets`: (url, connections) each; one wrk process per target, started together."""
        duration = max(1, round(seconds)) if seconds else self.seconds
        env = {**os.environ, "WRK_BODY": json.dumps(payload) if payload is not None else ""}
        cpu_before = sum(cpu_seconds(pid) for pid in served_pids)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        procs = [
            subprocess.Popen(
                [*self.prefix, self.binary, "-t1", f"-c{conns}", f"-d{duration}s"]
                + ["--timeout", "30s", "-s", str(SCRIPT), url],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
            )
            for url, conns in targets
        ]
        outputs = [p.communicate()[0] for p in procs]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        served_cpu = sum(cpu_seconds(pid) for pid in served_pids) - cpu_before
        wrk_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
        runs = [parse(out, url) for out, (url, _) in zip(outputs, targets, strict=True)]
        requests = sum(r["requests"] for r in runs)
        seconds_run = max(r["duration_us"] for r in runs) / 1e6
        return Load(
            requests=requests,
            seconds=seconds_run,
            req_per_s=sum(r["requests"] / (r["duration_us"] / 1e6) for r in runs),
            p50_ms=pooled_percentile(runs, 50) / 1000,
            p99_ms=pooled_percentile(runs, 99) / 1000,
            wrk_cores=wrk_cpu / len(runs) / seconds_run,
            server_cpu_ms_per_req=1000 * served_cpu / requests if served_pids else 0.0,
        )


def median_load(loads: Sequence[Load]) -> Load:
    """Each figure's median over the rounds (one round: itself)."""
    return Load(*(statistics.median(getattr(x, f.name) for x in loads) for f in fields(Load)))


def parse(output: str, url: str) -> dict[str, Any]:
    """The `WRK_JSON` line of one wrk run; any error (non-2xx, timeout, socket) stops the run:
    a rate that counts fast failures would flatter whichever path failed."""
    line = next((ln for ln in output.splitlines() if ln.startswith("WRK_JSON ")), None)
    if line is None:
        raise SystemExit(f"wrk against {url} printed no WRK_JSON line:\n{output}")
    run: dict[str, Any] = json.loads(line.removeprefix("WRK_JSON "))
    if any(run["errors"].values()) or not run["requests"]:
        raise SystemExit(f"wrk against {url}: errors {run['errors']}:\n{output}")
    return run


def pooled_percentile(runs: Sequence[dict[str, Any]], q: float) -> float:
    """The q-th percentile (microseconds) of the runs' latencies taken together.

    Each run gives its quantile function at 0.5-point steps; the pooled distribution is the
    runs' distributions weighted by their request counts, read at the first latency where it
    reaches q.
    """
    if len(runs) == 1:
        return float(next(v for p, v in runs[0]["percentiles_us"] if p >= q))
    total = sum(r["requests"] for r in runs)

    def cdf(x: float) -> float:
        share = 0.0
        for r in runs:
            below = [p for p, v in r["percentiles_us"] if v <= x]
            share += r["requests"] * (max(below) if below else 0.0)
        return share / total

    values = sorted({v for r in runs for _, v in r["percentiles_us"]})
    return float(next((v for v in values if cdf(v) >= q), values[-1]))


def split(connections: int, urls: Sequence[str]) -> list[tuple[str, int]]:
    """The connections shared out over the engines, as evenly as they go."""
    if connections < len(urls):
        raise SystemExit(f"{connections} connections cannot drive {len(urls)} engines")
    share, extra = divmod(connections, len(urls))
    return [(url, share + (i < extra)) for i, url in enumerate(urls)]


def check_tokens(url: str) -> None:
    """One 64-token answer really has 64 tokens: tokens/s is requests/s x 64 only then."""
    answer = httpx.post(url + GENERATE, json=body(TOKENS), timeout=30)
    answer.raise_for_status()
    got = answer.json()["usage"]["completion_tokens"]
    if got != TOKENS:
        raise SystemExit(f"{url}: completion_tokens {got}, expected {TOKENS}")


def start_engines(stack: ExitStack, count: int, ttft_ms: float, itl_ms: float) -> list[Any]:
    pace = ["--mock-ttft-ms", f"{ttft_ms:g}", "--mock-itl-ms", f"{itl_ms:g}"]
    engines = []
    for _ in range(count):
        port = free_port()
        server = ServerProcess(mock_argv(port, ["--enable-scale-out", *pace]), port)
        engines.append(stack.enter_context(server))
    return engines


def measure(args: argparse.Namespace) -> dict[str, Any]:
    counts = sorted({int(n) for n in args.engines.split(",") if n.strip()})
    wrk = Wrk(args.duration, args.wrk_cpu)
    binary = router_env(args.router_version)
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        engines = start_engines(stack, max(counts), args.ttft_ms, args.itl_ms)
        health = engines[0].base_url + "/health"
        ceiling = wrk.run([(health, args.connections)], None, [engines[0].pid])
        for n in counts:
            with start_router(binary, [e.base_url for e in engines[:n]]) as router:
                rows += measure_fleet(args, wrk, engines[:n], router)
    return {
        "settings": {
            **{k: v for k, v in vars(args).items() if k != "json"},
            "tokens": TOKENS,
            "cores": os.cpu_count(),
        },
        "ceiling": {"url": "GET /health of one engine", **asdict(ceiling)},
        "rows": rows,
        "hop": [hop(rows, n) for n in counts],
    }


def measure_fleet(
    args: argparse.Namespace, wrk: Wrk, engines: Sequence[ServerProcess], router: RouterProcess
) -> list[dict[str, Any]]:
    """Both paths to these engines, both loads, `--rounds` times (direct first, then router
    first, so a drift of the machine's load cancels); each figure is the rounds' median."""
    urls = [e.base_url for e in engines]
    check_tokens(urls[0])
    check_tokens(router.url)
    wrk.run([(router.url + GENERATE, args.connections)], body(TOKENS), seconds=1)  # warm up

    def targets(path: str, connections: int) -> list[tuple[str, int]]:
        if path == "router":
            return [(router.url + GENERATE, connections)]
        return [(url + GENERATE, k) for url, k in split(connections, urls)]

    served = {"direct": [e.pid for e in engines], "router": [router.pid]}
    loads = (("first_token", args.latency_connections, 1), ("throughput", args.connections, TOKENS))
    taken: dict[str, dict[str, list[Load]]] = {"direct": {}, "router": {}}
    for i in range(args.rounds):
        for path in sorted(taken, reverse=bool(i % 2)):
            for kind, connections, max_tokens in loads:
                load = wrk.run(targets(path, connections), body(max_tokens), served[path])
                taken[path].setdefault(kind, []).append(load)
    return [
        {
            "engines": len(engines),
            "path": path,
            **{kind: asdict(median_load(runs)) for kind, runs in kinds.items()},
        }
        for path, kinds in taken.items()
    ]


def hop(rows: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """Router minus direct for the latencies, router / direct for tokens/s."""
    d, r = (
        next(x for x in rows if x["engines"] == n and x["path"] == p) for p in ("direct", "router")
    )
    df, rf = d["first_token"], r["first_token"]
    return {
        "engines": n,
        "p50_ms_added": rf["p50_ms"] - df["p50_ms"],
        "p99_ms_added": rf["p99_ms"] - df["p99_ms"],
        "tokens_per_s_ratio": r["throughput"]["req_per_s"] / d["throughput"]["req_per_s"],
        "router_cpu_ms_per_req": r["throughput"]["server_cpu_ms_per_req"],
    }


def render(result: dict[str, Any]) -> str:
    s = result["settings"]
    head = (
        f"{'engines':>7} {'path':<6} {'p50 ms':>7} {'p99 ms':>7} {'req/s':>6} | "
        f"{'p50 ms':>7} {'req/s':>6} {'tokens/s':>8} | {'wrk cores':>9} {'CPU ms/req':>10}"
    )
    long_load = f"{TOKENS} tokens, ignore_eos"
    short_conns = f"{s['latency_connections']} conns, max_tokens 1"
    long_conns = f"{s['connections']} conns"
    lines = [
        f"vllm-router {s['router_version']}; tito-mock: {s['ttft_ms']:g} ms to the first token, "
        f"{s['itl_ms']:g} ms/token; {s['cores']} cores shared by all; {s['duration']:g} s per "
        f"run, median of {s['rounds']} round(s)",
        f"{'':15}{'first token':<23}| {long_load:<24}| cores of one wrk,",
        f"{'':15}{short_conns:<23}| {long_conns:<24}| CPU of engines|router",
        head,
        "-" * len(head),
    ]
    for row in result["rows"]:
        f, t = row["first_token"], row["throughput"]
        lines.append(
            f"{row['engines']:>7} {row['path']:<6} {f['p50_ms']:>7.2f} {f['p99_ms']:>7.2f} "
            f"{f['req_per_s']:>6.0f} | {t['p50_ms']:>7.2f} {t['req_per_s']:>6.0f} "
            f"{t['req_per_s'] * TOKENS:>8.0f} | {max(f['wrk_cores'], t['wrk_cores']):>9.2f} "
            f"{t['server_cpu_ms_per_req']:>10.2f}"
        )
        if row["path"] == "router":
            h = next(x for x in result["hop"] if x["engines"] == row["engines"])
            ratio = "x" + format(h["tokens_per_s_ratio"], ".3f")
            lines.append(
                f"{row['engines']:>7} {'hop':<6} {h['p50_ms_added']:>+7.2f} "
                f"{h['p99_ms_added']:>+7.2f} {'':>6} | {'':>7} {'':>6} {ratio:>8} |"
            )
    c = result["ceiling"]
    lines.append(
        f"wrk's reach: GET /health of one engine, {s['connections']} connections: "
        f"{c['req_per_s']:.0f} req/s, wrk using {c['wrk_cores']:.2f} of a core"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--engines", default="1,2", help="engine counts, e.g. 1,2")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run")
    p.add_argument("--connections", type=int, default=32, help="for the tokens/s runs")
    p.add_argument("--rounds", type=int, default=1, help="repeat, alternating; medians")
    p.add_argument("--latency-connections", type=int, default=4, help="for first-token runs")
    p.add_argument("--router-version", default=DEFAULT_VERSION)
    p.add_argument("--ttft-ms", type=float, default=20.0)
    p.add_argument("--itl-ms", type=float, default=2.0)
    p.add_argument("--wrk-cpu", type=int, default=None, help="pin wrk to this CPU (taskset)")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = p.parse_args(argv)
    if args.wrk_cpu is not None and not shutil.which("taskset"):
        raise SystemExit("--wrk-cpu needs taskset (util-linux)")
    result = measure(args)
    print(render(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
