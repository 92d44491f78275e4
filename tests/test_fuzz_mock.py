"""The fuzzer against the in-process mock: the CI budget in every profile, and the defects
of the catalogue it must find."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from conformance.fuzz.run import FuzzResult, fuzz, summary_text, to_report
from conformance.fuzz.settings import FuzzConfig, ServerFacts
from conformance.reporting import json_report, junit
from mock_server.app import create_app
from mock_server.config import DEFAULT_VOCAB, parse_args

KEY = "fuzz-key"
CI_EXAMPLES = int(os.environ.get("TITO_FUZZ_EXAMPLES", "300"))
PROFILES: dict[str, tuple[list[str], ServerFacts, str | None]] = {
    "scale-out": (["--enable-scale-out"], ServerFacts("scale-out"), None),
    "tokens-only": (["--tokens-only"], ServerFacts("tokens-only"), None),
    "disabled": ([], ServerFacts("disabled"), None),
    "api-key": (
        ["--enable-scale-out", "--api-key", KEY],
        ServerFacts("scale-out", api_key_required=True),
        KEY,
    ),
}

KNOWN_MOCK_BUGS: dict[tuple[str, str, str], str] = {
    (
        "renderChatCompletions",
        "negative",
        "negative_data_rejection",
    ): "chat render accepts wrongly typed fields vLLM's ChatCompletionRequest rejects",
    (
        "renderChatCompletions",
        "negative",
        "response_schema_conformance",
    ): "chat render echoes wrongly typed fields (e.g. a number as model) into its GenerateRequest",
    (
        "derenderCompletions",
        "negative",
        "response_schema_conformance",
    ): "derender echoes invalid nested values (huge index) into its answer",
    (
        "derenderChatCompletions",
        "negative",
        "response_schema_conformance",
    ): "derender echoes invalid nested values into its answer",
    (
        "generate",
        "negative",
        "stream_well_framed",
    ): "a stream of an accepted schema-invalid body ends without data: [DONE]",
    (
        "renderCompletions",
        "negative",
        "negative_data_rejection",
    ): "render accepts bodies vLLM's CompletionRequest rejects (model an object, negative ids)",
    (
        "renderCompletions",
        "negative",
        "response_schema_conformance",
    ): "render echoes negative or no prompt ids into token_ids (GenerateRequest: >= 0, >= 1 item)",
    (
        "derenderCompletions",
        "negative",
        "negative_data_rejection",
    ): "derender does not validate generate_responses/generate_chunk (wrong types accepted)",
    (
        "derenderChatCompletions",
        "negative",
        "negative_data_rejection",
    ): "derender does not validate generate_response/generate_chunk (wrong types accepted)",
    (
        "derenderCompletions",
        "negative",
        "not_a_server_error",
    ): "derender raises on wrongly typed nested fields (AttributeError/TypeError: a 500)",
    (
        "derenderChatCompletions",
        "negative",
        "not_a_server_error",
    ): "derender raises on wrongly typed nested fields (AttributeError/TypeError: a 500)",
    (
        "generate",
        "negative",
        "negative_data_rejection",
    ): "generate accepts some schema-invalid optional fields it ignores (e.g. logit_bias values)",
}
"""Mock bugs (not defects) the fuzzer finds in the correct mock, reported to the lead; each
entry must still be found (the test fails when one is fixed, so the list cannot go stale)."""


def run_profile(
    name: str, examples: int, defects: tuple[str, ...] = (), **overrides: Any
) -> FuzzResult:
    argv, facts, key = PROFILES[name]
    config = parse_args([*argv, *sum((["--mock-defect", d] for d in defects), [])], {})
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


@pytest.mark.parametrize("profile", list(PROFILES))
def test_correct_mock_ci_budget(profile: str, tmp_path: Any) -> None:
    t0 = time.monotonic()
    result = run_profile(profile, CI_EXAMPLES)
    print(summary_text(result))
    print(f"{profile}: {result.total_cases} cases in {time.monotonic() - t0:.1f} s")
    for op, cases in result.cases_per_operation().items():
        if any(s.operation == op and s.cases > 1 for s in result.stats):
            assert cases >= CI_EXAMPLES, f"{op}: only {cases} cases"
    unexpected = [
        f for f in result.findings if (f.operation, f.group, f.check) not in KNOWN_MOCK_BUGS
    ]
    assert not unexpected, "\n".join(
        f"{f.key}: {f.message[:300]}\n{f.reproducer}" for f in unexpected
    )
    report = to_report(result)
    json_report.write([report], tmp_path / "fuzz.json")
    junit.write([report], tmp_path / "fuzz.xml")
