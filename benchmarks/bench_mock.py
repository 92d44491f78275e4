"""Benchmark of the mock server against a bare endpoint answering the same bytes (issue 11).

Run: `python benchmarks/bench_mock.py [--runs 3] [--seconds 5] [--json out.json]`.

The load generator is wrk (`loadgen.py`; installed when missing), not a Python client: httpx
saturates near 350 requests/s here, below both servers, so its ratios measured the client.
Each run measures, one after the other on the same machine, `tito-mock` and
`benchmarks/bare_app.py` (Starlette + uvicorn, same settings, answering the bytes the mock
answered: its recorded non-streamed body, its recorded stream event by event), and prints
the CPU seconds wrk and the server used, which shows the server is the bottleneck. Targets
(ratios mock / bare): non-streamed generate (max_tokens 16, 32 connections) >= 0.6;
streaming (64 streams x 256 tokens) >= 0.5; tokens/s with a 2,048-token vocabulary within
10% of 151,936; start-up to a 200 on /health < 1.5 s; RSS < 200 MB with 1,000 open streams.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from loadgen import Load, ensure_wrk, run_wrk

from loopback.ports import free_port
from loopback.processes import start_session, stop_session
from loopback.readiness import NotReady, wait_ready
from mock_server.endpoints import mock_stats

HERE = Path(__file__).resolve().parent
PROMPT = [151644, 872, 198]


def wait_healthy(url: str, proc: subprocess.Popen[bytes], deadline_s: float = 10) -> float:
    """Seconds until `url/health` answers 200, probed every 5 ms: start-up is measured."""
    try:
        return wait_ready(proc, url, deadline_s, poll_s=0.005, probe_s=0.5)
    except NotReady as exc:
        raise RuntimeError(f"{url}: {exc}") from None


@contextmanager
def server(argv: list[str]) -> Any:
    port = free_port()
    # wrk hangs up on streams in flight at the end of a run: uvicorn logs each one
    proc = start_session([*argv, "--port", str(port)], subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url, proc
    finally:
        stop_session(proc.pid, leader=proc)


def mock_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "mock_server", "--enable-scale-out", *extra]


def bare_argv(json_file: Path, sse_file: Path) -> list[str]:
    """The bare endpoint answering the mock's recorded answers (`record`)."""
    return [
        sys.executable,
        str(HERE / "bare_app.py"),
        "--json-file",
        str(json_file),
        "--sse-file",
        str(sse_file),
    ]


def startup_seconds(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        port = free_port()
        start = time.monotonic()
        proc = start_session([*mock_argv(), "--port", str(port)], subprocess.DEVNULL)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", proc)
            times.append(time.monotonic() - start)
        finally:
            stop_session(proc.pid, leader=proc)
    return times


def nodelay_transport(limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """Without TCP_NODELAY a keep-alive POST stalls ~40 ms on delayed ACKs: the client, not the
    server, would then set the pace."""
    options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    return httpx.AsyncHTTPTransport(limits=limits, socket_options=options)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def open_streams(url: str, n: int, pid: int) -> float:
    """Open `n` slow streams, wait until every one has its first chunk, and read the RSS."""
    body = {
        "token_ids": PROMPT,
        "sampling_params": {"max_tokens": 1000, "ignore_eos": True},
        "stream": True,
    }
    limits = httpx.Limits(max_connections=n + 8)
    async with httpx.AsyncClient(transport=nodelay_transport(limits), timeout=60) as client:
        started = asyncio.Event()
        first = 0
        hold = asyncio.Event()

        async def one() -> None:
            nonlocal first
            async with client.stream("POST", f"{url}/inference/v1/generate", json=body) as r:
                async for _ in r.aiter_bytes():
                    first += 1
                    if first >= n:
                        started.set()
                    await hold.wait()
                    break

        tasks = [asyncio.create_task(one()) for _ in range(n)]
        await asyncio.wait_for(started.wait(), 60)
        stats = (await client.get(url + mock_stats.PATH)).json()
        rss = rss_mb(pid)
        hold.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if stats["in_flight"] < n:
        raise RuntimeError(f"only {stats['in_flight']} of {n} streams in flight")
    return rss


GEN16 = {"token_ids": PROMPT, "sampling_params": {"max_tokens": 16, "ignore_eos": True}}
STREAM_TOKENS = 256


def gen_stream(prompt: list[int]) -> dict[str, Any]:
    params = {"max_tokens": STREAM_TOKENS, "ignore_eos": True}
    return {"token_ids": prompt, "sampling_params": params, "stream": True}


def record(url: str, folder: Path) -> tuple[Path, Path]:
    """The mock's own answers, for the bare endpoint to send byte for byte."""
    json_file, sse_file = folder / "generate16.json", folder / "stream256.sse"
    json_file.write_bytes(httpx.post(f"{url}/inference/v1/generate", json=GEN16).content)
    with httpx.stream("POST", f"{url}/inference/v1/generate", json=gen_stream(PROMPT)) as r:
        sse_file.write_bytes(r.read())
    return json_file, sse_file


def one_run(urls: dict[str, tuple[str, int]], seconds: float) -> dict[str, Load]:
    mock, bare, small = urls["mock"], urls["bare"], urls["mock-2048"]
    generate = "/inference/v1/generate"
    # The bare endpoint gets the mock's very requests: the same exchange, bytes in and out.
    # (Until 2026-12-03 it got bodiless POSTs, and reading the mock's 100-byte body in h11,
    # about 40 us a request, was counted as the mock's own work.)
    plan = [
        ("mock_json", mock, generate, GEN16, 32),
        ("bare_json", bare, "/json", GEN16, 32),
        ("mock_sse", mock, generate, gen_stream(PROMPT), 64),
        ("bare_sse", bare, "/sse", gen_stream(PROMPT), 64),
        ("mock_2048_sse", small, generate, gen_stream(SMALL_PROMPT), 64),
    ]
    out = {}
    for name, (base, pid), path, body, connections in plan:
        out[name] = run_wrk(base + path, body, connections, seconds, pid)
    return out


SMALL_PROMPT = [2046, 872 % 2048, 198]  # <|im_start|> of a 2,048-token vocabulary


def table(runs: list[dict[str, Load]]) -> str:
    """The issue's table: one column per run."""

    def row(label: str, values: list[float], fmt: str) -> str:
        return f"{label:<38}" + "".join(f"{format(v, fmt):>12}" for v in values)

    lines = [f"{'':<38}" + "".join(f"{'run ' + str(i + 1):>12}" for i in range(len(runs)))]
    rps = [r["mock_json"].requests_per_s for r in runs]
    bare = [r["bare_json"].requests_per_s for r in runs]
    lines += [
        "non-stream generate, max_tokens 16, 32 connections (req/s)",
        row("  tito-mock", rps, ",.0f"),
        row("  bare endpoint, same bytes", bare, ",.0f"),
        row("  ratio (target >= 0.6)", [a / b for a, b in zip(rps, bare, strict=True)], ".2f"),
    ]
    tok = [r["mock_sse"].requests_per_s * STREAM_TOKENS for r in runs]
    bare_tok = [r["bare_sse"].requests_per_s * STREAM_TOKENS for r in runs]
    small = [r["mock_2048_sse"].requests_per_s * STREAM_TOKENS for r in runs]
    lines += [
        "streaming, 64 streams x 256 tokens (tokens/s)",
        row("  tito-mock", tok, ",.0f"),
        row("  bare endpoint, same bytes", bare_tok, ",.0f"),
        row("  ratio (target >= 0.5)", [a / b for a, b in zip(tok, bare_tok, strict=True)], ".2f"),
        row("  tito-mock, vocabulary 2,048", small, ",.0f"),
        row(
            "  151,936 / 2,048 (target 0.9-1.1)",
            [a / b for a, b in zip(tok, small, strict=True)],
            ".2f",
        ),
        "CPU share of wrk / server during each run (wrk must be well below the server)",
    ]

    def share(cpu_s: float) -> str:
        return f"{cpu_s / seconds:.2f}"

    seconds = runs[0]["mock_json"].seconds
    for name in ("mock_json", "bare_json", "mock_sse", "bare_sse"):
        shares = [f"{share(r[name].wrk_cpu_s)}/{share(r[name].server_cpu_s)}" for r in runs]
        lines.append(f"  {name:<36}" + "".join(f"{s:>12}" for s in shares))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--streams-open", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    ensure_wrk()
    results: dict[str, Any] = {"cpus": os.cpu_count()}
    starts = startup_seconds(5)
    results["startup_s"] = {"median": statistics.median(starts), "max": max(starts)}

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        url, proc = stack.enter_context(server(mock_argv("--max-num-seqs", "1100")))
        json_file, sse_file = record(url, Path(tmp))
        bare_url, bare = stack.enter_context(server(bare_argv(json_file, sse_file)))
        small_argv = mock_argv("--max-num-seqs", "1100", "--mock-vocab-size", "2048")
        small_url, small = stack.enter_context(server(small_argv))
        urls = {
            "mock": (url, proc.pid),
            "bare": (bare_url, bare.pid),
            "mock-2048": (small_url, small.pid),
        }
        one_run(urls, 1)  # warm-up
        runs = [one_run(urls, args.seconds) for _ in range(args.runs)]
    results["runs"] = [{k: vars(v) for k, v in run.items()} for run in runs]
    with server(mock_argv("--max-num-seqs", "1100", "--mock-itl-ms", "1000")) as (url, proc):
        results["rss_mb_open_streams"] = asyncio.run(open_streams(url, args.streams_open, proc.pid))
        results["streams_open"] = args.streams_open

    def ratios(a: str, b: str) -> list[float]:
        return [run[a].requests_per_s / run[b].requests_per_s for run in runs]

    results["json_ratio"] = ratios("mock_json", "bare_json")
    results["sse_ratio"] = ratios("mock_sse", "bare_sse")
    results["vocab_ratio"] = ratios("mock_sse", "mock_2048_sse")
    targets = {
        "non-stream ratio >= 0.6": min(results["json_ratio"]) >= 0.6,
        "stream ratio >= 0.5": min(results["sse_ratio"]) >= 0.5,
        "vocab 151,936 vs 2,048 within 10%": all(abs(r - 1) <= 0.1 for r in results["vocab_ratio"]),
        "startup max < 1.5 s": results["startup_s"]["max"] < 1.5,
        "rss < 200 MB": results["rss_mb_open_streams"] < 200,
    }
    results["targets_met"] = targets
    print(table(runs))
    print(
        f"start-up median {results['startup_s']['median']:.2f} s, max "
        f"{results['startup_s']['max']:.2f} s; RSS with {args.streams_open} open streams "
        f"{results['rss_mb_open_streams']:.0f} MB"
    )
    for name, met in targets.items():
        print(f"{'met    ' if met else 'NOT MET'} {name}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if all(targets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
