"""The fuzzer against the in-process mock: the CI budget in every profile (plus dev mode, so the
weight-label sequence runs), and the mock bugs it finds in the correct mock.

The CI budget is `CI_MAX_EXAMPLES` (150) positive + 150 negative drawn cases per operation that
takes input, in every profile, seed 1234: 300 generated cases per operation. Drawing is shared
across the profiles (`conformance.fuzz.generation`), so the first profile pays for it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import pytest

from conformance.fuzz.expectations import operations
from conformance.fuzz.run import FuzzResult, fuzz, summary_text, to_report
from conformance.fuzz.settings import CI_MAX_EXAMPLES, FuzzConfig, ServerFacts
from conformance.reporting import json_report, junit
from mock_server.app import create_app
from mock_server.config import DEFAULT_VOCAB, parse_args

KEY = "fuzz-key"
CI_EXAMPLES = int(os.environ.get("TITO_FUZZ_EXAMPLES", str(CI_MAX_EXAMPLES)))
ITL = ["--mock-itl-ms", "1"]  # a long stream stays in flight long enough to be aborted
DEV = {"VLLM_SERVER_DEV_MODE": "1"}
PROFILES: dict[str, tuple[list[str], dict[str, str], ServerFacts, str | None]] = {
    "scale-out": (["--enable-scale-out", *ITL], {}, ServerFacts("scale-out"), None),
    "tokens-only": (["--tokens-only", *ITL], {}, ServerFacts("tokens-only"), None),
    "disabled": ([*ITL], {}, ServerFacts("disabled"), None),
    "api-key": (
        ["--enable-scale-out", "--api-key", KEY, *ITL],
        {},
        ServerFacts("scale-out", api_key_required=True),
        KEY,
    ),
    "dev-mode": (["--enable-scale-out", *ITL], DEV, ServerFacts("scale-out"), None),
}


@dataclass(frozen=True)
class MockBug:
    reason: str
    profiles: tuple[str, ...]  # where the CI budget must find it


KNOWN_MOCK_BUGS: dict[tuple[str, str, str], MockBug] = {}
"""Mock bugs (not defects) the fuzzer finds in the correct mock at the CI budget, reported to the
lead; this dict is the only list of them. Each entry must still be found in each profile it
names (`test_correct_mock_ci_budget` fails when one is not: the bug was fixed, or the budget no
longer reaches it), so the list cannot go stale."""


def run_profile(
    name: str, examples: int, defects: tuple[str, ...] = (), **overrides: Any
) -> FuzzResult:
    argv, env, facts, key = PROFILES[name]
    config = parse_args([*argv, *sum((["--mock-defect", d] for d in defects), [])], env)
    facts = ServerFacts(
        facts.profile, facts.api_key_required, config.dev_mode, DEFAULT_VOCAB, config.model_name
    )
    cfg = FuzzConfig(
        app=create_app(config),
        api_key=key,
        max_examples=examples,
        seed=1234,
        facts=facts,
        **overrides,
    )
    return fuzz(cfg)


def known_in(profile: str) -> set[tuple[str, str, str]]:
    return {key for key, bug in KNOWN_MOCK_BUGS.items() if profile in bug.profiles}


def takes_input(op_id: str) -> bool:
    """Operations with a body or parameters; the others have one distinct case at most."""
    spec_op = operations()[op_id][2]
    return "requestBody" in spec_op or bool(spec_op.get("parameters"))


@pytest.mark.parametrize("profile", list(PROFILES))
def test_correct_mock_ci_budget(profile: str, tmp_path: Any) -> None:
    t0 = time.monotonic()
    result = run_profile(profile, CI_EXAMPLES)
    took = time.monotonic() - t0
    print(summary_text(result))
    print(f"{profile}: {result.total_cases} cases in {took:.1f} s")
    for s in result.stats:
        if s.group in ("positive", "negative") and not s.skipped and takes_input(s.operation):
            assert s.cases >= CI_EXAMPLES, f"{s.operation} {s.group}: only {s.cases} cases"
    found = {(f.operation, f.group, f.check) for f in result.findings}
    unexpected = [
        f for f in result.findings if (f.operation, f.group, f.check) not in known_in(profile)
    ]
    assert not unexpected, "\n".join(
        f"{f.key}: {f.message[:300]}\n{f.reproducer}" for f in unexpected
    )
    if CI_EXAMPLES >= CI_MAX_EXAMPLES:  # a smaller budget may miss a listed bug
        stale = sorted(known_in(profile) - found)
        assert not stale, (
            f"not found in {profile}: {stale}: mock bug fixed? remove it from KNOWN_MOCK_BUGS "
            "(or drop the profile from its entry)"
        )
    if profile == "dev-mode":
        ran = {s.operation: s.cases for s in result.stats if s.group == "stateful"}
        assert ran.get("label-then-generate"), "the weight-label sequence did not run"
    if profile in ("scale-out", "tokens-only", "api-key", "dev-mode"):
        ran = {s.operation: s.cases for s in result.stats if s.group == "stateful"}
        assert ran.get("generate-then-abort"), "the generate-then-abort sequence did not run"
    report = to_report(result)
    json_report.write([report], tmp_path / "fuzz.json")
    junit.write([report], tmp_path / "fuzz.xml")
