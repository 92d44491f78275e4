"""Fuzz cases per second against the mock: the CI budget in every profile in-process (ASGI),
and the generate operation in-process and over loopback HTTP.

    python benchmarks/bench_fuzz.py [--examples N] [--profiles a,b] [--no-http]

`--examples` is per operation and mode (the CI budget: 150 positive + 150 negative). Drawing is
shared across profiles (`conformance.fuzz.generation`): the first profile, and api-key's
security-variant negatives, pay for it; the figures say how much of each profile was drawing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemathesis import GenerationMode  # noqa: E402

from conformance.fuzz import generation  # noqa: E402
from conformance.fuzz.campaign import fuzz  # noqa: E402
from conformance.fuzz.settings import CI_MAX_EXAMPLES, FuzzConfig, ServerFacts  # noqa: E402
from mock_server.behaviour.config import DEFAULT_VOCAB, parse_args  # noqa: E402
from mock_server.harness.testing import running_server  # noqa: E402
from mock_server.serve.app import create_app  # noqa: E402
from tests.test_fuzz_mock import run_profile  # noqa: E402

ARGV = ["--enable-scale-out"]
PROFILES = ("scale-out", "tokens-only", "disabled", "api-key", "dev-mode")


def ci_budget(examples: int, profiles: list[str]) -> None:
    total_cases, t_all = 0, time.monotonic()
    for name in profiles:
        drew = generation.drawing_seconds()
        t0 = time.monotonic()
        result = run_profile(name, examples)
        took = time.monotonic() - t0
        drawing = generation.drawing_seconds() - drew
        total_cases += result.total_cases
        print(
            f"{name:<12} {result.total_cases:>5} cases in {took:6.1f} s = "
            f"{result.total_cases / took:6.1f} cases/s (drawing {drawing:5.1f} s, "
            f"replay {result.total_cases / max(took - drawing, 1e-9):6.1f} cases/s), "
            f"{len(result.findings)} distinct failure(s)",
            flush=True,
        )
    took = time.monotonic() - t_all
    print(
        f"{'total':<12} {total_cases:>5} cases in {took:6.1f} s = {total_cases / took:.1f} cases/s"
    )


def generate_both_ways(examples: int) -> None:
    facts = ServerFacts("scale-out", vocab_size=DEFAULT_VOCAB, model="mock-model")
    common = dict(
        max_examples=examples,
        seed=7,
        facts=facts,
        operations=("generate",),
        stateful=False,
        oov_group=False,
    )
    for mode in GenerationMode:  # draw first, so both ways time the replay alone
        generation.drawn("generate", mode, False, 7, examples)
    cfg = FuzzConfig(app=create_app(parse_args(ARGV, {})), **common)  # type: ignore[arg-type]
    t0 = time.monotonic()
    n = fuzz(cfg).total_cases
    s = time.monotonic() - t0
    print(f"generate, in-process ASGI: {n} cases in {s:.1f} s = {n / s:.1f} cases/s")
    with running_server(ARGV) as url:
        t0 = time.monotonic()
        n = fuzz(FuzzConfig(base_url=url, **common)).total_cases  # type: ignore[arg-type]
        s = time.monotonic() - t0
    print(f"generate, loopback HTTP:   {n} cases in {s:.1f} s = {n / s:.1f} cases/s")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--examples", type=int, default=CI_MAX_EXAMPLES)
    p.add_argument("--profiles", default=",".join(PROFILES))
    p.add_argument("--no-http", action="store_true")
    args = p.parse_args()
    ci_budget(args.examples, [x for x in args.profiles.split(",") if x])
    if not args.no_http:
        generate_both_ways(args.examples)


if __name__ == "__main__":
    main()
