"""Benchmark of the mock server against bare ASGI endpoints on the same stack (issue 3 targets).

Run: `python benchmarks/bench_mock.py [--seconds 5] [--json out.json]`.

Each figure is measured with the same httpx client in the same run against `tito-mock` and
against `benchmarks/bare_app.py` (uvicorn, same settings), each in its own process, so the
ratios compare the mock with the cheapest possible server under the same client. Targets:
non-streamed generate >= 50% of the bare JSON endpoint's requests/s (32 clients, max_tokens
16); streaming >= 50% of the bare SSE endpoint's events/s (64 streams, max_tokens 256);
start-up to a 200 on /health under 1.5 s; RSS under 200 MB with 1,000 open streams.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

Job = Callable[[httpx.AsyncClient], Awaitable[int]]
HERE = Path(__file__).resolve().parent
PROMPT = [151644, 872, 198]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], deadline_s: float = 10) -> float:
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=0.5).status_code == 200:
                return time.monotonic() - start
        except httpx.TransportError:
            time.sleep(0.005)
    raise RuntimeError(f"{url} not healthy after {deadline_s} s")


@contextmanager
def server(argv: list[str]) -> Any:
    port = free_port()
    proc = subprocess.Popen([*argv, "--port", str(port)], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(10)


def mock_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "mock_server", "--enable-scale-out", *extra]


def startup_seconds(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        port = free_port()
        start = time.monotonic()
        proc = subprocess.Popen([*mock_argv(), "--port", str(port)], stdout=subprocess.DEVNULL)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", proc)
            times.append(time.monotonic() - start)
        finally:
            proc.terminate()
            proc.wait(10)
    return times


async def closed_loop(workers: int, seconds: float, one: Job) -> tuple[float, float]:
    """Run `workers` clients in a loop for `seconds`; returns (requests/s, units/s)."""
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    async with httpx.AsyncClient(transport=nodelay_transport(limits), timeout=30) as client:
        stop = time.monotonic() + seconds
        counts = [0, 0]

        async def worker() -> None:
            while time.monotonic() < stop:
                units = await one(client)  # not `+= await`: that reads the total before awaiting
                counts[1] += units
                counts[0] += 1

        start = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(workers)))
        elapsed = time.monotonic() - start
    return counts[0] / elapsed, counts[1] / elapsed


def nodelay_transport(limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """Without TCP_NODELAY a keep-alive POST stalls ~40 ms on delayed ACKs: the client, not the
    server, would then set the pace."""
    options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    return httpx.AsyncHTTPTransport(limits=limits, socket_options=options)


def post_json(url: str, body: dict[str, Any] | None) -> Job:
    async def one(client: httpx.AsyncClient) -> int:
        response = await client.post(url, json=body)
        response.raise_for_status()
        return 1

    return one


def post_stream(url: str, body: dict[str, Any] | None) -> Job:
    async def one(client: httpx.AsyncClient) -> int:
        events = 0
        async with client.stream("POST", url, json=body) as response:
            response.raise_for_status()
            async for chunk in response.aiter_bytes():
                events += chunk.count(b"\n\n")
        return events

    return one


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
        stats = (await client.get(f"{url}/mock/stats")).json()
        rss = rss_mb(pid)
        hold.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if stats["in_flight"] < n:
        raise RuntimeError(f"only {stats['in_flight']} of {n} streams in flight")
    return rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--streams-open", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    results: dict[str, Any] = {"cpus": os.cpu_count()}

    starts = startup_seconds(5)
    results["startup_s"] = {"median": statistics.median(starts), "max": max(starts)}

    gen16 = {"token_ids": PROMPT, "sampling_params": {"max_tokens": 16, "ignore_eos": True}}
    gen256 = {
        "token_ids": PROMPT,
        "sampling_params": {"max_tokens": 256, "ignore_eos": True},
        "stream": True,
    }
    with server(mock_argv("--max-num-seqs", "1100")) as (url, proc):
        sample = httpx.post(f"{url}/inference/v1/generate", json=gen16).content
        with httpx.stream("POST", f"{url}/inference/v1/generate", json=gen256) as r:
            raw = r.read()
        event_bytes = len(raw) // max(1, raw.count(b"\n\n"))
        generate = f"{url}/inference/v1/generate"
        asyncio.run(closed_loop(8, 1, post_json(generate, gen16)))  # warm-up
        results["mock_json_rps"] = asyncio.run(
            closed_loop(32, args.seconds, post_json(generate, gen16))
        )[0]
        results["mock_sse_events_per_s"] = asyncio.run(
            closed_loop(64, args.seconds, post_stream(generate, gen256))
        )[1]
    with server(mock_argv("--max-num-seqs", "1100", "--mock-itl-ms", "1000")) as (url, proc):
        results["rss_mb_open_streams"] = asyncio.run(open_streams(url, args.streams_open, proc.pid))
        results["streams_open"] = args.streams_open

    bare = [
        sys.executable,
        str(HERE / "bare_app.py"),
        "--json-bytes",
        str(len(sample)),
        "--event-bytes",
        str(event_bytes),
    ]
    with server(bare) as (url, _):
        asyncio.run(closed_loop(8, 1, post_json(f"{url}/json", None)))
        results["bare_json_rps"] = asyncio.run(
            closed_loop(32, args.seconds, post_json(f"{url}/json", None))
        )[0]
        results["bare_sse_events_per_s"] = asyncio.run(
            closed_loop(64, args.seconds, post_stream(f"{url}/sse?events=257", None))
        )[1]
    results["json_ratio"] = results["mock_json_rps"] / results["bare_json_rps"]
    results["sse_ratio"] = results["mock_sse_events_per_s"] / results["bare_sse_events_per_s"]
    results["sizes"] = {"json_bytes": len(sample), "event_bytes": event_bytes}

    targets = {
        "json_ratio >= 0.5": results["json_ratio"] >= 0.5,
        "sse_ratio >= 0.5": results["sse_ratio"] >= 0.5,
        "startup max < 1.5 s": results["startup_s"]["max"] < 1.5,
        "rss < 200 MB": results["rss_mb_open_streams"] < 200,
    }
    results["targets_met"] = targets
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if all(targets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
