"""Fuzz cases per second against the mock: in-process (ASGI) and over loopback HTTP.

    python benchmarks/bench_fuzz.py [--examples N]

Runs positive+negative generate fuzzing with the same seed both ways and prints cases/s.
"""

from __future__ import annotations

import argparse
import time

from conformance.fuzz.run import fuzz
from conformance.fuzz.settings import FuzzConfig, ServerFacts
from mock_server.app import create_app
from mock_server.config import DEFAULT_VOCAB, parse_args
from mock_server.testing import running_server

ARGV = ["--enable-scale-out"]


def _rate(cfg: FuzzConfig) -> tuple[int, float]:
    t0 = time.monotonic()
    result = fuzz(cfg)
    return result.total_cases, time.monotonic() - t0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--examples", type=int, default=100)
    args = p.parse_args()
    facts = ServerFacts("scale-out", vocab_size=DEFAULT_VOCAB, model="mock-model")
    common = dict(
        max_examples=args.examples,
        seed=7,
        facts=facts,
        operations=("generate",),
        stateful=False,
        oov_group=False,
    )
    n, s = _rate(FuzzConfig(app=create_app(parse_args(ARGV, {})), **common))  # type: ignore[arg-type]
    print(f"in-process ASGI: {n} cases in {s:.1f} s = {n / s:.1f} cases/s")
    with running_server(ARGV) as url:
        n, s = _rate(FuzzConfig(base_url=url, **common))  # type: ignore[arg-type]
    print(f"loopback HTTP:   {n} cases in {s:.1f} s = {n / s:.1f} cases/s")


if __name__ == "__main__":
    main()
