"""Faults nobody picked, each failing its one owner: the ones the full generated run
(`benchmarks/bench_blast_generated.py`) found failing nothing, or more than 3 requirements.

Each runs the requirements it used to fail, with the one that owns it, through the fault
proxy in front of a correct mock: the owner fails, the rest pass or are blocked naming a
requirement that fails. (The full run, every fault against the whole suite, is the benchmark.)
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.fault_catalogue import generate_faults
from benchmarks.fault_proxy import proxied
from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.verdicts.results import Status

FAULTS = {f.name: f for f in generate_faults()}

CASES: list[tuple[str, str, set[str], set[str]]] = [
    # (fault, profile, what the run decides, what must fail: exactly these)
    (
        "generate.choices[].finish_reason:wrong-value",
        "tokens-only",
        {"GEN-RESP-002", "GEN-REQ-005", "STOP-001", "STOP-004", "ABORT-003"},
        {"GEN-RESP-002"},
    ),
    (
        "stream.chunk.choices[].token_ids:wrong-value",
        "scale-out",
        {"STREAM-001", "STREAM-003", "STREAM-004", "GEN-REQ-009", "LOGP-002", "ABORT-002"},
        {"STREAM-003", "STREAM-004"},
    ),
    (
        "generate-text.choices:wrong-value",
        "scale-out",
        {"TEXT-001", "GEN-REQ-008", "GEN-RESP-003", "WV-001", "WV-002"},
        {"TEXT-001"},
    ),
    (
        "generate-text.choices[].token_ids:wrong-value",
        "scale-out",
        {"GEN-RESP-003", "LOGP-002", "STOP-008", "TEXT-004", "WV-002"},
        {"GEN-RESP-003"},
    ),
    (
        "generate-text.choices[].text:wrong-value",
        "scale-out",
        {"TEXT-001", "RENDER-002", "STOP-006", "STOP-007", "TEXT-009"},
        {"TEXT-001"},
    ),
    # a derender of the wrong form, which TEXT-001's probe reads beside its text
    ("derender.choices[]:wrong-type", "scale-out", {"TEXT-001", "RENDER-002"}, {"RENDER-002"}),
    ("generate.prompt_logprobs[].*.logprob:wrong-value", "tokens-only", {"LOGP-010"}, {"LOGP-010"}),
    (
        "generate.prompt_logprobs[].*.decoded_token:wrong-value",
        "scale-out",
        {"LOGP-010"},
        {"LOGP-010"},
    ),
    (
        "generate-text.choices[].weight_versions[].version:wrong-value",
        "scale-out",
        {"WV-008"},
        {"WV-008"},
    ),
    (
        "stream.text-chunk.choices[].weight_versions[].version:wrong-value",
        "scale-out",
        {"WV-008"},
        {"WV-008"},
    ),
]


@pytest.mark.parametrize(
    ("fault", "profile", "decides", "owners"), CASES, ids=[c[0] for c in CASES]
)
def test_a_generated_fault_fails_its_owner_alone(
    fault: str, profile: str, decides: set[str], owners: set[str]
) -> None:
    with (
        embedded_mock(profile, (), (), **QUICK) as (_, config),
        proxied(config.base_url, FAULTS[fault]) as (url, app),
    ):
        report = run(replace(config, base_url=url, requirement_ids=frozenset(decides)))
    assert app.applied, "the fault never fired: the case proves nothing"
    failed = {r.requirement.id for r in report.requirements if r.status is Status.FAIL}
    broken = {r.requirement.id: r.reason for r in report.requirements if r.status is Status.ERROR}
    assert failed == owners, {r.requirement.id: r.reason[:200] for r in report.requirements}
    assert not broken, broken
