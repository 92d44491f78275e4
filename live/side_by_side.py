"""`--releases-at-once N`: several releases' live runs at the same time, each in a process of
its own.

One release's run over vLLM's own API server on the simulated core keeps about 0.6 of one
core busy (the rest is the server's pacing and the suite waiting on it), so on two cores two
releases side by side take little more than one. Each run is the whole `run_all` of one
release in a spawned process (the suite's inner pytest session is per process, never shared
by threads); its output goes to OUT/vllm-V/live.log, printed whole when the run ends, so a CI
log reads release by release instead of interleaved.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path

from .profiles import Backend, LiveProfile

RunOne = Callable[[Backend, list[LiveProfile], argparse.Namespace, str], int]


def _child(
    run_one: RunOne,
    backend: Backend,
    profiles: list[LiveProfile],
    sub: argparse.Namespace,
    version: str,
    log: Path,
) -> int:
    """In the spawned process: fds 1 and 2 into `log` (the servers, the suite's pytest and
    anything they start inherit them), then the release's run."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
    return run_one(backend, profiles, sub, version)


def run_side_by_side(
    jobs: list[tuple[str, Backend, argparse.Namespace]],
    profiles: list[LiveProfile],
    run_one: RunOne,
    at_once: int,
) -> tuple[dict[str, int], dict[str, float]]:
    """Each (version, backend, namespace) job at most `at_once` at a time; returns each
    version's exit code (1 where its process broke) and seconds from its submission to its end."""
    codes: dict[str, int] = {}
    seconds: dict[str, float] = {}
    started: dict[str, float] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=at_once, mp_context=context) as pool:
        futures: dict[Future[int], tuple[str, Path]] = {}
        for version, backend, sub in jobs:
            log = Path(sub.out) / "live.log"
            started[version] = time.monotonic()
            future = pool.submit(_child, run_one, backend, profiles, sub, version, log)
            futures[future] = (version, log)
            print(f"=== vLLM {version}: at most {at_once} at once; output in {log}", flush=True)
        for future in as_completed(futures):
            version, log = futures[future]
            try:
                codes[version] = future.result()
            except Exception as exc:  # the run's process broke: a harness fault, said so
                codes[version] = 1
                print(f"=== vLLM {version}: its process broke: {type(exc).__name__}: {exc}")
            seconds[version] = round(time.monotonic() - started[version], 2)
            print(f"=== vLLM {version} ({seconds[version]} s, exit {codes[version]}):", flush=True)
            if log.exists():
                sys.stdout.write(log.read_text(encoding="utf-8", errors="replace"))
            sys.stdout.flush()
    return codes, seconds
