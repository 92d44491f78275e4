"""The fuzzer against the in-process mock: the CI budget in every profile (plus dev mode, so the
weight-label sequence runs), and the mock bugs it finds in the correct mock.

The CI budget is `CI_MAX_EXAMPLES` (150) positive + 150 negative drawn cases per operation that
takes input, in every profile, seed 1234: 300 generated cases per operation. Drawing is shared
across the profiles (`conformance.fuzz.generation`), so the first profile pays for it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any

import pytest

from conformance.fuzz.campaign import FuzzResult, fuzz, summary_text, to_report
from conformance.fuzz.expectations import operations
from conformance.fuzz.settings import CI_MAX_EXAMPLES, FuzzConfig, ServerFacts
from conformance.profiles import MAIN_PROFILES, MOCK_KNOBS, PROFILES, Profile
from conformance.reporting import json_report, junit
from mock_server.behaviour.config import DEFAULT_VOCAB, parse_args
from mock_server.serve.app import create_app

CI_EXAMPLES = int(os.environ.get("TITO_FUZZ_EXAMPLES", str(CI_MAX_EXAMPLES)))
FUZZED: dict[str, Profile] = {
    **{name: replace(PROFILES[name], dev_mode=False) for name in MAIN_PROFILES},
    "dev-mode": replace(PROFILES["scale-out"], name="dev-mode", dev_mode=True),
}
"""The main profiles as the spec's `x-tito-profiles` columns (dev mode off: the registry's
scale-out runs in dev mode), then scale-out in dev mode, the spec's `dev-mode` column."""


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
    profile = FUZZED[name]
    bad = [arg for defect in defects for arg in ("--mock-defect", defect)]
    config = parse_args([*profile.flags, *MOCK_KNOBS, *bad], profile.env)
    facts = ServerFacts(
        profile.spec_profile,
        profile.api_key is not None,
        config.dev_mode,
        DEFAULT_VOCAB,
        config.model_name,
    )
    cfg = FuzzConfig(
        app=create_app(config),
        api_key=profile.api_key,
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


BUDGET = {"api-key": max(CI_EXAMPLES // 5, 5)}
"""Cases per operation where a profile's budget is not the CI budget. api-key's schemas are
scale-out's; its draws differ only in the security parameters (an Authorization header,
valid or not, on each case), so at the full budget it spent 130 s of the slow stage drawing
scale-out's bodies again. The key, and the refusals without it, ride on every case: a fifth of
the budget exercises them on every operation."""


@pytest.mark.parametrize("profile", list(FUZZED))
def test_correct_mock_ci_budget(profile: str, tmp_path: Any) -> None:
    budget = BUDGET.get(profile, CI_EXAMPLES)
    t0 = time.monotonic()
    result = run_profile(profile, budget)
    took = time.monotonic() - t0
    print(summary_text(result))
    print(f"{profile}: {result.total_cases} cases in {took:.1f} s")
    for s in result.stats:
        if s.group in ("positive", "negative") and not s.skipped and takes_input(s.operation):
            assert s.cases >= budget, f"{s.operation} {s.group}: only {s.cases} cases"
    found = {(f.operation, f.group, f.check) for f in result.findings}
    unexpected = [
        f for f in result.findings if (f.operation, f.group, f.check) not in known_in(profile)
    ]
    assert not unexpected, "\n".join(
        f"{f.key}: {f.message[:300]}\n{f.reproducer}" for f in unexpected
    )
    if budget >= CI_MAX_EXAMPLES:  # a smaller budget may miss a listed bug
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
